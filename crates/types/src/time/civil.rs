//! Calendar arithmetic (proleptic Gregorian, UTC) and the text forms of
//! `date`, `time` and `timestamp`, without any date library.
//!
//! The day conversions are the classic era-based days-from-civil /
//! civil-from-days algorithms; they are exact for every `i64` day count we
//! can reach from the wire types.

use crate::codec::NANOS_PER_DAY;
use crate::{Error, Result};

/// The wire form of `date` counts days with 1970-01-01 at 2^31.
pub const DATE_EPOCH_OFFSET: i64 = 1 << 31;
const MS_PER_DAY: i64 = 86_400_000;
/// Most digits a year may have in text (keeps arithmetic far from overflow).
const YEAR_DIGITS_MAX: usize = 9;
/// Digits of a fraction of a second: nanosecond precision.
const FRACTION_DIGITS_MAX: usize = 9;

/// Days since 1970-01-01 of the civil date `y-m-d`.
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (i64::from(m) + 9) % 12;
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date `(year, month, day)` of a day count since 1970-01-01.
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// A small cursor over ASCII text.
struct Scan<'a> {
    s: &'a [u8],
    pos: usize,
}

impl Scan<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }
    fn eat(&mut self, c: u8) -> bool {
        let hit = self.peek() == Some(c);
        self.pos += usize::from(hit);
        hit
    }
    /// Reads between `min` and `max` decimal digits; returns value and count.
    fn digits(&mut self, min: usize, max: usize) -> Option<(i64, usize)> {
        let start = self.pos;
        let mut v = 0i64;
        while self.pos - start < max {
            match self.peek() {
                Some(c @ b'0'..=b'9') => {
                    v = v * 10 + i64::from(c - b'0');
                    self.pos += 1;
                }
                _ => break,
            }
        }
        let n = self.pos - start;
        (n >= min).then_some((v, n))
    }
    fn done(&self) -> bool {
        self.pos == self.s.len()
    }
}

fn is_integer(s: &str) -> bool {
    let digits = s.strip_prefix('-').unwrap_or(s);
    !digits.is_empty() && digits.bytes().all(|c| c.is_ascii_digit())
}

/// Reads `[+-]YYYY-MM-DD` and returns days since 1970-01-01.
fn scan_date(sc: &mut Scan<'_>) -> Option<i64> {
    let negative = sc.eat(b'-');
    if !negative {
        sc.eat(b'+');
    }
    let (year, _) = sc.digits(4, YEAR_DIGITS_MAX)?;
    let year = if negative { -year } else { year };
    if !sc.eat(b'-') {
        return None;
    }
    let (month, _) = sc.digits(2, 2)?;
    if !sc.eat(b'-') {
        return None;
    }
    let (day, _) = sc.digits(2, 2)?;
    let (month, day) = (u32::try_from(month).ok()?, u32::try_from(day).ok()?);
    if !(1..=12).contains(&month) || day == 0 || day > days_in_month(year, month) {
        return None;
    }
    Some(days_from_civil(year, month, day))
}

/// Parses a `date` literal: `YYYY-MM-DD` (optionally signed, more year
/// digits allowed), or an integer that is the raw wire value (days with
/// the epoch at 2^31). Returns the wire value.
pub fn parse_date(s: &str) -> Result<u32> {
    let bad = || Error::Marshal(format!("Unable to coerce '{s}' to a formatted date (long)"));
    let range = || Error::Marshal(format!("Input date {s} is out of range"));
    if is_integer(s) {
        let raw: i64 = s.parse().map_err(|_| range())?;
        return u32::try_from(raw).map_err(|_| range());
    }
    let mut sc = Scan {
        s: s.as_bytes(),
        pos: 0,
    };
    let days = scan_date(&mut sc).filter(|_| sc.done()).ok_or_else(bad)?;
    u32::try_from(days + DATE_EPOCH_OFFSET).map_err(|_| range())
}

fn format_year(y: i64) -> String {
    match y {
        0..=9999 => format!("{y:04}"),
        y if y > 9999 => format!("+{y}"),
        y => format!("-{:04}", y.unsigned_abs()),
    }
}

/// `YYYY-MM-DD` of a wire `date` value (years past 9999 get a `+`).
pub fn format_date(d: u32) -> String {
    let (y, m, day) = civil_from_days(i64::from(d) - DATE_EPOCH_OFFSET);
    format!("{}-{m:02}-{day:02}", format_year(y))
}

/// Reads `.f{1,9}` if present and returns nanoseconds.
fn scan_fraction(sc: &mut Scan<'_>) -> Option<i64> {
    if !sc.eat(b'.') {
        return Some(0);
    }
    let (v, n) = sc.digits(1, FRACTION_DIGITS_MAX)?;
    Some(v * 10i64.pow((FRACTION_DIGITS_MAX - n) as u32))
}

/// Reads `HH:MM[:SS[.f]]` (hours may have one digit) and returns
/// nanoseconds since midnight; seconds are required when `need_seconds`.
fn scan_clock(sc: &mut Scan<'_>, need_seconds: bool) -> Option<i64> {
    let (h, _) = sc.digits(1, 2)?;
    if !sc.eat(b':') {
        return None;
    }
    let (m, _) = sc.digits(2, 2)?;
    let (mut s, mut frac) = (0, 0);
    if sc.eat(b':') {
        s = sc.digits(2, 2)?.0;
        frac = scan_fraction(sc)?;
    } else if need_seconds {
        return None;
    }
    if h > 23 || m > 59 || s > 59 {
        return None;
    }
    Some(((h * 60 + m) * 60 + s) * 1_000_000_000 + frac)
}

/// Parses a `time` literal `HH:MM:SS[.fffffffff]`, or an integer count of
/// nanoseconds, into nanoseconds since midnight.
pub fn parse_time(s: &str) -> Result<i64> {
    let bad = || Error::Marshal(format!("Unable to coerce '{s}' to a formatted time (long)"));
    let t = s.trim();
    if is_integer(t) {
        let n: i64 = t.parse().map_err(|_| bad())?;
        if !(0..NANOS_PER_DAY).contains(&n) {
            return Err(Error::Marshal(format!(
                "Input long out of bounds: {n}. Valid range is 0 to {}",
                NANOS_PER_DAY - 1
            )));
        }
        return Ok(n);
    }
    let mut sc = Scan {
        s: t.as_bytes(),
        pos: 0,
    };
    scan_clock(&mut sc, true)
        .filter(|_| sc.done())
        .ok_or_else(bad)
}

/// `HH:MM:SS.fffffffff`, as Cassandra prints `time` values.
pub fn format_time(nanos: i64) -> String {
    if !(0..NANOS_PER_DAY).contains(&nanos) {
        return nanos.to_string();
    }
    let secs = nanos / 1_000_000_000;
    let (h, m, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    format!("{h:02}:{m:02}:{s:02}.{:09}", nanos % 1_000_000_000)
}

/// Reads an optional zone: `Z`, `UTC`, `GMT`, `+HH`, `+HHMM`, `+HH:MM`
/// (or `-`), optionally after one space. Returns the offset in seconds.
fn scan_zone(sc: &mut Scan<'_>) -> Option<i64> {
    if sc.done() {
        return Some(0);
    }
    sc.eat(b' ');
    let rest = &sc.s[sc.pos..];
    for name in [&b"UTC"[..], b"GMT", b"Z", b"z"] {
        if rest == name {
            sc.pos = sc.s.len();
            return Some(0);
        }
    }
    let sign = match sc.peek()? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    sc.pos += 1;
    let (h, _) = sc.digits(2, 2)?;
    sc.eat(b':');
    let m = if sc.done() { 0 } else { sc.digits(2, 2)?.0 };
    if h > 18 || m > 59 {
        return None;
    }
    Some(sign * (h * 3600 + m * 60))
}

/// Parses a `timestamp` literal into milliseconds since the epoch:
/// `yyyy-mm-dd`, optionally followed by ` HH:MM`, ` HH:MM:SS` or
/// ` HH:MM:SS.fff` (space or `T`), optionally followed by a zone (`Z`,
/// `+HHMM`, `+HH:MM`, `+HH`, `UTC`, `GMT`); no zone means UTC. An integer is
/// taken as milliseconds. Fractions past milliseconds are accepted (cqlsh
/// prints six digits) and truncated.
pub fn parse_timestamp(s: &str) -> Result<i64> {
    let bad = || Error::Marshal(format!("Unable to parse a date/time from '{s}'"));
    if is_integer(s) {
        return s.parse().map_err(|_| bad());
    }
    let mut sc = Scan {
        s: s.as_bytes(),
        pos: 0,
    };
    let days = scan_date(&mut sc).ok_or_else(bad)?;
    let mut nanos = 0;
    if matches!(sc.peek(), Some(b' ' | b'T')) {
        let save = sc.pos;
        sc.pos += 1;
        match scan_clock(&mut sc, false) {
            Some(n) => nanos = n,
            // A space may also start the zone, as in `2021-01-02 +0100`.
            None => sc.pos = save,
        }
    }
    let offset = scan_zone(&mut sc).filter(|_| sc.done()).ok_or_else(bad)?;
    let ms = days
        .checked_mul(MS_PER_DAY)
        .and_then(|v| v.checked_add(nanos / 1_000_000))
        .and_then(|v| v.checked_sub(offset * 1000))
        .ok_or_else(bad)?;
    Ok(ms)
}

/// `2021-03-04 05:06:07.123000+0000`, the way cqlsh prints timestamps.
pub fn format_timestamp(ms: i64) -> String {
    let days = ms.div_euclid(MS_PER_DAY);
    let in_day = ms.rem_euclid(MS_PER_DAY);
    let (y, mo, d) = civil_from_days(days);
    let secs = in_day / 1000;
    let (h, mi, s) = (secs / 3600, secs / 60 % 60, secs % 60);
    let micros = (in_day % 1000) * 1000;
    format!(
        "{}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}.{micros:06}+0000",
        format_year(y)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_round_trip_known_days() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(days_from_civil(1969, 12, 31), -1);
        assert_eq!(days_from_civil(1582, 10, 15), -141_427);
        for z in [
            -1_000_000_000i64,
            -719_468,
            -1,
            0,
            59,
            60,
            11_016,
            2_932_896,
        ] {
            let (y, m, d) = civil_from_days(z);
            assert_eq!(days_from_civil(y, m, d), z);
        }
    }

    #[test]
    fn dates() {
        assert_eq!(parse_date("1970-01-01"), Ok(1 << 31));
        assert_eq!(parse_date("1970-01-02"), Ok((1 << 31) + 1));
        assert_eq!(parse_date("2147483648"), Ok(1 << 31));
        assert_eq!(parse_date("0"), Ok(0));
        assert!(parse_date("-1").is_err());
        assert!(parse_date("4294967296").is_err());
        assert_eq!(format_date(0), "-5877641-06-23");
        assert_eq!(parse_date("-5877641-06-23"), Ok(0));
        assert_eq!(format_date(u32::MAX), "+5881580-07-11");
        assert_eq!(parse_date("+5881580-07-11"), Ok(u32::MAX));
        assert_eq!(
            parse_date("2016-02-29").map(format_date),
            Ok("2016-02-29".into())
        );
        for bad in [
            "2015-02-29",
            "2015-13-01",
            "2015-1-01",
            "15-01-01",
            "2015-01-01x",
            "",
        ] {
            assert!(parse_date(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn times() {
        assert_eq!(parse_time("00:00:00"), Ok(0));
        assert_eq!(parse_time("08:12:57.1"), Ok(29_577_100_000_000));
        assert_eq!(parse_time("23:59:59.999999999"), Ok(NANOS_PER_DAY - 1));
        assert_eq!(parse_time("1000"), Ok(1000));
        assert!(parse_time("86400000000000").is_err());
        assert!(parse_time("24:00:00").is_err());
        assert!(parse_time("12:00").is_err());
        assert!(parse_time("12:00:00.1234567890").is_err());
        assert_eq!(format_time(29_577_100_000_000), "08:12:57.100000000");
    }

    #[test]
    fn timestamps() {
        let t = 1_614_834_367_123; // 2021-03-04 05:06:07.123 UTC
        assert_eq!(format_timestamp(t), "2021-03-04 05:06:07.123000+0000");
        for s in [
            "2021-03-04 05:06:07.123",
            "2021-03-04T05:06:07.123Z",
            "2021-03-04 05:06:07.123+0000",
            "2021-03-04 06:06:07.123+01:00",
            "2021-03-04 04:06:07.123-0100",
            "2021-03-04 05:06:07.123000+0000",
            "2021-03-04 06:06:07.123 +01",
        ] {
            assert_eq!(parse_timestamp(s), Ok(t), "{s}");
        }
        assert_eq!(parse_timestamp("2021-03-04"), Ok(1_614_816_000_000));
        assert_eq!(parse_timestamp("2021-03-04 05:06"), Ok(1_614_834_360_000));
        assert_eq!(parse_timestamp("2021-03-04+0100"), Ok(1_614_812_400_000));
        assert_eq!(parse_timestamp("-5"), Ok(-5));
        assert_eq!(format_timestamp(-1), "1969-12-31 23:59:59.999000+0000");
        for bad in [
            "2021-03-04 25:00",
            "2021-03-04 05:06:07.",
            "2021-03-04 05",
            "x",
        ] {
            assert!(parse_timestamp(bad).is_err(), "{bad}");
        }
    }
}
