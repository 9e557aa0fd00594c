//! SizeTiered tests, expectations worked out from the bucketing rules by hand.

use super::stcs::{get_buckets, SizeTiered, SizeTieredOptions};
use super::{CommonOptions, Reason, SstableView, Strategy, Task};

const MIB: u64 = 1 << 20;

fn tables(sizes_mib: &[u64]) -> Vec<SstableView> {
    sizes_mib
        .iter()
        .enumerate()
        .map(|(i, &s)| SstableView::new(i as u64 + 1, s * MIB))
        .collect()
}

fn stcs() -> SizeTiered {
    SizeTiered::new(SizeTieredOptions::default(), CommonOptions::default())
}

fn bucket_sizes(sizes_mib: &[u64]) -> Vec<Vec<u64>> {
    let t = tables(sizes_mib);
    let refs: Vec<&SstableView> = t.iter().collect();
    get_buckets(&refs, &SizeTieredOptions::default())
        .iter()
        .map(|b| b.iter().map(|&i| t[i].size_bytes / MIB).collect())
        .collect()
}

fn inputs(task: Option<Task>) -> Vec<u64> {
    match task {
        Some(Task::Compact {
            inputs,
            reason: Reason::SizeTiered,
            ..
        }) => inputs,
        other => panic!("expected an STCS compaction, got {other:?}"),
    }
}

#[test]
fn small_sstables_share_one_bucket_below_min_sstable_size() {
    assert_eq!(bucket_sizes(&[1, 1, 1, 1]), vec![vec![1, 1, 1, 1]]);
    // 1 and 40 MiB are far apart, but both under 50 MiB.
    assert_eq!(bucket_sizes(&[1, 40]), vec![vec![1, 40]]);
    assert_eq!(
        inputs(stcs().next_task(&tables(&[1, 1, 1, 1]), 0, 0)),
        vec![1, 2, 3, 4]
    );
}

#[test]
fn bucket_bounds_are_strict_around_the_average() {
    // avg 100: 149 < 150 joins; 150 does not.
    assert_eq!(bucket_sizes(&[100, 100, 149]), vec![vec![100, 100, 149]]);
    assert_eq!(
        bucket_sizes(&[100, 100, 150]),
        vec![vec![100, 100], vec![150]]
    );
    // 100, 100, 100 (avg 100); 160 >= 150 opens a bucket; 300 is outside both 100's and
    // 160's ranges (160 * 1.5 = 240).
    assert_eq!(
        bucket_sizes(&[100, 100, 100, 160, 300]),
        vec![vec![100, 100, 100], vec![160], vec![300]]
    );
    let t = tables(&[100, 100, 100, 160, 300]);
    assert_eq!(stcs().next_task(&t, 0, 0), None);
    assert_eq!(stcs().pending_tasks(&t), 0);
}

#[test]
fn the_average_moves_as_members_join() {
    // 60 opens (avg 60); 80 joins (avg 70); 100 joins (< 105, avg 80); 119 joins (< 120).
    assert_eq!(
        bucket_sizes(&[60, 80, 100, 119]),
        vec![vec![60, 80, 100, 119]]
    );
}

#[test]
fn hottest_bucket_wins_and_ties_go_to_the_larger_average() {
    let mut t = tables(&[1, 1, 1, 1, 200, 200, 200, 200]);
    assert_eq!(
        inputs(stcs().next_task(&t, 0, 0)),
        vec![5, 6, 7, 8],
        "tie: larger average"
    );
    t[0].reads_per_key = 0.5;
    assert_eq!(
        inputs(stcs().next_task(&t, 0, 0)),
        vec![1, 2, 3, 4],
        "hotter bucket"
    );
}

#[test]
fn buckets_are_trimmed_to_max_threshold_keeping_the_hottest() {
    let mut t = tables(&[1; 40]);
    for s in t.iter_mut().skip(8) {
        s.reads_per_key = 1.0; // ids 9..=40 are hot, 1..=8 cold
    }
    assert_eq!(
        inputs(stcs().next_task(&t, 0, 0)),
        (9..=40).collect::<Vec<u64>>()
    );
    assert_eq!(stcs().pending_tasks(&t), 2, "ceil(40 / 32)");
    let t = tables(&[1, 1, 1, 1, 100, 100, 100, 100, 100]);
    assert_eq!(stcs().pending_tasks(&t), 2, "one per candidate bucket");
}

#[test]
fn compacting_sstables_are_never_chosen() {
    let mut t = tables(&[1, 1, 1, 1, 1]);
    t[0].compacting = true;
    assert_eq!(inputs(stcs().next_task(&t, 0, 0)), vec![2, 3, 4, 5]);
    t[1].compacting = true;
    assert_eq!(stcs().next_task(&t, 0, 0), None);
}

#[test]
fn disabled_strategy_chooses_nothing() {
    let common = CommonOptions {
        enabled: false,
        ..CommonOptions::default()
    };
    let mut s = SizeTiered::new(SizeTieredOptions::default(), common);
    assert_eq!(s.next_task(&tables(&[1, 1, 1, 1]), 0, 0), None);
}
