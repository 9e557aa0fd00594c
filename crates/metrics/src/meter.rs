//! [`Meter`]: a count plus throughput, the way Cassandra (Dropwizard) meters
//! report it: the mean rate since creation and exponentially weighted moving
//! averages over 1, 5 and 15 minutes, updated every [`TICK`] (5 s).
//!
//! Marking is one relaxed `fetch_add`. The averages live behind a mutex that
//! only readers and ticks take; a tick that comes late catches up in closed
//! form (`rate * (1 - alpha)^missed`), so a meter nobody reads costs nothing.
//! Prometheus gets the count only (as a counter): there, throughput is
//! `rate(varve_x_total[1m])`, computed by the server that scrapes. The
//! averages are for the CQL virtual tables and nodetool-like views.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// How often the moving averages advance.
pub const TICK: Duration = Duration::from_secs(5);
/// Averaging periods of the three moving averages, in minutes.
const PERIODS_MIN: [f64; 3] = [1.0, 5.0, 15.0];

/// Events per second, as seen at one moment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rates {
    pub count: u64,
    /// count / seconds since creation.
    pub mean: f64,
    pub one_minute: f64,
    pub five_minute: f64,
    pub fifteen_minute: f64,
}

#[derive(Debug)]
struct Averages {
    /// When the last tick happened.
    last_tick: Instant,
    /// `count` at the last tick.
    counted: u64,
    /// 1, 5 and 15-minute rates; `None` until the first tick.
    rates: Option<[f64; 3]>,
}

/// A count of events with rates.
#[derive(Debug)]
pub struct Meter {
    count: AtomicU64,
    created: Instant,
    averages: Mutex<Averages>,
}

impl Default for Meter {
    fn default() -> Self {
        Self::new()
    }
}

fn alpha(period_min: f64) -> f64 {
    1.0 - (-TICK.as_secs_f64() / 60.0 / period_min).exp()
}

impl Meter {
    /// A meter at zero, created now.
    pub fn new() -> Self {
        Self::new_at(Instant::now())
    }

    /// A meter created at `now` (tests move time by hand).
    pub fn new_at(now: Instant) -> Self {
        Self {
            count: AtomicU64::new(0),
            created: now,
            averages: Mutex::new(Averages {
                last_tick: now,
                counted: 0,
                rates: None,
            }),
        }
    }

    /// Counts one event.
    #[inline]
    pub fn mark(&self) {
        self.mark_n(1);
    }

    /// Counts `n` events.
    #[inline]
    pub fn mark_n(&self, n: u64) {
        self.count.fetch_add(n, Ordering::Relaxed);
    }

    /// Events counted since creation.
    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    /// Advances the moving averages by every [`TICK`] that has passed by
    /// `now`. Events since the last tick are credited to the first one.
    pub fn tick_if_due(&self, now: Instant) {
        let mut avg = self.averages.lock();
        let elapsed = now.saturating_duration_since(avg.last_tick);
        let ticks = (elapsed.as_nanos() / TICK.as_nanos()) as u64;
        if ticks == 0 {
            return;
        }
        let count = self.count();
        let instant_rate = count.wrapping_sub(avg.counted) as f64 / TICK.as_secs_f64();
        let mut rates = match avg.rates {
            None => [instant_rate; 3],
            Some(mut r) => {
                for (rate, period) in r.iter_mut().zip(PERIODS_MIN) {
                    *rate += alpha(period) * (instant_rate - *rate);
                }
                r
            }
        };
        // The ticks after the first saw no events: pure decay.
        let idle = i32::try_from(ticks - 1).unwrap_or(i32::MAX);
        for (rate, period) in rates.iter_mut().zip(PERIODS_MIN) {
            *rate *= (1.0 - alpha(period)).powi(idle);
        }
        avg.rates = Some(rates);
        avg.counted = count;
        avg.last_tick += TICK * u32::try_from(ticks).unwrap_or(u32::MAX);
    }

    /// The rates as of `now` (ticking first).
    pub fn rates_at(&self, now: Instant) -> Rates {
        self.tick_if_due(now);
        let count = self.count();
        let secs = now.saturating_duration_since(self.created).as_secs_f64();
        let [one, five, fifteen] = self.averages.lock().rates.unwrap_or([0.0; 3]);
        Rates {
            count,
            mean: if secs > 0.0 { count as f64 / secs } else { 0.0 },
            one_minute: one,
            five_minute: five,
            fifteen_minute: fifteen,
        }
    }

    /// The rates now.
    pub fn rates(&self) -> Rates {
        self.rates_at(Instant::now())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steady_rate_converges() {
        let t0 = Instant::now();
        let m = Meter::new_at(t0);
        // 100 events per second for 10 minutes, ticked every 5 s.
        for tick in 1..=120u32 {
            m.mark_n(500);
            m.tick_if_due(t0 + TICK * tick);
        }
        let r = m.rates_at(t0 + TICK * 120);
        assert_eq!(r.count, 60_000);
        assert!((r.mean - 100.0).abs() < 1e-6, "{r:?}");
        assert!((r.one_minute - 100.0).abs() < 1e-6, "{r:?}");
        assert!((r.five_minute - 100.0).abs() < 1e-6, "{r:?}");
    }

    #[test]
    fn idle_meter_decays_in_closed_form() {
        let t0 = Instant::now();
        let m = Meter::new_at(t0);
        m.mark_n(500);
        m.tick_if_due(t0 + TICK);
        assert_eq!(m.rates_at(t0 + TICK).one_minute, 100.0);
        // One minute idle: the 1-minute rate falls by about e^-1.
        let r = m.rates_at(t0 + TICK * 13);
        let expected = 100.0 * (1.0 - alpha(1.0)).powi(12);
        assert!((r.one_minute - expected).abs() < 1e-9, "{r:?}");
        assert!((expected - 100.0 / std::f64::consts::E).abs() < 0.01);
        assert!(r.fifteen_minute > r.five_minute && r.five_minute > r.one_minute);
    }

    #[test]
    fn no_tick_before_the_interval() {
        let t0 = Instant::now();
        let m = Meter::new_at(t0);
        m.mark();
        let r = m.rates_at(t0 + Duration::from_secs(1));
        assert_eq!((r.count, r.one_minute), (1, 0.0));
        assert_eq!(r.mean, 1.0);
    }
}
