//! Which prepared statements go straight to the read stage.
//!
//! A statement first runs on the event loop, where it may not wait on the
//! disk; one that needs a chunk from the disk stops with `WouldBlock` and
//! runs again, from the start, on the read stage. When the data is many
//! times the memory nearly every read needs the disk (93% of them with
//! 8 GB under a 2.5 GiB cap), so the first run is wasted work: the request
//! decoded, the restrictions analysed, the memtables and bloom filters
//! searched, all done again on the read stage.
//!
//! [`ReadRoute`] remembers, per prepared statement id (hashed into
//! [`ROUTE_SLOTS`] slots), whether its recent runs on the event loop had to
//! go to the read stage. A statement whose score reached [`SKIP_SCORE`]
//! goes there directly, except one run in [`SAMPLE_EVERY`], which still
//! tries the event loop so that the score follows the data back into
//! memory. Only statements that were sent to the read stage ever score, so
//! writes and reads served from memory always run on the event loop.
//! (docs/design/read-path-io.md, "Statements that go straight to the read
//! stage".)

use std::cell::Cell;
use std::sync::atomic::{AtomicU8, Ordering};

/// Slots that prepared statement ids hash into. Ids sharing a slot share
/// its score: a few statements per node is the common case.
pub const ROUTE_SLOTS: usize = 64;

/// A slot's highest score.
pub const SCORE_MAX: u8 = 16;

/// The score from which a statement skips the event loop: eight runs that
/// needed the disk in a row, from a clean slot.
pub const SKIP_SCORE: u8 = 8;

/// One run in this many of a statement that would skip the event loop
/// tries it anyway (counted per thread).
pub const SAMPLE_EVERY: u32 = 16;

thread_local! {
    static RUNS: Cell<u32> = const { Cell::new(0) };
}

/// The scores, one per slot.
#[derive(Debug)]
pub struct ReadRoute {
    slots: [AtomicU8; ROUTE_SLOTS],
}

impl Default for ReadRoute {
    fn default() -> Self {
        ReadRoute {
            slots: std::array::from_fn(|_| AtomicU8::new(0)),
        }
    }
}

impl ReadRoute {
    fn slot(&self, id: &[u8]) -> &AtomicU8 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in id {
            h = (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
        &self.slots[(h % ROUTE_SLOTS as u64) as usize]
    }

    /// The statement prepared as `id` should run on the read stage without
    /// a first attempt on the event loop.
    pub fn skip_event_loop(&self, id: &[u8]) -> bool {
        if self.slot(id).load(Ordering::Relaxed) < SKIP_SCORE {
            return false;
        }
        let run = RUNS.with(|r| {
            let n = r.get().wrapping_add(1);
            r.set(n);
            n
        });
        !run.is_multiple_of(SAMPLE_EVERY)
    }

    /// Records how a run of `id` on the event loop ended: it needed the
    /// disk (one more point, up to [`SCORE_MAX`]) or it did not (the score
    /// halves).
    pub fn ran_on_event_loop(&self, id: &[u8], needed_disk: bool) {
        let slot = self.slot(id);
        let now = slot.load(Ordering::Relaxed);
        let next = if needed_disk {
            (now + 1).min(SCORE_MAX)
        } else {
            now / 2
        };
        if next != now {
            // A lost race only loses one run's point.
            slot.store(next, Ordering::Relaxed);
        }
    }

    /// The score of `id`'s slot.
    #[cfg(test)]
    fn score(&self, id: &[u8]) -> u8 {
        self.slot(id).load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skipped_of(route: &ReadRoute, id: &[u8], n: u32) -> u32 {
        (0..n).filter(|_| route.skip_event_loop(id)).count() as u32
    }

    /// A statement skips the event loop only once SKIP_SCORE runs in a row
    /// needed the disk, and then still samples it one run in SAMPLE_EVERY.
    #[test]
    fn a_statement_skips_after_skip_score_runs_that_needed_the_disk() {
        let route = ReadRoute::default();
        let id = b"prepared-1";
        for _ in 0..SKIP_SCORE - 1 {
            route.ran_on_event_loop(id, true);
        }
        assert_eq!(skipped_of(&route, id, 100), 0);
        route.ran_on_event_loop(id, true);
        assert_eq!(route.score(id), SKIP_SCORE);
        let n = SAMPLE_EVERY * 10;
        assert_eq!(skipped_of(&route, id, n), n - 10);
    }

    /// Runs served from memory bring the score down fast: one halves it,
    /// and the statement runs on the event loop again once it fell under
    /// SKIP_SCORE; the score never passes SCORE_MAX.
    #[test]
    fn a_run_served_from_memory_halves_the_score() {
        let route = ReadRoute::default();
        let id = b"prepared-2";
        for _ in 0..100 {
            route.ran_on_event_loop(id, true);
        }
        assert_eq!(route.score(id), SCORE_MAX);
        route.ran_on_event_loop(id, false);
        assert_eq!(route.score(id), SCORE_MAX / 2);
        assert!(skipped_of(&route, id, 4) > 0);
        route.ran_on_event_loop(id, false);
        assert_eq!(route.score(id), SCORE_MAX / 4);
        assert_eq!(skipped_of(&route, id, 100), 0);
    }

    /// Statements that never needed the disk (writes, reads from memory)
    /// never skip, whatever another statement's score.
    #[test]
    fn statements_that_never_needed_the_disk_never_skip() {
        let route = ReadRoute::default();
        let (disk, memory) = (b"reads-the-disk".as_slice(), b"in-memory".as_slice());
        assert_ne!(
            route.slot(disk) as *const AtomicU8,
            route.slot(memory) as *const AtomicU8,
            "the test's ids share a slot"
        );
        for _ in 0..100 {
            route.ran_on_event_loop(disk, true);
            route.ran_on_event_loop(memory, false);
        }
        assert_eq!(skipped_of(&route, memory, 1000), 0);
        assert!(skipped_of(&route, disk, 1000) > 900);
    }
}
