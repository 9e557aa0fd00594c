//! floor() against values Cassandra 5.0.4 answered (corpus
//! 28_issue21_group_by_functions holds the same through the protocol).

use super::*;

const HOUR: i64 = 3_600_000_000_000;

fn dur(months: i32, days: i32, nanos: i64) -> Typed {
    (
        CqlType::Duration,
        Some(Value::Duration {
            months,
            days,
            nanos,
        }),
    )
}

fn ts(ms: i64) -> Typed {
    (CqlType::Timestamp, Some(Value::Timestamp(ms)))
}

/// Milliseconds of a UTC date and time.
fn at(y: i64, m: u32, d: u32, h: i64, min: i64) -> i64 {
    varve_types::time::days_from_civil(y, m, d) * MILLIS_PER_DAY + (h * 60 + min) * 60_000
}

fn floor_ms(args: &[Typed]) -> i64 {
    match apply(args).unwrap().1 {
        Some(Value::Timestamp(ms)) => ms,
        other => panic!("not a timestamp: {other:?}"),
    }
}

fn error(args: &[Typed]) -> String {
    apply(args).unwrap_err().to_string()
}

#[test]
fn hours_and_weeks_count_from_the_epoch() {
    let t = at(2023, 11, 14, 22, 10);
    assert_eq!(floor_ms(&[ts(t), dur(0, 0, HOUR)]), at(2023, 11, 14, 22, 0));
    // 1970-01-01 was a Thursday: weeks start on Thursdays.
    assert_eq!(floor_ms(&[ts(t), dur(0, 7, 0)]), at(2023, 11, 9, 0, 0));
    assert_eq!(
        floor_ms(&[ts(t), dur(0, 0, 0)]),
        t,
        "a zero duration keeps the time"
    );
}

#[test]
fn months_follow_the_calendar_and_clamp_the_day() {
    let t = at(2023, 11, 14, 22, 10);
    assert_eq!(floor_ms(&[ts(t), dur(1, 0, 0)]), at(2023, 11, 1, 0, 0));
    assert_eq!(floor_ms(&[ts(t), dur(14, 3, 0)]), at(2022, 11, 13, 0, 0));
    let start = ts(at(2020, 1, 31, 0, 0));
    assert_eq!(
        floor_ms(&[ts(t), dur(1, 0, 0), start.clone()]),
        at(2023, 10, 31, 0, 0) + 30 * MILLIS_PER_DAY
    );
    assert_eq!(
        floor_ms(&[ts(t), dur(1, 1, 0), start]),
        at(2023, 11, 13, 0, 0)
    );
    let start = ts(at(1999, 3, 31, 10, 0));
    assert_eq!(
        floor_ms(&[ts(t), dur(5, 2, 3 * HOUR), start]),
        at(2023, 10, 1, 16, 0)
    );
}

#[test]
fn dates_times_and_timeuuids() {
    let day = |y, m, d| (varve_types::time::days_from_civil(y, m, d) + DATE_EPOCH) as u32;
    let date = |y, m, d| (CqlType::Date, Some(Value::Date(day(y, m, d))));
    let got = apply(&[date(2023, 11, 14), dur(13, 0, 0), date(2000, 2, 29)]).unwrap();
    assert_eq!(got, (CqlType::Date, Some(Value::Date(day(2022, 11, 29)))));
    let got = apply(&[date(2023, 11, 14), dur(0, 7, 0), date(1970, 1, 5)]).unwrap();
    assert_eq!(got.1, Some(Value::Date(day(2023, 11, 13))));
    let time = (CqlType::Time, Some(Value::Time(37_230_000_000_000)));
    let got = apply(&[time, dur(0, 0, 7 * 60_000_000_000)]).unwrap();
    assert_eq!(got, (CqlType::Time, Some(Value::Time(36_960_000_000_000))));
    let u = varve_types::time::timeuuid_for_millis(
        at(2023, 11, 14, 22, 10),
        varve_types::time::TimeuuidBound::Min,
    );
    let got = apply(&[
        (CqlType::Timeuuid, Some(Value::Timeuuid(u))),
        dur(0, 0, HOUR),
    ])
    .unwrap();
    assert_eq!(
        got,
        (
            CqlType::Timestamp,
            Some(Value::Timestamp(at(2023, 11, 14, 22, 0)))
        )
    );
}

#[test]
fn refusals_carry_cassandras_messages() {
    let t = ts(at(2023, 11, 14, 22, 10));
    assert_eq!(
        error(&[t.clone(), dur(0, 0, 1000)]),
        "The floor cannot be computed for the 1us duration as precision is below 1 millisecond"
    );
    assert_eq!(
        error(&[t.clone(), dur(0, 0, -HOUR)]),
        "Negative durations are not supported by the floor function"
    );
    assert_eq!(
        error(&[t.clone(), dur(0, 0, HOUR), ts(at(2023, 11, 15, 0, 0))]),
        "The floor function starting time is greater than the provided time"
    );
    let date = (CqlType::Date, Some(Value::Date(1 << 31)));
    assert_eq!(error(&[date, dur(0, 0, HOUR)]), "The floor on date values cannot be computed for the 1h duration as precision is below 1 day");
    let time = (CqlType::Time, Some(Value::Time(0)));
    assert_eq!(
        error(&[time, dur(0, 1, 0)]),
        "For time values, the floor can only be computed for durations smaller that a day"
    );
    assert!(error(std::slice::from_ref(&t))
        .starts_with("Invalid call to function floor, none of its type signatures match"));
    assert!(error(&[(CqlType::Int, Some(Value::Int(1))), dur(0, 0, HOUR)]).contains(SIGNATURES));
    assert!(error(&[t.clone(), dur(0, 0, 64)])
        .contains("64ns duration as precision is below 1 millisecond"));
    assert_eq!(
        apply(&[(CqlType::Timestamp, None), dur(0, 0, HOUR)]).unwrap(),
        (CqlType::Timestamp, None)
    );
}
