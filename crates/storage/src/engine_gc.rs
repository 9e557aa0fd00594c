//! `nodetool garbagecollect` and the compaction statistics shown by
//! `compactionstats` and `tablestats`.
//!
//! Garbage collection rewrites each live sstable of a table alone, oldest
//! (by max timestamp) first, dropping what the table's other live sstables
//! shadow (`compaction::shadow`, at ROW or CELL granularity) and what the
//! purge rule allows; each output keeps its input's level. Up to `jobs`
//! sstables are rewritten at once; one that a running compaction holds is
//! waited for, and skipped if that compaction consumed it.

use crate::compaction::shadow::ShadowMode;
use crate::compaction::stats::{
    write_amplification, CompactionKind, CompactionStats, TableCompactionStats,
};
use crate::engine::{Engine, TableId};
use crate::engine_compact::{generation_of, Job};
use crate::engine_concurrency::Claim;
use crate::error::Result;
use std::sync::atomic::{AtomicUsize, Ordering};

/// nodetool garbagecollect's `-g`: what other sstables may shadow.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Granularity {
    /// Partition, range and row deletions (the default).
    #[default]
    Row,
    /// Also collection deletions and overwritten cells.
    Cell,
}

impl Granularity {
    /// `ROW` or `CELL`, any case.
    pub fn parse(text: &str) -> Option<Granularity> {
        match text.to_ascii_uppercase().as_str() {
            "ROW" => Some(Granularity::Row),
            "CELL" => Some(Granularity::Cell),
            _ => None,
        }
    }

    fn shadow_mode(self) -> ShadowMode {
        match self {
            Granularity::Row => ShadowMode::Row,
            Granularity::Cell => ShadowMode::Cell,
        }
    }
}

/// What one garbagecollect of a table did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GcResult {
    /// Generations rewritten, in the order they were started.
    pub rewritten: Vec<u64>,
    /// Generations a concurrent compaction consumed before their turn.
    pub skipped: Vec<u64>,
    pub bytes_before: u64,
    pub bytes_after: u64,
}

impl Engine {
    /// `nodetool garbagecollect`: one single-sstable compaction per live
    /// sstable, oldest max timestamp first, `jobs` at a time (0: as many as
    /// concurrent_compactors). Returns when all are done.
    pub fn garbage_collect(
        &self,
        id: TableId,
        granularity: Granularity,
        jobs: usize,
        now_seconds: i32,
    ) -> Result<GcResult> {
        let table = self.table(id)?;
        let (ks, name) = {
            let d = table.desc.read();
            (d.keyspace.clone(), d.name.clone())
        };
        tracing::info!("Starting Remove deleted data for {ks}.{name}");
        let order: Vec<(u64, u64)> = {
            let state = table.state.read();
            let mut v: Vec<(i64, u64, u64)> = state
                .sstables
                .iter()
                .filter_map(|s| {
                    Some((s.stats().max_timestamp, generation_of(s)?, s.size_on_disk()))
                })
                .collect();
            v.sort_unstable();
            v.into_iter().map(|(_, g, size)| (g, size)).collect()
        };
        let jobs = if jobs == 0 {
            self.concurrent_compactors
        } else {
            jobs
        }
        .clamp(1, order.len().max(1));
        let next = AtomicUsize::new(0);
        let outcome = parking_lot::Mutex::new(GcResult::default());
        let first_error = parking_lot::Mutex::new(None);
        let worker = || {
            while first_error.lock().is_none() {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(&(g, size)) = order.get(i) else {
                    return;
                };
                let Some(_claim) = Claim::wait_live(&table, g) else {
                    outcome.lock().skipped.push(g);
                    continue;
                };
                let level = table.state.read().manifest.levels.get(&g).copied();
                outcome.lock().rewritten.push(g);
                let job = Job {
                    inputs: &[g],
                    max_output_bytes: 0,
                    output_level: level.unwrap_or(0),
                    now_seconds,
                    kind: CompactionKind::GarbageCollection,
                    shadow: Some(granularity.shadow_mode()),
                    keep: None,
                    keep_inputs: false,
                    mark: None,
                };
                match self.run_claimed(&table, &job) {
                    Ok(r) => {
                        let mut o = outcome.lock();
                        o.bytes_before += size;
                        o.bytes_after += r.bytes_written;
                    }
                    Err(e) => {
                        first_error.lock().get_or_insert(e);
                    }
                }
            }
        };
        std::thread::scope(|scope| {
            for _ in 1..jobs {
                scope.spawn(worker);
            }
            worker();
        });
        if let Some(e) = first_error.into_inner() {
            tracing::error!("Remove deleted data for {ks}.{name} failed: {e}");
            return Err(e);
        }
        tracing::info!("Finished Remove deleted data for {ks}.{name} successfully");
        Ok(outcome.into_inner())
    }

    /// Bytes the commitlog wrote to its segments since the engine opened
    /// (0 without a commitlog).
    pub fn commitlog_bytes_written(&self) -> u64 {
        self.commitlog.as_ref().map_or(0, |c| c.bytes_written())
    }

    /// Commitlog segments that began as a preallocated spare, and those
    /// created without one because none was ready (0, 0 without a
    /// commitlog).
    pub fn commitlog_segments_preallocated(&self) -> (u64, u64) {
        self.commitlog.as_ref().map_or((0, 0), |c| {
            let (used, missed, _) = c.preallocation_counts();
            (used, missed)
        })
    }

    /// The node's compaction counters, running compactions and pending
    /// estimates (`nodetool compactionstats`).
    pub fn compaction_stats(&self) -> CompactionStats {
        let now = self.now_seconds();
        let mut stats = CompactionStats {
            completed_tasks: self.compactions.completed_tasks(),
            bytes_compacted: self.compactions.bytes_compacted(),
            running: self.compactions.running(),
            ..CompactionStats::default()
        };
        let tables: Vec<_> = self.tables.read().values().cloned().collect();
        for t in tables {
            let Ok(views) = self.sstable_views(t.desc.read().id, now) else {
                continue;
            };
            let pending = t.strategy.lock().pending_tasks(&views);
            if pending > 0 {
                let d = t.desc.read();
                stats
                    .pending_by_table
                    .push((d.keyspace.clone(), d.name.clone(), pending));
            }
            stats.pending_tasks += pending;
        }
        stats.pending_by_table.sort();
        stats
    }

    /// A table's compaction numbers for `tablestats` at `now_seconds`.
    pub fn table_compaction_stats(
        &self,
        id: TableId,
        now_seconds: i32,
    ) -> Result<TableCompactionStats> {
        let table = self.table(id)?;
        let views = self.sstable_views(id, now_seconds)?;
        let gc_before = now_seconds.saturating_sub(table.desc.read().gc_grace_seconds);
        let mut s = TableCompactionStats {
            live_sstables: views.len(),
            pending_tasks: table.strategy.lock().pending_tasks(&views),
            ..TableCompactionStats::default()
        };
        for v in &views {
            let level = v.level as usize;
            if s.sstables_per_level.len() <= level {
                s.sstables_per_level.resize(level + 1, 0);
                s.bytes_per_level.resize(level + 1, 0);
            }
            s.sstables_per_level[level] += 1;
            s.bytes_per_level[level] += v.size_bytes;
        }
        s.unleveled_sstables = s.sstables_per_level.first().copied().unwrap_or(0);
        let (mut droppable, mut values) = (0f64, 0f64);
        for t in table.state.read().sstables.iter() {
            droppable += t.stats().droppable_tombstones(gc_before);
            values += (t.stats().cell_count + t.stats().tombstone_count) as f64;
        }
        if values > 0.0 {
            s.droppable_tombstone_ratio = droppable / values;
        }
        let (flushed, compacted) = self.compactions.written(id);
        s.bytes_flushed = flushed;
        s.bytes_compacted = compacted;
        s.write_amplification = write_amplification(flushed, compacted);
        Ok(s)
    }
}
