//! Replica read latencies per table, for speculative retry's percentiles
//! (docs/design/cluster.md, section 8.3).
//!
//! A histogram of log-spaced buckets (each 20% wider than the one
//! before, from 10 µs to about 20 s) per table. Every
//! [`LATENCY_HALF_LIFE`] the counts are halved, so the percentiles follow
//! the last minute or so rather than the node's whole life. Fewer than
//! [`MIN_SAMPLES`] samples give no percentile: a table just created does
//! not speculate on a guess.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Mutex, RwLock};
use tokio::time::Instant;

/// How often the counts are halved.
pub const LATENCY_HALF_LIFE: Duration = Duration::from_secs(60);
/// Fewest samples a percentile is computed from.
pub const MIN_SAMPLES: u64 = 20;

const BUCKETS: usize = 80;
const FIRST_BOUND_MICROS: f64 = 10.0;
const GROWTH: f64 = 1.2;

/// One table's replica read latencies.
#[derive(Debug)]
pub struct LatencyHistogram {
    inner: Mutex<Counts>,
}

#[derive(Debug)]
struct Counts {
    buckets: [u64; BUCKETS],
    total: u64,
    halved_at: Instant,
}

/// The upper bound of bucket `i`, in microseconds.
fn bound_micros(i: usize) -> f64 {
    FIRST_BOUND_MICROS * GROWTH.powi(i as i32)
}

fn bucket_of(latency: Duration) -> usize {
    let micros = latency.as_secs_f64() * 1e6;
    if micros <= FIRST_BOUND_MICROS {
        return 0;
    }
    let i = ((micros / FIRST_BOUND_MICROS).ln() / GROWTH.ln()).ceil() as usize;
    i.min(BUCKETS - 1)
}

impl LatencyHistogram {
    pub fn new(now: Instant) -> LatencyHistogram {
        LatencyHistogram {
            inner: Mutex::new(Counts {
                buckets: [0; BUCKETS],
                total: 0,
                halved_at: now,
            }),
        }
    }

    /// Counts one replica's answer that took `latency`.
    pub fn record(&self, latency: Duration, now: Instant) {
        let mut c = self.inner.lock();
        c.decay(now);
        c.buckets[bucket_of(latency)] += 1;
        c.total += 1;
    }

    /// The latency under which `percentile` % of the answers came (the
    /// upper bound of their bucket); `None` with too few samples.
    pub fn percentile(&self, percentile: f64, now: Instant) -> Option<Duration> {
        let mut c = self.inner.lock();
        c.decay(now);
        if c.total < MIN_SAMPLES {
            return None;
        }
        let wanted = ((percentile / 100.0) * c.total as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (i, n) in c.buckets.iter().enumerate() {
            seen += n;
            if seen >= wanted {
                return Some(Duration::from_secs_f64(bound_micros(i) / 1e6));
            }
        }
        Some(Duration::from_secs_f64(bound_micros(BUCKETS - 1) / 1e6))
    }
}

impl Counts {
    fn decay(&mut self, now: Instant) {
        while now.saturating_duration_since(self.halved_at) >= LATENCY_HALF_LIFE {
            for b in &mut self.buckets {
                *b /= 2;
            }
            self.total = self.buckets.iter().sum();
            self.halved_at += LATENCY_HALF_LIFE;
        }
    }
}

/// The histograms of every table the coordinator has read.
#[derive(Debug, Default)]
pub struct TableLatencies {
    tables: RwLock<BTreeMap<u128, Arc<LatencyHistogram>>>,
}

impl TableLatencies {
    /// The histogram of `table`, created empty on first use.
    pub fn of(&self, table: u128, now: Instant) -> Arc<LatencyHistogram> {
        if let Some(h) = self.tables.read().get(&table) {
            return Arc::clone(h);
        }
        let mut tables = self.tables.write();
        Arc::clone(
            tables
                .entry(table)
                .or_insert_with(|| Arc::new(LatencyHistogram::new(now))),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::{Clock, SystemClock};

    #[test]
    fn percentiles_come_from_the_buckets_and_need_min_samples() {
        let now = SystemClock.now();
        let h = LatencyHistogram::new(now);
        for _ in 0..MIN_SAMPLES - 1 {
            h.record(Duration::from_millis(1), now);
        }
        assert_eq!(h.percentile(99.0, now), None, "one sample short");
        h.record(Duration::from_millis(50), now);
        let p50 = h.percentile(50.0, now).unwrap();
        assert!(
            p50 >= Duration::from_millis(1) && p50 < Duration::from_micros(1_200),
            "{p50:?}"
        );
        let p99 = h.percentile(99.0, now).unwrap();
        assert!(
            p99 >= Duration::from_millis(50) && p99 < Duration::from_millis(60),
            "{p99:?}"
        );
    }

    #[test]
    fn old_samples_fade_by_halves() {
        let now = SystemClock.now();
        let h = LatencyHistogram::new(now);
        for _ in 0..100 {
            h.record(Duration::from_millis(100), now);
        }
        let later = now + LATENCY_HALF_LIFE * 3;
        for _ in 0..100 {
            h.record(Duration::from_millis(1), later);
        }
        // 12 slow ones left against 100 fast: the median is fast again.
        let p50 = h.percentile(50.0, later).unwrap();
        assert!(p50 < Duration::from_millis(2), "{p50:?}");
        assert!(bucket_of(Duration::from_secs(3600)) == BUCKETS - 1);
        assert_eq!(bucket_of(Duration::ZERO), 0);
    }
}
