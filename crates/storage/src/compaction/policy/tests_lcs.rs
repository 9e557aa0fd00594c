//! Leveled tests: capacities, scores, the L0 fallback, overlap selection, pending tasks.

use super::lcs::{Leveled, LeveledOptions, MAX_COMPACTING_L0};
use super::{CommonOptions, Reason, SstableView, Strategy, Task};

const MIB: u64 = 1 << 20;
const SSTABLE: u64 = 160 * MIB;

fn lcs() -> Leveled {
    Leveled::new(LeveledOptions::default(), CommonOptions::default())
}

fn at(id: u64, level: u32, size: u64, first: i64, last: i64) -> SstableView {
    SstableView {
        level,
        first_token: first,
        last_token: last,
        ..SstableView::new(id, size)
    }
}

/// `n` non-overlapping full-size sstables in `level`, ids from `first_id`, tokens 1000 apart.
fn run(first_id: u64, level: u32, n: u64) -> Vec<SstableView> {
    (0..n)
        .map(|i| {
            at(
                first_id + i,
                level,
                SSTABLE,
                i as i64 * 1000,
                i as i64 * 1000 + 999,
            )
        })
        .collect()
}

fn compact(task: Option<Task>) -> (Vec<u64>, u32, u64, Reason) {
    match task {
        Some(Task::Compact {
            inputs,
            output_level,
            max_output_bytes,
            reason,
            ..
        }) => (inputs, output_level, max_output_bytes, reason),
        other => panic!("expected a compaction, got {other:?}"),
    }
}

#[test]
fn level_capacities() {
    let o = LeveledOptions::default();
    assert_eq!(o.max_bytes_for_level(0), 4 * SSTABLE);
    assert_eq!(o.max_bytes_for_level(1), 10 * SSTABLE);
    assert_eq!(o.max_bytes_for_level(2), 100 * SSTABLE);
    assert_eq!(o.max_bytes_for_level(3), 1000 * SSTABLE);
}

#[test]
fn a_level_over_its_score_compacts_one_sstable_with_its_overlaps_round_robin() {
    // L1: 11 sstables (score 1.1); L2: two sstables under the first L1 sstable's range.
    let mut t = run(1, 1, 11);
    t.push(at(100, 2, SSTABLE, 0, 400));
    t.push(at(101, 2, SSTABLE, 500, 1500));
    t.push(at(102, 2, SSTABLE, 5000, 6000));
    let mut s = lcs();
    let levels = super::lcs::levels(&t);
    assert!((s.score(&levels, 1) - 1.1).abs() < 1e-9);
    let (inputs, level, max_out, reason) = compact(s.next_task(&t, 0, 0));
    assert_eq!(inputs, vec![1, 100, 101]);
    assert_eq!(
        (level, max_out, reason),
        (2, SSTABLE, Reason::Leveled { from_level: 1 })
    );
    // The next pick starts after the last one (round robin): sstable 2 overlaps 101.
    let (inputs, ..) = compact(s.next_task(&t, 0, 0));
    assert_eq!(inputs, vec![2, 101]);
    // With 10 sstables (score 1.0) nothing above L0 needs work.
    let t = run(1, 1, 10);
    assert_eq!(lcs().next_task(&t, 0, 0), None);
}

#[test]
fn higher_levels_go_first() {
    let mut t = run(1, 1, 11);
    t.extend(run(100, 2, 101)); // L2 score 1.01
    let (inputs, level, ..) = compact(lcs().next_task(&t, 0, 0));
    assert_eq!(level, 3);
    assert_eq!(inputs, vec![100]);
}

#[test]
fn l0_falls_back_to_stcs_above_32_sstables() {
    let mut t = run(1, 1, 11); // L1 wants work
    let l0 = |n: u64| {
        (0..n)
            .map(|i| at(1000 + i, 0, MIB, i64::MIN, i64::MAX))
            .collect::<Vec<_>>()
    };
    t.extend(l0(MAX_COMPACTING_L0 as u64 + 1));
    let (inputs, level, max_out, reason) = compact(lcs().next_task(&t, 0, 0));
    assert_eq!(reason, Reason::LeveledL0SizeTiered);
    assert_eq!((inputs.len(), level, max_out), (32, 0, u64::MAX));
    // With exactly 32 in L0, L1 is served first.
    let mut t = run(1, 1, 11);
    t.extend(l0(MAX_COMPACTING_L0 as u64));
    let (_, _, _, reason) = compact(lcs().next_task(&t, 0, 0));
    assert_eq!(reason, Reason::Leveled { from_level: 1 });
}

#[test]
fn l0_to_l1_takes_overlapping_l0_and_the_l1_under_their_span() {
    let t = vec![
        SstableView {
            max_timestamp: 1,
            ..at(1, 0, 100 * MIB, 0, 100)
        },
        SstableView {
            max_timestamp: 2,
            ..at(2, 0, 100 * MIB, 50, 150)
        },
        at(10, 1, SSTABLE, 0, 40),
        at(11, 1, SSTABLE, 120, 200),
        at(12, 1, SSTABLE, 300, 400),
    ];
    let (inputs, level, max_out, reason) = compact(lcs().next_task(&t, 0, 0));
    assert_eq!(inputs, vec![1, 2, 10, 11]);
    assert_eq!((level, max_out, reason), (1, SSTABLE, Reason::LeveledL0));
    // Less than one sstable's worth stays in L0 and leaves L1 alone.
    let t = vec![
        at(1, 0, 10 * MIB, 0, 100),
        at(2, 0, 10 * MIB, 50, 150),
        at(10, 1, SSTABLE, 0, 40),
    ];
    let (inputs, level, ..) = compact(lcs().next_task(&t, 0, 0));
    assert_eq!((inputs, level), (vec![1, 2], 0));
    // An L1 sstable already compacting blocks the L0 -> L1 compaction.
    let mut t = t;
    t[0].size_bytes = 100 * MIB;
    t[1].size_bytes = 100 * MIB;
    t[2].compacting = true;
    assert_eq!(lcs().next_task(&t, 0, 0), None);
}

#[test]
fn l0_takes_at_most_max_threshold_oldest() {
    let t: Vec<SstableView> = (0..40)
        .map(|i| SstableView {
            max_timestamp: 100 - i,
            ..at(i as u64 + 1, 0, MIB, 0, 10)
        })
        .collect();
    let (inputs, level, ..) = compact(lcs().next_task(&t, 0, 0));
    // Oldest by max timestamp are ids 40 down to 9.
    assert_eq!(inputs, (9..=40).collect::<Vec<u64>>());
    assert_eq!(level, 0, "32 MiB is less than one sstable");
}

#[test]
fn pending_tasks_formula() {
    // L0: 40 x 160 MiB: ceil((6400 MiB - 1.001 * 640 MiB) / 160 MiB) = 36, plus 40 / 32 = 1.
    // L1: 12 x 160 MiB: ceil((1920 - 1601.6) / 160) = 2.
    let mut t: Vec<SstableView> = (0..40).map(|i| at(i + 1, 0, SSTABLE, 0, 10)).collect();
    t.extend(run(100, 1, 12));
    assert_eq!(lcs().pending_tasks(&t), 36 + 1 + 2);
    assert_eq!(lcs().pending_tasks(&run(1, 1, 10)), 0);
}

#[test]
fn switching_from_stcs_puts_unleveled_sstables_in_l0() {
    // STCS writes level 0: LCS sees them all as L0 and has work.
    let t: Vec<SstableView> = (0..6).map(|i| at(i + 1, 0, 100 * MIB, 0, 100)).collect();
    let s = lcs();
    assert_eq!(s.unleveled_count(&t), 6);
    let mut s = s;
    let (inputs, level, ..) = compact(s.next_task(&t, 0, 0));
    assert_eq!((inputs.len(), level), (6, 1));
    // Levels are kept; same-level overlaps are demoted to L0.
    let t = vec![
        at(1, 2, SSTABLE, 0, 100),
        at(2, 2, SSTABLE, 200, 300),
        at(3, 2, SSTABLE, 250, 400),
    ];
    assert_eq!(s.level_sizes(&t)[2], (2, 2 * SSTABLE));
    assert_eq!(s.unleveled_count(&t), 1);
}
