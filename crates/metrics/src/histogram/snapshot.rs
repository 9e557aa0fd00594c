//! [`Snapshot`]: a histogram's counts copied out at one moment, with the
//! summary statistics users look at (mean, p50 .. p999, max) in microseconds.

use super::buckets::{high_of, low_of, midpoint_of};

/// The quantiles every snapshot reports, as `(q, label)`; the Prometheus
/// summary uses the ones marked in [`SUMMARY_QUANTILES`].
pub const SNAPSHOT_QUANTILES: [f64; 6] = [0.5, 0.75, 0.95, 0.98, 0.99, 0.999];
/// The quantiles rendered in the Prometheus summary.
pub const SUMMARY_QUANTILES: [f64; 4] = [0.5, 0.95, 0.99, 0.999];

/// Summary of a histogram (all-time or recent). Values in microseconds;
/// quantiles are bucket midpoints clamped to the observed min and max, so
/// within 1/64 of the exact nearest-rank value. An empty snapshot reports
/// zeros (and `count == 0`).
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// Values recorded.
    pub count: u64,
    /// Sum of the values (exact for all-time snapshots, bucket midpoints
    /// for recent ones).
    pub sum_micros: f64,
    pub mean_micros: f64,
    pub min_micros: u64,
    pub max_micros: u64,
    pub p50: f64,
    pub p75: f64,
    pub p95: f64,
    pub p98: f64,
    pub p99: f64,
    pub p999: f64,
    /// Bucket counts, indexed like `buckets::index_of`.
    counts: Vec<u64>,
}

/// What the caller knows beyond the bucket counts.
pub(super) struct Known {
    /// Exact sum, when all-time totals are kept.
    pub sum: Option<u64>,
    /// All-time minimum and maximum (bounds for clamping).
    pub min: u64,
    pub max: u64,
}

impl Snapshot {
    pub(super) fn from_counts(counts: Vec<u64>, known: Known) -> Self {
        let count: u64 = counts.iter().sum();
        let mut s = Snapshot {
            count,
            sum_micros: 0.0,
            mean_micros: 0.0,
            min_micros: 0,
            max_micros: 0,
            p50: 0.0,
            p75: 0.0,
            p95: 0.0,
            p98: 0.0,
            p99: 0.0,
            p999: 0.0,
            counts,
        };
        if count == 0 {
            return s;
        }
        let first = s.counts.iter().position(|&c| c > 0).unwrap_or(0);
        let last = s.counts.iter().rposition(|&c| c > 0).unwrap_or(0);
        // The observed extremes, narrowed by what this window holds.
        s.min_micros = low_of(first).max(known.min.min(high_of(first)));
        s.max_micros = high_of(last).min(known.max.max(low_of(last)));
        // A record racing this snapshot may have bumped its bucket but not
        // yet min/max: never let the bounds cross.
        s.min_micros = s.min_micros.min(s.max_micros);
        s.sum_micros = match known.sum {
            Some(sum) => sum as f64,
            None => s
                .counts
                .iter()
                .enumerate()
                .map(|(i, &c)| c as f64 * s.clamp(midpoint_of(i)))
                .sum(),
        };
        s.mean_micros = s.sum_micros / count as f64;
        s.p50 = s.quantile(0.5);
        s.p75 = s.quantile(0.75);
        s.p95 = s.quantile(0.95);
        s.p98 = s.quantile(0.98);
        s.p99 = s.quantile(0.99);
        s.p999 = s.quantile(0.999);
        s
    }

    fn clamp(&self, v: f64) -> f64 {
        // max/min rather than f64::clamp, which panics on crossed bounds.
        v.max(self.min_micros as f64).min(self.max_micros as f64)
    }

    /// The nearest-rank `q`-quantile (`q` in 0..=1, clamped), in
    /// microseconds: the smallest bucket holding at least `ceil(q * count)`
    /// values, reported as its midpoint. 0 when empty.
    pub fn quantile(&self, q: f64) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        let q = if q.is_nan() { 0.0 } else { q.clamp(0.0, 1.0) };
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0u64;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return self.clamp(midpoint_of(i));
            }
        }
        self.max_micros as f64
    }
}
