//! Tests of the histogram: accuracy against exact percentiles, edge values,
//! concurrency and window rotation.

use super::buckets::MAX_MICROS;
use super::*;
use proptest::prelude::*;
use std::sync::Arc;

/// The exact nearest-rank quantile of `sorted`.
fn exact(sorted: &[u64], q: f64) -> f64 {
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1] as f64
}

fn within(estimate: f64, exact: f64, tolerance: f64) -> bool {
    (estimate - exact).abs() <= tolerance * exact.max(1.0)
}

/// Checks every snapshot statistic of `values` against the exact answer.
fn check_accuracy(values: &[u64]) -> Result<(), TestCaseError> {
    let h = LatencyHistogram::new();
    for &v in values {
        h.record(v);
    }
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    let s = h.snapshot();
    prop_assert_eq!(s.count, values.len() as u64);
    prop_assert_eq!(s.sum_micros, values.iter().sum::<u64>() as f64);
    prop_assert_eq!(s.max_micros, *sorted.last().unwrap_or(&0));
    prop_assert_eq!(s.min_micros, sorted[0]);
    let pairs = [
        (0.5, s.p50),
        (0.75, s.p75),
        (0.95, s.p95),
        (0.98, s.p98),
        (0.99, s.p99),
        (0.999, s.p999),
    ];
    for (q, got) in pairs {
        let want = exact(&sorted, q);
        prop_assert!(within(got, want, 0.02), "q={} got={} want={}", q, got, want);
    }
    for q in [0.0, 0.1, 0.33, 1.0] {
        let want = exact(&sorted, q);
        prop_assert!(within(s.quantile(q), want, 0.02), "q={}", q);
    }
    // The recent view holds the same values (no rotation happened).
    let r = h.snapshot_recent_no_rotate();
    prop_assert_eq!(r.count, s.count);
    prop_assert!(within(r.p99, s.p99, 0.0));
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn quantiles_within_two_percent(
        values in prop::collection::vec(
            prop_oneof![0u64..100, 0u64..10_000, 0u64..MAX_MICROS], 1..500)
    ) {
        check_accuracy(&values)?;
    }

    /// Many values, log-uniform over 1 µs .. 60 s (latency-shaped), seeded.
    #[test]
    fn quantiles_within_two_percent_log_uniform(seed in any::<u64>()) {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let top = (MAX_MICROS as f64).ln();
        let values: Vec<u64> = (0..20_000)
            .map(|_| rng.gen_range(0.0..top).exp() as u64)
            .collect();
        check_accuracy(&values)?;
    }
}

#[test]
fn empty_snapshot_is_zero() {
    let h = LatencyHistogram::new();
    let s = h.snapshot();
    assert_eq!(
        (s.count, s.max_micros, s.p99, s.mean_micros),
        (0, 0, 0.0, 0.0)
    );
    assert_eq!(h.snapshot_recent().count, 0);
}

#[test]
fn zero_one_and_max_are_exact_enough() {
    let h = LatencyHistogram::new();
    h.record(0);
    let s = h.snapshot();
    assert_eq!((s.count, s.p50, s.max_micros), (1, 0.0, 0));
    h.record(1);
    h.record(1);
    assert_eq!(h.snapshot().p50, 1.0);
    h.record(MAX_MICROS);
    let s = h.snapshot();
    assert_eq!(s.max_micros, MAX_MICROS);
    assert_eq!(s.quantile(1.0), MAX_MICROS as f64);
    assert_eq!(h.clamped(), 0);
}

#[test]
fn values_above_max_are_clamped_and_counted() {
    let h = LatencyHistogram::new();
    h.record(MAX_MICROS + 1);
    h.record(u64::MAX);
    h.record(5);
    assert_eq!(h.clamped(), 2);
    assert_eq!(h.count(), 3);
    assert_eq!(h.sum_micros(), 2 * MAX_MICROS + 5);
    let s = h.snapshot();
    assert_eq!(s.max_micros, MAX_MICROS);
    assert_eq!(s.p99, MAX_MICROS as f64);
}

#[test]
fn durations_are_recorded_in_micros() {
    let h = LatencyHistogram::new();
    h.record_duration(Duration::from_millis(3));
    h.record_duration(Duration::from_secs(u64::MAX));
    assert_eq!(h.sum_micros(), 3000 + MAX_MICROS);
    assert_eq!(h.clamped(), 1);
}

#[test]
fn four_threads_lose_no_counts() {
    const PER_THREAD: u64 = 50_000;
    let h = Arc::new(LatencyHistogram::new());
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            let h = h.clone();
            std::thread::spawn(move || {
                for i in 0..PER_THREAD {
                    h.record((i * 7 + t) % 5000);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("recording thread");
    }
    let expected_sum: u64 = (0..4u64)
        .map(|t| (0..PER_THREAD).map(|i| (i * 7 + t) % 5000).sum::<u64>())
        .sum();
    assert_eq!(h.count(), 4 * PER_THREAD);
    assert_eq!(h.sum_micros(), expected_sum);
    assert_eq!(h.snapshot_recent_no_rotate().count, 4 * PER_THREAD);
}

#[test]
fn rotation_forgets_old_values() {
    let h = LatencyHistogram::new();
    (0..100).for_each(|_| h.record(50_000));
    h.rotate();
    (0..100).for_each(|_| h.record(100));
    // Both windows still visible.
    let r = h.snapshot_recent_no_rotate();
    assert_eq!(r.count, 200);
    assert!(within(r.p99, 50_000.0, 0.02));
    h.rotate();
    // The 50 ms window is gone; the 100 µs one is the previous window.
    let r = h.snapshot_recent_no_rotate();
    assert_eq!(r.count, 100);
    // Recent extremes are known to the bucket (100..=101), not exactly.
    assert!(within(r.p99, 100.0, 1.0 / 64.0), "{r:?}");
    assert!((100..=101).contains(&r.max_micros), "{r:?}");
    h.rotate();
    assert_eq!(h.snapshot_recent_no_rotate().count, 0);
    // All-time totals keep everything.
    let s = h.snapshot();
    assert_eq!(s.count, 200);
    assert_eq!(s.max_micros, 50_000);
}

#[test]
fn rotate_if_due_follows_the_window() {
    let h = LatencyHistogram::with_window(Duration::from_secs(10));
    let t0 = Instant::now();
    h.record(7);
    assert!(!h.rotate_if_due(t0));
    assert!(h.rotate_if_due(t0 + Duration::from_secs(11)));
    assert!(!h.rotate_if_due(t0 + Duration::from_secs(12)));
    assert_eq!(h.snapshot_recent_no_rotate().count, 1);
    assert!(h.rotate_if_due(t0 + Duration::from_secs(25)));
    assert_eq!(h.snapshot_recent_no_rotate().count, 0);
    assert_eq!(h.count(), 1);
}

#[test]
fn recent_mean_and_max_are_estimates_within_bound() {
    let h = LatencyHistogram::new();
    for v in [1000u64, 2000, 3000] {
        h.record(v);
    }
    let r = h.snapshot_recent_no_rotate();
    assert!(within(r.mean_micros, 2000.0, 0.02));
    assert_eq!(r.max_micros, 3000);
    assert_eq!(r.min_micros, 1000);
}
