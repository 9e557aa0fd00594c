//! Decimal arithmetic as Cassandra's `DecimalType` does it with Java's
//! `BigDecimal`: sums, differences and products exact; quotients rounded
//! half-up to at least 32 significant digits (scale between 32 and 1000)
//! with trailing zeros stripped; remainders exact, with `BigDecimal`'s
//! scale. A value is `(unscaled, scale)`, meaning `unscaled * 10^-scale`.

use num_bigint::{BigInt, Sign};

/// A decimal: `unscaled * 10^-scale`.
pub type Dec = (BigInt, i32);

/// Scales past this many digits are refused rather than built: a power
/// of ten that large would take the node's memory for one value.
const DIGITS_MAX: i64 = 100_000;

/// `DecimalType.divide`'s bounds on the quotient's scale.
const MIN_SCALE: i64 = 32;
const MAX_SCALE: i64 = 1000;

fn pow10(n: i64) -> Result<BigInt, String> {
    if !(0..=DIGITS_MAX).contains(&n) {
        return Err("Overflow".into());
    }
    Ok(BigInt::from(10u8).pow(n as u32))
}

fn is_zero(n: &BigInt) -> bool {
    n.sign() == Sign::NoSign
}

fn is_negative(n: &BigInt) -> bool {
    n.sign() == Sign::Minus
}

fn abs(n: &BigInt) -> BigInt {
    BigInt::from_biguint(Sign::Plus, n.magnitude().clone())
}

/// Both operands at the larger scale.
fn aligned(a: &Dec, b: &Dec) -> Result<(BigInt, BigInt, i32), String> {
    let scale = a.1.max(b.1);
    let x = &a.0 * pow10(i64::from(scale) - i64::from(a.1))?;
    let y = &b.0 * pow10(i64::from(scale) - i64::from(b.1))?;
    Ok((x, y, scale))
}

pub fn add(a: &Dec, b: &Dec) -> Result<Dec, String> {
    let (x, y, scale) = aligned(a, b)?;
    Ok((x + y, scale))
}

pub fn sub(a: &Dec, b: &Dec) -> Result<Dec, String> {
    let (x, y, scale) = aligned(a, b)?;
    Ok((x - y, scale))
}

pub fn mul(a: &Dec, b: &Dec) -> Result<Dec, String> {
    let scale = a.1.checked_add(b.1).ok_or("Overflow")?;
    Ok((&a.0 * &b.0, scale))
}

/// Decimal digits of `|n|` (1 for zero), Java's `precision()`.
fn precision(n: &BigInt) -> i64 {
    if is_zero(n) {
        1
    } else {
        n.magnitude().to_string().len() as i64
    }
}

/// `x / y` rounded half away from zero.
fn div_half_up(x: &BigInt, y: &BigInt) -> BigInt {
    let q = x / y;
    let r = x - &q * y;
    if abs(&r) * 2u8 >= abs(y) {
        if is_negative(x) == is_negative(y) {
            q + 1u8
        } else {
            q - 1u8
        }
    } else {
        q
    }
}

/// Java's `stripTrailingZeros` (zero becomes `0`, scale 0).
fn strip(mut d: Dec) -> Dec {
    if is_zero(&d.0) {
        return (BigInt::from(0u8), 0);
    }
    let ten = BigInt::from(10u8);
    while is_zero(&(&d.0 % &ten)) {
        d.0 /= &ten;
        d.1 -= 1;
    }
    d
}

pub fn div(a: &Dec, b: &Dec) -> Result<Dec, String> {
    if is_zero(&b.0) {
        return Err("BigInteger divide by zero".into());
    }
    let first_digit = (precision(&a.0) - i64::from(a.1)) - (precision(&b.0) - i64::from(b.1));
    let scale = (MIN_SCALE - first_digit)
        .max(i64::from(a.1))
        .max(i64::from(b.1))
        .clamp(MIN_SCALE, MAX_SCALE);
    // a / b at `scale`: a.0 * 10^(scale - a.1 + b.1) / b.0.
    let shift = scale - i64::from(a.1) + i64::from(b.1);
    let q = if shift >= 0 {
        div_half_up(&(&a.0 * pow10(shift)?), &b.0)
    } else {
        div_half_up(&a.0, &(&b.0 * pow10(-shift)?))
    };
    Ok(strip((q, scale as i32)))
}

/// Java's `BigDecimal.remainder`: `a - trunc(a / b) * b`.
pub fn rem(a: &Dec, b: &Dec) -> Result<Dec, String> {
    if is_zero(&b.0) {
        return Err(if is_zero(&a.0) {
            "Division undefined".into()
        } else {
            "Division by zero".into()
        });
    }
    let (x, y, scale) = aligned(a, b)?;
    let q = &x / &y;
    let r = &x - &q * &y;
    // The integral quotient keeps at most its trailing zeros below the
    // divisor's scale, which decides the remainder's scale.
    let result_scale = if is_zero(&q) {
        a.1
    } else {
        let ten = BigInt::from(10u8);
        let mut tz = 0i64;
        let mut n = abs(&q);
        while is_zero(&(&n % &ten)) && tz < i64::from(b.1) - i64::from(a.1) {
            n /= &ten;
            tz += 1;
        }
        (i64::from(b.1) - tz).max(i64::from(a.1)) as i32
    };
    // `r` is at `scale` (the larger one); bring it to `result_scale`,
    // which lies between a's scale and that.
    let drop = i64::from(scale) - i64::from(result_scale);
    let r = if drop > 0 {
        r / pow10(drop)?
    } else {
        r * pow10(-drop)?
    };
    Ok((r, result_scale))
}

#[cfg(test)]
mod tests {
    use super::*;
    use varve_types::literal::{format_decimal, parse_decimal};

    fn d(s: &str) -> Dec {
        parse_decimal(s).unwrap()
    }

    fn show(r: Result<Dec, String>) -> String {
        match r {
            Ok((u, s)) => format_decimal(&u, s),
            Err(e) => format!("error: {e}"),
        }
    }

    #[test]
    fn sums_products_keep_scales() {
        assert_eq!(show(add(&d("1.50"), &d("1.0"))), "2.50");
        assert_eq!(show(sub(&d("1.50"), &d("0.5"))), "1.00");
        assert_eq!(show(mul(&d("1.50"), &d("2.0"))), "3.000");
        assert_eq!(show(mul(&d("8.5"), &d("8.5"))), "72.25");
    }

    #[test]
    fn quotients_round_half_up_and_strip() {
        // Results Cassandra 5.0.4 returned (corpus 21_issue21_arithmetic).
        assert_eq!(
            show(div(&d("1"), &d("3.0"))),
            "0.33333333333333333333333333333333"
        );
        assert_eq!(
            show(div(&d("2"), &d("3.0"))),
            "0.66666666666666666666666666666667"
        );
        assert_eq!(show(div(&d("10"), &d("4.0"))), "2.5");
        assert_eq!(show(div(&d("1.00"), &d("1.0"))), "1");
        assert_eq!(
            show(div(&d("100"), &d("7.0"))),
            "14.28571428571428571428571428571429"
        );
        assert_eq!(
            show(div(&d("8.5"), &d("3.0"))),
            "2.83333333333333333333333333333333"
        );
        assert_eq!(
            show(div(&d("-2"), &d("3.0"))),
            "-0.66666666666666666666666666666667"
        );
        assert_eq!(
            show(div(&d("1"), &d("0"))),
            "error: BigInteger divide by zero"
        );
        assert_eq!(
            show(div(&d("0"), &d("0"))),
            "error: BigInteger divide by zero"
        );
    }

    #[test]
    fn remainders_take_java_scales() {
        assert_eq!(show(rem(&d("7.50"), &d("2.0"))), "1.50");
        assert_eq!(show(rem(&d("100"), &d("3.0"))), "1.0");
        assert_eq!(show(rem(&d("7.5"), &d("2.0"))), "1.5");
        assert_eq!(show(rem(&d("-7.5"), &d("2.0"))), "-1.5");
        assert_eq!(show(rem(&d("8.5"), &d("8.5"))), "0.0");
        assert_eq!(show(rem(&d("8.5"), &d("0.3"))), "0.1");
        assert_eq!(show(rem(&d("1"), &d("3.0"))), "1");
        assert_eq!(show(rem(&d("1"), &d("0"))), "error: Division by zero");
        assert_eq!(show(rem(&d("0"), &d("0"))), "error: Division undefined");
    }

    #[test]
    fn huge_scales_are_refused_not_built() {
        let tiny = (BigInt::from(1), i32::MAX);
        assert!(add(&tiny, &d("1")).is_err());
        assert!(mul(&tiny, &tiny).is_err());
        assert!(div(&d("1"), &tiny).is_err());
    }
}
