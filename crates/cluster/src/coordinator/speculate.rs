//! When a read asks one more replica (`speculative_retry`, section 8.3):
//! the table option as the coordinator takes it, and the wait it means
//! now.

use std::time::Duration;

use tokio::time::Instant;

use super::latency::LatencyHistogram;

/// A table's `speculative_retry`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Speculation {
    /// Never ask another replica.
    #[default]
    Never,
    /// Ask one more replica at once.
    Always,
    /// After this percentile of the table's replica read latencies.
    Percentile(f64),
    /// After a fixed wait.
    Fixed(Duration),
    /// The smaller of a percentile's wait and a fixed one.
    Min(f64, Duration),
    /// The larger of the two.
    Max(f64, Duration),
}

impl Speculation {
    /// How long a read waits before asking one more replica; `None`:
    /// never. A percentile without enough samples yet stands at half of
    /// `read_timeout`, as Cassandra's sampled read latency starts there: a
    /// read whose replica died unnoticed is still answered in time.
    pub fn delay(
        &self,
        latencies: &LatencyHistogram,
        now: Instant,
        read_timeout: Duration,
    ) -> Option<Duration> {
        let sampled = |p| latencies.percentile(p, now).unwrap_or(read_timeout / 2);
        match *self {
            Speculation::Never => None,
            Speculation::Always => Some(Duration::ZERO),
            Speculation::Percentile(p) => Some(sampled(p)),
            Speculation::Fixed(d) => Some(d),
            Speculation::Min(p, d) => Some(sampled(p).min(d)),
            Speculation::Max(p, d) => Some(sampled(p).max(d)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::{Clock, SystemClock};

    #[test]
    fn each_form_waits_as_it_says() {
        let now = SystemClock.now();
        let h = LatencyHistogram::new(now);
        let ms = Duration::from_millis;
        let timeout = ms(5000);
        let delay = |s: Speculation| s.delay(&h, now, timeout);
        assert_eq!(delay(Speculation::Never), None);
        assert_eq!(delay(Speculation::Always), Some(Duration::ZERO));
        assert_eq!(
            delay(Speculation::Percentile(99.0)),
            Some(ms(2500)),
            "no samples: half the read timeout"
        );
        assert_eq!(delay(Speculation::Fixed(ms(7))), Some(ms(7)));
        assert_eq!(delay(Speculation::Min(99.0, ms(7))), Some(ms(7)));
        assert_eq!(delay(Speculation::Max(99.0, ms(7))), Some(ms(2500)));
        for _ in 0..100 {
            h.record(ms(20), now);
        }
        let p99 = delay(Speculation::Percentile(99.0)).unwrap();
        assert!(p99 >= ms(20) && p99 < ms(25), "{p99:?}");
        assert_eq!(delay(Speculation::Min(99.0, ms(7))), Some(ms(7)));
        assert_eq!(delay(Speculation::Max(99.0, ms(7))), Some(p99));
    }
}
