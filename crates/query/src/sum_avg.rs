//! `sum` and `avg` of numbers as Cassandra 5.0 computes them, for the
//! aggregates and for `collection_sum` / `collection_avg`:
//!
//! - integers are summed exactly and the sum narrowed to the argument's
//!   type (so a tinyint sum wraps, as Java's byte arithmetic does), while
//!   the average divides the exact sum, truncating toward zero;
//! - varints are exact, their average truncated toward zero;
//! - floats and doubles are summed as doubles with compensated (Kahan)
//!   summation, the result narrowed back to the argument's type;
//! - decimals are summed exactly; their average is a running mean, each
//!   step's quotient rounded half-even at the dividend's scale, as
//!   `BigDecimal.divide(count, HALF_EVEN)` rounds it.
//!
//! With no value at all, both are zero of the argument's type.

use crate::arith::decimal::{self, Dec};
use num_bigint::BigInt;
use varve_types::{CqlType, Value};

/// A running sum and average of values of one numeric type.
#[derive(Debug, Clone)]
pub struct SumAvg {
    ty: CqlType,
    count: i64,
    int: i128,
    big: BigInt,
    float: Compensated,
    dec_sum: Dec,
    dec_avg: Dec,
}

/// Whether sum and avg take values of `ty`.
pub fn is_summable(ty: &CqlType) -> bool {
    matches!(
        ty.unfrozen(),
        CqlType::TinyInt
            | CqlType::SmallInt
            | CqlType::Int
            | CqlType::BigInt
            | CqlType::Counter
            | CqlType::Varint
            | CqlType::Float
            | CqlType::Double
            | CqlType::Decimal
    )
}

impl SumAvg {
    pub fn new(ty: &CqlType) -> SumAvg {
        SumAvg {
            ty: ty.unfrozen().clone(),
            count: 0,
            int: 0,
            big: BigInt::default(),
            float: Compensated::default(),
            dec_sum: (BigInt::default(), 0),
            dec_avg: (BigInt::default(), 0),
        }
    }

    /// Adds one value (of the type given to [`SumAvg::new`]).
    pub fn add(&mut self, v: &Value) -> Result<(), String> {
        self.count += 1;
        match v {
            Value::TinyInt(x) => self.int += i128::from(*x),
            Value::SmallInt(x) => self.int += i128::from(*x),
            Value::Int(x) => self.int += i128::from(*x),
            Value::BigInt(x) | Value::Counter(x) => self.int += i128::from(*x),
            Value::Varint(x) => self.big += x,
            Value::Float(x) => self.float.add(f64::from(*x)),
            Value::Double(x) => self.float.add(*x),
            Value::Decimal { unscaled, scale } => {
                let d = (unscaled.clone(), *scale);
                self.dec_sum = decimal::add(&self.dec_sum, &d)?;
                let diff = decimal::sub(&d, &self.dec_avg)?;
                let step = div_half_even(&diff, self.count);
                self.dec_avg = decimal::add(&self.dec_avg, &step)?;
            }
            other => return Err(format!("{other:?} is not a number")),
        }
        Ok(())
    }

    /// The sum, in the argument's type.
    pub fn sum(&self) -> Value {
        self.narrow(self.int, &self.big, self.float.total(), &self.dec_sum)
    }

    /// The average, in the argument's type.
    pub fn avg(&self) -> Value {
        let n = self.count.max(1);
        let big = &self.big / BigInt::from(n);
        self.narrow(
            self.int / i128::from(n),
            &big,
            self.float.total() / n as f64,
            &self.dec_avg,
        )
    }

    fn narrow(&self, int: i128, big: &BigInt, float: f64, dec: &Dec) -> Value {
        match self.ty {
            CqlType::TinyInt => Value::TinyInt(int as i8),
            CqlType::SmallInt => Value::SmallInt(int as i16),
            CqlType::Int => Value::Int(int as i32),
            CqlType::Counter => Value::Counter(int as i64),
            CqlType::Varint => Value::Varint(big.clone()),
            CqlType::Float => Value::Float(float as f32),
            CqlType::Double => Value::Double(float),
            CqlType::Decimal => Value::Decimal {
                unscaled: dec.0.clone(),
                scale: dec.1,
            },
            _ => Value::BigInt(int as i64),
        }
    }
}

/// Compensated summation of doubles, with the plain sum kept for the
/// infinities compensation turns into NaN (as Java's `DoubleSummaryStatistics`).
#[derive(Debug, Clone, Copy, Default)]
struct Compensated {
    sum: f64,
    compensation: f64,
    simple: f64,
}

impl Compensated {
    fn add(&mut self, x: f64) {
        self.simple += x;
        let y = x - self.compensation;
        let t = self.sum + y;
        self.compensation = (t - self.sum) - y;
        self.sum = t;
    }

    fn total(&self) -> f64 {
        let t = self.sum - self.compensation;
        if t.is_nan() && self.simple.is_infinite() {
            self.simple
        } else {
            t
        }
    }
}

/// `d / n` at `d`'s scale, rounded half-even.
fn div_half_even(d: &Dec, n: i64) -> Dec {
    let n = BigInt::from(n);
    // Truncating, the remainder signed as the dividend (Java's BigInteger).
    let (q, r) = (&d.0 / &n, &d.0 % &n);
    let twice = (&r * 2u8).magnitude().clone();
    let away = match twice.cmp(n.magnitude()) {
        std::cmp::Ordering::Greater => true,
        std::cmp::Ordering::Equal => (&q % 2u8) != BigInt::default(),
        std::cmp::Ordering::Less => false,
    };
    let q = match (away, r.sign()) {
        (true, num_bigint::Sign::Minus) => q - 1,
        (true, _) => q + 1,
        (false, _) => q,
    };
    (q, d.1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dec(s: &str) -> Value {
        let (int, frac) = s.split_once('.').unwrap_or((s, ""));
        let unscaled: BigInt = format!("{int}{frac}").parse().unwrap();
        Value::Decimal {
            unscaled,
            scale: frac.len() as i32,
        }
    }

    fn fold(ty: CqlType, values: &[Value]) -> (Value, Value) {
        let mut acc = SumAvg::new(&ty);
        for v in values {
            acc.add(v).unwrap();
        }
        (acc.sum(), acc.avg())
    }

    // Each expectation is what Cassandra 5.0.4 answered (corpus
    // 29_issue21_collection_functions and 30_issue21_sums).
    #[test]
    fn decimals_average_as_a_running_mean_rounded_half_even() {
        let (sum, avg) = fold(CqlType::Decimal, &[dec("1.1"), dec("2.2"), dec("0.05")]);
        assert_eq!((sum, avg), (dec("3.35"), dec("1.15")));
        let (_, avg) = fold(CqlType::Decimal, &[dec("1.1"), dec("2.2")]);
        assert_eq!(avg, dec("1.7"));
        assert_eq!(fold(CqlType::Decimal, &[]), (dec("0"), dec("0")));
    }

    #[test]
    fn integers_wrap_in_the_sum_but_not_in_the_average() {
        let v = [Value::TinyInt(1), Value::TinyInt(2), Value::TinyInt(127)];
        assert_eq!(
            fold(CqlType::TinyInt, &v),
            (Value::TinyInt(-126), Value::TinyInt(43))
        );
        let big: BigInt = "1000000000000000000000000000000".parse().unwrap();
        let v = [
            Value::Varint(big),
            Value::Varint(7.into()),
            Value::Varint((-3).into()),
        ];
        let (sum, avg) = fold(CqlType::Varint, &v);
        assert_eq!(
            sum,
            Value::Varint("1000000000000000000000000000004".parse().unwrap())
        );
        assert_eq!(
            avg,
            Value::Varint("333333333333333333333333333334".parse().unwrap())
        );
    }

    #[test]
    fn doubles_are_summed_with_compensation() {
        let v = [Value::Double(0.1), Value::Double(0.2), Value::Double(0.3)];
        assert_eq!(
            fold(CqlType::Double, &v),
            (Value::Double(0.6), Value::Double(0.6 / 3.0))
        );
        let v = [Value::Float(0.1), Value::Float(0.2), Value::Float(0.3)];
        let (sum, _) = fold(CqlType::Float, &v);
        assert_eq!(sum, Value::Float(0.6));
        let v = [Value::Double(f64::INFINITY), Value::Double(1.0)];
        assert_eq!(fold(CqlType::Double, &v).0, Value::Double(f64::INFINITY));
    }
}
