//! The similarity functions in a SELECT clause: the type of a literal
//! argument comes from the other argument (`similarity_cosine(v, [1, 2,
//! 3])` reads the list as the column's `vector<float, 3>`), as Cassandra
//! infers it; a list literal on its own is a `vector<float, n>` of its
//! length.

use super::selectors::{compile_expr, has_marker, marker, Sel};
use crate::error::{QueryError, Result};
use crate::terms::{eval_literal, Evaluated};
use crate::vectors::{check_similarity_args, eval_literal as eval_vector, term_text};
use bytes::Bytes;
use varve_cql::ast::{Literal, SelectorExpr, Term};
use varve_schema::Table;
use varve_types::{codec, CqlType};

/// Compiles `fname(args)` for a similarity function `fname` (lowercase).
pub(super) fn compile(
    table: &Table,
    fname: &str,
    args: &[SelectorExpr],
) -> Result<(Sel, String, CqlType)> {
    let mut compiled: Vec<Option<(Sel, String, CqlType)>> = Vec::with_capacity(args.len());
    let mut typed = Vec::with_capacity(args.len());
    for a in args {
        match a {
            SelectorExpr::Term(Term::Cast { ty, term }) => {
                let c = constant(term, ty, &format!("({ty}){}", term_text(term)))?;
                typed.push((c.1.clone(), Some(ty.clone())));
                compiled.push(Some(c));
            }
            SelectorExpr::Term(term) => {
                let ty = match term {
                    // A marker takes the type of the other argument.
                    Term::Literal(Literal::Null) | Term::Bind(_) => None,
                    Term::List(items) => {
                        Some(CqlType::Vector(Box::new(CqlType::Float), items.len()))
                    }
                    other => Some(crate::functions::natural_type(other)),
                };
                typed.push((term_text(term), ty));
                compiled.push(None);
            }
            _ => {
                let c = compile_expr(table, a)?;
                typed.push((c.1.clone(), Some(c.2.clone())));
                compiled.push(Some(c));
            }
        }
    }
    let n = check_similarity_args(fname, &typed)?;
    let vector = CqlType::Vector(Box::new(CqlType::Float), n);
    let mut sels = Vec::with_capacity(args.len());
    let mut names = Vec::with_capacity(args.len());
    let function = format!("system.{fname}");
    for (i, (a, c)) in args.iter().zip(compiled).enumerate() {
        let (sel, name, _) = match (a, c) {
            (_, Some(c)) => c,
            (SelectorExpr::Term(term), None) if has_marker(term) => {
                let (sel, name, ty) = marker(term, vector.clone(), term_text(term));
                (sel.into_argument(i, &function), name, ty)
            }
            (SelectorExpr::Term(term), None) => constant(term, &vector, &term_text(term))?,
            (_, None) => return Err(QueryError::Server("an argument was not compiled".into())),
        };
        sels.push(sel);
        names.push(name);
    }
    let shown = format!("system.{fname}({})", names.join(", "));
    let sel = Sel::Func {
        name: fname.to_string(),
        args: sels,
    };
    Ok((sel, shown, CqlType::Float))
}

/// A constant argument (a literal, a list literal or NULL) as a value of
/// `ty`.
fn constant(term: &Term, ty: &CqlType, shown: &str) -> Result<(Sel, String, CqlType)> {
    let value = literal_value(term, ty, "selection")?;
    let bytes = value.map(|v| Bytes::from(codec::serialize(&v)));
    Ok((Sel::Const(ty.clone(), bytes), shown.to_string(), ty.clone()))
}

fn literal_value(term: &Term, ty: &CqlType, name: &str) -> Result<Option<varve_types::Value>> {
    match (term, ty.unfrozen()) {
        (Term::Literal(lit), _) => eval_literal(lit, ty, name),
        (Term::List(items), CqlType::Vector(e, n)) => {
            let v = eval_vector(items, e, *n, name, |t, et| {
                Ok(literal_value(t, et, name)?.map_or(Evaluated::Null, Evaluated::Value))
            })?;
            Ok(match v {
                Evaluated::Value(v) => Some(v),
                _ => None,
            })
        }
        _ => Err(QueryError::Invalid(
            "Only literals are supported as terms in the selection clause".into(),
        )),
    }
}

/// `(vector<T, n>) [...]` in a selection.
pub(super) fn vector_constant(ty: &CqlType, term: &Term) -> Result<(Sel, String, CqlType)> {
    constant(term, ty, &format!("({ty}){}", term_text(term)))
}

/// Cassandra has no cast from a vector: for text it finds no overload of
/// `cast_as_text`, for the other types it says the selector cannot be cast.
pub(super) fn vector_cast_error(name: &str, to: &CqlType) -> QueryError {
    if *to != CqlType::Text {
        return QueryError::Invalid(format!("{name} cannot be cast to {to}"));
    }
    let sources = [
        "int",
        "float",
        "timeuuid",
        "date",
        "inet",
        "decimal",
        "smallint",
        "double",
        "ascii",
        "varint",
        "bigint",
        "uuid",
        "boolean",
        "timestamp",
        "time",
        "tinyint",
        "counter",
    ];
    let known: Vec<String> = sources
        .iter()
        .map(|s| format!("system.cast_as_text : ({s}) -> text"))
        .collect();
    QueryError::Invalid(format!(
        "Invalid call to function system.cast_as_text, none of its type signatures match (known type signatures: {})",
        known.join(", ")
    ))
}
