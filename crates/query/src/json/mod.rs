//! JSON in CQL, as Cassandra 5.0 answers it: `SELECT JSON` (one text
//! column `[json]` holding each row as an object), the `toJson()` selector,
//! the `fromJson()` term and `INSERT ... JSON` with `DEFAULT NULL` or
//! `DEFAULT UNSET`.
//!
//! The text of each type is in [`encode`], the reading of JSON into values
//! in [`decode`] (over the tree [`text`] parses), the rewriting of an
//! `INSERT ... JSON` into a plain INSERT in [`insert`].

mod decode;
mod encode;
mod insert;
#[cfg(test)]
mod tests;
mod text;
mod user_type;

pub use user_type::to_json_typed;

pub use decode::{from_json, DecodeError};
pub use encode::quote;
pub use insert::{check_insert_literal, expand_insert};
pub use text::parse;

use crate::api::ColumnSpec;
use crate::context::Ctx;
use crate::error::{QueryError, Result};
use crate::terms::{eval, Evaluated};
use bytes::Bytes;
use std::sync::Arc;
use varve_cql::ast::{Literal, Term};
use varve_types::{codec, CqlType, Value};

/// The one result column of a `SELECT JSON`.
pub const JSON_COLUMN: &str = "[json]";

/// The result columns of a `SELECT JSON` over `specs`: one text column.
pub fn select_specs(specs: &[ColumnSpec], keyspace: &str, table: &str) -> Arc<[ColumnSpec]> {
    let (keyspace, table) = specs
        .first()
        .map(|s| (s.keyspace.clone(), s.table.clone()))
        .unwrap_or_else(|| (keyspace.to_string(), table.to_string()));
    Arc::from(vec![ColumnSpec {
        keyspace,
        table,
        name: JSON_COLUMN.into(),
        ty: CqlType::Text,
    }])
}

/// The key a result column has in a `SELECT JSON` object: its name, in
/// double quotes when it is not all lower case (as CQL would quote it).
pub fn column_key(name: &str) -> String {
    if name == name.to_lowercase() {
        quote(name)
    } else {
        quote(&format!("\"{name}\""))
    }
}

/// One row of a `SELECT JSON`: the row's values as an object, keyed by
/// the result columns' names.
pub fn row_object(specs: &[ColumnSpec], row: &[Option<Bytes>]) -> Result<Option<Bytes>> {
    let mut out = String::from("{");
    for (i, (spec, cell)) in specs.iter().zip(row).enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(&column_key(&spec.name));
        out.push_str(": ");
        out.push_str(&cell_json(&spec.ty, cell.as_deref())?);
    }
    out.push('}');
    Ok(Some(Bytes::from(codec::serialize(&Value::Text(out)))))
}

/// The JSON of one serialized cell of type `ty`.
pub fn cell_json(ty: &CqlType, cell: Option<&[u8]>) -> Result<String> {
    let value = match cell {
        Some(b) => Some(codec::deserialize(ty, b).map_err(|e| QueryError::Server(e.to_string()))?),
        None => None,
    };
    Ok(to_json_typed(ty, value.as_ref()))
}

/// Every row of a SELECT turned into its `SELECT JSON` row.
pub fn rows_to_json(
    specs: &[ColumnSpec],
    rows: Vec<Vec<Option<Bytes>>>,
) -> Result<Vec<Vec<Option<Bytes>>>> {
    rows.iter()
        .map(|row| row_object(specs, row).map(|cell| vec![cell]))
        .collect()
}

/// The name of `fromJson`'s argument in bind metadata.
pub const FROM_JSON_ARG: &str = "arg0(system.fromjson)";

/// `fromJson(text)` as a term of type `ty`: the JSON read as that type.
/// A failure is a FunctionFailure, as in Cassandra.
pub fn from_json_term(ctx: &Ctx, args: &[Term], ty: &CqlType) -> Result<Evaluated> {
    let [arg] = args else {
        return Err(QueryError::Invalid(
            "Invalid number of arguments for function system.fromjson(text)".into(),
        ));
    };
    let arg_ty = match arg {
        Term::Bind(_) | Term::Literal(Literal::Null) => CqlType::Text,
        other => crate::functions::natural_type(other),
    };
    if !matches!(arg_ty, CqlType::Text | CqlType::Ascii) {
        return Err(QueryError::Invalid(format!(
            "Function system.fromjson requires an argument of type text, but found argument {} of type {arg_ty}",
            arg_text(arg)
        )));
    }
    let text = match eval(ctx, arg, &arg_ty, FROM_JSON_ARG)? {
        Evaluated::Value(Value::Text(s) | Value::Ascii(s)) => s,
        _ => return Ok(Evaluated::Null),
    };
    let parsed = parse(&text).map_err(|e| {
        function_failure(format!(
            "execution of 'system.fromjson[text]' failed: Could not decode JSON string '{text}': {e}"
        ))
    })?;
    match from_json(ty, &parsed) {
        Ok(Some(v)) => Ok(Evaluated::Value(v)),
        Ok(None) => Ok(Evaluated::Null),
        Err(DecodeError::Marshal(m)) => Err(function_failure(format!(
            "org.apache.cassandra.serializers.MarshalException: {m}"
        ))),
        Err(DecodeError::Invalid(m)) => Err(function_failure(m)),
    }
}

/// The argument as Cassandra quotes it in a type error.
fn arg_text(t: &Term) -> String {
    match t {
        Term::Literal(lit) => crate::select::selectors::literal_text(lit),
        Term::FunctionCall { name, .. } => format!("{name}(...)"),
        _ => "?".into(),
    }
}

fn function_failure(message: String) -> QueryError {
    QueryError::FunctionFailure {
        keyspace: "system".into(),
        function: "fromjson".into(),
        arg_types: vec!["text".into()],
        message,
    }
}
