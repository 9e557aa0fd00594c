//! The node's memtable budget: the background flusher, and the hard limit
//! past which writers wait for flushes.
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

use crate::engine::{Engine, StorageOptions};
use crate::error::{Error, Result};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// How often the flusher looks at memory and commitlog use unprompted.
const FLUSHER_IDLE_WAKEUP: std::time::Duration = std::time::Duration::from_secs(1);

/// Writes wait past this many times `memtable_heap_space`.
pub const MEMTABLE_HARD_LIMIT_FACTOR: usize = 4;

/// The longest a write waits for memtable memory before it fails.
pub const MEMTABLE_FULL_WAIT: Duration = Duration::from_secs(2);

impl Engine {
    /// The durable engine's options (None for the in-memory engine).
    pub(crate) fn options(&self) -> Option<&StorageOptions> {
        self.options.as_ref()
    }

    /// Memory held by every memtable of the node (flushing ones included).
    pub fn memtable_bytes(&self) -> usize {
        self.memtable_bytes.load(Ordering::Relaxed)
    }

    pub(crate) fn wake_flusher(&self) {
        let mut signal = self.flusher_signal.0.lock();
        if !signal.0 {
            signal.0 = true;
            self.flusher_signal.1.notify_all();
        }
    }

    /// The background flusher: flushes the largest memtables while memory
    /// is over budget, and every table when the commitlog is over its
    /// space (so its oldest segments can be released). Once a second it
    /// also fits the partition summaries to their budget.
    pub(crate) fn run_flusher(&self) {
        let Some(options) = self.options.clone() else {
            return;
        };
        let mut last_rebalance = std::time::Instant::now()
            .checked_sub(FLUSHER_IDLE_WAKEUP)
            .unwrap_or_else(std::time::Instant::now);
        loop {
            {
                let mut signal = self.flusher_signal.0.lock();
                if !signal.0 && !signal.1 {
                    self.flusher_signal
                        .1
                        .wait_for(&mut signal, FLUSHER_IDLE_WAKEUP);
                }
                if signal.1 {
                    return;
                }
                signal.0 = false;
            }
            if last_rebalance.elapsed() >= FLUSHER_IDLE_WAKEUP {
                self.rebalance_index_summaries();
                last_rebalance = std::time::Instant::now();
            }
            let mut rounds = 0;
            while self.memtable_bytes.load(Ordering::Relaxed) > options.memtable_space_bytes
                && rounds < 64
            {
                if let Err(e) = self.flush_largest() {
                    tracing::error!("background flush failed: {e}");
                    break;
                }
                rounds += 1;
            }
            let log_full = self
                .commitlog
                .as_ref()
                .is_some_and(|c| c.total_bytes() > options.commitlog_total_space_bytes);
            if log_full {
                if let Err(e) = self.flush_all() {
                    tracing::error!("flush for commitlog space failed: {e}");
                }
            }
        }
    }

    /// Flushes the table with the largest memtable (memory pressure).
    pub(crate) fn flush_largest(&self) -> Result<()> {
        let largest = {
            let tables = self.tables.read();
            tables
                .values()
                .max_by_key(|t| t.state.read().memtable.bytes())
                .cloned()
        };
        if let Some(t) = largest {
            if let Some(_guard) = t.flush_lock.try_lock() {
                drop(_guard);
                let id = t.desc.read().id;
                self.flush(id)?;
            }
        }
        Ok(())
    }

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
        // On the event loop: nothing was written yet, so the write runs
        // again where it may wait.
        crate::io_mode::check_may_block("memtable memory")?;
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
