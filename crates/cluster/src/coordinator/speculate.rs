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
    /// never (a percentile without enough samples yet never speculates,
    /// except through MIN's and MAX's fixed wait).
    pub fn delay(&self, latencies: &LatencyHistogram, now: Instant) -> Option<Duration> {
        match *self {
            Speculation::Never => None,
            Speculation::Always => Some(Duration::ZERO),
            Speculation::Percentile(p) => latencies.percentile(p, now),
            Speculation::Fixed(d) => Some(d),
            Speculation::Min(p, d) => Some(latencies.percentile(p, now).map_or(d, |l| l.min(d))),
            Speculation::Max(p, d) => Some(latencies.percentile(p, now).map_or(d, |l| l.max(d))),
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
        assert_eq!(Speculation::Never.delay(&h, now), None);
        assert_eq!(Speculation::Always.delay(&h, now), Some(Duration::ZERO));
        assert_eq!(
            Speculation::Percentile(99.0).delay(&h, now),
            None,
            "no samples"
        );
        assert_eq!(Speculation::Fixed(ms(7)).delay(&h, now), Some(ms(7)));
        assert_eq!(Speculation::Min(99.0, ms(7)).delay(&h, now), Some(ms(7)));
        for _ in 0..100 {
            h.record(ms(20), now);
        }
        let p99 = Speculation::Percentile(99.0).delay(&h, now).unwrap();
        assert!(p99 >= ms(20) && p99 < ms(25), "{p99:?}");
        assert_eq!(Speculation::Min(99.0, ms(7)).delay(&h, now), Some(ms(7)));
        assert_eq!(Speculation::Max(99.0, ms(7)).delay(&h, now), Some(p99));
    }
}
