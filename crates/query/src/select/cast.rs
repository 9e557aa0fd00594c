//! `CAST(x AS t)` in a selection, as Cassandra 5.0 casts (its `CastFcts`):
//! - every number to every number, with Java's conversions of a boxed
//!   number (`byteValue()`, `intValue()`, ...): integers narrow by keeping
//!   their low bits, floating values go through a saturating `int` or
//!   `long` first, varints keep their low bits, decimals truncate first;
//!   a varint target takes the source's `longValue()` (a decimal's integer
//!   part), a decimal target `BigDecimal.valueOf` (a float or double
//!   through its decimal string);
//! - numbers, dates, times, timestamps, uuids, timeuuids, inets and
//!   booleans to text and ascii (ascii to text, not text to ascii), as
//!   their text;
//! - a timestamp or a timeuuid to a date, a date or a timeuuid to a
//!   timestamp, a timestamp to a bigint (its milliseconds);
//! - nothing else. A target with no cast at all says "x cannot be cast to
//!   t"; a target with casts, none from this type, "none of its type
//!   signatures match".

use crate::error::{QueryError, Result};
use num_bigint::BigInt;
use varve_types::{codec, CqlType, Value};

const MILLIS_PER_DAY: i64 = 86_400_000;
/// `date` values count days from this one (2^31) to 1970-01-01.
const DATE_EPOCH: i64 = 1 << 31;

fn is_number(ty: &CqlType) -> bool {
    matches!(
        ty,
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

fn has_text(ty: &CqlType) -> bool {
    is_number(ty)
        || matches!(
            ty,
            CqlType::Date
                | CqlType::Time
                | CqlType::Timestamp
                | CqlType::Timeuuid
                | CqlType::Uuid
                | CqlType::Inet
                | CqlType::Boolean
        )
}

/// Whether Cassandra has a cast of `from` to `to`: `Ok(true)` when it is
/// the identity (no cast at all, the column keeps its name).
pub fn check(name: &str, from: &CqlType, to: &CqlType) -> Result<bool> {
    if from == to {
        return Ok(true);
    }
    let allowed = match to {
        // Cassandra 5.0 also casts a timestamp to its milliseconds.
        CqlType::BigInt => is_number(from) || *from == CqlType::Timestamp,
        t if is_number(t) && *t != CqlType::Counter => is_number(from),
        CqlType::Text => has_text(from) || *from == CqlType::Ascii,
        CqlType::Ascii => has_text(from),
        CqlType::Date => matches!(from, CqlType::Timestamp | CqlType::Timeuuid),
        CqlType::Timestamp => matches!(from, CqlType::Date | CqlType::Timeuuid),
        _ => {
            return Err(QueryError::Invalid(format!(
                "{name} cannot be cast to {to}"
            )))
        }
    };
    if allowed {
        Ok(false)
    } else {
        Err(QueryError::Invalid(format!(
            "Invalid call to function system.cast_as_{to}, none of its type signatures match \
             (argument {name} of type {from})"
        )))
    }
}

/// Casts the serialized value `bytes` of type `from` to `to` (a pair
/// [`check`] allowed).
pub fn cast(from: &CqlType, bytes: &[u8], to: &CqlType) -> Result<Value> {
    let v = codec::deserialize(from, bytes).map_err(|e| QueryError::Server(e.to_string()))?;
    let bad = || QueryError::Invalid(format!("{from} cannot be cast to {to}"));
    Ok(match to {
        CqlType::Text => Value::Text(text_of(&v).ok_or_else(bad)?),
        CqlType::Ascii => Value::Ascii(text_of(&v).ok_or_else(bad)?),
        CqlType::Date => Value::Date(date_of(&v).ok_or_else(bad)?),
        CqlType::Timestamp => Value::Timestamp(millis_of(&v).ok_or_else(bad)?),
        t => number(&Num::of(&v).ok_or_else(bad)?, t).ok_or_else(bad)?,
    })
}

/// A number as Java holds it boxed.
enum Num {
    Long(i64),
    Float(f32),
    Double(f64),
    Big(BigInt),
    Dec(BigInt, i32),
}

impl Num {
    fn of(v: &Value) -> Option<Num> {
        Some(match v {
            Value::TinyInt(x) => Num::Long(i64::from(*x)),
            Value::SmallInt(x) => Num::Long(i64::from(*x)),
            Value::Int(x) => Num::Long(i64::from(*x)),
            Value::BigInt(x) | Value::Counter(x) | Value::Timestamp(x) => Num::Long(*x),
            Value::Float(x) => Num::Float(*x),
            Value::Double(x) => Num::Double(*x),
            Value::Varint(x) => Num::Big(x.clone()),
            Value::Decimal { unscaled, scale } => Num::Dec(unscaled.clone(), *scale),
            _ => return None,
        })
    }

    /// `intValue()`: the low 32 bits of the integer value; floating values
    /// saturate (NaN is 0).
    fn int_value(&self) -> i32 {
        match self {
            Num::Long(x) => *x as i32,
            Num::Float(x) => *x as i32,
            Num::Double(x) => *x as i32,
            Num::Big(b) => low_bits(b) as i32,
            Num::Dec(..) => low_bits(&self.integer_part()) as i32,
        }
    }

    /// `longValue()`.
    fn long_value(&self) -> i64 {
        match self {
            Num::Long(x) => *x,
            Num::Float(x) => *x as i64,
            Num::Double(x) => *x as i64,
            Num::Big(b) => low_bits(b),
            Num::Dec(..) => low_bits(&self.integer_part()),
        }
    }

    /// `doubleValue()`.
    fn double_value(&self) -> f64 {
        match self {
            Num::Long(x) => *x as f64,
            Num::Float(x) => f64::from(*x),
            Num::Double(x) => *x,
            Num::Big(b) => b.to_string().parse().unwrap_or(f64::NAN),
            Num::Dec(u, s) => decimal_text(u, *s).parse().unwrap_or(f64::NAN),
        }
    }

    /// `floatValue()`: rounded once, from the exact value.
    fn float_value(&self) -> f32 {
        match self {
            Num::Long(x) => *x as f32,
            Num::Float(x) => *x,
            Num::Double(x) => *x as f32,
            Num::Big(b) => b.to_string().parse().unwrap_or(f32::NAN),
            Num::Dec(u, s) => decimal_text(u, *s).parse().unwrap_or(f32::NAN),
        }
    }

    /// A decimal's value with its fraction dropped (toward zero).
    fn integer_part(&self) -> BigInt {
        match self {
            Num::Dec(u, s) if *s > 0 => u / BigInt::from(10).pow(*s as u32),
            Num::Dec(u, s) => u * BigInt::from(10).pow(s.unsigned_abs()),
            Num::Big(b) => b.clone(),
            other => BigInt::from(other.long_value()),
        }
    }
}

/// The low 64 bits of `b`, two's complement (`BigInteger.longValue()`).
fn low_bits(b: &BigInt) -> i64 {
    let bytes = b.to_signed_bytes_le();
    let mut out = [if b.sign() == num_bigint::Sign::Minus {
        0xff
    } else {
        0
    }; 8];
    for (o, x) in out.iter_mut().zip(bytes.iter()) {
        *o = *x;
    }
    i64::from_le_bytes(out)
}

fn decimal_text(unscaled: &BigInt, scale: i32) -> String {
    format!("{unscaled}e{}", -i64::from(scale))
}

fn number(n: &Num, to: &CqlType) -> Option<Value> {
    Some(match to {
        CqlType::TinyInt => Value::TinyInt(n.int_value() as i8),
        CqlType::SmallInt => Value::SmallInt(n.int_value() as i16),
        CqlType::Int => Value::Int(n.int_value()),
        CqlType::BigInt => Value::BigInt(n.long_value()),
        CqlType::Float => Value::Float(n.float_value()),
        CqlType::Double => Value::Double(n.double_value()),
        CqlType::Varint => Value::Varint(match n {
            Num::Big(b) => b.clone(),
            other => BigInt::from(other.long_value()),
        }),
        CqlType::Decimal => {
            let (unscaled, scale) = match n {
                Num::Long(x) => (BigInt::from(*x), 0),
                Num::Big(b) => (b.clone(), 0),
                Num::Dec(u, s) => (u.clone(), *s),
                Num::Float(_) | Num::Double(_) => {
                    let d = n.double_value();
                    if !d.is_finite() {
                        return None;
                    }
                    let text = varve_types::literal::java_double_to_string(d);
                    varve_types::literal::parse_decimal(&text)?
                }
            };
            Value::Decimal { unscaled, scale }
        }
        _ => return None,
    })
}

fn text_of(v: &Value) -> Option<String> {
    use varve_types::literal::{
        java_decimal_to_string, java_double_to_string, java_float_to_string,
    };
    Some(match v {
        Value::Text(s) | Value::Ascii(s) => s.clone(),
        Value::Float(f) => java_float_to_string(*f),
        Value::Double(d) => java_double_to_string(*d),
        Value::Decimal { unscaled, scale } => java_decimal_to_string(unscaled, *scale),
        Value::Timestamp(ms) => instant_text(*ms),
        Value::Timeuuid(u) | Value::Uuid(u) => varve_types::time::format_uuid(u),
        Value::TinyInt(_)
        | Value::SmallInt(_)
        | Value::Int(_)
        | Value::BigInt(_)
        | Value::Counter(_)
        | Value::Varint(_)
        | Value::Boolean(_)
        | Value::Date(_)
        | Value::Time(_)
        | Value::Inet(_) => varve_types::literal::to_cql_literal(v)
            .trim_matches('\'')
            .to_string(),
        _ => return None,
    })
}

/// A timestamp as Java's `Instant.toString()` writes it: UTC, `Z`, the
/// milliseconds only when there are some.
fn instant_text(ms: i64) -> String {
    let days = ms.div_euclid(MILLIS_PER_DAY);
    let in_day = ms.rem_euclid(MILLIS_PER_DAY);
    let date = varve_types::literal::to_cql_literal(&Value::Date((days + DATE_EPOCH) as u32));
    let (h, m, s, milli) = (
        in_day / 3_600_000,
        in_day / 60_000 % 60,
        in_day / 1000 % 60,
        in_day % 1000,
    );
    let fraction = if milli == 0 {
        String::new()
    } else {
        format!(".{milli:03}")
    };
    format!(
        "{}T{h:02}:{m:02}:{s:02}{fraction}Z",
        date.trim_matches('\'')
    )
}

fn millis_of(v: &Value) -> Option<i64> {
    match v {
        Value::Date(d) => Some((i64::from(*d) - DATE_EPOCH) * MILLIS_PER_DAY),
        Value::Timeuuid(u) => Some(varve_types::time::timeuuid_millis(u)),
        Value::Timestamp(ms) => Some(*ms),
        _ => None,
    }
}

fn date_of(v: &Value) -> Option<u32> {
    let ms = millis_of(v)?;
    u32::try_from(ms.div_euclid(MILLIS_PER_DAY) + DATE_EPOCH).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_narrowing() {
        let n = Num::Long(70_000);
        assert_eq!(n.int_value() as i8, 112);
        assert_eq!(n.int_value() as i16, 4464);
        let big: BigInt = "123456789012345678901234567890".parse().unwrap();
        assert_eq!(low_bits(&big), -4362896299872285998);
        assert_eq!(Num::Big(big).int_value() as i8, -46);
        assert_eq!(low_bits(&BigInt::from(-1)), -1);
        let d = Num::Double(1e300);
        assert_eq!((d.int_value() as i8, d.long_value()), (-1, i64::MAX));
        assert_eq!(Num::Double(f64::NAN).int_value(), 0);
        let dec = Num::Dec(BigInt::from(12345), 3);
        assert_eq!((dec.int_value(), dec.float_value()), (12, 12.345_f32));
        assert_eq!(Num::Dec(BigInt::from(-5), 1).int_value(), 0);
    }

    #[test]
    fn instants_print_as_java_does() {
        assert_eq!(instant_text(1709212455678), "2024-02-29T13:14:15.678Z");
        assert_eq!(instant_text(0), "1970-01-01T00:00:00Z");
        assert_eq!(instant_text(-1), "1969-12-31T23:59:59.999Z");
    }

    #[test]
    fn what_may_be_cast() {
        assert!(check("x", &CqlType::Int, &CqlType::Int).unwrap());
        assert!(!check("x", &CqlType::Ascii, &CqlType::Text).unwrap());
        assert!(check("x", &CqlType::Text, &CqlType::Ascii).is_err());
        assert!(check("x", &CqlType::Blob, &CqlType::Text).is_err());
        assert!(check("x", &CqlType::Duration, &CqlType::BigInt).is_err());
        assert!(check("x", &CqlType::Int, &CqlType::Boolean).is_err());
        assert!(!check("x", &CqlType::Timeuuid, &CqlType::Date).unwrap());
    }
}
