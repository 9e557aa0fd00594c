//! Decimal text and the CQL literal form of values.

use crate::time::{format_date, format_duration, format_time, format_timestamp, format_uuid};
use crate::Value;
use num_bigint::BigInt;

/// Scales up to this many digits print in plain notation; beyond it a
/// decimal prints as `<unscaled>E<exponent>` so a hostile scale cannot
/// produce a gigabyte of zeros.
pub const DECIMAL_PLAIN_DIGITS_MAX: i64 = 100;
/// Most digits accepted in a decimal exponent.
const EXPONENT_DIGITS_MAX: usize = 10;

/// Parses `[-+]digits[.digits][(e|E)[-+]digits]` into `(unscaled, scale)`,
/// keeping the written precision (`1.50` has scale 2), as
/// `java.math.BigDecimal` does.
pub fn parse_decimal(s: &str) -> Option<(BigInt, i32)> {
    let (mantissa, exponent) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let (negative, mantissa) = match mantissa.as_bytes().first() {
        Some(b'-') => (true, &mantissa[1..]),
        Some(b'+') => (false, &mantissa[1..]),
        _ => (false, mantissa),
    };
    let (int_part, frac_part) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let all_digits = |t: &str| t.bytes().all(|c| c.is_ascii_digit());
    if int_part.len() + frac_part.len() == 0 || !all_digits(int_part) || !all_digits(frac_part) {
        return None;
    }
    let exp: i64 = match exponent {
        None => 0,
        Some(e) => {
            let digits = e.strip_prefix(['-', '+']).unwrap_or(e);
            if digits.is_empty() || digits.len() > EXPONENT_DIGITS_MAX || !all_digits(digits) {
                return None;
            }
            e.parse().ok()?
        }
    };
    let scale = i32::try_from(frac_part.len() as i64 - exp).ok()?;
    let mut unscaled: BigInt = format!("{int_part}{frac_part}").parse().ok()?;
    if negative {
        unscaled = -unscaled;
    }
    Some((unscaled, scale))
}

/// Plain decimal text of `unscaled * 10^-scale` (scientific past
/// [`DECIMAL_PLAIN_DIGITS_MAX`]); the output parses back with
/// [`parse_decimal`] to a numerically equal value.
pub fn format_decimal(unscaled: &BigInt, scale: i32) -> String {
    let sign = if unscaled.sign() == num_bigint::Sign::Minus {
        "-"
    } else {
        ""
    };
    let digits = unscaled.magnitude().to_string();
    let scale = i64::from(scale);
    if scale == 0 {
        return format!("{sign}{digits}");
    }
    if scale.abs() > DECIMAL_PLAIN_DIGITS_MAX {
        return format!("{sign}{digits}E{}", -scale);
    }
    if scale < 0 {
        return format!(
            "{sign}{digits}{}",
            "0".repeat(scale.unsigned_abs() as usize)
        );
    }
    let scale = scale as usize;
    if digits.len() > scale {
        let (int, frac) = digits.split_at(digits.len() - scale);
        format!("{sign}{int}.{frac}")
    } else {
        format!("{sign}0.{}{digits}", "0".repeat(scale - digits.len()))
    }
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

fn float_text(f: f64, debug: String) -> String {
    if f.is_nan() {
        "NaN".into()
    } else if f.is_infinite() {
        if f > 0.0 { "Infinity" } else { "-Infinity" }.into()
    } else {
        debug
    }
}

fn join<T>(items: &[T], f: impl Fn(&T) -> String) -> String {
    items.iter().map(f).collect::<Vec<_>>().join(", ")
}

/// The CQL literal for `v`, as DESCRIBE and cqlsh print it: strings quoted
/// with `''` escaping, blobs as `0x..`, uuids bare, timestamps, dates,
/// times and inets quoted, collections as `[..]`, `{..}`, tuples `(..)`.
pub fn to_cql_literal(v: &Value) -> String {
    match v {
        Value::Ascii(s) | Value::Text(s) => quote(s),
        Value::Blob(b) => {
            let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
            format!("0x{hex}")
        }
        Value::Boolean(b) => b.to_string(),
        Value::TinyInt(n) => n.to_string(),
        Value::SmallInt(n) => n.to_string(),
        Value::Int(n) => n.to_string(),
        Value::BigInt(n) | Value::Counter(n) => n.to_string(),
        Value::Varint(n) => n.to_string(),
        Value::Float(f) => float_text(f64::from(*f), format!("{f:?}")),
        Value::Double(f) => float_text(*f, format!("{f:?}")),
        Value::Decimal { unscaled, scale } => format_decimal(unscaled, *scale),
        Value::Uuid(u) | Value::Timeuuid(u) => format_uuid(u),
        Value::Timestamp(ms) => quote(&format_timestamp(*ms)),
        Value::Date(d) => quote(&format_date(*d)),
        Value::Time(n) => quote(&format_time(*n)),
        Value::Duration {
            months,
            days,
            nanos,
        } => format_duration(*months, *days, *nanos),
        Value::Inet(ip) => quote(&ip.to_string()),
        Value::List(items) | Value::Vector(items) => format!("[{}]", join(items, to_cql_literal)),
        Value::Set(items) => format!("{{{}}}", join(items, to_cql_literal)),
        Value::Map(entries) => format!(
            "{{{}}}",
            join(entries, |(k, v)| format!(
                "{}: {}",
                to_cql_literal(k),
                to_cql_literal(v)
            ))
        ),
        Value::Tuple(fields) => format!(
            "({})",
            join(fields, |f| f
                .as_ref()
                .map_or_else(|| "null".to_owned(), to_cql_literal))
        ),
    }
}
