//! The pure parts of `engine_repair`: range arithmetic and the mark
//! compaction outputs inherit.

use super::*;

#[test]
fn tokens_and_spans_against_plain_and_wrapping_ranges() {
    let plain = [(-10, 10)];
    assert!(!token_in_ranges(&plain, -10), "the start is excluded");
    assert!(token_in_ranges(&plain, 10) && token_in_ranges(&plain, -9));
    let wrapping = [(100, -100)];
    assert!(token_in_ranges(&wrapping, i64::MAX) && token_in_ranges(&wrapping, i64::MIN));
    assert!(token_in_ranges(&wrapping, -100) && !token_in_ranges(&wrapping, 0));
    assert!(
        token_in_ranges(&[(5, 5)], 0),
        "start == end: the whole ring"
    );

    assert!(span_inside(&plain, -9, 10) && !span_inside(&plain, -10, 0));
    assert!(span_inside(&wrapping, 101, i64::MAX) && span_inside(&wrapping, i64::MIN, -100));
    assert!(!span_inside(&wrapping, 50, 150));
    assert!(span_meets(&plain, 10, 20) && !span_meets(&plain, 11, 20));
    assert!(span_meets(&plain, -20, -9) && !span_meets(&plain, -20, -10));
    assert!(span_meets(&wrapping, 0, 101) && !span_meets(&wrapping, -99, 100));
}

#[test]
fn a_span_over_adjacent_ranges_lies_inside_them_together() {
    let adjacent = [(-10, 0), (0, 10), (20, 30)];
    assert!(span_inside(&adjacent, -9, 10), "(-10, 0] and (0, 10] touch");
    assert!(!span_inside(&adjacent, -9, 11), "11 is in neither");
    assert!(!span_inside(&adjacent, 5, 21), "(10, 20] is missing");
    assert!(span_inside(&[(0, 10), (-10, 0)], -9, 10), "in any order");
    let ring = [(100, -100), (-100, 0), (0, 100)];
    assert!(
        span_inside(&ring, i64::MIN, i64::MAX),
        "the three cover the ring"
    );
    let overlapping = [(-10, 5), (0, 10)];
    assert!(span_inside(&overlapping, -9, 10));
    assert!(span_inside(&[(5, 5), (0, 1)], i64::MIN, i64::MAX));
    assert!(!span_inside(&[], 0, 0));
}

#[test]
fn outputs_inherit_a_mark_only_when_every_input_shares_it() {
    let repaired = |at_ms| RepairMark::Repaired { at_ms };
    let pending = |session| RepairMark::Pending { session };
    let marks: BTreeMap<u64, RepairMark> = [
        (1, repaired(30)),
        (2, repaired(20)),
        (3, pending(7)),
        (4, pending(7)),
        (5, pending(8)),
    ]
    .into_iter()
    .collect();
    let of = |gs: &[u64]| inherited_mark(&marks, &gs.iter().copied().collect());
    assert_eq!(of(&[1, 2]), Some(repaired(20)), "the oldest repair time");
    assert_eq!(of(&[3, 4]), Some(pending(7)));
    assert_eq!(of(&[4, 5]), None, "two sessions");
    assert_eq!(of(&[1, 3]), None);
    assert_eq!(of(&[1, 6]), None, "6 is unrepaired");
    assert_eq!(of(&[]), None);
}
