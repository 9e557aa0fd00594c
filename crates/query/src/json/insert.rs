//! `INSERT ... JSON`: the JSON object read against the table's columns and
//! rewritten into a plain INSERT of every column, each value bound as if a
//! client had sent it. A column the JSON leaves out is bound to null
//! (`DEFAULT NULL`) or left unset (`DEFAULT UNSET`).

use super::decode::{from_json, DecodeError};
use super::text::{parse, Json};
use crate::api::BoundValue;
use crate::context::Ctx;
use crate::error::{QueryError, Result};
use crate::terms::{eval, Evaluated};
use bytes::Bytes;
use varve_cql::ast::{Insert, Literal, Term};
use varve_schema::Table;
use varve_types::{codec, CqlType, Value};

/// The plain INSERT that `ins` (an INSERT JSON) stands for; the values it
/// binds are appended to `ctx.values`, where its bind markers point.
pub fn expand_insert(ctx: &mut Ctx, table: &Table, ins: &Insert) -> Result<Insert> {
    let Some(term) = &ins.json else {
        return Ok(ins.clone());
    };
    let text = match eval(ctx, term, &CqlType::Text, super::JSON_COLUMN)? {
        Evaluated::Value(Value::Text(s) | Value::Ascii(s)) => s,
        _ => {
            return Err(QueryError::Invalid(
                "Got null for INSERT JSON values".into(),
            ))
        }
    };
    let bound = column_values(table, &text, ins.json_default_unset)?;
    let mut columns = Vec::with_capacity(bound.len());
    let mut values = Vec::with_capacity(bound.len());
    let named = crate::compact_writes::json_columns(table)?;
    for (col, value) in named.into_iter().zip(bound) {
        columns.push(col.name.clone());
        values.push(Term::Bind(ctx.values.len()));
        ctx.values.push(value);
    }
    Ok(Insert {
        columns,
        values,
        json: None,
        json_default_unset: false,
        ..ins.clone()
    })
}

/// At PREPARE, as Cassandra does: the JSON of an `INSERT ... JSON '...'`
/// written as a literal is read against the table (a bind marker waits).
pub fn check_insert_literal(table: &Table, ins: &Insert) -> Result<()> {
    if ins.json.is_some() {
        crate::compact_writes::json_columns(table)?;
    }
    match &ins.json {
        Some(Term::Literal(Literal::String(text))) => {
            column_values(table, text, ins.json_default_unset).map(|_| ())
        }
        _ => Ok(()),
    }
}

/// A column's value from JSON. The hidden value of a dense COMPACT
/// STORAGE table has Cassandra's `empty` type, which takes only "".
fn decode_column(
    col: &varve_schema::Column,
    j: &Json,
) -> std::result::Result<Option<Value>, DecodeError> {
    if !col.hidden {
        return from_json(&col.ty, j);
    }
    match j {
        Json::Null => Ok(None),
        Json::Str(s) if s.is_empty() => Ok(Some(Value::Blob(Vec::new()))),
        other => Err(DecodeError::Marshal(format!(
            "'{}' is not empty",
            other.java_text()
        ))),
    }
}

/// The value of every column of `table` (in its order) that the JSON
/// object `text` gives: null or unset for a column it leaves out.
fn column_values(table: &Table, text: &str, default_unset: bool) -> Result<Vec<BoundValue>> {
    let mut members = object_members(text)?;
    let named = crate::compact_writes::json_columns(table)?;
    let mut values = Vec::with_capacity(named.len());
    for col in named {
        let bound = match take(&mut members, &col.name) {
            Some(j) => match decode_column(col, &j) {
                Ok(Some(v)) => BoundValue::Value(Bytes::from(codec::serialize(&v))),
                Ok(None) => BoundValue::Null,
                Err(DecodeError::Marshal(m)) => {
                    return Err(QueryError::Invalid(format!(
                        "Error decoding JSON value for {}: {m}",
                        col.name
                    )))
                }
                Err(DecodeError::Invalid(m)) => return Err(QueryError::Invalid(m)),
            },
            None if default_unset => BoundValue::Unset,
            None => BoundValue::Null,
        };
        values.push(bound);
    }
    if let Some((name, _)) = members.first() {
        return Err(QueryError::Invalid(format!(
            "JSON values map contains unrecognized column: {name}"
        )));
    }
    Ok(values)
}

/// The members of the JSON object `text`, keys as column names: a key in
/// double quotes keeps its case without the quotes, any other is lower-cased.
fn object_members(text: &str) -> Result<Vec<(String, Json)>> {
    let not_a_map = |why: String| {
        QueryError::Invalid(format!(
            "Could not decode JSON string as a map: {why}. (String was: {text})"
        ))
    };
    let entries = match parse(text).map_err(not_a_map)? {
        Json::Map(entries) => entries,
        Json::Null => {
            return Err(QueryError::Invalid(
                "Got null for INSERT JSON values".into(),
            ))
        }
        other => {
            return Err(not_a_map(format!(
                "Cannot deserialize a map from a {} value",
                other.class_name()
            )))
        }
    };
    let mut members: Vec<(String, Json)> = Vec::with_capacity(entries.len());
    for (key, value) in entries {
        let name = match key.strip_prefix('"').and_then(|k| k.strip_suffix('"')) {
            Some(quoted) => quoted.to_string(),
            None => key.to_lowercase(),
        };
        match members.iter_mut().find(|(k, _)| *k == name) {
            Some(slot) => slot.1 = value,
            None => members.push((name, value)),
        }
    }
    Ok(members)
}

fn take(members: &mut Vec<(String, Json)>, name: &str) -> Option<Json> {
    let i = members.iter().position(|(k, _)| k == name)?;
    Some(members.remove(i).1)
}
