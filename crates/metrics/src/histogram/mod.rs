//! [`LatencyHistogram`]: microsecond latencies in log-linear buckets
//! ([`buckets`]), with no allocation, lock or clock read on the record path.
//!
//! Two views:
//! - **all-time**: counts, exact sum, min and max since creation; feeds
//!   `count()`, `sum_micros()`, `snapshot()` and the Prometheus `_sum` and
//!   `_count`.
//! - **recent**: two more bucket arrays, one *current* and one *previous*.
//!   Records go to the current one; [`LatencyHistogram::rotate`] clears the
//!   previous one and makes it current, so `snapshot_recent()` (the merge of
//!   both) covers the last one to two windows ([`RECENT_WINDOW`], 30 s, so
//!   30-60 s). This stands in for Cassandra's forward-decaying reservoir
//!   (half-life 60 s): same purpose, "the p99 now", with a hard edge instead
//!   of a smooth decay, and nothing to rescale.
//!
//! Rotation is driven from outside the hot path: `snapshot_recent()` rotates
//! when a window has passed, and `Registry::tick` does it for every
//! histogram. If nothing ticks for a long while, the current window simply
//! holds everything since the last rotation (documented, not hidden). A
//! recorder that races a rotation may land in the window being cleared and
//! be missed by the recent view only; all-time totals never lose a count.

pub mod buckets;
mod snapshot;

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use buckets::{index_of, Buckets, BUCKET_COUNT, MAX_MICROS};
use snapshot::Known;
pub use snapshot::{Snapshot, SNAPSHOT_QUANTILES, SUMMARY_QUANTILES};

/// Length of one recent window; the recent view covers one to two of them.
pub const RECENT_WINDOW: Duration = Duration::from_secs(30);

/// A latency histogram in microseconds, 0 .. [`MAX_MICROS`] (60 s), with
/// relative error at most 1/64 on every quantile.
#[derive(Debug)]
pub struct LatencyHistogram {
    total: Buckets,
    windows: [Buckets; 2],
    /// Which of `windows` is current (0 or 1).
    current: AtomicUsize,
    sum: AtomicU64,
    min: AtomicU64,
    max: AtomicU64,
    /// Values above `MAX_MICROS`, recorded as `MAX_MICROS`.
    clamped: AtomicU64,
    window: Duration,
    created: Instant,
    /// Nanoseconds from `created` to the last rotation.
    rotated_at_ns: AtomicU64,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyHistogram {
    /// An empty histogram with the default [`RECENT_WINDOW`].
    pub fn new() -> Self {
        Self::with_window(RECENT_WINDOW)
    }

    /// An empty histogram whose recent windows last `window`.
    pub fn with_window(window: Duration) -> Self {
        Self {
            total: Buckets::new(),
            windows: [Buckets::new(), Buckets::new()],
            current: AtomicUsize::new(0),
            sum: AtomicU64::new(0),
            min: AtomicU64::new(u64::MAX),
            max: AtomicU64::new(0),
            clamped: AtomicU64::new(0),
            window,
            created: Instant::now(),
            rotated_at_ns: AtomicU64::new(0),
        }
    }

    /// Records one latency in microseconds. Values above [`MAX_MICROS`] are
    /// recorded as `MAX_MICROS` (in buckets, sum and max) and counted in
    /// [`clamped`](Self::clamped).
    #[inline]
    pub fn record(&self, micros: u64) {
        let v = if micros > MAX_MICROS {
            self.clamped.fetch_add(1, Ordering::Relaxed);
            MAX_MICROS
        } else {
            micros
        };
        let index = index_of(v);
        self.total.increment(index);
        let current = self.current.load(Ordering::Relaxed) & 1;
        self.windows[current].increment(index);
        self.sum.fetch_add(v, Ordering::Relaxed);
        // Read first: after warm-up the extremes rarely move, and a plain
        // load keeps the cache line shared between recording threads.
        if v > self.max.load(Ordering::Relaxed) {
            self.max.fetch_max(v, Ordering::Relaxed);
        }
        if v < self.min.load(Ordering::Relaxed) {
            self.min.fetch_min(v, Ordering::Relaxed);
        }
    }

    /// Records a duration (saturating to microseconds).
    #[inline]
    pub fn record_duration(&self, d: Duration) {
        self.record(u64::try_from(d.as_micros()).unwrap_or(u64::MAX));
    }

    /// Records the time elapsed since `start`.
    #[inline]
    pub fn record_since(&self, start: Instant) {
        self.record_duration(start.elapsed());
    }

    /// Values recorded since creation (summed over buckets).
    pub fn count(&self) -> u64 {
        self.total.total()
    }

    /// Sum of all recorded values (after clamping), in microseconds.
    pub fn sum_micros(&self) -> u64 {
        self.sum.load(Ordering::Relaxed)
    }

    /// Values that were above [`MAX_MICROS`].
    pub fn clamped(&self) -> u64 {
        self.clamped.load(Ordering::Relaxed)
    }

    /// The length of one recent window.
    pub fn window(&self) -> Duration {
        self.window
    }

    fn known(&self, sum: Option<u64>) -> Known {
        Known {
            sum,
            min: self.min.load(Ordering::Relaxed),
            max: self.max.load(Ordering::Relaxed),
        }
    }

    /// Everything since creation.
    pub fn snapshot(&self) -> Snapshot {
        let mut counts = vec![0; BUCKET_COUNT];
        self.total.add_to(&mut counts);
        Snapshot::from_counts(counts, self.known(Some(self.sum_micros())))
    }

    /// The last one to two windows (rotating first if a window has passed).
    pub fn snapshot_recent(&self) -> Snapshot {
        self.rotate_if_due(Instant::now());
        self.snapshot_recent_no_rotate()
    }

    /// The recent view as it stands, without looking at the clock.
    pub fn snapshot_recent_no_rotate(&self) -> Snapshot {
        let mut counts = vec![0; BUCKET_COUNT];
        for w in &self.windows {
            w.add_to(&mut counts);
        }
        Snapshot::from_counts(counts, self.known(None))
    }

    /// Starts a new recent window now: the previous window is forgotten and
    /// the current one becomes the previous.
    pub fn rotate(&self) {
        let current = self.current.load(Ordering::Relaxed) & 1;
        let next = current ^ 1;
        self.windows[next].clear();
        self.current.store(next, Ordering::Relaxed);
    }

    /// Rotates if at least one window has passed since the last rotation, as
    /// of `now`. Returns whether it rotated. Concurrent callers rotate once.
    pub fn rotate_if_due(&self, now: Instant) -> bool {
        let now_ns = u64::try_from(now.saturating_duration_since(self.created).as_nanos())
            .unwrap_or(u64::MAX);
        let last = self.rotated_at_ns.load(Ordering::Relaxed);
        let window_ns = u64::try_from(self.window.as_nanos()).unwrap_or(u64::MAX);
        if now_ns.saturating_sub(last) < window_ns {
            return false;
        }
        let won = self
            .rotated_at_ns
            .compare_exchange(last, now_ns, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok();
        if won {
            self.rotate();
        }
        won
    }
}

#[cfg(test)]
mod tests;
