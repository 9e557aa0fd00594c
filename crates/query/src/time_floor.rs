//! `floor()`: a timestamp, timeuuid, date or time rounded down to a
//! multiple of a duration, counted from a starting time (the epoch unless
//! given), as Cassandra 5.0 computes it (`TimeFcts` and
//! `Duration.floorTimestamp`). It is the function that buckets time in
//! `GROUP BY k, floor(t, 1h)`.
//!
//! Durations with months follow the calendar (UTC): the start moves by
//! whole multiples of the duration's months, the day of month clamped to
//! each month's length as `Calendar.add` clamps it; a duration of days and
//! nanoseconds only is plain arithmetic on milliseconds.

use crate::error::{QueryError, Result};
use crate::functions::Typed;
use varve_types::time::{format_duration, timeuuid_millis};
use varve_types::{CqlType, Value};

const MILLIS_PER_DAY: i64 = 86_400_000;
const NANOS_PER_MILLI: i64 = 1_000_000;
const NANOS_PER_DAY: i64 = 86_400 * 1_000_000_000;
const DATE_EPOCH: i64 = 1 << 31;

/// Every overload, in the order Cassandra lists them in its messages.
pub const SIGNATURES: &str = "system.floor : (timeuuid, duration) -> timestamp, \
system.floor : (time, duration) -> time, \
system.floor : (date, duration, date) -> date, \
system.floor : (date, duration) -> date, \
system.floor : (timestamp, duration) -> timestamp, \
system.floor : (timestamp, duration, timestamp) -> timestamp, \
system.floor : (timeuuid, duration, timestamp) -> timestamp";

/// The type of the starting time that follows a first argument of type
/// `first` (a timeuuid is floored as a timestamp).
pub fn start_type(first: &CqlType) -> CqlType {
    match first.unfrozen() {
        CqlType::Date => CqlType::Date,
        _ => CqlType::Timestamp,
    }
}

/// The result type of `floor(first, ...)`, `None` when no overload takes
/// these argument types.
pub fn return_type(types: &[CqlType]) -> Option<CqlType> {
    let first = types.first()?.unfrozen();
    if types.get(1).map(CqlType::unfrozen) != Some(&CqlType::Duration) {
        return None;
    }
    let ret = match first {
        CqlType::Timestamp | CqlType::Timeuuid => CqlType::Timestamp,
        CqlType::Date => CqlType::Date,
        CqlType::Time if types.len() == 2 => CqlType::Time,
        _ => return None,
    };
    match types.get(2) {
        None => Some(ret),
        Some(t) if types.len() == 3 && t.unfrozen() == &start_type(first) => Some(ret),
        Some(_) => None,
    }
}

fn no_signature() -> QueryError {
    QueryError::Invalid(format!(
        "Invalid call to function floor, none of its type signatures match (known type signatures: {SIGNATURES})"
    ))
}

/// Applies `floor` to typed arguments: null when any is null.
pub fn apply(args: &[Typed]) -> Result<Typed> {
    let types: Vec<CqlType> = args.iter().map(|(t, _)| t.clone()).collect();
    let ret = return_type(&types).ok_or_else(no_signature)?;
    let values: Option<Vec<&Value>> = args.iter().map(|(_, v)| v.as_ref()).collect();
    let Some(values) = values else {
        return Ok((ret, None));
    };
    let Value::Duration {
        months,
        days,
        nanos,
    } = *values[1]
    else {
        return Err(no_signature());
    };
    let d = Dur {
        months,
        days,
        nanos,
    };
    let value = match values[0] {
        Value::Time(t) => Value::Time(floor_time(*t, d)?),
        Value::Date(day) => {
            if d.nanos != 0 {
                return Err(QueryError::Invalid(format!(
                    "The floor on date values cannot be computed for the {d} duration as precision is below 1 day"
                )));
            }
            let start = values.get(2).map_or(Ok(0), |v| millis_of(v))?;
            let ms = floor_timestamp(date_millis(*day), d, start)?;
            Value::Date((ms.div_euclid(MILLIS_PER_DAY) + DATE_EPOCH) as u32)
        }
        v => {
            if d.nanos % NANOS_PER_MILLI != 0 {
                return Err(QueryError::Invalid(format!(
                    "The floor cannot be computed for the {d} duration as precision is below 1 millisecond"
                )));
            }
            let start = values.get(2).map_or(Ok(0), |v| millis_of(v))?;
            Value::Timestamp(floor_timestamp(millis_of(v)?, d, start)?)
        }
    };
    Ok((ret, Some(value)))
}

/// A duration's three parts.
#[derive(Debug, Clone, Copy)]
struct Dur {
    months: i32,
    days: i32,
    nanos: i64,
}

impl std::fmt::Display for Dur {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&format_duration(self.months, self.days, self.nanos))
    }
}

impl Dur {
    fn is_negative(self) -> bool {
        self.months < 0 || self.days < 0 || self.nanos < 0
    }

    /// The days and nanoseconds, in milliseconds (months left out).
    fn millis(self) -> i64 {
        i64::from(self.days) * MILLIS_PER_DAY + self.nanos / NANOS_PER_MILLI
    }
}

fn negative() -> QueryError {
    QueryError::Invalid("Negative durations are not supported by the floor function".into())
}

fn date_millis(day: u32) -> i64 {
    (i64::from(day) - DATE_EPOCH) * MILLIS_PER_DAY
}

fn millis_of(v: &Value) -> Result<i64> {
    match v {
        Value::Timestamp(ms) => Ok(*ms),
        Value::Timeuuid(u) => Ok(timeuuid_millis(u)),
        Value::Date(d) => Ok(date_millis(*d)),
        _ => Err(no_signature()),
    }
}

/// `time` (nanoseconds of the day) rounded down to a multiple of `d`,
/// which must be shorter than a day.
fn floor_time(time: i64, d: Dur) -> Result<i64> {
    if d.is_negative() {
        return Err(negative());
    }
    if d.months != 0 || d.days != 0 || d.nanos > NANOS_PER_DAY {
        return Err(QueryError::Invalid(
            "For time values, the floor can only be computed for durations smaller that a day"
                .into(),
        ));
    }
    if d.nanos == 0 {
        return Ok(time);
    }
    Ok(time - time % d.nanos)
}

/// The largest `start + n * d` at or before `time` (n >= 0), in
/// milliseconds.
fn floor_timestamp(time: i64, d: Dur, start: i64) -> Result<i64> {
    if start > time {
        return Err(QueryError::Invalid(
            "The floor function starting time is greater than the provided time".into(),
        ));
    }
    if d.is_negative() {
        return Err(negative());
    }
    if d.months == 0 {
        let step = d.millis();
        if step == 0 {
            return Ok(time);
        }
        return Ok(time - (time - start) % step);
    }
    // A first guess from the months between the two times, which the days
    // and milliseconds of the duration may overshoot; then back, a step
    // at a time, with the calendar's clamping at each step.
    let (y, m) = year_month(time);
    let (sy, sm) = year_month(start);
    let months_between = (y - sy) * 12 + (m - sm);
    let mut multiplier = months_between / i64::from(d.months);
    let mut at = add_months(start, multiplier * i64::from(d.months))?;
    if d.days == 0 && d.nanos == 0 {
        return Ok(at);
    }
    let step = d.millis();
    let mut floor = at + multiplier * step;
    while floor > time {
        multiplier -= 1;
        at = add_months(at, -i64::from(d.months))?;
        floor = at + multiplier * step;
    }
    Ok(floor.max(start))
}

/// The UTC year and month (1-12) of a time in milliseconds.
fn year_month(ms: i64) -> (i64, i64) {
    let (y, m, _) = varve_types::time::civil_from_days(ms.div_euclid(MILLIS_PER_DAY));
    (y, i64::from(m))
}

fn add_months(ms: i64, months: i64) -> Result<i64> {
    let months = i32::try_from(months).map_err(|_| overflow())?;
    crate::arith::add_months(ms, months).map_err(|_| overflow())
}

fn overflow() -> QueryError {
    QueryError::Invalid("The floor function's result is out of range".into())
}

#[cfg(test)]
#[path = "time_floor_tests.rs"]
mod tests;
