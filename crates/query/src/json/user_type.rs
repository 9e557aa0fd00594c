//! JSON of user type values, which need their type (a UDT value is a
//! tuple of fields; the names live in the type): written as an object
//! keyed by field name (quoted when CQL quotes it, as Cassandra's
//! `UserType.toJSONString` does), and read back from such an object.

use super::decode::{expected, from_json, marshal, DecodeResult};
use super::encode::{quote, to_json};
use super::text::Json;
use crate::user_types::names_user_type;
use varve_types::user_type::quote_if_needed;
use varve_types::{CqlType, UserType, Value};

/// The JSON of `v` as a value of `ty`, user types as objects.
pub fn to_json_typed(ty: &CqlType, v: Option<&Value>) -> String {
    let Some(v) = v else {
        return "null".into();
    };
    if !names_user_type(ty) {
        return to_json(Some(v));
    }
    match (ty.unfrozen(), v) {
        (CqlType::Udt(u), Value::Tuple(fields)) => object(u, fields),
        (CqlType::List(e) | CqlType::Set(e), Value::List(items) | Value::Set(items)) => {
            let parts: Vec<String> = items.iter().map(|i| to_json_typed(e, Some(i))).collect();
            format!("[{}]", parts.join(", "))
        }
        (CqlType::Tuple(types), Value::Tuple(fields)) => {
            let parts: Vec<String> = types
                .iter()
                .zip(fields)
                .map(|(t, f)| to_json_typed(t, f.as_ref()))
                .collect();
            format!("[{}]", parts.join(", "))
        }
        (CqlType::Map(kt, vt), Value::Map(entries)) => {
            let parts: Vec<String> = entries
                .iter()
                .map(|(k, v)| {
                    let key = to_json_typed(kt, Some(k));
                    let key = if key.starts_with('"') {
                        key
                    } else {
                        quote(&key)
                    };
                    format!("{key}: {}", to_json_typed(vt, Some(v)))
                })
                .collect();
            format!("{{{}}}", parts.join(", "))
        }
        _ => to_json(Some(v)),
    }
}

fn object(u: &UserType, fields: &[Option<Value>]) -> String {
    let parts: Vec<String> = u
        .field_names
        .iter()
        .zip(&u.field_types)
        .enumerate()
        .map(|(i, (n, t))| {
            let v = fields.get(i).and_then(Option::as_ref);
            format!("{}: {}", quote(&quote_if_needed(n)), to_json_typed(t, v))
        })
        .collect();
    format!("{{{}}}", parts.join(", "))
}

/// A user type value from a JSON object: keys are field names (a key in
/// double quotes keeps its case, others are lower-cased), missing fields
/// are null.
pub fn from_object(u: &UserType, j: &Json) -> DecodeResult<Value> {
    let Json::Map(entries) = j else {
        return Err(expected("a map", j));
    };
    let mut out: Vec<Option<Value>> = vec![None; u.field_types.len()];
    for (key, value) in entries {
        let name = match key.strip_prefix('"').and_then(|k| k.strip_suffix('"')) {
            Some(quoted) => quoted.replace("\"\"", "\""),
            None => key.to_lowercase(),
        };
        let i = u.field_index(&name).ok_or_else(|| {
            marshal(format!(
                "Unknown field '{name}' in value of user defined type {}",
                u.name
            ))
        })?;
        out[i] = from_json(&u.field_types[i], value)?;
    }
    Ok(Value::Tuple(out))
}
