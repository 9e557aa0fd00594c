//! Numbers as the JVM prints them: `Double.toString`, `Float.toString` and
//! `BigDecimal.toString`. Cassandra writes these texts into JSON
//! (`SELECT JSON`, `toJson()`) and into schema options, so clients see them.

use num_bigint::BigInt;

/// `Double.toString`: plain notation for magnitudes in [1e-3, 1e7), otherwise
/// `d.dddE[-]n`; always at least one digit after the point; `NaN`,
/// `Infinity`, `-Infinity`, `-0.0` as Java writes them.
pub fn java_double_to_string(d: f64) -> String {
    if let Some(s) = special(d.is_nan(), d.is_infinite(), d == 0.0, d.is_sign_negative()) {
        return s;
    }
    // Rust's `{:e}` yields the shortest digits that round-trip, e.g. "1.234e-5".
    shortest_to_java(
        d < 0.0,
        &format!("{:e}", d.abs()),
        (1e-3..1e7).contains(&d.abs()),
    )
}

/// `Float.toString`: [`java_double_to_string`]'s rules with the shortest
/// digits that identify the `f32` (`0.1f` prints `0.1`, not `0.10000000149`).
pub fn java_float_to_string(f: f32) -> String {
    if let Some(s) = special(f.is_nan(), f.is_infinite(), f == 0.0, f.is_sign_negative()) {
        return s;
    }
    let abs = f.abs();
    shortest_to_java(f < 0.0, &format!("{abs:e}"), (1e-3..1e7).contains(&abs))
}

fn special(nan: bool, infinite: bool, zero: bool, negative: bool) -> Option<String> {
    let s = match (nan, infinite, zero, negative) {
        (true, ..) => "NaN",
        (_, true, _, false) => "Infinity",
        (_, true, _, true) => "-Infinity",
        (_, _, true, true) => "-0.0",
        (_, _, true, false) => "0.0",
        _ => return None,
    };
    Some(s.to_string())
}

/// Java's layout of shortest digits `sci` (Rust's `{:e}` form of a positive
/// number): plain when `plain`, otherwise `d.dddE<exp>`.
fn shortest_to_java(negative: bool, sci: &str, plain: bool) -> String {
    let sign = if negative { "-" } else { "" };
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    if !plain {
        let frac = if digits.len() > 1 { &digits[1..] } else { "0" };
        return format!("{sign}{}.{frac}E{exp}", &digits[..1]);
    }
    let point = exp + 1;
    if point <= 0 {
        let zeros = "0".repeat(point.unsigned_abs() as usize);
        return format!("{sign}0.{zeros}{digits}");
    }
    let point = point as usize;
    if point >= digits.len() {
        let zeros = "0".repeat(point - digits.len());
        format!("{sign}{digits}{zeros}.0")
    } else {
        format!("{sign}{}.{}", &digits[..point], &digits[point..])
    }
}

/// `BigDecimal.toString` of `unscaled * 10^-scale`: plain when the scale is
/// not negative and the adjusted exponent is at least -6, otherwise one
/// digit, the rest after a point, and `E+n` / `E-n` (`1E+3`, `1.0E-7`).
pub fn java_decimal_to_string(unscaled: &BigInt, scale: i32) -> String {
    let negative = unscaled.sign() == num_bigint::Sign::Minus;
    let sign = if negative { "-" } else { "" };
    let digits = unscaled.magnitude().to_string();
    let adjusted = -i64::from(scale) + (digits.len() as i64 - 1);
    if scale >= 0 && adjusted >= -6 {
        return super::format_decimal(unscaled, scale);
    }
    let (first, rest) = digits.split_at(1);
    let point = if rest.is_empty() {
        String::new()
    } else {
        format!(".{rest}")
    };
    let exp_sign = if adjusted >= 0 { "+" } else { "" };
    format!("{sign}{first}{point}E{exp_sign}{adjusted}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_print_as_java_does() {
        for (d, want) in [
            (0.01, "0.01"),
            (1.0, "1.0"),
            (0.1, "0.1"),
            (6.71e-05, "6.71E-5"),
            (0.001, "0.001"),
            (1e7, "1.0E7"),
            (12345678.9, "1.23456789E7"),
            (1234567.5, "1234567.5"),
            (-2.5, "-2.5"),
            (100.0, "100.0"),
            (1e300, "1.0E300"),
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (f64::NAN, "NaN"),
            (f64::NEG_INFINITY, "-Infinity"),
        ] {
            assert_eq!(java_double_to_string(d), want, "{d}");
        }
    }

    #[test]
    fn floats_print_their_own_shortest_digits() {
        assert_eq!(java_float_to_string(0.1), "0.1");
        assert_eq!(java_float_to_string(2.25), "2.25");
        assert_eq!(java_float_to_string(1e10), "1.0E10");
        assert_eq!(java_float_to_string(3.4028235e38), "3.4028235E38");
        assert_eq!(java_float_to_string(1e-7), "1.0E-7");
        assert_eq!(java_float_to_string(f32::INFINITY), "Infinity");
    }

    #[test]
    fn decimals_print_as_big_decimal_does() {
        let d = |u: i64, s: i32| java_decimal_to_string(&BigInt::from(u), s);
        assert_eq!(d(150, 2), "1.50");
        assert_eq!(d(1, -3), "1E+3");
        assert_eq!(d(10, 8), "1.0E-7");
        assert_eq!(d(1, 6), "0.000001");
        assert_eq!(d(1, 7), "1E-7");
        assert_eq!(d(10, -9), "1.0E+10");
        assert_eq!(d(-123, 0), "-123");
        assert_eq!(d(0, 1), "0.0");
        assert_eq!(d(-5, 1), "-0.5");
    }
}
