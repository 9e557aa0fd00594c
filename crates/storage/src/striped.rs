//! A counter that threads add to without sharing a cache line.
//!
//! A plain `AtomicU64` bumped on every read by every worker moves its cache
//! line from core to core on each bump (some hundred nanoseconds on this
//! machine's virtual CPUs, more than the chunk cache lookup it counts).
//! [`StripedCounter`] keeps [`STRIPES`] counters, each on its own line; a
//! thread always adds to the same one, and a read sums them all (reads are
//! scrapes and `nodetool info`, rare beside the adds).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Counters per [`StripedCounter`]; threads past this many share stripes.
pub const STRIPES: usize = 8;

/// One counter alone on a cache line (128 bytes: two lines, as adjacent-line
/// prefetchers pair them).
#[repr(align(128))]
#[derive(Default)]
struct Padded(AtomicU64);

/// A monotonic count added to from many threads.
#[derive(Default)]
pub struct StripedCounter {
    stripes: [Padded; STRIPES],
}

static NEXT_STRIPE: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static STRIPE: usize = NEXT_STRIPE.fetch_add(1, Ordering::Relaxed) % STRIPES;
}

impl StripedCounter {
    /// Adds `n` to this thread's stripe.
    #[inline]
    pub fn add(&self, n: u64) {
        let i = STRIPE.with(|s| *s);
        self.stripes[i].0.fetch_add(n, Ordering::Relaxed);
    }

    /// Adds one.
    #[inline]
    pub fn inc(&self) {
        self.add(1);
    }

    /// The sum of all stripes.
    pub fn get(&self) -> u64 {
        self.stripes
            .iter()
            .map(|s| s.0.load(Ordering::Relaxed))
            .fold(0u64, u64::wrapping_add)
    }
}

impl std::fmt::Debug for StripedCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.get())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn adds_from_many_threads_all_count() {
        let counter = Arc::new(StripedCounter::default());
        let threads: Vec<_> = (0..STRIPES * 2 + 3)
            .map(|_| {
                let c = counter.clone();
                std::thread::spawn(move || {
                    for _ in 0..1000 {
                        c.inc();
                    }
                    c.add(5);
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(counter.get(), (STRIPES as u64 * 2 + 3) * 1005);
    }

    #[test]
    fn stripes_sit_on_separate_lines() {
        assert_eq!(std::mem::align_of::<Padded>(), 128);
        assert_eq!(std::mem::size_of::<StripedCounter>(), 128 * STRIPES);
    }
}
