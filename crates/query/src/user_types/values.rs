//! User type values in statements: `{field: term, ...}` literals, and the
//! errors Cassandra gives for other literals aimed at a user type.

use crate::context::Ctx;
use crate::error::{QueryError, Result};
use crate::terms::{eval, Evaluated};
use varve_cql::ast::{Literal, Term};
use varve_types::{CqlType, Value};

/// Cassandra's error for a literal that cannot be a user type value
/// (`declared`: the column's type as declared, frozen or not); `None`
/// when `term` may be one.
pub fn mismatch(term: &Term, declared: &CqlType, name: &str) -> Option<QueryError> {
    let what = match term {
        Term::Map(entries) if entries.is_empty() => "set literal",
        Term::Map(_) => "map literal",
        Term::Set(_) => "set literal",
        Term::Literal(Literal::Null) => return None,
        Term::Literal(lit) => {
            let (kind, text) = literal_text(lit);
            return Some(QueryError::Invalid(format!(
                "Invalid {kind} constant ({text}) for \"{name}\" of type {declared}"
            )));
        }
        _ => return None,
    };
    Some(QueryError::Invalid(format!(
        "Invalid {what} for {name} of type {declared}"
    )))
}

fn literal_text(lit: &Literal) -> (&'static str, String) {
    match lit {
        Literal::String(s) => ("STRING", s.clone()),
        Literal::Integer(s) => ("INTEGER", s.clone()),
        Literal::Float(s) => ("FLOAT", s.clone()),
        Literal::Boolean(b) => ("BOOLEAN", b.to_string()),
        Literal::Uuid(u) => ("UUID", varve_types::time::format_uuid(u)),
        Literal::Blob(b) => ("HEX", b.iter().map(|x| format!("{x:02x}")).collect()),
        Literal::Duration(s) => ("DURATION", s.clone()),
        Literal::Null => ("NULL", "null".into()),
    }
}

/// `{field: term, ...}` as a value of the user type `ty`: fields not
/// named are null; a field named twice takes its last value.
pub fn eval_literal(
    ctx: &Ctx,
    fields: &[(String, Term)],
    ty: &CqlType,
    name: &str,
) -> Result<Evaluated> {
    let Some(u) = ty.user_type() else {
        return Err(QueryError::Invalid(format!(
            "Invalid user type literal for {name} of type {ty}"
        )));
    };
    let mut out: Vec<Option<Value>> = vec![None; u.field_types.len()];
    for (field, term) in fields {
        let i = u.field_index(field).ok_or_else(|| {
            QueryError::Invalid(format!(
                "Unknown field '{field}' in value of user defined type {}",
                u.name
            ))
        })?;
        let fty = &u.field_types[i];
        let v = eval(ctx, term, fty, &format!("{name}.{field}")).map_err(|e| match term {
            Term::Literal(_) => QueryError::Invalid(format!(
                "Invalid user type literal for {name}: field {field} is not of type {fty}"
            )),
            _ => e,
        })?;
        out[i] = match v {
            Evaluated::Value(v) => Some(v),
            Evaluated::Null | Evaluated::Unset => None,
        };
    }
    Ok(Evaluated::Value(Value::Tuple(out)))
}
