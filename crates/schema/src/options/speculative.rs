//! `speculative_retry` and `additional_write_policy`: when a coordinator sends an extra request.
//!
//! Accepted forms (case-insensitive), as in Cassandra 5.0: `ALWAYS`; `NEVER` or `NONE`;
//! `<x>p` or `<x>PERCENTILE` with 0 < x < 100; `<n>ms` (a fraction is truncated);
//! `MIN(a,b)` / `MAX(a,b)` with one percentile and one fixed argument, in either order.
//! Cassandra's message names `speculative_retry` even for `additional_write_policy`; so do we.

use super::{config, Result};
use std::fmt;

const OPTION: &str = "speculative_retry";

/// A parsed speculative retry policy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SpeculativeRetry {
    /// Never speculate (`NEVER`, or its alias `NONE`).
    Never,
    /// Always send the extra request at once.
    Always,
    /// Speculate after this latency percentile (exclusive 0..100).
    Percentile(f64),
    /// Speculate after a fixed delay in milliseconds.
    FixedMs(i32),
    /// `MIN(..)` (`max == false`) or `MAX(..)` of a percentile and a fixed delay.
    Hybrid {
        max: bool,
        percentile: f64,
        fixed_ms: i32,
    },
}

impl Default for SpeculativeRetry {
    /// `99p`.
    fn default() -> Self {
        SpeculativeRetry::Percentile(99.0)
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Kind {
    Never,
    Always,
    Percentile,
    Fixed,
    Hybrid,
}

impl SpeculativeRetry {
    /// Parses the option text, with Cassandra's messages on failure.
    pub fn parse(s: &str) -> Result<SpeculativeRetry> {
        if s.eq_ignore_ascii_case("ALWAYS") {
            return Ok(SpeculativeRetry::Always);
        }
        if s.eq_ignore_ascii_case("NEVER") || s.eq_ignore_ascii_case("NONE") {
            return Ok(SpeculativeRetry::Never);
        }
        if let Some(val) = percentile_digits(s) {
            return parse_percentile(s, val);
        }
        if let Some(val) = strip_suffix_ci(s, "ms").filter(|v| is_digits_dots(v)) {
            return match super::java::parse_double(val) {
                Some(ms) => Ok(SpeculativeRetry::FixedMs(ms as i32)),
                None => invalid(s),
            };
        }
        if let Some((max, a, b)) = hybrid_parts(s) {
            return parse_hybrid(s, max, a, b);
        }
        invalid(s)
    }

    fn kind(&self) -> Kind {
        match self {
            SpeculativeRetry::Never => Kind::Never,
            SpeculativeRetry::Always => Kind::Always,
            SpeculativeRetry::Percentile(_) => Kind::Percentile,
            SpeculativeRetry::FixedMs(_) => Kind::Fixed,
            SpeculativeRetry::Hybrid { .. } => Kind::Hybrid,
        }
    }
}

fn invalid<T>(s: &str) -> Result<T> {
    config(format!("Invalid value {s} for option '{OPTION}'"))
}

fn is_digits_dots(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit() || b == b'.')
}

fn strip_suffix_ci<'a>(s: &'a str, suffix: &str) -> Option<&'a str> {
    let cut = s.len().checked_sub(suffix.len())?;
    if !s.is_char_boundary(cut) {
        return None;
    }
    let (head, tail) = s.split_at(cut);
    tail.eq_ignore_ascii_case(suffix).then_some(head)
}

/// `[0-9.]+p(ercentile)?`, returning the number part.
fn percentile_digits(s: &str) -> Option<&str> {
    strip_suffix_ci(s, "percentile")
        .filter(|v| is_digits_dots(v))
        .or_else(|| strip_suffix_ci(s, "p").filter(|v| is_digits_dots(v)))
}

fn parse_percentile(s: &str, val: &str) -> Result<SpeculativeRetry> {
    let Some(p) = super::java::parse_double(val) else {
        return invalid(s);
    };
    if p <= 0.0 || p >= 100.0 {
        return config(format!(
            "Invalid value {s} for PERCENTILE option '{OPTION}': must be between (0.0 and 100.0)"
        ));
    }
    Ok(SpeculativeRetry::Percentile(p))
}

/// `(MIN|MAX)\(([0-9.]+[a-z]+)\s*,\s*([0-9.]+[a-z]+)\)`, case-insensitive.
fn hybrid_parts(s: &str) -> Option<(bool, &str, &str)> {
    let max = if s.len() >= 4 && s.is_char_boundary(4) {
        let head = &s[..4];
        if head.eq_ignore_ascii_case("MAX(") {
            true
        } else if head.eq_ignore_ascii_case("MIN(") {
            false
        } else {
            return None;
        }
    } else {
        return None;
    };
    let inner = s[4..].strip_suffix(')')?;
    let (a, b) = inner.split_once(',')?;
    let (a, b) = (a.trim_end(), b.trim_start());
    (is_hybrid_arg(a) && is_hybrid_arg(b)).then_some((max, a, b))
}

fn is_hybrid_arg(s: &str) -> bool {
    let letters = s.bytes().rev().take_while(u8::is_ascii_alphabetic).count();
    let number = &s[..s.len() - letters];
    letters > 0 && is_digits_dots(number)
}

fn parse_hybrid(s: &str, max: bool, a: &str, b: &str) -> Result<SpeculativeRetry> {
    let (Ok(first), Ok(second)) = (SpeculativeRetry::parse(a), SpeculativeRetry::parse(b)) else {
        return invalid(s);
    };
    let (percentile, fixed_ms) = match (first, second) {
        (SpeculativeRetry::Percentile(p), SpeculativeRetry::FixedMs(ms))
        | (SpeculativeRetry::FixedMs(ms), SpeculativeRetry::Percentile(p)) => (p, ms),
        _ if first.kind() == second.kind() => {
            let kind = match first.kind() {
                Kind::Percentile => "PERCENTILE",
                _ => "FIXED",
            };
            return config(format!(
                "Invalid value {s} for option '{OPTION}': MIN()/MAX() arguments should be of different types, but both are of type {kind}"
            ));
        }
        // Only percentile and fixed forms can match the argument grammar.
        _ => return invalid(s),
    };
    Ok(SpeculativeRetry::Hybrid {
        max,
        percentile,
        fixed_ms,
    })
}

/// Cassandra prints percentiles with `DecimalFormat("#.####")`: up to 4 decimals, no padding.
fn format_percentile(p: f64) -> String {
    let s = format!("{p:.4}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}p")
}

impl fmt::Display for SpeculativeRetry {
    /// The form stored in `system_schema.tables` and printed by DESCRIBE (`99p`, `50ms`, ...).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpeculativeRetry::Never => f.write_str("NEVER"),
            SpeculativeRetry::Always => f.write_str("ALWAYS"),
            SpeculativeRetry::Percentile(p) => f.write_str(&format_percentile(*p)),
            SpeculativeRetry::FixedMs(ms) => write!(f, "{ms}ms"),
            SpeculativeRetry::Hybrid {
                max,
                percentile,
                fixed_ms,
            } => {
                let fun = if *max { "MAX" } else { "MIN" };
                write!(f, "{fun}({},{fixed_ms}ms)", format_percentile(*percentile))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn show(s: &str) -> String {
        SpeculativeRetry::parse(s).unwrap().to_string()
    }

    fn err(s: &str) -> String {
        SpeculativeRetry::parse(s).unwrap_err().to_string()
    }

    #[test]
    fn accepted_forms_render_canonically() {
        assert_eq!(show("ALWAYS"), "ALWAYS");
        assert_eq!(show("always"), "ALWAYS");
        assert_eq!(show("NONE"), "NEVER");
        assert_eq!(show("never"), "NEVER");
        assert_eq!(show("99p"), "99p");
        assert_eq!(show("99PERCENTILE"), "99p");
        assert_eq!(show("99.5percentile"), "99.5p");
        assert_eq!(show("95.123456P"), "95.1235p");
        assert_eq!(show("50ms"), "50ms");
        assert_eq!(show("50.9MS"), "50ms");
        assert_eq!(show("min(99p,50ms)"), "MIN(99p,50ms)");
        assert_eq!(show("MAX(50ms , 90PERCENTILE)"), "MAX(90p,50ms)");
    }

    #[test]
    fn rejected_forms_have_cassandra_messages() {
        assert_eq!(
            err("foo"),
            "Invalid value foo for option 'speculative_retry'"
        );
        assert_eq!(err("99"), "Invalid value 99 for option 'speculative_retry'");
        assert_eq!(
            err("1.2.3p"),
            "Invalid value 1.2.3p for option 'speculative_retry'"
        );
        assert_eq!(
            err("100p"),
            "Invalid value 100p for PERCENTILE option 'speculative_retry': must be between (0.0 and 100.0)"
        );
        assert_eq!(
            err("0p"),
            "Invalid value 0p for PERCENTILE option 'speculative_retry': must be between (0.0 and 100.0)"
        );
        assert_eq!(
            err("MIN(99p,90p)"),
            "Invalid value MIN(99p,90p) for option 'speculative_retry': MIN()/MAX() arguments should be of different types, but both are of type PERCENTILE"
        );
        assert_eq!(
            err("MIN(99p,5xs)"),
            "Invalid value MIN(99p,5xs) for option 'speculative_retry'"
        );
        assert_eq!(
            err("-5ms"),
            "Invalid value -5ms for option 'speculative_retry'"
        );
    }
}
