//! The hard limit on memtable memory: writers wait for flushes.
//!
//! Past `memtable_heap_space` the background flusher writes the largest
//! memtable; past twice that a writer flushes it itself when no flush of it
//! runs (`Engine::apply`). If writes still come faster than flushes drain
//! them, memtables would grow without bound. Past
//! [`MEMTABLE_HARD_LIMIT_FACTOR`] times the budget a write waits, before it
//! touches the commitlog or a memtable, until a flush brings memory back
//! under the limit, for at most [`MEMTABLE_FULL_WAIT`] (Cassandra's
//! `write_request_timeout`); then it fails with
//! [`Error::MemtablesFull`] and is not applied. Cassandra likewise blocks
//! writers when its memtable allocator is exhausted, and their clients
//! time out.

use crate::engine::Engine;
use crate::error::{Error, Result};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Writes wait past this many times `memtable_heap_space`.
pub const MEMTABLE_HARD_LIMIT_FACTOR: usize = 4;

/// The longest a write waits for memtable memory before it fails.
pub const MEMTABLE_FULL_WAIT: Duration = Duration::from_secs(2);

impl Engine {
    /// The memtable bytes past which writes wait (None: no budget, the
    /// in-memory engine).
    pub fn memtable_hard_limit(&self) -> Option<usize> {
        self.options().map(|o| {
            o.memtable_space_bytes
                .saturating_mul(MEMTABLE_HARD_LIMIT_FACTOR)
        })
    }

    /// Writes waiting for memtable memory now.
    pub fn writers_waiting_for_memory(&self) -> usize {
        self.writers_waiting.load(Ordering::Relaxed)
    }

    /// Returns at once under the hard limit; else waits (see the module
    /// doc) and fails with [`Error::MemtablesFull`] if memory stays over.
    pub(crate) fn wait_for_memtable_memory(&self) -> Result<()> {
        let Some(limit) = self.memtable_hard_limit() else {
            return Ok(());
        };
        if self.memtable_bytes() <= limit {
            return Ok(());
        }
        self.wake_flusher();
        let start = Instant::now();
        let deadline = start + MEMTABLE_FULL_WAIT;
        self.writers_waiting.fetch_add(1, Ordering::Relaxed);
        let mut freed = self.memory_freed.0.lock();
        let result = loop {
            let bytes = self.memtable_bytes();
            if bytes <= limit {
                break Ok(());
            }
            // The flusher may have found nothing to do while another flush
            // held the table (it then sleeps): ask again at every wakeup.
            self.wake_flusher();
            if Instant::now() >= deadline {
                break Err(Error::MemtablesFull {
                    bytes,
                    limit,
                    factor: MEMTABLE_HARD_LIMIT_FACTOR,
                    waited_ms: start.elapsed().as_millis() as u64,
                });
            }
            self.memory_freed.1.wait_until(&mut freed, deadline);
        };
        drop(freed);
        self.writers_waiting.fetch_sub(1, Ordering::Relaxed);
        result
    }

    /// Wakes the writers waiting for memory (memtable memory was released:
    /// once per flush, so the lock costs nothing). Under the lock, so that a
    /// writer either sees the new total or is already waiting.
    pub(crate) fn memory_released(&self) {
        let _freed = self.memory_freed.0.lock();
        self.memory_freed.1.notify_all();
    }
}
