//! Keeping streamed bytes under `stream_throughput_outbound`.
//!
//! In Cassandra the limit is each sending node's. Here the receiver of a
//! pull paces what it takes from each source on a lane of that source,
//! and a pusher paces everything it sends on one lane of its own: a new
//! node pulling from three sources receives up to three times the limit,
//! each source sending at most the limit to it, as in Cassandra.
//!
//! A lane keeps the moment up to which its bytes are paid for. Bytes
//! move it on by their time at the limit; the caller sleeps until then.
//! A lane idle for a while does not bank the idle time: at most
//! [`PACE_CREDIT`] of it counts, so a stream that waited (a validation,
//! a slow source) catches up a little and never bursts unthrottled.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::env::Clock;

/// How much idle time a lane may make up for by sending faster.
pub const PACE_CREDIT: Duration = Duration::from_secs(1);

/// Whose limit bytes count against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Lane {
    /// Bytes this node takes from that source.
    From(SocketAddr),
    /// Bytes this node sends (pushes).
    Outbound,
}

/// Paces bytes per [`Lane`] at `limit` bytes per second (0: no limit).
pub struct Pacer {
    limit: u64,
    clock: Arc<dyn Clock>,
    paid_until: parking_lot::Mutex<BTreeMap<Lane, tokio::time::Instant>>,
}

impl Pacer {
    pub fn new(limit: u64, clock: Arc<dyn Clock>) -> Pacer {
        Pacer {
            limit,
            clock,
            paid_until: parking_lot::Mutex::new(BTreeMap::new()),
        }
    }

    /// Counts `bytes` on `lane` and waits while the lane runs ahead of the
    /// limit.
    pub async fn pace(&self, lane: Lane, bytes: u64) {
        let wait = self.charge(lane, bytes);
        if !wait.is_zero() {
            self.clock.sleep(wait).await;
        }
    }

    /// Moves the lane on by `bytes`; how long the caller has to wait.
    fn charge(&self, lane: Lane, bytes: u64) -> Duration {
        if self.limit == 0 {
            return Duration::ZERO;
        }
        let now = self.clock.now();
        let cost = Duration::from_secs_f64(bytes as f64 / self.limit as f64);
        let mut lanes = self.paid_until.lock();
        let paid = lanes.entry(lane).or_insert(now);
        let earliest = now.checked_sub(PACE_CREDIT).unwrap_or(now);
        *paid = (*paid).max(earliest) + cost;
        paid.saturating_duration_since(now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1024 * 1024;

    fn pacer(limit: u64) -> Pacer {
        Pacer::new(limit, crate::env::Env::tokio(0).clock)
    }

    fn source(n: u8) -> Lane {
        Lane::From(SocketAddr::from(([127, 0, 0, n], 7000)))
    }

    #[tokio::test(start_paused = true)]
    async fn each_lane_waits_for_its_own_bytes_only() {
        let p = pacer(10 * MIB);
        assert_eq!(p.charge(source(1), 5 * MIB), Duration::from_millis(500));
        assert_eq!(p.charge(source(1), 5 * MIB), Duration::from_secs(1));
        assert_eq!(p.charge(source(2), 5 * MIB), Duration::from_millis(500));
        assert_eq!(p.charge(Lane::Outbound, 10 * MIB), Duration::from_secs(1));
    }

    #[tokio::test(start_paused = true)]
    async fn idle_time_counts_up_to_the_credit_and_no_more() {
        let p = pacer(10 * MIB);
        assert_eq!(p.charge(source(1), 10 * MIB), Duration::from_secs(1));
        tokio::time::advance(Duration::from_secs(61)).await;
        // A minute idle: one second of it is credit, the rest is gone.
        assert_eq!(p.charge(source(1), 10 * MIB), Duration::ZERO);
        assert_eq!(p.charge(source(1), 10 * MIB), Duration::from_secs(1));
        assert_eq!(p.charge(source(1), 10 * MIB), Duration::from_secs(2));
    }

    #[tokio::test(start_paused = true)]
    async fn the_time_bytes_took_to_come_counts() {
        let p = pacer(10 * MIB);
        assert_eq!(p.charge(source(1), 10 * MIB), Duration::from_secs(1));
        tokio::time::advance(Duration::from_millis(1500)).await;
        assert_eq!(p.charge(source(1), 10 * MIB), Duration::from_millis(500));
    }

    #[tokio::test(start_paused = true)]
    async fn no_limit_never_waits() {
        let p = pacer(0);
        assert_eq!(p.charge(source(1), u64::MAX), Duration::ZERO);
    }
}
