//! `compaction_throughput`: the rate compactions may write at, in MiB/s
//! (0 = unlimited), changeable at runtime. Cassandra's default is 64 MiB/s.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Cassandra 5.0's default `compaction_throughput`.
pub const DEFAULT_COMPACTION_THROUGHPUT_MIB_PER_SEC: u64 = 64;

/// The least share of `compaction_throughput` the adaptive throttle leaves
/// compactions (3.2 MiB/s at the default), so that they always progress.
pub const MIN_COMPACTION_RATE_FACTOR: f64 = 0.05;

/// Compactions may always write this many times what flushes wrote over
/// the last [`FLUSH_RATE_WINDOW`] per second, whatever the adaptive share
/// (never more than `compaction_throughput`). Size-tiered compaction
/// rewrites each flushed byte about once per tier (three or four tiers
/// for gigabytes of 100 MiB flushes). Held to the 5% floor while a
/// garbagecollect slowed the disk, compactions of a 1.5 GiB node's own
/// writes fell behind and sstables piled up (23 after 15 minutes; 8-14
/// with this floor; docs/benchmarks.md, sessions 12-13).
pub const KEEP_UP_FACTOR: f64 = 4.0;

/// The window over which the flush rate is measured.
pub const FLUSH_RATE_WINDOW: Duration = Duration::from_secs(60);

/// Bytes flushed recently, for the rate compactions must keep up with.
#[derive(Debug, Default)]
pub struct FlushRate {
    recent: VecDeque<(Instant, u64)>,
}

impl FlushRate {
    /// A flush of `bytes` ended at `now`.
    pub fn record(&mut self, now: Instant, bytes: u64) {
        self.forget_before(now);
        self.recent.push_back((now, bytes));
    }

    /// Bytes per second flushed over the window that ends at `now`.
    pub fn bytes_per_sec(&mut self, now: Instant) -> f64 {
        self.forget_before(now);
        let total: u64 = self.recent.iter().map(|(_, b)| b).sum();
        total as f64 / FLUSH_RATE_WINDOW.as_secs_f64()
    }

    fn forget_before(&mut self, now: Instant) {
        while let Some((at, _)) = self.recent.front() {
            if now.saturating_duration_since(*at) <= FLUSH_RATE_WINDOW {
                break;
            }
            self.recent.pop_front();
        }
    }
}

/// The rate compactions may write at: `configured` bytes per second times
/// the adaptive `factor`, but at least [`KEEP_UP_FACTOR`] times the flush
/// rate, and at most `configured`.
pub fn rate_with_floor(configured: f64, factor: f64, flushed_per_sec: f64) -> f64 {
    (configured * factor)
        .max(KEEP_UP_FACTOR * flushed_per_sec)
        .min(configured)
}

/// How long a compaction that wrote `bytes` over `elapsed` since its last
/// check must pause to stay at or under `bytes_per_sec` (`None`: never).
/// Checked every few hundred KiB, so a change of the rate applies from the
/// next check on, never to what was written before.
pub fn pause_for(bytes_per_sec: Option<f64>, bytes: u64, elapsed: Duration) -> Duration {
    match bytes_per_sec {
        Some(rate) if rate > 0.0 => {
            Duration::from_secs_f64(bytes as f64 / rate).saturating_sub(elapsed)
        }
        _ => Duration::ZERO,
    }
}

/// The adaptive share of the compaction throughput: lowered fast while
/// client reads wait on the disk, raised slowly when they do not.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdaptiveRate {
    pub factor: f64,
}

impl Default for AdaptiveRate {
    fn default() -> Self {
        AdaptiveRate { factor: 1.0 }
    }
}

impl AdaptiveRate {
    /// One tick of the controller: halve the share under `pressure`, else
    /// give back a twentieth of the full rate.
    pub fn tick(&mut self, pressure: bool) -> f64 {
        self.factor = if pressure {
            (self.factor / 2.0).max(MIN_COMPACTION_RATE_FACTOR)
        } else {
            (self.factor + 0.05).min(1.0)
        };
        self.factor
    }
}

/// Client reads that slow down while compactions run: the signal of the
/// adaptive throttle. Fed, once per tick, the reads that needed the disk
/// in that tick (how many, their total time), whether any waited for a
/// read-stage slot and whether a compaction ran; keeps a baseline of their
/// mean time: the lowest seen, drifting up slowly over ticks without a
/// compaction, so a lasting change of the workload becomes the new normal
/// but a long compaction (a garbagecollect of the whole table) never does.
#[derive(Debug, Clone, Default)]
pub struct ReadPressure {
    baseline_us: Option<f64>,
}

/// Reads per tick below which their mean says nothing.
pub const PRESSURE_MIN_READS: u64 = 5;
/// A tick whose mean read time passes the baseline by this factor is under
/// pressure.
pub const PRESSURE_SLOWDOWN: f64 = 1.2;
/// How fast the baseline follows a slower mean (per tick).
const BASELINE_DRIFT: f64 = 0.02;

impl ReadPressure {
    /// Whether this tick's reads say compactions should give way.
    pub fn observe(&mut self, reads: u64, total_us: u64, queued: bool, compacting: bool) -> bool {
        if reads < PRESSURE_MIN_READS {
            return queued;
        }
        let mean = total_us as f64 / reads as f64;
        let slow = self
            .baseline_us
            .is_some_and(|b| mean > b * PRESSURE_SLOWDOWN);
        self.baseline_us = Some(match self.baseline_us {
            Some(b) if mean >= b && compacting => b,
            Some(b) if mean >= b => b + (mean - b) * BASELINE_DRIFT,
            _ => mean,
        });
        queued || slow
    }

    pub fn baseline_us(&self) -> Option<f64> {
        self.baseline_us
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_slower_than_their_baseline_or_queued_are_pressure() {
        let mut p = ReadPressure::default();
        assert!(
            !p.observe(100, 100 * 200, false, false),
            "the first tick sets the baseline"
        );
        assert!(!p.observe(100, 100 * 230, false, false));
        assert!(p.observe(100, 100 * 400, false, false), "twice as slow");
        assert!(
            !p.observe(3, 3 * 10_000, false, false),
            "too few reads to judge"
        );
        assert!(p.observe(0, 0, true, false), "reads waiting for a slot");
        // A lasting slowdown becomes the baseline.
        let mut ticks = 0;
        while p.observe(100, 100 * 600, false, false) {
            ticks += 1;
            assert!(ticks < 200, "never adapts");
        }
        assert!(p.baseline_us().unwrap() > 400.0);
    }

    #[test]
    fn the_slowdown_threshold_is_exact() {
        let mut p = ReadPressure::default();
        p.observe(1000, 1000 * 1000, false, true);
        let at = (1000.0 * PRESSURE_SLOWDOWN) as u64;
        assert!(!p.observe(1000, 1000 * at, false, true), "at the threshold");
        assert!(p.observe(1000, 1000 * (at + 1), false, true), "past it");
    }

    #[test]
    fn a_long_compaction_never_becomes_the_baseline() {
        let mut p = ReadPressure::default();
        p.observe(100, 100 * 200, false, false);
        for _ in 0..10_000 {
            assert!(
                p.observe(100, 100 * 300, false, true),
                "reads 1.5x slower all through a compaction"
            );
        }
        assert_eq!(p.baseline_us(), Some(200.0));
        // Faster reads still lower it while compacting.
        p.observe(100, 100 * 150, false, true);
        assert_eq!(p.baseline_us(), Some(150.0));
    }

    #[test]
    fn the_adaptive_share_halves_under_pressure_and_climbs_back() {
        let mut r = AdaptiveRate::default();
        assert_eq!(r.tick(true), 0.5);
        assert_eq!(r.tick(true), 0.25);
        for _ in 0..10 {
            r.tick(true);
        }
        assert_eq!(r.factor, MIN_COMPACTION_RATE_FACTOR);
        let mut ticks = 0;
        while r.tick(false) < 1.0 {
            ticks += 1;
        }
        assert_eq!(ticks, 18, "back to the full rate in 19 calm ticks");
        assert_eq!(r.tick(false), 1.0);
    }

    #[test]
    fn the_flush_rate_counts_the_last_minute_only() {
        let start = Instant::now();
        let mut r = FlushRate::default();
        assert_eq!(r.bytes_per_sec(start), 0.0);
        r.record(start, 60 << 20);
        r.record(start + Duration::from_secs(30), 60 << 20);
        let mib = (1u64 << 20) as f64;
        // A flush counts for exactly FLUSH_RATE_WINDOW, and not a moment more.
        assert_eq!(r.bytes_per_sec(start + FLUSH_RATE_WINDOW), 2.0 * mib);
        let past = FLUSH_RATE_WINDOW + Duration::from_millis(1);
        assert_eq!(r.bytes_per_sec(start + past), mib);
        assert_eq!(r.bytes_per_sec(start + past + Duration::from_secs(30)), 0.0);
    }

    #[test]
    fn compactions_keep_up_with_flushes_within_the_configured_rate() {
        let mib = (1u64 << 20) as f64;
        let configured = 64.0 * mib;
        let in_mib = |rate: f64| (rate / mib * 1000.0).round() / 1000.0;
        // No flushes: the adaptive share alone.
        assert_eq!(in_mib(rate_with_floor(configured, 0.05, 0.0)), 3.2);
        // 5 MiB/s flushed: at least 20 MiB/s, whatever the share.
        assert_eq!(in_mib(rate_with_floor(configured, 0.05, 5.0 * mib)), 20.0);
        assert_eq!(in_mib(rate_with_floor(configured, 0.5, 5.0 * mib)), 32.0);
        // Never past the configured rate.
        assert_eq!(rate_with_floor(configured, 0.05, 100.0 * mib), configured);
    }

    #[test]
    fn pauses_cover_only_what_was_written_since_the_last_check() {
        let mib = (1u64 << 20) as f64;
        assert_eq!(
            pause_for(Some(4.0 * mib), 1 << 20, Duration::from_millis(100)),
            Duration::from_millis(150)
        );
        assert_eq!(
            pause_for(Some(4.0 * mib), 1 << 20, Duration::from_secs(1)),
            Duration::ZERO
        );
        assert_eq!(pause_for(None, u64::MAX, Duration::ZERO), Duration::ZERO);
    }
}
