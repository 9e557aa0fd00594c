//! Evaluating one operation on values, as Cassandra's `OperationFcts`
//! and the `NumberType`s do: integers wrap like Java's (`int + int` past
//! 2^31 turns negative), integer division truncates and refuses zero,
//! floats follow IEEE 754, decimals `BigDecimal` (see [`super::decimal`]),
//! timestamps and dates move by durations, and `+` joins texts.

use super::decimal::{self, Dec};
use varve_cql::ast::ArithOp;
use varve_types::literal::{java_double_to_string, parse_decimal};
use varve_types::time::format_duration;
use varve_types::{CqlType, Value};

use num_bigint::BigInt;

const MILLIS_PER_DAY: i64 = 86_400_000;
const NANOS_PER_MILLI: i64 = 1_000_000;

/// Bytes of a value of a fixed-size number type; `None` for varint and
/// decimal (unbounded). Counters count as bigint.
fn size(ty: &CqlType) -> Option<Option<u8>> {
    Some(match ty {
        CqlType::TinyInt => Some(1),
        CqlType::SmallInt => Some(2),
        CqlType::Int | CqlType::Float => Some(4),
        CqlType::BigInt | CqlType::Counter | CqlType::Double => Some(8),
        CqlType::Varint | CqlType::Decimal => None,
        _ => return None,
    })
}

pub fn is_number(ty: &CqlType) -> bool {
    size(ty).is_some()
}

fn is_floating(ty: &CqlType) -> bool {
    matches!(ty, CqlType::Float | CqlType::Double | CqlType::Decimal)
}

/// The type of `l op r` for two number types (`OperationFcts.returnType`):
/// floating if either is, as wide as the wider.
pub fn numeric_result(l: &CqlType, r: &CqlType) -> Option<CqlType> {
    let (ls, rs) = (size(l)?, size(r)?);
    let wide = match (ls, rs) {
        (Some(a), Some(b)) => Some(a.max(b)),
        _ => None,
    };
    Some(match (is_floating(l) || is_floating(r), wide) {
        (true, Some(4)) => CqlType::Float,
        (true, Some(8)) => CqlType::Double,
        (true, _) => CqlType::Decimal,
        (false, Some(1)) => CqlType::TinyInt,
        (false, Some(2)) => CqlType::SmallInt,
        (false, Some(4)) => CqlType::Int,
        (false, Some(8)) => CqlType::BigInt,
        (false, _) => CqlType::Varint,
    })
}

/// Java's `longValue()` of an integer value.
fn as_i64(v: &Value) -> Option<i64> {
    Some(match v {
        Value::TinyInt(x) => i64::from(*x),
        Value::SmallInt(x) => i64::from(*x),
        Value::Int(x) => i64::from(*x),
        Value::BigInt(x) | Value::Counter(x) => *x,
        _ => return None,
    })
}

fn as_f64(v: &Value) -> Option<f64> {
    Some(match v {
        Value::Float(x) => f64::from(*x),
        Value::Double(x) => *x,
        other => as_i64(other)? as f64,
    })
}

fn as_f32(v: &Value) -> Option<f32> {
    Some(match v {
        Value::Float(x) => *x,
        other => as_i64(other)? as f32,
    })
}

fn as_varint(v: &Value) -> Option<BigInt> {
    match v {
        Value::Varint(x) => Some(x.clone()),
        other => as_i64(other).map(BigInt::from),
    }
}

/// `toBigDecimal()`: exact for varint and decimal; every other number
/// goes through its double (`BigDecimal.valueOf(double)`), so an int 2
/// becomes `2.0`, with scale 1, as in Cassandra.
fn as_decimal(v: &Value) -> Result<Dec, String> {
    match v {
        Value::Decimal { unscaled, scale } => Ok((unscaled.clone(), *scale)),
        Value::Varint(x) => Ok((x.clone(), 0)),
        other => {
            let d = as_f64(other).ok_or("not a number")?;
            if d.is_nan() {
                return Err("A NaN cannot be converted into a decimal".into());
            }
            if d.is_infinite() {
                return Err("An infinite number cannot be converted into a decimal".into());
            }
            parse_decimal(&java_double_to_string(d)).ok_or_else(|| "not a decimal".into())
        }
    }
}

fn int_op(op: ArithOp, a: i64, b: i64) -> Result<i64, String> {
    Ok(match op {
        ArithOp::Add => a.wrapping_add(b),
        ArithOp::Sub => a.wrapping_sub(b),
        ArithOp::Mul => a.wrapping_mul(b),
        ArithOp::Div if b == 0 => return Err("/ by zero".into()),
        ArithOp::Div => a.wrapping_div(b),
        ArithOp::Mod if b == 0 => return Err("/ by zero".into()),
        ArithOp::Mod => a.wrapping_rem(b),
    })
}

/// `l op r` for two numbers, as a value of `result`. The error is the
/// Java exception's message.
pub fn numeric(op: ArithOp, result: &CqlType, l: &Value, r: &Value) -> Result<Value, String> {
    let bad = || "not a number".to_string();
    Ok(match result {
        // Narrow integers: Java computes in int and casts back.
        CqlType::TinyInt | CqlType::SmallInt | CqlType::Int => {
            let (a, b) = (as_i64(l).ok_or_else(bad)?, as_i64(r).ok_or_else(bad)?);
            let x = int_op(op, a, b)?;
            match result {
                CqlType::TinyInt => Value::TinyInt(x as i8),
                CqlType::SmallInt => Value::SmallInt(x as i16),
                _ => Value::Int(x as i32),
            }
        }
        CqlType::BigInt => {
            let (a, b) = (as_i64(l).ok_or_else(bad)?, as_i64(r).ok_or_else(bad)?);
            Value::BigInt(int_op(op, a, b)?)
        }
        CqlType::Float => {
            let (a, b) = (as_f32(l).ok_or_else(bad)?, as_f32(r).ok_or_else(bad)?);
            Value::Float(match op {
                ArithOp::Add => a + b,
                ArithOp::Sub => a - b,
                ArithOp::Mul => a * b,
                ArithOp::Div => a / b,
                ArithOp::Mod => a % b,
            })
        }
        CqlType::Double => {
            let (a, b) = (as_f64(l).ok_or_else(bad)?, as_f64(r).ok_or_else(bad)?);
            Value::Double(match op {
                ArithOp::Add => a + b,
                ArithOp::Sub => a - b,
                ArithOp::Mul => a * b,
                ArithOp::Div => a / b,
                ArithOp::Mod => a % b,
            })
        }
        CqlType::Varint => {
            let (a, b) = (as_varint(l).ok_or_else(bad)?, as_varint(r).ok_or_else(bad)?);
            let zero = BigInt::from(0u8);
            Value::Varint(match op {
                ArithOp::Add => a + b,
                ArithOp::Sub => a - b,
                ArithOp::Mul => a * b,
                ArithOp::Div | ArithOp::Mod if b == zero => {
                    return Err("BigInteger divide by zero".into())
                }
                ArithOp::Div => a / b,
                ArithOp::Mod => a % b,
            })
        }
        CqlType::Decimal => {
            let (a, b) = (as_decimal(l)?, as_decimal(r)?);
            let (unscaled, scale) = match op {
                ArithOp::Add => decimal::add(&a, &b)?,
                ArithOp::Sub => decimal::sub(&a, &b)?,
                ArithOp::Mul => decimal::mul(&a, &b)?,
                ArithOp::Div => decimal::div(&a, &b)?,
                ArithOp::Mod => decimal::rem(&a, &b)?,
            };
            Value::Decimal { unscaled, scale }
        }
        _ => return Err(bad()),
    })
}

/// `-v`, in its own type (integers wrap: `-(tinyint)-128` is -128).
pub fn negate(v: &Value) -> Option<Value> {
    Some(match v {
        Value::TinyInt(x) => Value::TinyInt(x.wrapping_neg()),
        Value::SmallInt(x) => Value::SmallInt(x.wrapping_neg()),
        Value::Int(x) => Value::Int(x.wrapping_neg()),
        Value::BigInt(x) => Value::BigInt(x.wrapping_neg()),
        Value::Counter(x) => Value::Counter(x.wrapping_neg()),
        Value::Float(x) => Value::Float(-x),
        Value::Double(x) => Value::Double(-x),
        Value::Varint(x) => Value::Varint(-x.clone()),
        Value::Decimal { unscaled, scale } => Value::Decimal {
            unscaled: -unscaled.clone(),
            scale: *scale,
        },
        _ => return None,
    })
}

/// `t + d` or `t - d` for a timestamp or a date and a duration
/// (`TemporalType.addDuration`): a timestamp takes durations of whole
/// milliseconds, a date of whole days.
pub fn temporal(op: ArithOp, t: &Value, d: &Value) -> Result<Value, String> {
    let Value::Duration {
        months,
        days,
        nanos,
    } = *d
    else {
        return Err("not a duration".into());
    };
    let sign: i64 = if op == ArithOp::Sub { -1 } else { 1 };
    match t {
        Value::Timestamp(ms) => {
            if nanos % NANOS_PER_MILLI != 0 {
                return Err(format!(
                    "The duration must have a millisecond precision. Was: {}",
                    format_duration(months, days, nanos)
                ));
            }
            add_to_millis(*ms, sign, months, days, nanos).map(Value::Timestamp)
        }
        Value::Date(wire) => {
            if nanos != 0 {
                return Err(format!(
                    "The duration must have a day precision. Was: {}",
                    format_duration(months, days, nanos)
                ));
            }
            let day = i64::from(*wire) - (1i64 << 31);
            let ms = add_to_millis(day * MILLIS_PER_DAY, sign, months, days, 0)?;
            // Java: Integer.MIN_VALUE + (int) days, which wraps.
            let days = (ms / MILLIS_PER_DAY) as i32;
            Ok(Value::Date(days.wrapping_add(i32::MIN) as u32))
        }
        _ => Err("not a timestamp or date".into()),
    }
}

/// `ms` plus `months` calendar months, the day of month clamped to the
/// new month's length (`Calendar.add(MONTH, n)`).
pub(crate) fn add_months(ms: i64, months: i32) -> Result<i64, String> {
    add_to_millis(ms, 1, months, 0, 0)
}

/// `Duration.addTo`: months first (the day of month clamped to the new
/// month's length, as `Calendar.add` does), then days, then milliseconds.
fn add_to_millis(ms: i64, sign: i64, months: i32, days: i32, nanos: i64) -> Result<i64, String> {
    let months = sign * i64::from(months);
    let days = sign * i64::from(days);
    let millis = sign * (nanos / NANOS_PER_MILLI);
    if months == 0 {
        // Java long arithmetic: wraps.
        return Ok(ms
            .wrapping_add(days.wrapping_mul(MILLIS_PER_DAY))
            .wrapping_add(millis));
    }
    use varve_types::time::{civil_from_days, days_from_civil};
    let day = ms.div_euclid(MILLIS_PER_DAY);
    let in_day = ms.rem_euclid(MILLIS_PER_DAY);
    let (y, m, d) = civil_from_days(day);
    let month_index = y
        .checked_mul(12)
        .and_then(|x| x.checked_add(i64::from(m) - 1))
        .and_then(|x| x.checked_add(months))
        .ok_or("Overflow")?;
    let (ny, nm) = (
        month_index.div_euclid(12),
        month_index.rem_euclid(12) as u32 + 1,
    );
    let nd = d.min(month_length(ny, nm));
    let new_day = days_from_civil(ny, nm, nd)
        .checked_add(days)
        .ok_or("Overflow")?;
    new_day
        .checked_mul(MILLIS_PER_DAY)
        .and_then(|x| x.checked_add(in_day))
        .and_then(|x| x.checked_add(millis))
        .ok_or_else(|| "Overflow".into())
}

fn month_length(y: i64, m: u32) -> u32 {
    match m {
        4 | 6 | 9 | 11 => 30,
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        _ => 31,
    }
}

/// `a + b` for texts: ascii only when both are.
pub fn concat(l: &Value, r: &Value) -> Option<Value> {
    Some(match (l, r) {
        (Value::Ascii(a), Value::Ascii(b)) => Value::Ascii(format!("{a}{b}")),
        (Value::Ascii(a) | Value::Text(a), Value::Ascii(b) | Value::Text(b)) => {
            Value::Text(format!("{a}{b}"))
        }
        _ => return None,
    })
}
