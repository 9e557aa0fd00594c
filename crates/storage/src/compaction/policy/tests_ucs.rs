//! Unified tests: W to fanout and threshold, density levels, overlap sets, shards.

use super::ucs::{density, overlap_sets, Unified, UnifiedOptions};
use super::{CommonOptions, Reason, SstableView, Strategy, Task};

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

fn ucs(w: i32, flush: u64) -> Unified {
    let options = UnifiedOptions {
        scaling_parameters: vec![w],
        flush_size_override_bytes: flush,
        ..UnifiedOptions::default()
    };
    Unified::new(options, CommonOptions::default())
}

#[test]
fn scaling_parameters() {
    let o = |ws: Vec<i32>| UnifiedOptions {
        scaling_parameters: ws,
        ..UnifiedOptions::default()
    };
    assert_eq!(
        (o(vec![2]).fanout(0), o(vec![2]).threshold(0)),
        (4, 4),
        "T4"
    );
    assert_eq!(
        (o(vec![-8]).fanout(0), o(vec![-8]).threshold(0)),
        (10, 2),
        "L10"
    );
    assert_eq!((o(vec![0]).fanout(0), o(vec![0]).threshold(0)), (2, 2), "N");
    let mixed = o(vec![-2, 0, 6]);
    assert_eq!((mixed.fanout(0), mixed.threshold(0)), (4, 2));
    assert_eq!((mixed.fanout(1), mixed.threshold(1)), (2, 2));
    assert_eq!(
        (mixed.fanout(5), mixed.threshold(5)),
        (8, 8),
        "last one repeats"
    );
}

#[test]
fn levels_by_density() {
    // T4, flush 100 MiB: base 77.5 MiB; level 0 below 310 MiB, level 1 below 1240 MiB.
    let t4 = ucs(2, 100 * MIB);
    assert_eq!(t4.level_of_density((100 * MIB) as f64), 0);
    assert_eq!(t4.level_of_density((309 * MIB) as f64), 0);
    assert_eq!(t4.level_of_density((311 * MIB) as f64), 1);
    assert_eq!(t4.level_of_density((1239 * MIB) as f64), 1);
    assert_eq!(t4.level_of_density((1241 * MIB) as f64), 2);
    // L10, flush 100 MiB: base 91 MiB; level 0 below 910 MiB, level 1 below 9100 MiB.
    let l10 = ucs(-8, 100 * MIB);
    assert_eq!(l10.level_of_density((900 * MIB) as f64), 0);
    assert_eq!(l10.level_of_density(GIB as f64), 1);
    assert_eq!(l10.level_of_density((9000 * MIB) as f64), 1);
    assert_eq!(l10.level_of_density((9101 * MIB) as f64), 2);
    // Density is size over the covered fraction of the ring.
    let half = SstableView {
        first_token: 0,
        last_token: i64::MAX,
        ..SstableView::new(1, 50 * MIB)
    };
    assert!((density(&half) - (100 * MIB) as f64).abs() < 1.0);
    let point = SstableView {
        first_token: 7,
        last_token: 7,
        ..SstableView::new(1, 50 * MIB)
    };
    assert_eq!(
        density(&point),
        (50 * MIB) as f64,
        "single partition counts as the whole ring"
    );
}

#[test]
fn overlap_sets_follow_the_design_doc_example() {
    // A 0-3, B 2-7, C 6-9, D 1-8 give the sets ABD and BCD.
    let t = [(1, 0, 3), (2, 2, 7), (3, 6, 9), (4, 1, 8)].map(|(id, a, b)| SstableView {
        first_token: a,
        last_token: b,
        ..SstableView::new(id, 1)
    });
    let refs: Vec<&SstableView> = t.iter().collect();
    let sets: Vec<Vec<u64>> = overlap_sets(&refs)
        .iter()
        .map(|s| {
            let mut ids: Vec<u64> = s.iter().map(|x| x.id).collect();
            ids.sort_unstable();
            ids
        })
        .collect();
    assert_eq!(sets, vec![vec![1, 2, 4], vec![2, 3, 4]]);
}

#[test]
fn threshold_counts_overlapping_sstables_only() {
    let flush = |id: u64| SstableView::new(id, 100 * MIB);
    let mut s = ucs(2, 100 * MIB);
    let three: Vec<SstableView> = (1..=3).map(flush).collect();
    assert_eq!(s.next_task(&three, 0, 0), None);
    let four: Vec<SstableView> = (1..=4).map(flush).collect();
    match s.next_task(&four, 0, 0) {
        Some(Task::Compact {
            inputs,
            reason,
            shard_boundaries,
            ..
        }) => {
            assert_eq!(inputs, vec![1, 2, 3, 4]);
            assert_eq!(reason, Reason::Unified { level: 0 });
            // 400 MiB over the ring: 4 shards of the base count.
            assert_eq!(shard_boundaries, vec![-(1i64 << 62), 0, 1i64 << 62]);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(s.pending_tasks(&four), 1);
    // Four quarter-ring sstables of 25 MiB each (density 100 MiB) do not overlap: no work.
    let q = 1i128 << 62;
    let quarters: Vec<SstableView> = (0..4i128)
        .map(|i| {
            let first = (i128::from(i64::MIN) + i * q) as i64;
            let last = (i128::from(first) + q - 1) as i64;
            SstableView {
                first_token: first,
                last_token: last,
                ..SstableView::new(i as u64 + 1, 25 * MIB)
            }
        })
        .collect();
    assert_eq!(s.next_task(&quarters, 0, 0), None);
    // L10: two overlapping sstables are enough.
    let two: Vec<SstableView> = (1..=2).map(flush).collect();
    assert!(matches!(
        ucs(-8, 100 * MIB).next_task(&two, 0, 0),
        Some(Task::Compact { .. })
    ));
}

#[test]
fn shard_counts() {
    let o = UnifiedOptions::default(); // min 100 MiB, base 4, target 1 GiB, growth 0.333
    assert_eq!(o.num_shards((50 * MIB) as f64), 1, "below the minimum size");
    assert_eq!(o.num_shards((250 * MIB) as f64), 2, "2^floor(log2(2.5))");
    assert_eq!(o.num_shards((400 * MIB) as f64), 4, "base count");
    assert_eq!(
        o.num_shards((4 * GIB) as f64),
        4,
        "count 1: exponent 0.5 rounds down"
    );
    assert_eq!(
        o.num_shards((32 * GIB) as f64),
        16,
        "count 8: 3 * 0.667 + 0.5 = 2.5 -> 4 << 2"
    );
    let fixed = UnifiedOptions {
        sstable_growth: 0.0,
        min_sstable_size_bytes: 0,
        ..o.clone()
    };
    // count = 32 GiB / (1 GiB * 0.7071 * 4) = 11.3 -> highest one bit 8 -> 32 shards.
    assert_eq!(fixed.num_shards((32 * GIB) as f64), 32);
    let one = UnifiedOptions {
        sstable_growth: 1.0,
        ..o
    };
    assert_eq!(one.num_shards((32 * GIB) as f64), 4);
}

#[test]
fn observed_flush_size_rounds_up_to_mib_and_ignores_small_changes() {
    let mut s = ucs(2, 0);
    s.on_flush(&SstableView::new(1, 100 * MIB - 5));
    assert_eq!(s.flush_size_bytes(), 100 * MIB);
    s.on_flush(&SstableView::new(2, 140 * MIB));
    assert_eq!(s.flush_size_bytes(), 100 * MIB, "within 50%");
    s.on_flush(&SstableView::new(3, 300 * MIB));
    assert_eq!(s.flush_size_bytes(), 300 * MIB);
}
