//! Parsed JSON to values of a column's type, accepting what Cassandra's
//! `fromJSONObject` accepts (numbers or their text for numeric types,
//! strings for text, ids, times and blobs, arrays for lists, sets and
//! tuples, objects for maps, and a string holding JSON for collections and
//! tuples) and failing with its messages.

use super::text::{parse, Json};
use num_bigint::BigInt;
use varve_types::literal::{from_string_literal, parse_decimal};
use varve_types::time::{parse_duration, parse_time, parse_timestamp, parse_uuid};
use varve_types::{CqlType, Value};

/// Why a JSON value is not a value of the type.
#[derive(Debug, Clone, PartialEq)]
pub enum DecodeError {
    /// A MarshalException: Cassandra names the column before it.
    Marshal(String),
    /// An InvalidRequest raised as is (a bad duration).
    Invalid(String),
}

type Result<T> = std::result::Result<T, DecodeError>;

/// A decoding result, for the other decoders of this module.
pub(super) type DecodeResult<T> = Result<T>;

pub(super) fn marshal(s: impl Into<String>) -> DecodeError {
    DecodeError::Marshal(s.into())
}

/// `Expected <what>, but got a <class>: <value>`.
pub(super) fn expected(what: &str, j: &Json) -> DecodeError {
    marshal(format!(
        "Expected {what}, but got a {}: {}",
        j.class_name(),
        j.java_text()
    ))
}

/// The value of `ty` that `j` stands for; `None` for a JSON null.
pub fn from_json(ty: &CqlType, j: &Json) -> Result<Option<Value>> {
    if *j == Json::Null {
        return Ok(None);
    }
    Ok(Some(decode(ty, j)?))
}

fn is_number(j: &Json) -> bool {
    matches!(
        j,
        Json::Int(_) | Json::Long(_) | Json::BigInteger(_) | Json::Double(_)
    )
}

fn decode(ty: &CqlType, j: &Json) -> Result<Value> {
    match ty.unfrozen() {
        CqlType::Ascii => match j {
            Json::Str(s) if s.is_ascii() => Ok(Value::Ascii(s.clone())),
            Json::Str(_) => Err(marshal("Invalid ASCII character in string literal: java.nio.charset.UnmappableCharacterException: Input length = 1")),
            _ => Err(expected("an ascii string", j)),
        },
        CqlType::Text => match j {
            Json::Str(s) => Ok(Value::Text(s.clone())),
            _ => Err(expected("a UTF-8 string", j)),
        },
        CqlType::Custom(class) if class == varve_types::cql_type::LEXICAL_UUID_CLASS => match j {
            Json::Str(s) => parse_uuid(s)
                .map(Value::Uuid)
                .map_err(|_| marshal(format!("unable to make UUID from '{s}'"))),
            _ => Err(expected("a string representation of a uuid", j)),
        },
        CqlType::Blob | CqlType::Custom(_) => blob(j),
        CqlType::Boolean => match j {
            Json::Bool(b) => Ok(Value::Boolean(*b)),
            Json::Str(s) if s.eq_ignore_ascii_case("true") => Ok(Value::Boolean(true)),
            Json::Str(s) if s.eq_ignore_ascii_case("false") => Ok(Value::Boolean(false)),
            Json::Str(s) => Err(marshal(format!("Unable to make boolean from '{s}'"))),
            _ => Err(expected("a boolean value", j)),
        },
        CqlType::TinyInt | CqlType::SmallInt => small_int(ty.unfrozen(), j),
        CqlType::Int => match j {
            Json::Int(n) => Ok(Value::Int(*n)),
            Json::Str(s) => s
                .parse()
                .map(Value::Int)
                .map_err(|_| marshal(format!("Unable to make int from '{s}'"))),
            _ => Err(expected("an int value", j)),
        },
        CqlType::BigInt | CqlType::Counter => {
            let n = match j {
                Json::Int(n) => i64::from(*n),
                Json::Long(n) => *n,
                Json::Str(s) => s
                    .parse()
                    .map_err(|_| marshal(format!("Unable to make long from '{s}'")))?,
                _ => return Err(expected("a bigint value", j)),
            };
            Ok(match ty.unfrozen() {
                CqlType::Counter => Value::Counter(n),
                _ => Value::BigInt(n),
            })
        }
        CqlType::Varint => {
            let text = j.java_text();
            text.parse::<BigInt>().map(Value::Varint).map_err(|_| {
                marshal(format!(
                    "Value '{text}' is not a valid representation of a varint value"
                ))
            })
        }
        CqlType::Float | CqlType::Double => floating(ty.unfrozen(), j),
        CqlType::Decimal => {
            let text = j.java_text();
            match parse_decimal(&text) {
                Some((unscaled, scale)) if is_number(j) || matches!(j, Json::Str(_)) => {
                    Ok(Value::Decimal { unscaled, scale })
                }
                _ => Err(marshal(format!(
                    "Value '{text}' is not a valid representation of a decimal value"
                ))),
            }
        }
        CqlType::Uuid | CqlType::Timeuuid => uuid(ty.unfrozen(), j),
        CqlType::Timestamp => match j {
            // Jackson reads small numbers as Integer, which Cassandra refuses.
            Json::Long(n) => Ok(Value::Timestamp(*n)),
            Json::Str(s) => timestamp_text(s),
            _ => Err(expected(
                "a long or a datestring representation of a timestamp value",
                j,
            )),
        },
        CqlType::Date => match j {
            Json::Str(s) => date_text(s),
            _ => Err(expected("a string representation of a date value", j)),
        },
        CqlType::Time => match j {
            Json::Str(s) => time_text(s),
            _ => Err(expected("a string representation of a time value", j)),
        },
        CqlType::Duration => match j {
            Json::Str(s) => parse_duration(s)
                .map(|(months, days, nanos)| Value::Duration {
                    months,
                    days,
                    nanos,
                })
                .map_err(|_| DecodeError::Invalid(format!("Unable to convert '{s}' to a duration"))),
            _ => Err(expected("a string representation of a duration", j)),
        },
        CqlType::Inet => match j {
            Json::Str(s) => from_string_literal(&CqlType::Inet, s)
                .map_err(|_| marshal(format!("Unable to make inet address from '{s}'"))),
            _ => Err(expected("a string representation of an inet value", j)),
        },
        CqlType::List(elem) => {
            let items = elements(&inner_json(j)?, "a list", "list", elem)?;
            Ok(Value::List(items))
        }
        CqlType::Set(elem) => {
            let items = elements(
                &inner_json(j)?,
                "a list (representing a set)",
                "set",
                elem,
            )?;
            Ok(Value::Set(items))
        }
        CqlType::Map(k, v) => map(&inner_json(j)?, k, v),
        CqlType::Tuple(types) => tuple(&inner_json(j)?, types),
        CqlType::Udt(u) => super::user_type::from_object(u, &inner_json(j)?),
        CqlType::UserRef(r) => Err(marshal(format!("unknown type {}", r.name))),
        CqlType::Vector(elem, n) => vector(&inner_json(j)?, elem, *n),
        CqlType::Frozen(_) => unreachable!("unfrozen() removed every Frozen"),
    }
}

/// A collection or tuple may come as a string holding its JSON.
fn inner_json(j: &Json) -> Result<Json> {
    match j {
        Json::Str(s) => parse(s).map_err(|e| marshal(format!("Error decoding JSON string: {e}"))),
        other => Ok(other.clone()),
    }
}

fn blob(j: &Json) -> Result<Value> {
    let Json::Str(s) = j else {
        let class = match j {
            Json::List(_) | Json::Map(_) => format!("java.util.{}", j.class_name()),
            _ => format!("java.lang.{}", j.class_name()),
        };
        return Err(marshal(format!(
            "Value '{}' is not a valid blob representation: class {class} cannot be cast to class java.lang.String ({class} and java.lang.String are in module java.base of loader 'bootstrap')",
            j.java_text(),
        )));
    };
    let Some(hex) = s.strip_prefix("0x") else {
        return Err(marshal(format!("Value '{s}' is not a valid blob representation: String representation of blob is missing 0x prefix: {s}")));
    };
    let bytes: Option<Vec<u8>> = if hex.len() % 2 == 1 {
        None
    } else {
        (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
            .collect()
    };
    bytes.map(Value::Blob).ok_or_else(|| {
        marshal(format!(
            "Value '{s}' is not a valid blob representation: cannot parse '{hex}' as hex bytes"
        ))
    })
}

fn small_int(ty: &CqlType, j: &Json) -> Result<Value> {
    let (java, what) = match ty {
        CqlType::TinyInt => ("byte", "a tinyint value"),
        _ => ("short", "a smallint value"),
    };
    if !is_number(j) && !matches!(j, Json::Str(_)) {
        return Err(expected(what, j));
    }
    let text = j.java_text();
    let bad = || marshal(format!("Unable to make {java} from '{text}'"));
    match ty {
        CqlType::TinyInt => text.parse().map(Value::TinyInt).map_err(|_| bad()),
        _ => text.parse().map(Value::SmallInt).map_err(|_| bad()),
    }
}

fn floating(ty: &CqlType, j: &Json) -> Result<Value> {
    let (name, what) = match ty {
        CqlType::Float => ("float", "a float value"),
        _ => ("double", "a double value"),
    };
    let d = match j {
        Json::Int(n) => f64::from(*n),
        Json::Long(n) => *n as f64,
        Json::BigInteger(n) => n.to_string().parse().unwrap_or(f64::INFINITY),
        Json::Double(d) => *d,
        Json::Str(s) => java_parse_double(s)
            .ok_or_else(|| marshal(format!("Unable to make {name} from '{s}'")))?,
        _ => return Err(expected(what, j)),
    };
    Ok(match ty {
        CqlType::Float => Value::Float(d as f32),
        _ => Value::Double(d),
    })
}

/// `Double.parseDouble`'s common forms: decimal text, `NaN`, `Infinity`.
fn java_parse_double(s: &str) -> Option<f64> {
    let t = s.trim();
    match t.trim_start_matches(['+', '-']) {
        "NaN" => return Some(f64::NAN),
        "Infinity" => {
            return Some(if t.starts_with('-') {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            })
        }
        rest if rest.is_empty()
            || !rest
                .bytes()
                .all(|b| b.is_ascii_digit() || b".eE+-".contains(&b)) =>
        {
            return None
        }
        _ => {}
    }
    t.parse().ok()
}

fn uuid(ty: &CqlType, j: &Json) -> Result<Value> {
    let what = match ty {
        CqlType::Timeuuid => "a string representation of a timeuuid",
        _ => "a string representation of a uuid",
    };
    let Json::Str(s) = j else {
        return Err(expected(what, j));
    };
    let u = parse_uuid(s).map_err(|_| marshal(format!("Unable to make UUID from '{s}'")))?;
    match ty {
        CqlType::Timeuuid if u[6] >> 4 != 1 => {
            Err(marshal("TimeUUID supports only version 1 UUIDs"))
        }
        CqlType::Timeuuid => Ok(Value::Timeuuid(u)),
        _ => Ok(Value::Uuid(u)),
    }
}

fn is_digits(s: &str) -> bool {
    let d = s.strip_prefix('-').unwrap_or(s);
    !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit())
}

fn timestamp_text(s: &str) -> Result<Value> {
    let bad = || marshal(format!("Unable to parse a date/time from '{s}'"));
    if is_digits(s) {
        return s.parse().map(Value::Timestamp).map_err(|_| bad());
    }
    parse_timestamp(s).map(Value::Timestamp).map_err(|_| bad())
}

fn date_text(s: &str) -> Result<Value> {
    let bad = || marshal(format!("Unable to coerce '{s}' to a formatted date (long)"));
    varve_types::literal::from_text(&CqlType::Date, s).map_err(|_| bad())
}

fn time_text(s: &str) -> Result<Value> {
    let bad = || {
        marshal(format!(
            "(TimeType) Unable to coerce '{s}' to a formatted time (long)"
        ))
    };
    if is_digits(s) {
        return varve_types::literal::from_text(&CqlType::Time, s).map_err(|_| bad());
    }
    parse_time(s).map(Value::Time).map_err(|_| bad())
}

fn elements(j: &Json, what: &str, kind: &str, elem: &CqlType) -> Result<Vec<Value>> {
    let Json::List(items) = j else {
        return Err(expected(what, j));
    };
    items
        .iter()
        .map(|item| {
            from_json(elem, item)?.ok_or_else(|| marshal(format!("Invalid null element in {kind}")))
        })
        .collect()
}

/// A vector: a list of exactly `n` non-null elements (Cassandra's
/// `VectorType.fromJSONObject`).
fn vector(j: &Json, elem: &CqlType, n: usize) -> Result<Value> {
    let Json::List(items) = j else {
        return Err(expected("a list", j));
    };
    if items.len() != n {
        return Err(marshal(format!(
            "List had incorrect size: expected {n} but given {}; {}",
            items.len(),
            j.java_text()
        )));
    }
    elements(j, "a list", "list", elem).map(Value::Vector)
}

fn map(j: &Json, kt: &CqlType, vt: &CqlType) -> Result<Value> {
    let Json::Map(entries) = j else {
        return Err(expected("a map", j));
    };
    let mut out = Vec::with_capacity(entries.len());
    for (k, v) in entries {
        let key = decode(kt, &Json::Str(k.clone()))?;
        let value = from_json(vt, v)?.ok_or_else(|| marshal("Invalid null value in map"))?;
        out.push((key, value));
    }
    Ok(Value::Map(out))
}

fn tuple(j: &Json, types: &[CqlType]) -> Result<Value> {
    let Json::List(items) = j else {
        return Err(expected("a list representation of a tuple", j));
    };
    if items.len() != types.len() {
        let how = if items.len() < types.len() {
            "is missing items"
        } else {
            "contains extra items"
        };
        return Err(marshal(format!(
            "Tuple {how} (expected {}): {}",
            types.len(),
            j.java_text()
        )));
    }
    let fields = types
        .iter()
        .zip(items)
        .map(|(t, item)| from_json(t, item))
        .collect::<Result<Vec<_>>>()?;
    Ok(Value::Tuple(fields))
}
