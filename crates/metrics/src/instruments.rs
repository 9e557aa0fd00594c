//! The two one-word instruments: [`Counter`] (monotonic `u64`) and [`Gauge`]
//! (an `f64` stored as bits in an `AtomicU64`). Relaxed ordering everywhere:
//! a metric orders nothing else, and a scrape only needs each value to be
//! one that was really stored.

use std::sync::atomic::{AtomicU64, Ordering};

/// A monotonic count (requests, timeouts, bytes compacted).
#[derive(Debug, Default)]
pub struct Counter {
    value: AtomicU64,
}

impl Counter {
    /// A counter at zero.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one.
    #[inline]
    pub fn inc(&self) {
        self.add(1);
    }

    /// Adds `n` (wraps at `u64::MAX`, which no real count reaches).
    #[inline]
    pub fn add(&self, n: u64) {
        self.value.fetch_add(n, Ordering::Relaxed);
    }

    /// The count now.
    pub fn get(&self) -> u64 {
        self.value.load(Ordering::Relaxed)
    }
}

/// A value that goes up and down (pending compactions, live sstables). Holds
/// an `f64`; integers up to 2^53 are exact.
#[derive(Debug)]
pub struct Gauge {
    bits: AtomicU64,
}

impl Default for Gauge {
    fn default() -> Self {
        Self::new()
    }
}

impl Gauge {
    /// A gauge at zero.
    pub fn new() -> Self {
        Self {
            bits: AtomicU64::new(0f64.to_bits()),
        }
    }

    /// Sets the value.
    #[inline]
    pub fn set(&self, value: f64) {
        self.bits.store(value.to_bits(), Ordering::Relaxed);
    }

    /// Sets an integer value (exact up to 2^53).
    #[inline]
    pub fn set_i64(&self, value: i64) {
        self.set(value as f64);
    }

    /// Adds `delta` (a compare-and-swap loop: fine for gauges, which change
    /// far less often than counters).
    pub fn add(&self, delta: f64) {
        let mut current = self.bits.load(Ordering::Relaxed);
        loop {
            let next = (f64::from_bits(current) + delta).to_bits();
            match self.bits.compare_exchange_weak(
                current,
                next,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return,
                Err(seen) => current = seen,
            }
        }
    }

    /// Adds one.
    pub fn inc(&self) {
        self.add(1.0);
    }

    /// Subtracts one.
    pub fn dec(&self) {
        self.add(-1.0);
    }

    /// The value now.
    pub fn get(&self) -> f64 {
        f64::from_bits(self.bits.load(Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counter_counts() {
        let c = Counter::new();
        c.inc();
        c.add(41);
        assert_eq!(c.get(), 42);
    }

    #[test]
    fn gauge_sets_and_adds() {
        let g = Gauge::new();
        assert_eq!(g.get(), 0.0);
        g.set_i64(-7);
        assert_eq!(g.get(), -7.0);
        g.inc();
        g.inc();
        g.dec();
        assert_eq!(g.get(), -6.0);
        g.set(0.25);
        g.add(0.5);
        assert_eq!(g.get(), 0.75);
    }

    #[test]
    fn gauge_add_is_atomic_across_threads() {
        let g = std::sync::Arc::new(Gauge::new());
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let g = g.clone();
                std::thread::spawn(move || (0..1000).for_each(|_| g.inc()))
            })
            .collect();
        for t in threads {
            t.join().expect("thread");
        }
        assert_eq!(g.get(), 4000.0);
    }
}
