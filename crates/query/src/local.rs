//! [`LocalNode`]: the data path of a node that holds every replica itself,
//! straight over its storage engine.
//!
//! Every answer is ready at once (a read that would wait on the disk in a
//! non-blocking scope answers `WouldBlock` at once, as the engine does).
//! Consistency levels are checked before a statement gets here
//! (`crate::consistency`): one node is the one live replica of every
//! keyspace.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use varve_storage::{Engine, ReadCost};
use varve_types::data::PartitionKey;
use varve_types::data_error::DataError;

use crate::data_path::{
    CasCommand, CasOutcome, DataFuture, DataPath, KeyScan, PartitionRead, ReadCommand, TableId,
    WriteCommand,
};
use crate::trace;

/// Stripes of the locks that serialise conditional statements per
/// partition on one node.
pub const CAS_LOCK_STRIPES: usize = 256;

/// One node's storage engine as a [`DataPath`].
pub struct LocalNode {
    engine: Arc<Engine>,
    /// Conditional statements of one partition run one at a time.
    cas_locks: Vec<tokio::sync::Mutex<()>>,
    /// The last timestamp given to a conditional write: each takes a
    /// newer one than every one before, whatever the clock does (the
    /// one-node ballot clock, docs/design/paxos.md, section 3).
    last_cas_micros: AtomicI64,
}

impl LocalNode {
    pub fn new(engine: Arc<Engine>) -> Self {
        LocalNode {
            engine,
            cas_locks: (0..CAS_LOCK_STRIPES)
                .map(|_| tokio::sync::Mutex::new(()))
                .collect(),
            last_cas_micros: AtomicI64::new(0),
        }
    }

    /// The lock that serialises conditional statements on `token`, and how
    /// many times the caller waited for it (0 or 1). A contended lock is
    /// awaited as a task, not on the thread.
    async fn cas_lock(&self, token: i64) -> (tokio::sync::MutexGuard<'_, ()>, u64) {
        let stripe = (token as u64 % CAS_LOCK_STRIPES as u64) as usize;
        match self.cas_locks[stripe].try_lock() {
            Ok(guard) => (guard, 0),
            Err(_) => (self.cas_locks[stripe].lock().await, 1),
        }
    }

    /// A timestamp newer than every one given before, from the clock when
    /// it is ahead.
    fn next_cas_micros(&self) -> i64 {
        let now = varve_types::time::now_micros();
        let previous = self
            .last_cas_micros
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |last| {
                Some(now.max(last + 1))
            })
            .unwrap_or(now);
        now.max(previous + 1)
    }

    async fn run_cas(&self, c: CasCommand<'_>) -> Result<CasOutcome, DataError> {
        let (_guard, contention) = self.cas_lock(c.key.token).await;
        trace::event(|| "Reading existing values for CAS precondition".into());
        let found = self
            .engine
            .read_live(c.table, c.key, c.slices, false, c.now_seconds, usize::MAX)
            .map_err(on_read)?;
        let current = found.map(|(p, _, _)| p).unwrap_or_default();
        let decision = c.decider.decide(&current, self.next_cas_micros())?;
        if let (true, Some(update)) = (decision.applied, decision.update) {
            trace::event(|| "CAS precondition is met; applying client-requested updates".into());
            self.engine
                .apply(c.table, c.key, update)
                .map_err(on_write)?;
            trace::event(|| "CAS applied successfully".into());
        } else if !decision.applied {
            trace::event(|| "CAS precondition does not match current values".into());
        }
        Ok(CasOutcome {
            current,
            applied: decision.applied,
            contention,
        })
    }

    /// Reads one partition.
    fn read_partition(&self, r: ReadCommand<'_>) -> Result<PartitionRead, DataError> {
        let mut cost = ReadCost::default();
        let found = self.engine.read_live_costed(
            r.table,
            r.key,
            r.slices,
            r.reversed,
            r.now_seconds,
            r.row_limit,
            &mut cost,
        );
        match found {
            Ok(Some((partition, stats, complete))) => Ok(PartitionRead {
                partition: Some(partition),
                tombstones: stats.tombstones,
                complete,
                sstables: cost.sstables,
            }),
            Ok(None) => Ok(PartitionRead {
                partition: None,
                tombstones: 0,
                complete: true,
                sstables: cost.sstables,
            }),
            Err(e) => Err(on_read(e)),
        }
    }
}

impl DataPath for LocalNode {
    fn write(&self, w: WriteCommand) -> DataFuture<'_, ()> {
        DataFuture::ready(
            self.engine
                .apply(w.table, &w.key, w.update)
                .map_err(on_write),
        )
    }

    fn read<'a>(&'a self, r: ReadCommand<'a>) -> DataFuture<'a, PartitionRead> {
        DataFuture::ready(self.read_partition(r))
    }

    fn scan_keys<'a>(&'a self, s: KeyScan<'a>) -> DataFuture<'a, Vec<PartitionKey>> {
        DataFuture::ready(
            self.engine
                .scan_keys(s.table, s.start, s.end, s.limit)
                .map_err(on_read),
        )
    }

    fn truncate(&self, table: TableId) -> DataFuture<'_, ()> {
        DataFuture::ready(self.engine.truncate(table).map_err(on_read))
    }

    fn cas<'a>(&'a self, c: CasCommand<'a>) -> DataFuture<'a, CasOutcome> {
        DataFuture::Boxed(Box::pin(self.run_cas(c)))
    }
}

/// A storage error met while reading (or doing anything but a write) as
/// the data path reports it: a damaged file is a ReadFailure, as
/// Cassandra reports a corrupt sstable.
pub fn on_read(e: varve_storage::Error) -> DataError {
    e.on_read()
}

/// A storage error met while storing a write: a failing or full disk is
/// a WriteFailure (the write was not acknowledged); anything else as
/// [`on_read`] says.
pub fn on_write(e: varve_storage::Error) -> DataError {
    e.on_write()
}
