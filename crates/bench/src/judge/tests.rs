//! The rule on hand-made series: flat, growing, noisy, short.

use super::*;

/// Rows one second apart from t = 0, pending and unleveled from `f(t)`.
fn rows(n: usize, f: impl Fn(f64) -> (Option<f64>, Option<f64>)) -> Vec<ServerRow> {
    (0..n)
        .map(|i| {
            let t = i as f64;
            let (pending, unleveled) = f(t);
            ServerRow {
                t,
                pending_compactions: pending,
                unleveled_sstables: unleveled,
                ..ServerRow::default()
            }
        })
        .collect()
}

/// A fixed pseudo-random sequence in [-1, 1] (no randomness in tests).
fn jitter(t: f64) -> f64 {
    ((t * 12.9898).sin() * 43_758.545).fract()
}

#[test]
fn a_line_is_fitted_exactly() {
    let points: Vec<(f64, f64)> = (0..10).map(|i| (i as f64, 3.0 + 0.5 * i as f64)).collect();
    let line = fit(&points).unwrap();
    assert!((line.slope - 0.5).abs() < 1e-12);
    assert!(line.noise < 1e-12);
    assert_eq!(fit(&[(1.0, 1.0)]), None, "one point");
    assert_eq!(fit(&[(1.0, 1.0), (1.0, 5.0)]), None, "one instant");
}

#[test]
fn flat_series_keep_up() {
    let r = rows(600, |_| (Some(4.0), Some(12.0)));
    let v = judge(&r, 0.0, 599.0);
    assert_eq!(v.behind, Some(false));
    assert_eq!(
        v.pending,
        Trend::Holds {
            growth: 0.0,
            noise: 0.0
        }
    );
    assert_eq!(v.label(), "keeps up");
}

#[test]
fn both_growing_falls_behind() {
    // +1 pending task and +1 unleveled sstable a minute.
    let r = rows(1200, |t| (Some(2.0 + t / 60.0), Some(5.0 + t / 60.0)));
    let v = judge(&r, 0.0, 1199.0);
    assert_eq!(v.behind, Some(true), "{v:?}");
    assert!((v.pending.growth().unwrap() - 599.0 / 60.0).abs() < 1e-9);
    assert_eq!(v.label(), "falls behind");
}

#[test]
fn only_the_second_half_counts() {
    // A backlog from the load drains in the first half, then holds.
    let r = rows(600, |t| {
        let v = if t < 300.0 { 100.0 - t / 3.0 } else { 0.0 };
        (Some(v), Some(v))
    });
    assert_eq!(judge(&r, 0.0, 599.0).behind, Some(false));
    // Growth confined to the first half is not falling behind either.
    let r = rows(600, |t| (Some(t.min(300.0)), Some(t.min(300.0))));
    assert_eq!(judge(&r, 0.0, 599.0).behind, Some(false));
}

#[test]
fn one_series_growing_is_not_enough() {
    let r = rows(600, |t| (Some(3.0), Some(t / 10.0)));
    let v = judge(&r, 0.0, 599.0);
    assert!(matches!(v.unleveled, Trend::Grows { .. }));
    assert!(matches!(v.pending, Trend::Holds { .. }));
    assert_eq!(v.behind, Some(false));
}

#[test]
fn noise_around_a_level_is_not_growth_but_a_noisy_ramp_is() {
    // Compactions start and finish: a sawtooth of amplitude 10 around 20.
    let saw = rows(900, |t| {
        let v = 20.0 + 10.0 * ((t % 60.0) / 30.0 - 1.0) + 3.0 * jitter(t);
        (Some(v), Some(v))
    });
    assert_eq!(judge(&saw, 0.0, 899.0).behind, Some(false));
    // The same scatter on a ramp of 30 over the window.
    let ramp = rows(900, |t| {
        let v = 20.0 + t / 30.0 + 10.0 * ((t % 60.0) / 30.0 - 1.0) + 3.0 * jitter(t);
        (Some(v), Some(v))
    });
    assert_eq!(judge(&ramp, 0.0, 899.0).behind, Some(true));
    // A rise smaller than the floor is not growth, however clean.
    let creep = rows(900, |t| (Some(t / 1000.0), Some(t / 1000.0)));
    let v = judge(&creep, 0.0, 899.0);
    assert!(v.pending.growth().unwrap() < GROWTH_MIN);
    assert_eq!(v.behind, Some(false));
}

#[test]
fn short_or_empty_series_are_unknown() {
    let r = rows(2 * POINTS_MIN - 2, |t| (Some(t), Some(t)));
    let v = judge(&r, 0.0, r.last().unwrap().t);
    assert_eq!(
        v.pending,
        Trend::Unknown {
            points: POINTS_MIN - 1
        }
    );
    assert_eq!(v.behind, None);
    assert_eq!(v.label(), "unknown");
    let r = rows(2 * POINTS_MIN, |t| (Some(t), Some(t)));
    assert_eq!(
        judge(&r, 0.0, r.last().unwrap().t).behind,
        Some(true),
        "just enough"
    );
    assert_eq!(judge(&[], 0.0, 10.0).behind, None);
    // Empty cells (failed scrapes) and NaN are not samples.
    let gaps = rows(600, |t| match t as u64 % 2 {
        0 => (None, Some(f64::NAN)),
        _ => (Some(t), None),
    });
    let v = judge(&gaps, 0.0, 599.0);
    assert!(matches!(v.pending, Trend::Grows { .. }));
    assert_eq!(v.unleveled, Trend::Unknown { points: 0 });
    assert_eq!(
        v.behind,
        Some(true),
        "pending alone when there are no levels"
    );
}

#[test]
fn rows_outside_the_phase_are_ignored() {
    let r = rows(1000, |t| {
        let v = if (200.0..=500.0).contains(&t) { 5.0 } else { t };
        (Some(v), Some(v))
    });
    assert_eq!(judge(&r, 200.0, 500.0).behind, Some(false));
}
