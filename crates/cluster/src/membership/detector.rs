//! The phi-accrual failure detector, on Cassandra's scale.
//!
//! For each peer it keeps the intervals between the moments this node
//! learned something newer about it (a heartbeat, any new version). With
//! `mean` the average interval, a peer silent for `t` has
//! `phi = t / mean / ln 10` (Cassandra's `PHI_FACTOR`: the exponential
//! model's `-log10` of the chance the peer is still alive), and is
//! convicted once `phi > phi_convict_threshold`. With the default 8 and a
//! 500 ms gossip interval that is `8 × ln 10 × 0.5 s ≈ 9.2 s` of silence.
//! chitchat's phi is `t / mean` without the factor; a threshold meant the
//! Cassandra way becomes `threshold × ln 10` there ([`ratio_threshold`]).
//!
//! The mean starts from a prior, the gossip interval, weighted as
//! [`PRIOR_WEIGHT`] samples, so one odd early interval cannot convict a
//! peer nor keep a dead one alive for long. Intervals above
//! [`ARRIVAL_INTERVAL_MAX_FACTOR`] gossip intervals (a pause, a partition
//! that healed) are not sampled, as in Cassandra, so they do not stretch
//! the mean. At most [`ARRIVAL_WINDOW_SIZE`] intervals are kept per peer.
//!
//! Pure: every call takes `now`, so tests move time by hand.

use std::collections::{BTreeMap, VecDeque};
use std::f64::consts::LN_10;
use std::time::Duration;

use tokio::time::Instant;

use crate::net::handshake::HostId;

/// Cassandra's factor from `t / mean` to phi: `1 / ln 10`.
pub const PHI_FACTOR: f64 = 1.0 / LN_10;

/// Intervals kept per peer (Cassandra's window).
pub const ARRIVAL_WINDOW_SIZE: usize = 1000;

/// How many samples the prior mean counts as.
pub const PRIOR_WEIGHT: u64 = 5;

/// Intervals longer than this many gossip intervals are not sampled.
pub const ARRIVAL_INTERVAL_MAX_FACTOR: u32 = 2;

/// The threshold on `t / mean` (chitchat's phi) that convicts at the same
/// moment as `phi_convict_threshold` on Cassandra's scale.
pub fn ratio_threshold(phi_convict_threshold: f64) -> f64 {
    phi_convict_threshold * LN_10
}

/// Arrival intervals of one peer, in microseconds.
#[derive(Debug, Default)]
struct ArrivalWindow {
    intervals_us: VecDeque<u64>,
    sum_us: u64,
    last: Option<Instant>,
}

impl ArrivalWindow {
    fn report(&mut self, now: Instant, max_interval: Duration) {
        if let Some(last) = self.last {
            let interval = now.saturating_duration_since(last);
            if interval <= max_interval {
                let us = u64::try_from(interval.as_micros()).unwrap_or(u64::MAX);
                if self.intervals_us.len() == ARRIVAL_WINDOW_SIZE {
                    let oldest = self.intervals_us.pop_front().unwrap_or(0);
                    self.sum_us -= oldest;
                }
                self.intervals_us.push_back(us);
                self.sum_us += us;
            }
        }
        self.last = Some(now.max(self.last.unwrap_or(now)));
    }

    /// The smoothed mean interval, in microseconds (at least 1).
    fn mean_us(&self, prior_us: u64) -> f64 {
        let n = self.intervals_us.len() as u64 + PRIOR_WEIGHT;
        let total = self.sum_us as f64 + (PRIOR_WEIGHT * prior_us) as f64;
        (total / n as f64).max(1.0)
    }
}

/// Phi per peer; see the module docs.
#[derive(Debug)]
pub struct FailureDetector {
    windows: BTreeMap<HostId, ArrivalWindow>,
    prior_us: u64,
    max_interval: Duration,
    phi_convict_threshold: f64,
}

impl FailureDetector {
    /// A detector for heartbeats sent every `gossip_interval`, convicting
    /// above `phi_convict_threshold` (Cassandra's scale).
    pub fn new(gossip_interval: Duration, phi_convict_threshold: f64) -> FailureDetector {
        FailureDetector {
            windows: BTreeMap::new(),
            prior_us: u64::try_from(gossip_interval.as_micros())
                .unwrap_or(u64::MAX)
                .max(1),
            max_interval: gossip_interval.saturating_mul(ARRIVAL_INTERVAL_MAX_FACTOR),
            phi_convict_threshold,
        }
    }

    /// This node learned something newer about `host` at `now`.
    pub fn report(&mut self, host: HostId, now: Instant) {
        self.windows
            .entry(host)
            .or_default()
            .report(now, self.max_interval);
    }

    /// Forgets `host`'s intervals (it restarted: a new generation).
    pub fn forget(&mut self, host: HostId) {
        self.windows.remove(&host);
    }

    /// `host`'s phi at `now`; `None` before anything was heard of it.
    pub fn phi(&self, host: HostId, now: Instant) -> Option<f64> {
        let window = self.windows.get(&host)?;
        let last = window.last?;
        let silent_us = now.saturating_duration_since(last).as_micros() as f64;
        Some(PHI_FACTOR * silent_us / window.mean_us(self.prior_us))
    }

    /// Heard of, and phi at most the threshold.
    pub fn is_live(&self, host: HostId, now: Instant) -> bool {
        self.phi(host, now)
            .is_some_and(|phi| phi <= self.phi_convict_threshold)
    }

    /// How long after its last arrival `host` is convicted, at its
    /// current mean.
    pub fn conviction_after(&self, host: HostId) -> Option<Duration> {
        let window = self.windows.get(&host)?;
        let us = ratio_threshold(self.phi_convict_threshold) * window.mean_us(self.prior_us);
        Duration::try_from_secs_f64(us / 1e6).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::{Clock, SystemClock};

    const H: HostId = HostId([7; 16]);
    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn the_threshold_is_scaled_by_ln_10() {
        assert!((ratio_threshold(8.0) - 18.420_680_743_952_367).abs() < 1e-9);
        assert!((ratio_threshold(1.0) - LN_10).abs() < 1e-12);
        assert!((PHI_FACTOR * LN_10 - 1.0).abs() < 1e-12);
    }

    #[test]
    fn nothing_heard_is_not_live() {
        let fd = FailureDetector::new(500 * MS, 8.0);
        let now = SystemClock.now();
        assert_eq!(fd.phi(H, now), None);
        assert!(!fd.is_live(H, now));
    }

    #[test]
    fn one_heartbeat_convicts_after_threshold_times_ln_10_intervals() {
        // Prior 500 ms: conviction at 8 × ln 10 × 0.5 s = 9.2103 s.
        let mut fd = FailureDetector::new(500 * MS, 8.0);
        let t0 = SystemClock.now();
        fd.report(H, t0);
        assert!(fd.is_live(H, t0));
        assert!(fd.is_live(H, t0 + 9_200 * MS));
        assert!(!fd.is_live(H, t0 + 9_220 * MS));
        let after = fd.conviction_after(H).expect("heard of");
        assert!(after > 9_200 * MS && after < 9_220 * MS, "{after:?}");
        let phi = fd.phi(H, t0 + 500 * MS).expect("heard of");
        assert!((phi - PHI_FACTOR).abs() < 1e-9, "one mean interval: {phi}");
    }

    #[test]
    fn the_mean_follows_the_arrivals() {
        // Heartbeats every 100 ms against a 500 ms prior: a full window
        // gives a mean of (1000 × 100 + 5 × 500) / 1005 = 101.99 ms, so
        // conviction comes at 8 × ln 10 × 101.99 ms = 1.879 s.
        let mut fd = FailureDetector::new(500 * MS, 8.0);
        let t0 = SystemClock.now();
        let mut t = t0;
        for _ in 0..ARRIVAL_WINDOW_SIZE + 10 {
            fd.report(H, t);
            t += 100 * MS;
        }
        let last = t - 100 * MS;
        let after = fd.conviction_after(H).expect("heard of");
        assert!(after > 1_870 * MS && after < 1_890 * MS, "{after:?}");
        assert!(fd.is_live(H, last + 1_870 * MS));
        assert!(!fd.is_live(H, last + 1_900 * MS));
    }

    #[test]
    fn long_intervals_are_not_sampled() {
        let mut fd = FailureDetector::new(500 * MS, 8.0);
        let t0 = SystemClock.now();
        fd.report(H, t0);
        // 1000 ms is at the limit (2 intervals) and is sampled; 1001 is not.
        fd.report(H, t0 + 1_000 * MS);
        let with_one = fd.conviction_after(H).expect("heard of");
        fd.report(H, t0 + 2_001 * MS);
        assert_eq!(fd.conviction_after(H), Some(with_one));
        // Prior 5 × 500 + 1000 over 6 samples: a mean of 583.3 ms.
        let expected = ratio_threshold(8.0) * 0.583_333;
        assert!((with_one.as_secs_f64() - expected).abs() < 1e-3);
    }

    #[test]
    fn a_new_generation_starts_afresh() {
        let mut fd = FailureDetector::new(500 * MS, 8.0);
        let t0 = SystemClock.now();
        fd.report(H, t0);
        fd.forget(H);
        assert_eq!(fd.phi(H, t0), None);
    }

    #[test]
    fn a_lower_threshold_convicts_sooner() {
        let mut fd = FailureDetector::new(100 * MS, 1.0);
        let t0 = SystemClock.now();
        fd.report(H, t0);
        // 1 × ln 10 × 100 ms = 230 ms.
        assert!(fd.is_live(H, t0 + 230 * MS));
        assert!(!fd.is_live(H, t0 + 231 * MS));
    }
}
