//! Fully expired sstables and single-sstable tombstone compactions.

use super::common::{fully_expired, uncovered_fraction, worth_dropping_tombstones};
use super::stcs::{SizeTiered, SizeTieredOptions};
use super::{CommonOptions, SstableView, Strategy, Task};

const GC_BEFORE: i32 = 1_000;
const DAY: i64 = 86_400;

/// An sstable holding only tombstones purgeable at `GC_BEFORE`, written at timestamps 50..=100.
fn expired(id: u64, first: i64, last: i64) -> SstableView {
    SstableView {
        min_timestamp: 50,
        max_timestamp: 100,
        max_local_deletion_time: GC_BEFORE - 1,
        first_token: first,
        last_token: last,
        ..SstableView::new(id, 10)
    }
}

/// An sstable with live data written from `min_ts`.
fn live(id: u64, first: i64, last: i64, min_ts: i64) -> SstableView {
    SstableView {
        min_timestamp: min_ts,
        max_timestamp: min_ts + 10,
        first_token: first,
        last_token: last,
        ..SstableView::new(id, 10)
    }
}

fn stcs(common: CommonOptions) -> SizeTiered {
    SizeTiered::new(SizeTieredOptions::default(), common)
}

#[test]
fn expired_without_overlap_is_dropped() {
    let t = vec![expired(1, 0, 100), live(2, 200, 300, 0)];
    let task = stcs(CommonOptions::default()).next_task(&t, 0, GC_BEFORE);
    assert_eq!(task, Some(Task::DropExpired { inputs: vec![1] }));
}

#[test]
fn expired_shadowing_older_overlapping_data_is_kept() {
    // The live sstable overlaps and holds data from ts 10 < 100: the tombstones may shadow it.
    let t = vec![expired(1, 0, 100), live(2, 50, 300, 10)];
    assert_eq!(
        fully_expired(&[&t[0]], &t, GC_BEFORE, i64::MAX, false),
        Vec::<u64>::new()
    );
    assert_eq!(
        stcs(CommonOptions::default()).next_task(&t, 0, GC_BEFORE),
        None
    );
    // Same, but the overlapping data is newer than every tombstone: nothing to shadow.
    let t = vec![expired(1, 0, 100), live(2, 50, 300, 101)];
    assert_eq!(
        fully_expired(&[&t[0]], &t, GC_BEFORE, i64::MAX, false),
        vec![1]
    );
    // Unsafe aggressive expiration ignores overlaps.
    let t = vec![expired(1, 0, 100), live(2, 50, 300, 10)];
    assert_eq!(
        fully_expired(&[&t[0]], &t, GC_BEFORE, i64::MAX, true),
        vec![1]
    );
}

#[test]
fn memtable_data_older_than_the_tombstones_blocks_the_drop() {
    let t = vec![expired(1, 0, 100)];
    assert_eq!(
        fully_expired(&[&t[0]], &t, GC_BEFORE, 60, false),
        Vec::<u64>::new()
    );
    assert_eq!(fully_expired(&[&t[0]], &t, GC_BEFORE, 101, false), vec![1]);
}

#[test]
fn not_yet_purgeable_or_compacting_is_not_dropped() {
    let mut t = vec![expired(1, 0, 100)];
    t[0].max_local_deletion_time = GC_BEFORE; // not strictly before gc_before
    assert_eq!(
        stcs(CommonOptions::default()).next_task(&t, 0, GC_BEFORE),
        None
    );
    let mut t = vec![expired(1, 0, 100)];
    t[0].compacting = true;
    assert_eq!(
        stcs(CommonOptions::default()).next_task(&t, 0, GC_BEFORE),
        None
    );
}

#[test]
fn two_expired_overlapping_each_other_are_both_dropped() {
    // Neither holds live data, so neither counts as a source the other could shadow.
    let t = vec![expired(1, 0, 100), expired(2, 50, 150)];
    let task = stcs(CommonOptions::default()).next_task(&t, 0, GC_BEFORE);
    assert_eq!(task, Some(Task::DropExpired { inputs: vec![1, 2] }));
}

fn tombstoned(id: u64, ratio: f64, first: i64, last: i64) -> SstableView {
    SstableView {
        droppable_tombstone_ratio: ratio,
        first_token: first,
        last_token: last,
        ..SstableView::new(id, 10)
    }
}

#[test]
fn tombstone_compaction_needs_ratio_above_threshold_and_age() {
    let o = CommonOptions::default();
    let t = vec![tombstoned(1, 0.3, 0, 99)];
    assert!(worth_dropping_tombstones(&t[0], &t, &o, DAY, 0));
    assert!(
        !worth_dropping_tombstones(&t[0], &t, &o, DAY - 1, 0),
        "younger than the interval"
    );
    let t = vec![tombstoned(1, 0.2, 0, 99)];
    assert!(
        !worth_dropping_tombstones(&t[0], &t, &o, DAY, 0),
        "ratio must exceed 0.2"
    );
    let t = vec![tombstoned(1, 0.3, 0, 99)];
    let task = stcs(o).next_task(&t, DAY, 0);
    assert_eq!(task, Some(Task::TombstoneCompaction { input: 1 }));
}

#[test]
fn overlap_blocks_tombstone_compaction_unless_unchecked() {
    let o = CommonOptions::default();
    let t = vec![tombstoned(1, 0.9, 0, 99), live(2, 0, 99, 0)];
    assert!(
        !worth_dropping_tombstones(&t[0], &t, &o, DAY, 0),
        "fully overlapped"
    );
    let unchecked = CommonOptions {
        unchecked_tombstone_compaction: true,
        ..o.clone()
    };
    assert!(worth_dropping_tombstones(&t[0], &t, &unchecked, DAY, 0));
    // Half the range is outside the other sstable: 0.5 * 0.5 = 0.25 > 0.2, 0.5 * 0.3 < 0.2.
    let t = vec![tombstoned(1, 0.5, 0, 99), live(2, 50, 200, 0)];
    assert_eq!(uncovered_fraction(&t[0], &[&t[1]]), 0.5);
    assert!(worth_dropping_tombstones(&t[0], &t, &o, DAY, 0));
    let t = vec![tombstoned(1, 0.3, 0, 99), live(2, 50, 200, 0)];
    assert!(!worth_dropping_tombstones(&t[0], &t, &o, DAY, 0));
    let off = CommonOptions {
        tombstone_compactions: false,
        ..o
    };
    let t = vec![tombstoned(1, 0.9, 0, 99)];
    assert!(
        !worth_dropping_tombstones(&t[0], &t, &off, DAY, 0),
        "TWCS default"
    );
}
