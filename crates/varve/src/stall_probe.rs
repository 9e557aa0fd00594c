//! The node's pause analogue of a JVM's GC count and duration: a task on
//! the runtime sleeps [`PROBE_INTERVAL`] over and over, and whenever it
//! wakes more than [`STALL_THRESHOLD`] late, the runtime could not run it:
//! every worker was busy or blocked. Each such stall is counted
//! (`runtime_stalls`) and its lateness summed (`runtime_stall_seconds`),
//! as Cassandra's GC log counts pauses and their time.

use std::sync::Arc;
use std::time::{Duration, Instant};

use varve_metrics::{names, Counter, Registry};

/// How often the probe asks to be woken.
pub const PROBE_INTERVAL: Duration = Duration::from_millis(10);
/// Lateness past which a wake-up counts as a stall.
pub const STALL_THRESHOLD: Duration = Duration::from_millis(10);

/// The probe's counters.
#[derive(Clone)]
pub struct Stalls {
    count: Arc<Counter>,
    micros: Arc<Counter>,
}

impl Stalls {
    pub fn new(registry: &Registry) -> Stalls {
        Stalls {
            count: registry.counter(names::RUNTIME_STALLS, &[]),
            micros: registry.counter(names::RUNTIME_STALL_MICROS, &[]),
        }
    }

    /// Counts a wake-up `late` past its time; whether it was a stall.
    pub fn record(&self, late: Duration) -> bool {
        if late <= STALL_THRESHOLD {
            return false;
        }
        self.count.inc();
        self.micros.add(late.as_micros() as u64);
        true
    }
}

/// Starts the probe on the current runtime; it ends with the runtime.
pub fn start(registry: &Registry) {
    let stalls = Stalls::new(registry);
    tokio::spawn(async move {
        loop {
            let asked = Instant::now();
            tokio::time::sleep(PROBE_INTERVAL).await;
            let late = asked.elapsed().saturating_sub(PROBE_INTERVAL);
            stalls.record(late);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wake_up_counts_as_a_stall_only_past_the_threshold() {
        let registry = Registry::new();
        let stalls = Stalls::new(&registry);
        assert!(!stalls.record(STALL_THRESHOLD));
        assert!(stalls.record(STALL_THRESHOLD + Duration::from_micros(1)));
        assert!(stalls.record(Duration::from_millis(250)));
        assert_eq!(stalls.count.get(), 2);
        assert_eq!(stalls.micros.get(), 10_001 + 250_000);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_blocked_runtime_is_seen_as_a_stall() {
        let registry = Registry::new();
        start(&registry);
        tokio::task::yield_now().await;
        // Block the only worker for 60 ms: the probe wakes at least 40 ms late.
        std::thread::sleep(Duration::from_millis(60));
        tokio::time::sleep(Duration::from_millis(30)).await;
        let stalls = Stalls::new(&registry);
        assert!(stalls.count.get() >= 1, "no stall seen");
        assert!(stalls.micros.get() >= 30_000, "{}", stalls.micros.get());
    }
}
