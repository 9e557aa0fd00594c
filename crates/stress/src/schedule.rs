//! When each operation may start, for the three [`Rate`]s.
//!
//! - `fixed`: operation `i` of the phase is due at `start + i / rate`. The
//!   schedule never slips, so when the server is slower than the rate the
//!   due times fall further and further behind the clock; latency is taken
//!   from the due time, which charges that queueing to the server (the
//!   coordinated-omission correction of wrk2 and cassandra-stress `fixed`).
//! - `throttle`: send slots `1 / rate` apart, but a slot is never earlier
//!   than now: a slow server lowers the rate and no backlog builds up.
//!   Latency is taken from the actual send.
//! - `unlimited`: no slots at all.

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use crate::spec::Rate;

/// Hands out start times for one phase; shared by its workers.
#[derive(Debug)]
pub struct Schedule {
    rate: Rate,
    start: Instant,
    /// Throttle only: the earliest free slot.
    next_slot: Mutex<Instant>,
}

impl Schedule {
    /// A schedule for a phase that starts at `start`.
    pub fn new(rate: Rate, start: Instant) -> Schedule {
        Schedule {
            rate,
            start,
            next_slot: Mutex::new(start),
        }
    }

    /// The phase start the schedule counts from.
    pub fn start(&self) -> Instant {
        self.start
    }

    /// When operation `ticket` may start, or `None` to start at once.
    pub fn slot(&self, ticket: u64, now: Instant) -> Option<Instant> {
        match self.rate {
            Rate::Unlimited => None,
            Rate::Fixed { per_s } => Some(later(self.start, fixed_offset(ticket, per_s))),
            Rate::Throttle { per_s } => {
                let period = Duration::try_from_secs_f64(1.0 / per_s).unwrap_or(FAR_FUTURE);
                let mut next = self.next_slot.lock().unwrap_or_else(|e| e.into_inner());
                let slot = (*next).max(now);
                *next = later(slot, period);
                Some(slot)
            }
        }
    }
}

/// How far "never" is: offsets beyond it (absurd rates) are clamped to it,
/// so adding them to an `Instant` cannot overflow.
pub const FAR_FUTURE: Duration = Duration::from_secs(100 * 365 * 86_400);

/// `at + d`, with `d` clamped to [`FAR_FUTURE`].
pub fn later(at: Instant, d: Duration) -> Instant {
    at.checked_add(d.min(FAR_FUTURE)).unwrap_or(at)
}

/// The offset of operation `ticket` from the phase start at `per_s`.
pub fn fixed_offset(ticket: u64, per_s: f64) -> Duration {
    // f64 holds tickets exactly up to 2^53, far beyond any run.
    Duration::try_from_secs_f64(ticket as f64 / per_s).unwrap_or(FAR_FUTURE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_offsets_are_evenly_spaced() {
        assert_eq!(fixed_offset(0, 200.0), Duration::ZERO);
        assert_eq!(fixed_offset(1, 200.0), Duration::from_millis(5));
        assert_eq!(fixed_offset(200, 200.0), Duration::from_secs(1));
        assert_eq!(fixed_offset(600, 200.0), Duration::from_secs(3));
        assert_eq!(fixed_offset(3, 0.5), Duration::from_secs(6));
        // How many operations a fixed rate schedules in a window: those with
        // offset < window.
        let due = (0..10_000)
            .take_while(|t| fixed_offset(*t, 2000.0) < Duration::from_secs(3))
            .count();
        assert_eq!(due, 6000);
    }

    #[test]
    fn fixed_slots_do_not_slip_when_late() {
        let start = Instant::now();
        let s = Schedule::new(Rate::Fixed { per_s: 100.0 }, start);
        let late = start + Duration::from_secs(5);
        assert_eq!(s.slot(1, late), Some(start + Duration::from_millis(10)));
        assert_eq!(s.slot(250, late), Some(start + Duration::from_millis(2500)));
    }

    #[test]
    fn throttle_slots_are_spaced_but_never_in_the_past() {
        let start = Instant::now();
        let s = Schedule::new(Rate::Throttle { per_s: 100.0 }, start);
        assert_eq!(s.slot(0, start), Some(start));
        assert_eq!(s.slot(1, start), Some(start + Duration::from_millis(10)));
        assert_eq!(s.slot(2, start), Some(start + Duration::from_millis(20)));
        // The server stalled for a second: the next slot is now, not a burst
        // of 100 slots in the past.
        let late = start + Duration::from_secs(1);
        assert_eq!(s.slot(3, late), Some(late));
        assert_eq!(s.slot(4, late), Some(late + Duration::from_millis(10)));
        assert_eq!(Schedule::new(Rate::Unlimited, start).slot(9, late), None);
    }

    #[test]
    fn absurd_rates_do_not_overflow() {
        let start = Instant::now();
        let s = Schedule::new(Rate::Fixed { per_s: 0.0 }, start);
        assert_eq!(s.slot(1, start), Some(start + FAR_FUTURE));
        let s = Schedule::new(
            Rate::Throttle {
                per_s: f64::MIN_POSITIVE,
            },
            start,
        );
        assert_eq!(s.slot(0, start), Some(start));
        assert_eq!(s.slot(1, start), Some(start + FAR_FUTURE));
    }
}
