//! The node's seeded randomness: every random choice of the cluster crate
//! (backoff jitter today; peer choice, election timeouts later) draws from
//! one [`SeededRng`], so a simulation seed replays.
//!
//! rand's `StdRng` seeded from a u64: the same seed gives the same stream
//! within one build (rand does not promise the same stream across its own
//! major versions, which only matters for seeds recorded before an
//! upgrade).

use std::time::Duration;

use parking_lot::Mutex;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// A seeded random number generator shared by a node's tasks.
pub struct SeededRng {
    seed: u64,
    inner: Mutex<StdRng>,
}

impl SeededRng {
    pub fn new(seed: u64) -> SeededRng {
        SeededRng {
            seed,
            inner: Mutex::new(StdRng::seed_from_u64(seed)),
        }
    }

    /// The seed it started from.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    pub fn next_u64(&self) -> u64 {
        self.inner.lock().gen()
    }

    /// A value in `0..=max`.
    pub fn below_or_at(&self, max: u64) -> u64 {
        self.inner.lock().gen_range(0..=max)
    }

    /// `base` moved by up to `percent` either way, uniformly.
    pub fn jitter(&self, base: Duration, percent: u64) -> Duration {
        let base_us = u64::try_from(base.as_micros()).unwrap_or(u64::MAX);
        let spread = base_us.saturating_mul(percent) / 100;
        let low = base_us - spread;
        let offset = self.below_or_at(spread.saturating_mul(2));
        Duration::from_micros(low.saturating_add(offset))
    }
}

impl std::fmt::Debug for SeededRng {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SeededRng")
            .field("seed", &self.seed)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_stream() {
        let a = SeededRng::new(42);
        let b = SeededRng::new(42);
        let xs: Vec<u64> = (0..8).map(|_| a.next_u64()).collect();
        let ys: Vec<u64> = (0..8).map(|_| b.next_u64()).collect();
        assert_eq!(xs, ys);
        assert_ne!(
            xs,
            (0..8)
                .map(|_| SeededRng::new(43).next_u64())
                .collect::<Vec<_>>()
        );
    }

    #[test]
    fn jitter_stays_within_its_percent() {
        let rng = SeededRng::new(7);
        let base = Duration::from_millis(100);
        for _ in 0..1000 {
            let d = rng.jitter(base, 20);
            assert!(
                d >= Duration::from_millis(80) && d <= Duration::from_millis(120),
                "{d:?}"
            );
        }
        assert_eq!(rng.jitter(base, 0), base);
    }
}
