//! The text forms of `duration`, as Cassandra's `Duration.from` reads them:
//!
//! - units: `1y2mo3w4d5h6m7s8ms9us10ns` (`µs` too, any case), each unit at
//!   most once and in that order;
//! - ISO 8601: `P1Y2M3DT4H5M6S` (every part optional) and `P2W`;
//! - ISO 8601 alternative: `P0001-02-03T04:05:06`.
//!
//! A leading `-` negates all three fields. The result is
//! `(months, days, nanoseconds)`.

use crate::{Error, Result};

const NANOS_PER_HOUR: i64 = 3_600_000_000_000;
const NANOS_PER_MINUTE: i64 = 60_000_000_000;
const NANOS_PER_SECOND: i64 = 1_000_000_000;

/// The units of the compact form, in the order they must appear.
const UNITS: [(&str, Field, i64); 10] = [
    ("y", Field::Months, 12),
    ("mo", Field::Months, 1),
    ("w", Field::Days, 7),
    ("d", Field::Days, 1),
    ("h", Field::Nanos, NANOS_PER_HOUR),
    ("m", Field::Nanos, NANOS_PER_MINUTE),
    ("s", Field::Nanos, NANOS_PER_SECOND),
    ("ms", Field::Nanos, 1_000_000),
    ("us", Field::Nanos, 1_000),
    ("ns", Field::Nanos, 1),
];

#[derive(Clone, Copy)]
enum Field {
    Months,
    Days,
    Nanos,
}

/// Accumulates the three fields with overflow checks.
#[derive(Default)]
struct Acc {
    months: i64,
    days: i64,
    nanos: i64,
}

impl Acc {
    fn add(&mut self, field: Field, n: i64, unit: i64) -> Option<()> {
        let slot = match field {
            Field::Months => &mut self.months,
            Field::Days => &mut self.days,
            Field::Nanos => &mut self.nanos,
        };
        *slot = slot.checked_add(n.checked_mul(unit)?)?;
        Some(())
    }
}

fn number(s: &str) -> Option<i64> {
    if s.is_empty() || !s.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

fn parse_units(s: &str, acc: &mut Acc) -> Option<()> {
    let mut rest = s;
    let mut next_unit = 0;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let digits_end = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let n = number(&rest[..digits_end])?;
        rest = &rest[digits_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let unit = rest[..unit_end].to_ascii_lowercase().replace('µ', "u");
        rest = &rest[unit_end..];
        let idx = UNITS.iter().position(|(name, _, _)| *name == unit)?;
        if idx < next_unit {
            return None;
        }
        next_unit = idx + 1;
        let (_, field, scale) = UNITS[idx];
        acc.add(field, n, scale)?;
    }
    Some(())
}

/// `P(nY)?(nM)?(nD)?(T(nH)?(nM)?(nS)?)?`, after the `P`.
fn parse_iso(s: &str, acc: &mut Acc) -> Option<()> {
    let (date, time) = match s.split_once('T') {
        Some((d, t)) => (d, Some(t)),
        None => (s, None),
    };
    let mut section = |text: &str, designators: &[(char, Field, i64)]| -> Option<()> {
        let mut rest = text;
        let mut next = 0;
        while !rest.is_empty() {
            let end = rest.find(|c: char| !c.is_ascii_digit())?;
            let n = number(&rest[..end])?;
            let d = rest[end..].chars().next()?;
            let idx = designators.iter().position(|(c, _, _)| *c == d)?;
            if idx < next {
                return None;
            }
            next = idx + 1;
            let (_, field, scale) = designators[idx];
            acc.add(field, n, scale)?;
            rest = &rest[end + 1..];
        }
        Some(())
    };
    section(
        date,
        &[
            ('Y', Field::Months, 12),
            ('M', Field::Months, 1),
            ('D', Field::Days, 1),
        ],
    )?;
    if let Some(t) = time {
        section(
            t,
            &[
                ('H', Field::Nanos, NANOS_PER_HOUR),
                ('M', Field::Nanos, NANOS_PER_MINUTE),
                ('S', Field::Nanos, NANOS_PER_SECOND),
            ],
        )?;
    }
    Some(())
}

/// `YYYY-MM-DDTHH:MM:SS`, after the `P`.
fn parse_alternative(s: &str, acc: &mut Acc) -> Option<()> {
    let b = s.as_bytes();
    let shape = b"dddd-dd-ddTdd:dd:dd";
    if b.len() != shape.len() {
        return None;
    }
    for (c, want) in b.iter().zip(shape) {
        let ok = if *want == b'd' {
            c.is_ascii_digit()
        } else {
            c == want
        };
        if !ok {
            return None;
        }
    }
    let num = |r: std::ops::Range<usize>| number(&s[r]);
    acc.add(Field::Months, num(0..4)?, 12)?;
    acc.add(Field::Months, num(5..7)?, 1)?;
    acc.add(Field::Days, num(8..10)?, 1)?;
    acc.add(Field::Nanos, num(11..13)?, NANOS_PER_HOUR)?;
    acc.add(Field::Nanos, num(14..16)?, NANOS_PER_MINUTE)?;
    acc.add(Field::Nanos, num(17..19)?, NANOS_PER_SECOND)
}

/// Parses any of Cassandra's duration forms into `(months, days, nanos)`.
pub fn parse_duration(s: &str) -> Result<(i32, i32, i64)> {
    let bad = || Error::Marshal(format!("Unable to convert '{s}' to a duration"));
    let (negative, body) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    let mut acc = Acc::default();
    let parsed = match body.strip_prefix('P') {
        Some(p) if p.ends_with('W') => {
            number(&p[..p.len() - 1]).and_then(|w| acc.add(Field::Days, w, 7))
        }
        Some(p) if p.contains('-') => parse_alternative(p, &mut acc),
        Some(p) => parse_iso(p, &mut acc),
        None => parse_units(body, &mut acc),
    };
    parsed.ok_or_else(bad)?;
    let months = i32::try_from(acc.months).map_err(|_| {
        Error::Marshal(format!(
            "Invalid duration. The total number of months must be less or equal to {}",
            i32::MAX
        ))
    })?;
    let days = i32::try_from(acc.days).map_err(|_| {
        Error::Marshal(format!(
            "Invalid duration. The total number of days must be less or equal to {}",
            i32::MAX
        ))
    })?;
    Ok(if negative {
        (-months, -days, -acc.nanos)
    } else {
        (months, days, acc.nanos)
    })
}

/// The compact unit form Cassandra prints, e.g. `1y2mo3d4h5m6s7ms8us9ns`;
/// a zero duration prints as `0s` so the output stays a valid literal.
pub fn format_duration(months: i32, days: i32, nanos: i64) -> String {
    let negative = months < 0 || days < 0 || nanos < 0;
    let mut out = String::new();
    if negative {
        out.push('-');
    }
    let mut part = |n: u64, unit: &str| {
        if n != 0 {
            out.push_str(&format!("{n}{unit}"));
        }
    };
    let months = u64::from(months.unsigned_abs());
    part(months / 12, "y");
    part(months % 12, "mo");
    part(u64::from(days.unsigned_abs()), "d");
    let mut rest = nanos.unsigned_abs();
    for (unit, size) in [
        ("h", NANOS_PER_HOUR as u64),
        ("m", NANOS_PER_MINUTE as u64),
        ("s", NANOS_PER_SECOND as u64),
        ("ms", 1_000_000),
        ("us", 1_000),
        ("ns", 1),
    ] {
        part(rest / size, unit);
        rest %= size;
    }
    if out.is_empty() || out == "-" {
        return "0s".into();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unit_form() {
        let want = (
            14,
            25,
            5 * NANOS_PER_HOUR + 6 * NANOS_PER_MINUTE + 7 * NANOS_PER_SECOND + 8_009_010,
        );
        assert_eq!(parse_duration("1y2mo3w4d5h6m7s8ms9us10ns"), Ok(want));
        assert_eq!(parse_duration("1Y2MO3W4D5H6M7S8MS9µs10NS"), Ok(want));
        assert_eq!(parse_duration("-3h"), Ok((0, 0, -3 * NANOS_PER_HOUR)));
        assert_eq!(parse_duration("90m"), Ok((0, 0, 90 * NANOS_PER_MINUTE)));
        for bad in [
            "", "-", "3", "h", "3h2d", "3h3h", "3x", "1.5h", "--3h", "3 h",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn iso_forms() {
        let want = (
            14,
            3,
            4 * NANOS_PER_HOUR + 5 * NANOS_PER_MINUTE + 6 * NANOS_PER_SECOND,
        );
        assert_eq!(parse_duration("P1Y2M3DT4H5M6S"), Ok(want));
        assert_eq!(parse_duration("P0001-02-03T04:05:06"), Ok(want));
        assert_eq!(parse_duration("P2W"), Ok((0, 14, 0)));
        assert_eq!(parse_duration("-P2W"), Ok((0, -14, 0)));
        assert_eq!(parse_duration("PT1M"), Ok((0, 0, NANOS_PER_MINUTE)));
        assert_eq!(parse_duration("P1M"), Ok((1, 0, 0)));
        for bad in ["P1H", "PT1D", "P1M1Y", "P0001-02-03", "PxW", "P1Y2"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn overflow_is_an_error() {
        assert!(parse_duration("178956971y").is_err());
        assert_eq!(parse_duration("2147483647mo"), Ok((i32::MAX, 0, 0)));
        assert!(parse_duration("2147483648d").is_err());
        assert!(parse_duration("9223372036854775807h").is_err());
        assert!(parse_duration("99999999999999999999ns").is_err());
    }

    #[test]
    fn format_round_trips() {
        assert_eq!(
            format_duration(14, 3, 3_723_000_000_001),
            "1y2mo3d1h2m3s1ns"
        );
        assert_eq!(format_duration(0, 0, 0), "0s");
        assert_eq!(format_duration(0, -1, -1000), "-1d1us");
        for (m, d, n) in [
            (14, 3, 3_723_000_000_001),
            (0, -1, -1000),
            (-5, 0, 0),
            (0, 0, i64::MIN + 1),
        ] {
            assert_eq!(parse_duration(&format_duration(m, d, n)), Ok((m, d, n)));
        }
    }
}
