//! Unified Compaction Strategy options: their checks and the text forms they use
//! (human-readable byte sizes such as `1GiB`, percentages, scaling parameters such as `T4,L10`).

use super::java::{parse_double, parse_int, parse_long};
use super::{config, Result};
use std::collections::{BTreeMap, BTreeSet};

/// W for the default scaling parameter `T4` (tiered, fanout 4).
pub(crate) const DEFAULT_SCALING_W: i32 = 2;
/// Smallest `target_sstable_size` / `flush_size_override`: 1 MiB.
const MIN_TARGET_SSTABLE_SIZE_BYTES: i64 = 1 << 20;
/// The default `target_sstable_size` (1 GiB), which bounds `min_sstable_size` when unset.
const DEFAULT_TARGET_SSTABLE_SIZE_BYTES: i64 = 1 << 30;
/// Java's unit prefixes, with the blank at the position of "no prefix".
const UNIT_PREFIXES: &[u8] = b"qryzafpnum KMGTPEZYRQ";
const UNIT_PREFIXES_BASE: i32 = 10;
const SCALING_PATTERN_TEXT: &str = "N|L[0-9]+|T[0-9]+|[+-]?[0-9]+";

/// A byte size such as `100MiB`, `1GB`, `5 KiB` or `1048576B` (Cassandra's
/// `parseHumanReadableBytes`). The error carries the detail Cassandra appends to its message.
pub(crate) fn parse_bytes(datum: &str) -> std::result::Result<i64, String> {
    let Some(body) = datum.strip_suffix('B') else {
        return Err(format!("{datum} does not end in unit B"));
    };
    let bytes = body.as_bytes();
    let (mut v, mut pos, has_exponent) = leading_number(body).ok_or_else(|| "null".to_string())?;
    if !has_exponent {
        if let Some(rest) = body[pos..].strip_prefix("*2^") {
            let len = rest
                .bytes()
                .enumerate()
                .take_while(|(i, b)| b.is_ascii_digit() || (*i == 0 && (*b == b'+' || *b == b'-')))
                .count();
            if let Some(power) = parse_int(&rest[..len]) {
                v *= 2f64.powi(power);
                pos += 3 + len;
            }
        }
    }
    while pos < bytes.len() && bytes[pos].is_ascii_whitespace() {
        pos += 1;
    }
    if pos < bytes.len() {
        if let Some(index) = UNIT_PREFIXES.iter().position(|c| *c == bytes[pos]) {
            let exponent = index as i32 - UNIT_PREFIXES_BASE;
            pos += 1;
            if pos < bytes.len() && bytes[pos] == b'i' {
                pos += 1;
                v *= 2f64.powi(exponent * 10);
            } else {
                v *= 1000f64.powi(exponent);
            }
        }
    }
    if pos != bytes.len() {
        return Err(format!(
            "Unexpected characters between pos {pos} and {} in {datum}",
            bytes.len()
        ));
    }
    // Java's (long) cast: saturating, NaN becomes 0.
    Ok(v as i64)
}

/// `NaN|[+-]?Infinity|[+-]?\d+(\.\d+)?([eE][+-]?\d+)?` at the start of `s`:
/// the value, where it ends, and whether it had a decimal exponent.
fn leading_number(s: &str) -> Option<(f64, usize, bool)> {
    let b = s.as_bytes();
    if s.starts_with("NaN") {
        return Some((f64::NAN, 3, false));
    }
    let mut i = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    if s[i..].starts_with("Infinity") {
        let end = i + "Infinity".len();
        return parse_double(&s[..end]).map(|v| (v, end, false));
    }
    let digits = |from: usize| b[from..].iter().take_while(|c| c.is_ascii_digit()).count();
    let int_len = digits(i);
    if int_len == 0 {
        return None;
    }
    i += int_len;
    if b.get(i) == Some(&b'.') && digits(i + 1) > 0 {
        i += 1 + digits(i + 1);
    }
    let mut has_exponent = false;
    if matches!(b.get(i), Some(b'e' | b'E')) {
        let mut j = i + 1;
        if matches!(b.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        if digits(j) > 0 {
            i = j + digits(j);
            has_exponent = true;
        }
    }
    parse_double(&s[..i]).map(|v| (v, i, has_exponent))
}

/// Cassandra's `prettyPrintMemory`: `512B`, `1.000MiB`, `724.077MiB`.
pub(crate) fn pretty_print_memory(size: i64) -> String {
    let magnitude = size.unsigned_abs();
    let prefix = if magnitude == 0 {
        0
    } else {
        (63 - magnitude.leading_zeros() as i32) / 10
    };
    if prefix == 0 {
        return format!("{size}B");
    }
    let scaled = size as f64 / 2f64.powi(prefix * 10);
    let unit = UNIT_PREFIXES[(UNIT_PREFIXES_BASE + prefix) as usize] as char;
    format!("{scaled:.3}{unit}iB")
}

/// Cassandra's `parsePercent`: `33%` is 0.33, otherwise a plain number.
pub(crate) fn parse_percent(value: &str) -> std::result::Result<f64, String> {
    let v = value.trim();
    let (number, scale) = match v.strip_suffix('%') {
        Some(n) => (n.trim(), 100.0),
        None => (v, 1.0),
    };
    match parse_double(number) {
        Some(d) => Ok(d / scale),
        None => Err(format!("For input string: \"{number}\"")),
    }
}

/// `scaling_parameters`: comma-separated `N`, `L<f>`, `T<f>` or an integer W.
pub(crate) fn parse_scaling_parameters(s: &str) -> Result<Vec<i32>> {
    let mut parts: Vec<&str> = s.split(',').collect();
    // Java's String.split drops trailing empty strings.
    while parts.len() > 1 && parts.last() == Some(&"") {
        parts.pop();
    }
    parts.into_iter().map(|p| parse_scaling(p.trim())).collect()
}

fn parse_scaling(value: &str) -> Result<i32> {
    let all_digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    let fan = |t: &str| -> Result<i32> {
        let Some(f) = parse_int(t) else {
            return config(format!(
                "org.apache.cassandra.db.compaction.UnifiedCompactionStrategy.validateOptions() threw an error: java.lang.NumberFormatException For input string: \"{t}\""
            ));
        };
        if f < 2 {
            return config(format!("Fan factor cannot be lower than 2 in {value}"));
        }
        Ok(f)
    };
    if value == "N" {
        return Ok(0);
    }
    if let Some(t) = value.strip_prefix('L').filter(|t| all_digits(t)) {
        return Ok(2 - fan(t)?);
    }
    if let Some(t) = value.strip_prefix('T').filter(|t| all_digits(t)) {
        return Ok(fan(t)? - 2);
    }
    let unsigned = value.strip_prefix(['+', '-']).unwrap_or(value);
    if all_digits(unsigned) {
        return match parse_int(value) {
            Some(w) => Ok(w),
            None => fan(value),
        };
    }
    config(format!(
        "Scaling parameter {value} must match {SCALING_PATTERN_TEXT}"
    ))
}

fn size_option(options: &BTreeMap<String, String>, key: &str) -> Result<Option<i64>> {
    let Some(s) = options.get(key) else {
        return Ok(None);
    };
    let bytes = match parse_bytes(s) {
        Ok(b) => b,
        Err(detail) => return config(format!("{key} {s} is not a valid size in bytes: {detail}")),
    };
    if bytes < MIN_TARGET_SSTABLE_SIZE_BYTES {
        return config(format!(
            "{key} {s} is not acceptable, size must be at least {}",
            pretty_print_memory(MIN_TARGET_SSTABLE_SIZE_BYTES)
        ));
    }
    Ok(Some(bytes))
}

/// `Controller.validateOptions`: checks UCS options and removes them from `unknown`.
pub(crate) fn check_unified(
    options: &BTreeMap<String, String>,
    unknown: &mut BTreeSet<String>,
) -> Result<()> {
    if let Some(s) = options.get("scaling_parameters") {
        parse_scaling_parameters(s)?;
    }
    if let Some(s) = options.get("base_shard_count") {
        match parse_int(s) {
            None => {
                return config(format!(
                    "{s} is not a parsable int (base10) for base_shard_count"
                ))
            }
            Some(n) if n <= 0 => {
                return config(format!(
                    "Invalid configuration, base_shard_count should be positive: {n}"
                ))
            }
            Some(_) => {}
        }
    }
    let target =
        size_option(options, "target_sstable_size")?.unwrap_or(DEFAULT_TARGET_SSTABLE_SIZE_BYTES);
    size_option(options, "flush_size_override")?;
    if let Some(s) = options.get("max_sstables_to_compact") {
        if parse_int(s).is_none() {
            return config(format!(
                "{s} is not a parsable int (base10) for max_sstables_to_compact"
            ));
        }
    }
    let expired = "expired_sstable_check_frequency_seconds";
    if let Some(s) = options.get(expired) {
        match parse_long(s) {
            None => return config(format!("{s} is not a parsable long (base10) for {expired}")),
            Some(n) if n <= 0 => {
                return config(format!(
                    "Invalid configuration, {expired} should be positive: {n}"
                ))
            }
            Some(_) => {}
        }
    }
    if let Some(s) = options.get("unsafe_aggressive_sstable_expiration") {
        if !s.eq_ignore_ascii_case("true") && !s.eq_ignore_ascii_case("false") {
            return config(format!(
                "unsafe_aggressive_sstable_expiration should either be 'true' or 'false', not {s}"
            ));
        }
    }
    if let Some(s) = options.get("overlap_inclusion_method") {
        if !matches!(s.to_uppercase().as_str(), "NONE" | "SINGLE" | "TRANSITIVE") {
            return config(format!(
                "Invalid overlap inclusion method {s}. The valid options are [NONE, SINGLE, TRANSITIVE]."
            ));
        }
    }
    check_min_sstable_size(options, target)?;
    if let Some(s) = options.get("sstable_growth") {
        match parse_percent(s) {
            Err(detail) => {
                return config(format!(
                    "sstable_growth is not a valid number between 0 and 1: {detail}"
                ))
            }
            Ok(g) if !(0.0..=1.0).contains(&g) => {
                return config(format!("sstable_growth {s} must be between 0 and 1"))
            }
            Ok(_) => {}
        }
    }
    for key in [
        "scaling_parameters",
        "base_shard_count",
        "target_sstable_size",
        "flush_size_override",
        "max_sstables_to_compact",
        expired,
        "unsafe_aggressive_sstable_expiration",
        "overlap_inclusion_method",
        "min_sstable_size",
        "sstable_growth",
    ] {
        unknown.remove(key);
    }
    Ok(())
}

fn check_min_sstable_size(options: &BTreeMap<String, String>, target: i64) -> Result<()> {
    let Some(s) = options.get("min_sstable_size") else {
        return Ok(());
    };
    let Ok(size) = parse_bytes(s) else {
        return config(format!(
            "{s} is not a valid size in bytes for min_sstable_size"
        ));
    };
    if size < 0 {
        return config(
            "Invalid configuration, min_sstable_size should be greater than or equal to 0 (zero)",
        );
    }
    // Java: (int) Math.ceil(target * sqrt(0.5)), saturating at i32::MAX.
    let limit = i64::from((target as f64 * 0.5f64.sqrt()).ceil() as i32);
    if size >= limit {
        return config(format!(
            "Invalid configuration, min_sstable_size ({}) should be less than the target size minimum: {}",
            pretty_print_memory(size),
            pretty_print_memory(limit)
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::compaction::{CompactionParams, OverlapInclusionMethod};
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        let mut m: BTreeMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        m.insert("class".into(), "UnifiedCompactionStrategy".into());
        m
    }

    fn err(pairs: &[(&str, &str)]) -> String {
        CompactionParams::from_map(&map(pairs))
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn byte_sizes() {
        assert_eq!(parse_bytes("1GiB"), Ok(1 << 30));
        assert_eq!(parse_bytes("100MiB"), Ok(100 << 20));
        assert_eq!(parse_bytes("1MB"), Ok(1_000_000));
        assert_eq!(parse_bytes("5 KiB"), Ok(5 << 10));
        assert_eq!(parse_bytes("1.5KiB"), Ok(1536));
        assert_eq!(parse_bytes("1*2^20B"), Ok(1 << 20));
        assert_eq!(parse_bytes("0B"), Ok(0));
        assert!(parse_bytes("1GiX").is_err());
        assert!(parse_bytes("GiB").is_err());
        assert_eq!(pretty_print_memory(1 << 20), "1.000MiB");
        assert_eq!(pretty_print_memory(512), "512B");
        assert_eq!(pretty_print_memory(0), "0B");
    }

    #[test]
    fn scaling_parameters() {
        assert_eq!(parse_scaling_parameters("T4"), Ok(vec![2]));
        assert_eq!(
            parse_scaling_parameters("L10, T4,N,-3"),
            Ok(vec![-8, 2, 0, -3])
        );
        assert_eq!(
            err(&[("scaling_parameters", "X4")]),
            "Scaling parameter X4 must match N|L[0-9]+|T[0-9]+|[+-]?[0-9]+"
        );
        assert_eq!(
            err(&[("scaling_parameters", "T1")]),
            "Fan factor cannot be lower than 2 in T1"
        );
    }

    #[test]
    fn defaults_and_values() {
        let d = CompactionParams::from_map(&map(&[])).unwrap();
        assert!(!d.options.contains_key("min_threshold"));
        let u = d.unified();
        assert_eq!(u.scaling_parameters, vec![2]);
        assert_eq!(u.target_sstable_size_bytes, 1 << 30);
        assert_eq!(u.min_sstable_size_bytes, 100 << 20);
        assert_eq!(u.base_shard_count, 4);
        assert_eq!(u.sstable_growth, 0.333);
        assert_eq!(
            u.overlap_inclusion_method,
            OverlapInclusionMethod::Transitive
        );
        let p = CompactionParams::from_map(&map(&[
            ("scaling_parameters", "L10"),
            ("target_sstable_size", "256MiB"),
            ("base_shard_count", "8"),
            ("min_sstable_size", "0B"),
            ("sstable_growth", "50%"),
            ("expired_sstable_check_frequency_seconds", "60"),
            ("overlap_inclusion_method", "single"),
            ("max_sstables_to_compact", "64"),
        ]))
        .unwrap();
        let u = p.unified();
        assert_eq!(u.scaling_parameters, vec![-8]);
        assert_eq!(u.target_sstable_size_bytes, 256 << 20);
        assert_eq!(u.sstable_growth, 0.5);
        assert_eq!(u.overlap_inclusion_method, OverlapInclusionMethod::Single);
    }

    #[test]
    fn bad_values() {
        let cases: &[(&str, &str, &str)] = &[
            ("base_shard_count", "0", "Invalid configuration, base_shard_count should be positive: 0"),
            ("base_shard_count", "x", "x is not a parsable int (base10) for base_shard_count"),
            ("target_sstable_size", "1KiB", "target_sstable_size 1KiB is not acceptable, size must be at least 1.000MiB"),
            ("target_sstable_size", "1GiX", "target_sstable_size 1GiX is not a valid size in bytes: 1GiX does not end in unit B"),
            ("expired_sstable_check_frequency_seconds", "0", "Invalid configuration, expired_sstable_check_frequency_seconds should be positive: 0"),
            ("unsafe_aggressive_sstable_expiration", "x", "unsafe_aggressive_sstable_expiration should either be 'true' or 'false', not x"),
            ("overlap_inclusion_method", "all", "Invalid overlap inclusion method all. The valid options are [NONE, SINGLE, TRANSITIVE]."),
            ("min_sstable_size", "1GiB", "Invalid configuration, min_sstable_size (1.000GiB) should be less than the target size minimum: 724.077MiB"),
            ("sstable_growth", "2", "sstable_growth 2 must be between 0 and 1"),
            ("sstable_growth", "x", "sstable_growth is not a valid number between 0 and 1: For input string: \"x\""),
            ("max_sstables_to_compact", "x", "x is not a parsable int (base10) for max_sstables_to_compact"),
        ];
        for (key, value, message) in cases {
            assert_eq!(err(&[(key, value)]), *message, "{key} = {value}");
        }
    }
}
