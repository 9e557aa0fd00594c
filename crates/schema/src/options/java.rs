//! Number parsing and printing with the exact rules of the JVM calls Cassandra uses.
//!
//! Cassandra parses option text with `Integer.parseInt`, `Long.parseLong`,
//! `Double.parseDouble` and `Boolean.parseBoolean`, and prints doubles with `Double.toString`.
//! Clients see those texts (e.g. `1.0`, `6.71E-5`), so Varve mirrors them here.

use std::collections::BTreeMap;

/// `Integer.parseInt`: optional sign, ASCII digits, within `i32`.
pub(crate) fn parse_int(s: &str) -> Option<i32> {
    if !is_plain_integer(s) {
        return None;
    }
    s.parse().ok()
}

/// `Long.parseLong`: optional sign, ASCII digits, within `i64`.
pub(crate) fn parse_long(s: &str) -> Option<i64> {
    if !is_plain_integer(s) {
        return None;
    }
    s.parse().ok()
}

fn is_plain_integer(s: &str) -> bool {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// `Double.parseDouble`: surrounding blanks trimmed, optional sign, decimal digits with an
/// optional fraction and exponent, an optional `d`/`f` suffix, or `NaN` / `Infinity`.
/// Hexadecimal floating literals are not supported (documented difference).
pub(crate) fn parse_double(s: &str) -> Option<f64> {
    let t = s.trim_matches(|c: char| c <= ' ');
    let (sign, body) = match t.as_bytes().first() {
        Some(b'-') => (-1.0, &t[1..]),
        Some(b'+') => (1.0, &t[1..]),
        _ => (1.0, t),
    };
    if body == "NaN" {
        return Some(f64::NAN);
    }
    if body == "Infinity" {
        return Some(sign * f64::INFINITY);
    }
    let body = body.strip_suffix(['d', 'D', 'f', 'F']).unwrap_or(body);
    if !is_decimal_literal(body) {
        return None;
    }
    body.parse::<f64>().ok().map(|v| sign * v)
}

/// Digits with an optional `.` (at least one digit overall) and an optional exponent.
fn is_decimal_literal(s: &str) -> bool {
    let (mantissa, exponent) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let mut digits = 0;
    let mut dots = 0;
    for b in mantissa.bytes() {
        match b {
            b'0'..=b'9' => digits += 1,
            b'.' => dots += 1,
            _ => return false,
        }
    }
    if digits == 0 || dots > 1 {
        return false;
    }
    match exponent {
        None => true,
        Some(e) => is_plain_integer(e),
    }
}

/// `Float.parseFloat`, same grammar as [`parse_double`].
pub(crate) fn parse_float(s: &str) -> Option<f32> {
    parse_double(s).map(|v| v as f32)
}

/// `Boolean.parseBoolean`: only a case-insensitive `true` is true; anything else is false.
pub(crate) fn parse_bool_lenient(s: &str) -> bool {
    s.eq_ignore_ascii_case("true")
}

/// `StringUtils.isNumeric`: non-empty and only digits (no sign, no dot).
pub(crate) fn is_numeric(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// `Double.toString` (kept in varve-types, where JSON output uses it too).
pub(crate) use varve_types::literal::java_double_to_string as double_to_string;

/// `'text'` with embedded quotes doubled, as `CqlBuilder.appendWithSingleQuotes` prints it.
pub(crate) fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// A text map as `CqlBuilder.append(Map)` prints it: keys sorted, `{'k': 'v', ...}`.
pub(crate) fn cql_map(map: &BTreeMap<String, String>, quote_values: bool) -> String {
    let parts: Vec<String> = map
        .iter()
        .map(|(k, v)| {
            let value = if quote_values { quote(v) } else { v.clone() };
            format!("{}: {}", quote(k), value)
        })
        .collect();
    format!("{{{}}}", parts.join(", "))
}

/// A key set as Java's `Set.toString` prints it (sorted here for determinism): `[a, b]`.
pub(crate) fn key_list<'a>(keys: impl IntoIterator<Item = &'a String>) -> String {
    let keys: Vec<&str> = keys.into_iter().map(String::as_str).collect();
    format!("[{}]", keys.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_print_like_java() {
        assert_eq!(double_to_string(0.01), "0.01");
        assert_eq!(double_to_string(1.0), "1.0");
        assert_eq!(double_to_string(0.1), "0.1");
        assert_eq!(double_to_string(6.71e-05), "6.71E-5");
        assert_eq!(double_to_string(0.001), "0.001");
        assert_eq!(double_to_string(1e7), "1.0E7");
        assert_eq!(double_to_string(1234567.5), "1234567.5");
        assert_eq!(double_to_string(-2.5), "-2.5");
        assert_eq!(double_to_string(100.0), "100.0");
        assert_eq!(double_to_string(1.5e-10), "1.5E-10");
        assert_eq!(double_to_string(0.0), "0.0");
    }

    #[test]
    fn numbers_parse_like_java() {
        assert_eq!(parse_int("+12"), Some(12));
        assert_eq!(parse_int("2147483647"), Some(i32::MAX));
        assert_eq!(parse_int("2147483648"), None);
        assert_eq!(parse_int(" 1"), None);
        assert_eq!(parse_int("1.0"), None);
        assert_eq!(parse_double(" 0.5 "), Some(0.5));
        assert_eq!(parse_double("1e-3"), Some(0.001));
        assert_eq!(parse_double("2d"), Some(2.0));
        assert_eq!(parse_double(".5"), Some(0.5));
        assert_eq!(parse_double("inf"), None);
        assert_eq!(parse_double("."), None);
        assert_eq!(parse_double("abc"), None);
        assert!(parse_double("NaN").is_some_and(f64::is_nan));
        assert!(parse_bool_lenient("TRUE"));
        assert!(!parse_bool_lenient("yes"));
    }

    #[test]
    fn maps_print_sorted_and_quoted() {
        let mut m = BTreeMap::new();
        m.insert("min_threshold".to_string(), "4".to_string());
        m.insert("class".to_string(), "it's".to_string());
        assert_eq!(
            cql_map(&m, true),
            "{'class': 'it''s', 'min_threshold': '4'}"
        );
        assert_eq!(cql_map(&BTreeMap::new(), false), "{}");
    }
}
