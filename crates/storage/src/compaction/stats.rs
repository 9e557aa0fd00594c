//! What `nodetool compactionstats`, `tablestats` and the metrics show about compactions: the
//! running ones with their progress, counters since start, and per-table write amplification.
//!
//! A [`Registry`] lives in the engine. Every compaction registers itself for as long as it
//! runs ([`Registry::start`] returns a guard that unregisters it) and advances its
//! `bytes_done` as it consumes its inputs; snapshots copy the numbers out.

use crate::engine::TableId;
use parking_lot::Mutex;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// What kind of operation a compaction is (nodetool's "compaction type" column).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompactionKind {
    /// Chosen by the table's strategy.
    Compaction,
    /// `nodetool garbagecollect`.
    GarbageCollection,
    /// `nodetool compact`.
    Major,
    /// A single-sstable tombstone compaction.
    Tombstone,
    /// `nodetool cleanup`: each sstable without what the node no longer
    /// replicates.
    Cleanup,
    /// Preparing an incremental repair: the repaired ranges' partitions
    /// of an sstable split off (`engine_repair`).
    Anticompaction,
}

impl CompactionKind {
    /// Whether compactions of this kind write at least as fast as it takes
    /// to keep up with the flushes, whatever share the adaptive throttle
    /// leaves them (`compaction::throttle::KEEP_UP_FACTOR`). The strategy's
    /// compactions do; a garbagecollect or a major compaction, asked for by
    /// an operator, only gets the share, so it gives way to client reads.
    pub fn keeps_up_with_flushes(self) -> bool {
        matches!(self, CompactionKind::Compaction | CompactionKind::Tombstone)
    }

    /// The text nodetool prints.
    pub fn label(self) -> &'static str {
        match self {
            CompactionKind::Compaction => "Compaction",
            CompactionKind::GarbageCollection => "Garbage collection",
            CompactionKind::Major => "Major compaction",
            CompactionKind::Tombstone => "Tombstone compaction",
            CompactionKind::Cleanup => "Cleanup",
            CompactionKind::Anticompaction => "Anticompaction after repair",
        }
    }
}

/// One running compaction, as `compactionstats` lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct RunningCompaction {
    pub id: u64,
    pub keyspace: String,
    pub table: String,
    pub kind: CompactionKind,
    pub bytes_done: u64,
    pub bytes_total: u64,
    /// Always "bytes".
    pub unit: &'static str,
}

/// A node-wide snapshot for `compactionstats` and the metrics.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CompactionStats {
    /// Sum of the strategies' estimates (Cassandra's `PendingTasks`).
    pub pending_tasks: u64,
    /// (keyspace, table, estimate) for every table with pending work.
    pub pending_by_table: Vec<(String, String, u64)>,
    /// Compactions finished since start (`CompletedTasks`).
    pub completed_tasks: u64,
    /// Bytes written by compactions since start (`BytesCompacted`).
    pub bytes_compacted: u64,
    pub running: Vec<RunningCompaction>,
}

/// Compaction numbers of one table, for `tablestats`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TableCompactionStats {
    pub live_sstables: usize,
    /// Index = level; as long as the highest level in use plus one.
    pub sstables_per_level: Vec<usize>,
    pub bytes_per_level: Vec<u64>,
    /// Sstables at level 0 (meaningful under LCS).
    pub unleveled_sstables: usize,
    /// Droppable tombstones at `gc_before` over all cells and tombstones.
    pub droppable_tombstone_ratio: f64,
    /// The strategy's estimate.
    pub pending_tasks: u64,
    pub bytes_flushed: u64,
    pub bytes_compacted: u64,
    /// (bytes flushed + bytes written by compactions) / bytes flushed; 0 before any flush.
    pub write_amplification: f64,
}

/// Progress of one running compaction.
#[derive(Debug)]
pub(crate) struct Progress {
    pub(crate) keyspace: String,
    pub(crate) table: String,
    pub(crate) kind: CompactionKind,
    pub(crate) bytes_total: u64,
    pub(crate) bytes_done: AtomicU64,
}

impl Progress {
    pub(crate) fn set_done(&self, bytes: u64) {
        self.bytes_done
            .store(bytes.min(self.bytes_total), Ordering::Relaxed);
    }
}

/// The engine's compaction bookkeeping.
#[derive(Debug, Default)]
pub struct Registry {
    next_id: AtomicU64,
    running: Mutex<BTreeMap<u64, Arc<Progress>>>,
    completed: AtomicU64,
    bytes_compacted: AtomicU64,
    /// Per table: (bytes flushed, bytes written by compactions).
    written: Mutex<HashMap<TableId, (u64, u64)>>,
}

/// Unregisters a running compaction when dropped (finished or failed).
pub(crate) struct RunningGuard<'a> {
    registry: &'a Registry,
    id: u64,
    pub(crate) progress: Arc<Progress>,
}

impl Drop for RunningGuard<'_> {
    fn drop(&mut self) {
        self.registry.running.lock().remove(&self.id);
    }
}

impl Registry {
    pub(crate) fn start(
        &self,
        keyspace: &str,
        table: &str,
        kind: CompactionKind,
        bytes_total: u64,
    ) -> RunningGuard<'_> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let progress = Arc::new(Progress {
            keyspace: keyspace.to_string(),
            table: table.to_string(),
            kind,
            bytes_total,
            bytes_done: AtomicU64::new(0),
        });
        self.running.lock().insert(id, progress.clone());
        RunningGuard {
            registry: self,
            id,
            progress,
        }
    }

    /// A compaction of `table` finished, writing `bytes_written`.
    pub(crate) fn completed(&self, table: TableId, bytes_written: u64) {
        self.completed.fetch_add(1, Ordering::Relaxed);
        self.bytes_compacted
            .fetch_add(bytes_written, Ordering::Relaxed);
        self.written.lock().entry(table).or_default().1 += bytes_written;
    }

    /// A flush of `table` wrote `bytes`.
    pub(crate) fn flushed(&self, table: TableId, bytes: u64) {
        self.written.lock().entry(table).or_default().0 += bytes;
    }

    /// (bytes flushed, bytes compacted) of a table since start.
    pub(crate) fn written(&self, table: TableId) -> (u64, u64) {
        self.written.lock().get(&table).copied().unwrap_or_default()
    }

    pub fn completed_tasks(&self) -> u64 {
        self.completed.load(Ordering::Relaxed)
    }

    pub fn bytes_compacted(&self) -> u64 {
        self.bytes_compacted.load(Ordering::Relaxed)
    }

    /// Whether any compaction is running now.
    pub fn any_running(&self) -> bool {
        !self.running.lock().is_empty()
    }

    pub(crate) fn running(&self) -> Vec<RunningCompaction> {
        self.running
            .lock()
            .iter()
            .map(|(id, p)| RunningCompaction {
                id: *id,
                keyspace: p.keyspace.clone(),
                table: p.table.clone(),
                kind: p.kind,
                bytes_done: p.bytes_done.load(Ordering::Relaxed),
                bytes_total: p.bytes_total,
                unit: "bytes",
            })
            .collect()
    }
}

/// Write amplification: (flushed + compacted) / flushed, 0 before the first flush.
pub fn write_amplification(bytes_flushed: u64, bytes_compacted: u64) -> f64 {
    if bytes_flushed == 0 {
        return 0.0;
    }
    (bytes_flushed as f64 + bytes_compacted as f64) / bytes_flushed as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_strategys_compactions_keep_up_with_flushes() {
        assert!(CompactionKind::Compaction.keeps_up_with_flushes());
        assert!(CompactionKind::Tombstone.keeps_up_with_flushes());
        assert!(!CompactionKind::GarbageCollection.keeps_up_with_flushes());
        assert!(!CompactionKind::Major.keeps_up_with_flushes());
    }

    #[test]
    fn running_compactions_register_and_unregister() {
        let r = Registry::default();
        assert!(!r.any_running());
        {
            let g = r.start("ks", "t", CompactionKind::GarbageCollection, 100);
            assert!(
                r.any_running(),
                "the throttle's baseline stops while it runs"
            );
            g.progress.set_done(250);
            let running = r.running();
            assert_eq!(running.len(), 1);
            assert_eq!(
                running[0].bytes_done, 100,
                "progress is capped at the total"
            );
            assert_eq!(running[0].kind.label(), "Garbage collection");
        }
        assert!(r.running().is_empty());
        assert!(!r.any_running());
        r.flushed(1, 100);
        r.completed(1, 300);
        assert_eq!(r.written(1), (100, 300));
        assert_eq!(r.completed_tasks(), 1);
        assert_eq!(r.bytes_compacted(), 300);
        assert_eq!(write_amplification(100, 300), 4.0);
        assert_eq!(write_amplification(0, 300), 0.0);
    }
}
