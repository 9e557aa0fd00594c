use super::*;
use crate::compare::compare;
use crate::CqlType;
use std::cmp::Ordering;

#[test]
fn clocks_agree() {
    let (s, ms, us) = (now_seconds(), now_millis(), now_micros());
    assert!(ms / 1000 - s <= 1);
    assert!(us / 1000 - ms <= 1000);
    assert!(s > 1_600_000_000);
}

#[test]
fn timeuuids_are_v1_and_strictly_increasing() {
    let mut prev = new_timeuuid();
    for _ in 0..10_000 {
        let next = new_timeuuid();
        assert_eq!(next[6] >> 4, 1);
        assert_eq!(next[8] >> 6, 0b10);
        assert_eq!(compare(&CqlType::Timeuuid, &prev, &next), Ordering::Less);
        assert!(timeuuid_ticks(&next) > timeuuid_ticks(&prev));
        prev = next;
    }
    assert!((timeuuid_millis(&prev) - now_millis()).abs() < 10_000);
}

#[test]
fn min_max_timeuuid_bracket_the_millisecond() {
    let ms = 1_614_834_367_123;
    let lo = timeuuid_for_millis(ms, TimeuuidBound::Min);
    let hi = timeuuid_for_millis(ms, TimeuuidBound::Max);
    assert_eq!(timeuuid_millis(&lo), ms);
    assert_eq!(timeuuid_millis(&hi), ms);
    assert_eq!(lo[6] >> 4, 1);
    assert_eq!(&lo[8..], &[0x80; 8]);
    assert_eq!(&hi[8..], &[0x7f; 8]);
    let inside = build_v1(timeuuid_ticks(&lo) + 5, clock_seq_and_node());
    assert_eq!(compare(&CqlType::Timeuuid, &lo, &inside), Ordering::Less);
    assert_eq!(compare(&CqlType::Timeuuid, &inside, &hi), Ordering::Less);
    let next = timeuuid_for_millis(ms + 1, TimeuuidBound::Min);
    assert_eq!(compare(&CqlType::Timeuuid, &hi, &next), Ordering::Less);
    // The uuid epoch itself.
    let epoch = timeuuid_for_millis(-UUID_EPOCH_OFFSET_MS, TimeuuidBound::Min);
    assert_eq!(format_uuid(&epoch), "00000000-0000-1000-8080-808080808080");
}

#[test]
fn known_timeuuid_time() {
    // time_hi 0x1e5, time_mid 0x29bb, time_low 0x50554d6e: 2015-07-14 00:00:18.805 UTC.
    let u = parse_uuid("50554d6e-29bb-11e5-b345-feff819cdc9f").unwrap();
    assert_eq!(timeuuid_millis(&u), 1_436_832_018_805);
    assert_eq!(
        format_timestamp(1_436_832_018_805),
        "2015-07-14 00:00:18.805000+0000"
    );
}

#[test]
fn random_uuid_is_v4() {
    let u = random_uuid();
    assert_eq!(u[6] >> 4, 4);
    assert_eq!(u[8] >> 6, 0b10);
    assert_ne!(random_uuid(), u);
}

#[test]
fn uuid_text() {
    let s = "123e4567-e89b-12d3-a456-426614174000";
    let u = parse_uuid(s).unwrap();
    assert_eq!(u[0], 0x12);
    assert_eq!(u[15], 0x00);
    assert_eq!(format_uuid(&u), s);
    assert_eq!(parse_uuid(&s.to_uppercase()), Ok(u));
    for bad in [
        "",
        "123e4567e89b12d3a456426614174000",
        "123e4567-e89b-12d3-a456-42661417400",
        "123e4567-e89b-12d3-a456-42661417400g",
        "123e4567+e89b-12d3-a456-426614174000",
        "123e4567-e89b-12d3-a456-4266141740000",
        "1é3e4567-e89b-12d3-a456-42661417400",
    ] {
        assert!(parse_uuid(bad).is_err(), "{bad}");
    }
}
