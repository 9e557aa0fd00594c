//! Values to the JSON text Cassandra writes for them (`AbstractType.toJSONString`):
//! numbers bare (floats as Java prints them, NaN and infinities as `null`),
//! text escaped, blobs as `"0x.."`, times and ids as strings, collections,
//! tuples and vectors as arrays, maps as objects whose keys are JSON strings.

use std::net::IpAddr;
use varve_types::literal::{java_decimal_to_string, java_double_to_string, java_float_to_string};
use varve_types::time::{civil_from_days, format_date, format_duration, format_time, format_uuid};
use varve_types::Value;

const MS_PER_DAY: i64 = 86_400_000;

/// The JSON text of `v`; `None` (a null) is `null`.
pub fn to_json(v: Option<&Value>) -> String {
    let mut out = String::new();
    match v {
        Some(v) => write_value(&mut out, v),
        None => out.push_str("null"),
    }
    out
}

/// `s` as a quoted JSON string, escaped as Jackson's `quoteAsString` does:
/// quotes, backslashes and control characters; nothing else.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    escape_into(&mut out, s);
    out.push('"');
    out
}

fn escape_into(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
}

fn write_value(out: &mut String, v: &Value) {
    match v {
        Value::Ascii(s) | Value::Text(s) => out.push_str(&quote(s)),
        Value::Blob(b) => {
            out.push_str("\"0x");
            for x in b {
                out.push_str(&format!("{x:02x}"));
            }
            out.push('"');
        }
        Value::Boolean(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::TinyInt(n) => out.push_str(&n.to_string()),
        Value::SmallInt(n) => out.push_str(&n.to_string()),
        Value::Int(n) => out.push_str(&n.to_string()),
        Value::BigInt(n) | Value::Counter(n) => out.push_str(&n.to_string()),
        Value::Varint(n) => out.push_str(&n.to_string()),
        // JSON has no NaN or infinities: Cassandra writes null for them.
        Value::Float(f) if !f.is_finite() => out.push_str("null"),
        Value::Double(d) if !d.is_finite() => out.push_str("null"),
        Value::Float(f) => out.push_str(&java_float_to_string(*f)),
        Value::Double(d) => out.push_str(&java_double_to_string(*d)),
        Value::Decimal { unscaled, scale } => {
            out.push_str(&java_decimal_to_string(unscaled, *scale))
        }
        Value::Uuid(u) | Value::Timeuuid(u) => out.push_str(&quote(&format_uuid(u))),
        Value::Timestamp(ms) => out.push_str(&quote(&timestamp_text(*ms))),
        Value::Date(d) => out.push_str(&quote(&format_date(*d))),
        Value::Time(n) => out.push_str(&quote(&format_time(*n))),
        // Cassandra writes a zero duration as an empty string.
        Value::Duration {
            months: 0,
            days: 0,
            nanos: 0,
        } => out.push_str("\"\""),
        Value::Duration {
            months,
            days,
            nanos,
        } => out.push_str(&quote(&format_duration(*months, *days, *nanos))),
        Value::Inet(ip) => out.push_str(&quote(&inet_text(ip))),
        Value::List(items) | Value::Set(items) | Value::Vector(items) => {
            write_seq(out, items.iter().map(Some));
        }
        Value::Tuple(fields) => write_seq(out, fields.iter().map(Option::as_ref)),
        Value::Map(entries) => write_map(out, entries),
    }
}

fn write_seq<'a>(out: &mut String, items: impl Iterator<Item = Option<&'a Value>>) {
    out.push('[');
    for (i, item) in items.enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        match item {
            Some(v) => write_value(out, v),
            None => out.push_str("null"),
        }
    }
    out.push(']');
}

/// A map as an object: a key whose JSON is not a string (a number, a list)
/// becomes the string of that JSON.
fn write_map(out: &mut String, entries: &[(Value, Value)]) {
    out.push('{');
    for (i, (k, v)) in entries.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let key = to_json(Some(k));
        if key.starts_with('"') {
            out.push_str(&key);
        } else {
            out.push_str(&quote(&key));
        }
        out.push_str(": ");
        write_value(out, v);
    }
    out.push('}');
}

/// `yyyy-MM-dd HH:mm:ss.SSSZ` in UTC, as Cassandra 5.0 writes timestamps in
/// JSON: the year is the year of its era (1 BC prints as `0001`), with a
/// `+` past four digits.
pub fn timestamp_text(ms: i64) -> String {
    let days = ms.div_euclid(MS_PER_DAY);
    let in_day = ms.rem_euclid(MS_PER_DAY);
    let (y, mo, d) = civil_from_days(days);
    let era_year = if y >= 1 { y } else { 1 - y };
    let year = if era_year > 9999 {
        format!("+{era_year}")
    } else {
        format!("{era_year:04}")
    };
    let secs = in_day / 1000;
    let (h, mi, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    format!(
        "{year}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}.{:03}Z",
        in_day % 1000
    )
}

/// An address as Java's `getHostAddress` writes it: IPv6 in eight groups
/// of lower-case hex, none compressed.
fn inet_text(ip: &IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => v6
                .segments()
                .iter()
                .map(|g| format!("{g:x}"))
                .collect::<Vec<_>>()
                .join(":"),
        },
    }
}
