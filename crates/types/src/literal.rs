//! CQL literal text to values of a target type, and values back to the
//! literal text DESCRIBE and cqlsh print.
//!
//! Which literal kinds a type accepts follows Cassandra's
//! `Constants.Literal.testAssignment`:
//!
//! | literal  | accepted by                                                           |
//! |----------|-----------------------------------------------------------------------|
//! | STRING   | ascii, text, inet, date, time, timestamp                              |
//! | INTEGER  | tinyint, smallint, int, bigint, counter, varint, decimal, float, double, date, time, timestamp, duration |
//! | FLOAT    | float, double, decimal                                                |
//! | UUID     | uuid, timeuuid                                                        |
//! | BOOLEAN  | boolean                                                               |
//! | HEX      | blob                                                                  |
//! | DURATION | duration                                                              |
//!
//! Anything else is [`Error::InvalidLiteral`] (`Invalid STRING constant (x)
//! ...`), which [`Error::message_for_column`] completes with the column.
//! An accepted kind that does not parse or is out of range is
//! [`Error::Marshal`], as Cassandra reports it (`Unable to make int from
//! '2147483648'`). Notably Cassandra rejects quoted uuids and quoted
//! numbers: `'1'` is not an int.

mod format;
mod from_text;
mod java;

pub use format::{format_decimal, parse_decimal, to_cql_literal};
pub use from_text::from_text;
pub use java::{java_decimal_to_string, java_double_to_string, java_float_to_string};

use crate::time::{format_uuid, parse_date, parse_duration, parse_time, parse_timestamp};
use crate::{CqlType, Error, Result, Value};
use num_bigint::BigInt;
use std::net::IpAddr;

fn not_assignable(kind: &'static str, literal: &str, ty: &CqlType) -> Error {
    Error::InvalidLiteral {
        kind,
        literal: literal.to_owned(),
        ty: ty.cql_name(),
    }
}

fn unable(ty: &str, s: &str) -> Error {
    Error::Marshal(format!("Unable to make {ty} from '{s}'"))
}

/// A string literal (`'...'`, `$$...$$`, quotes already removed).
pub fn from_string_literal(ty: &CqlType, s: &str) -> Result<Value> {
    Ok(match ty.unfrozen() {
        CqlType::Text => Value::Text(s.to_owned()),
        CqlType::Ascii => {
            if !s.is_ascii() {
                return Err(Error::Marshal(
                    "Invalid ASCII character in string literal".into(),
                ));
            }
            Value::Ascii(s.to_owned())
        }
        CqlType::Inet => {
            let ip: IpAddr = s.parse().map_err(|_| unable("inet address", s))?;
            // Like Java's InetAddress, an IPv4-mapped IPv6 literal reads as IPv4.
            let ip = match ip {
                std::net::IpAddr::V6(v6) => v6
                    .to_ipv4_mapped()
                    .map(std::net::IpAddr::V4)
                    .unwrap_or(std::net::IpAddr::V6(v6)),
                v4 => v4,
            };
            Value::Inet(ip)
        }
        CqlType::Date => Value::Date(parse_date(s)?),
        CqlType::Time => Value::Time(parse_time(s)?),
        CqlType::Timestamp => Value::Timestamp(parse_timestamp(s)?),
        _ => return Err(not_assignable("STRING", s, ty)),
    })
}

/// An integer literal such as `42` or `-7`.
pub fn from_integer_literal(ty: &CqlType, s: &str) -> Result<Value> {
    let t = ty.unfrozen();
    Ok(match t {
        CqlType::TinyInt => Value::TinyInt(s.parse().map_err(|_| unable("tinyint", s))?),
        CqlType::SmallInt => Value::SmallInt(s.parse().map_err(|_| unable("smallint", s))?),
        CqlType::Int => Value::Int(s.parse().map_err(|_| unable("int", s))?),
        CqlType::BigInt => Value::BigInt(s.parse().map_err(|_| unable("long", s))?),
        CqlType::Counter => Value::Counter(s.parse().map_err(|_| unable("long", s))?),
        CqlType::Varint => Value::Varint(parse_bigint(s).ok_or_else(|| unable("varint", s))?),
        CqlType::Decimal => {
            let (unscaled, scale) = parse_decimal(s).ok_or_else(|| unable("decimal", s))?;
            Value::Decimal { unscaled, scale }
        }
        CqlType::Float => Value::Float(parse_float_f32(s).ok_or_else(|| unable("float", s))?),
        CqlType::Double => Value::Double(parse_float(s).ok_or_else(|| unable("double", s))?),
        CqlType::Timestamp => Value::Timestamp(parse_timestamp(s)?),
        CqlType::Date => Value::Date(parse_date(s)?),
        CqlType::Time => Value::Time(parse_time(s)?),
        CqlType::Duration => {
            let (months, days, nanos) = parse_duration(s)?;
            Value::Duration {
                months,
                days,
                nanos,
            }
        }
        _ => return Err(not_assignable("INTEGER", s, ty)),
    })
}

/// A floating-point literal: `1.5`, `2e10`, `NaN`, `Infinity`, `-Infinity`.
pub fn from_float_literal(ty: &CqlType, s: &str) -> Result<Value> {
    Ok(match ty.unfrozen() {
        CqlType::Float => {
            let f = parse_float_f32(s).ok_or_else(|| unable("float", s))?;
            Value::Float(f)
        }
        CqlType::Double => Value::Double(parse_float(s).ok_or_else(|| unable("double", s))?),
        CqlType::Decimal => {
            let (unscaled, scale) = parse_decimal(s).ok_or_else(|| unable("decimal", s))?;
            Value::Decimal { unscaled, scale }
        }
        _ => return Err(not_assignable("FLOAT", s, ty)),
    })
}

/// `true` or `false`.
pub fn from_boolean(ty: &CqlType, b: bool) -> Result<Value> {
    match ty.unfrozen() {
        CqlType::Boolean => Ok(Value::Boolean(b)),
        _ => Err(not_assignable(
            "BOOLEAN",
            if b { "true" } else { "false" },
            ty,
        )),
    }
}

/// A bare uuid literal; a `timeuuid` target needs a version-1 uuid.
pub fn from_uuid_literal(ty: &CqlType, u: &[u8; 16]) -> Result<Value> {
    match ty.unfrozen() {
        CqlType::Uuid => Ok(Value::Uuid(*u)),
        CqlType::Timeuuid if u[6] >> 4 == 1 => Ok(Value::Timeuuid(*u)),
        CqlType::Timeuuid => Err(Error::Marshal(
            "TimeUUID supports only version 1 UUIDs".into(),
        )),
        CqlType::Custom(class) if class == crate::cql_type::LEXICAL_UUID_CLASS => {
            Ok(Value::Uuid(*u))
        }
        _ => Err(not_assignable("UUID", &format_uuid(u), ty)),
    }
}

/// A `0x...` literal, already decoded to bytes.
pub fn from_blob_literal(ty: &CqlType, bytes: &[u8]) -> Result<Value> {
    match ty.unfrozen() {
        CqlType::Blob => Ok(Value::Blob(bytes.to_vec())),
        // A custom type takes the bytes its class accepts; the empty type
        // takes no literal at all.
        CqlType::Custom(class) if class != crate::cql_type::EMPTY_TYPE_CLASS => {
            crate::codec::deserialize(ty, bytes)
        }
        _ => {
            let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            Err(not_assignable("HEX", &format!("0x{hex}"), ty))
        }
    }
}

/// A duration literal such as `1h30m`, `P1DT2H` or `-P2W`.
pub fn from_duration_literal(ty: &CqlType, s: &str) -> Result<Value> {
    match ty.unfrozen() {
        CqlType::Duration => {
            let (months, days, nanos) = parse_duration(s)?;
            Ok(Value::Duration {
                months,
                days,
                nanos,
            })
        }
        _ => Err(not_assignable("DURATION", s, ty)),
    }
}

fn parse_bigint(s: &str) -> Option<BigInt> {
    let digits = s
        .strip_prefix('-')
        .or_else(|| s.strip_prefix('+'))
        .unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Java's `Double.parseDouble` on CQL float spellings; Rust's parser also
/// takes `inf`, which CQL never produces, so only the CQL names pass.
fn parse_float(s: &str) -> Option<f64> {
    let body = s.strip_prefix('-').unwrap_or(s);
    match body {
        "NaN" => return Some(f64::NAN),
        "Infinity" => {
            return Some(if body.len() == s.len() {
                f64::INFINITY
            } else {
                f64::NEG_INFINITY
            })
        }
        _ => {}
    }
    if !body
        .bytes()
        .all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'E' | b'+' | b'-'))
    {
        return None;
    }
    s.parse().ok()
}

fn parse_float_f32(s: &str) -> Option<f32> {
    // Parse directly as f32 to avoid double rounding through f64.
    parse_float(s)?;
    match s.strip_prefix('-').unwrap_or(s) {
        "NaN" | "Infinity" => parse_float(s).map(|f| f as f32),
        _ => s.parse().ok(),
    }
}

#[cfg(test)]
mod tests;
