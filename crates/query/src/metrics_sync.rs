//! Brings the metrics that mirror storage up to date, at scrape time
//! (`GET /metrics`, a `system_views` read): per-table gauges read a
//! snapshot of storage's table stats taken here; compaction counters get
//! the growth of storage's counters since the last sync; tables created
//! since appear, dropped ones disappear (their series are removed).
//!
//! Storage knows nothing of metrics: the gauges are closures over the
//! snapshot in [`TableHandles`], which only this sync writes.

use std::collections::HashSet;
use std::sync::{Arc, Weak};

use varve_metrics::names::{self, LABEL_KEYSPACE, LABEL_LEVEL, LABEL_TABLE};
use varve_metrics::{Counter, Meter, Registry};
use varve_storage::compaction::stats::CompactionStats;
use varve_storage::TableId;

use crate::metrics::{TableHandles, TableSnapshot};
use crate::processor::Processor;

/// What a sync remembers between runs.
pub struct SyncState {
    completed_tasks: Arc<Counter>,
    bytes_compacted: Arc<Counter>,
    compactions_completed: Arc<Meter>,
    commitlog_bytes: Arc<Counter>,
    segments_preallocated: Arc<Counter>,
    segments_not_preallocated: Arc<Counter>,
    /// Node-wide pending compactions at the last sync.
    pending: Arc<varve_metrics::Gauge>,
    chunk_cache: ChunkCacheHandles,
}

/// The chunk cache's instruments (see `varve_storage::sstable::BlockCache`).
struct ChunkCacheHandles {
    hits: Arc<Counter>,
    misses: Arc<Counter>,
    bytes: Arc<varve_metrics::Gauge>,
    capacity: Arc<varve_metrics::Gauge>,
    entries: Arc<varve_metrics::Gauge>,
    slot_bytes: Arc<varve_metrics::Gauge>,
}

impl ChunkCacheHandles {
    fn new(registry: &Registry) -> Self {
        ChunkCacheHandles {
            hits: registry.counter(names::CHUNK_CACHE_HITS, &[]),
            misses: registry.counter(names::CHUNK_CACHE_MISSES, &[]),
            bytes: registry.gauge(names::CHUNK_CACHE_BYTES, &[]),
            capacity: registry.gauge(names::CHUNK_CACHE_CAPACITY_BYTES, &[]),
            entries: registry.gauge(names::CHUNK_CACHE_ENTRIES, &[]),
            slot_bytes: registry.gauge(names::CHUNK_CACHE_SLOT_BYTES, &[]),
        }
    }

    fn sync(&self, s: &varve_storage::sstable::BlockCacheStats) {
        catch_up(&self.hits, s.hits);
        catch_up(&self.misses, s.misses);
        self.bytes.set(s.bytes as f64);
        self.capacity.set(s.capacity_bytes as f64);
        self.entries.set(s.entries as f64);
        self.slot_bytes.set(s.slot_bytes as f64);
    }
}

impl SyncState {
    pub fn new(registry: &Registry) -> Self {
        SyncState {
            completed_tasks: registry.counter(names::COMPACTION_COMPLETED_TASKS, &[]),
            bytes_compacted: registry.counter(names::COMPACTION_BYTES_COMPACTED, &[]),
            compactions_completed: registry.meter(names::COMPACTIONS_COMPLETED, &[]),
            commitlog_bytes: registry.counter(names::COMMITLOG_BYTES_WRITTEN, &[]),
            segments_preallocated: registry.counter(names::COMMITLOG_SEGMENTS_PREALLOCATED, &[]),
            segments_not_preallocated: registry
                .counter(names::COMMITLOG_SEGMENTS_NOT_PREALLOCATED, &[]),
            pending: registry.gauge(names::COMPACTION_PENDING_TASKS, &[]),
            chunk_cache: ChunkCacheHandles::new(registry),
        }
    }
}

/// A gauge reading one number of a table's snapshot (NaN once the table's
/// handles are gone, until the next sync removes the series).
fn snapshot_gauge(
    registry: &Registry,
    name: &str,
    labels: &[(&str, &str)],
    handles: &Arc<TableHandles>,
    read: impl Fn(&TableSnapshot) -> f64 + Send + Sync + 'static,
) {
    let weak: Weak<TableHandles> = Arc::downgrade(handles);
    registry.gauge_fn(
        name,
        labels,
        Box::new(move || {
            weak.upgrade()
                .map_or(f64::NAN, |h| read(&h.snapshot.lock()))
        }),
    );
}

/// Registers a new table's gauges (levels come with the snapshots).
pub fn register_table_gauges(registry: &Registry, h: &Arc<TableHandles>) {
    let labels = h.labels();
    let g = |name: &str, read: fn(&TableSnapshot) -> f64| {
        snapshot_gauge(registry, name, &labels, h, read)
    };
    g(names::TABLE_LIVE_SSTABLES, |s| s.live_sstables);
    g(names::TABLE_LIVE_DISK_SPACE_USED_BYTES, |s| {
        s.disk_space_used_bytes
    });
    g(names::TABLE_PENDING_COMPACTIONS, |s| s.pending_compactions);
    g(names::TABLE_BLOOM_FILTER_FALSE_POSITIVE_RATIO, |s| {
        s.bloom_filter_false_positive_ratio
    });
    g(names::TABLE_DROPPABLE_TOMBSTONE_RATIO, |s| {
        s.droppable_tombstone_ratio
    });
    register_levels(registry, h, 1);
}

/// Makes sure levels `0..levels` have their two gauges.
fn register_levels(registry: &Registry, h: &Arc<TableHandles>, levels: usize) {
    let mut registered = h.levels_registered.lock();
    for level in *registered..levels {
        let text = level.to_string();
        let labels = [
            (LABEL_KEYSPACE, h.keyspace.as_str()),
            (LABEL_TABLE, h.table.as_str()),
            (LABEL_LEVEL, text.as_str()),
        ];
        snapshot_gauge(
            registry,
            names::TABLE_SSTABLES_PER_LEVEL,
            &labels,
            h,
            move |s| s.levels.get(level).map_or(0.0, |l| l.0),
        );
        snapshot_gauge(
            registry,
            names::TABLE_SSTABLE_BYTES_PER_LEVEL,
            &labels,
            h,
            move |s| s.levels.get(level).map_or(0.0, |l| l.1),
        );
    }
    *registered = (*registered).max(levels);
}

/// Takes a table's snapshot from storage.
fn snapshot(p: &Processor, id: TableId, now_seconds: i32) -> Option<TableSnapshot> {
    let stats = p.storage.table_stats(id).ok()?;
    let compaction = p.storage.table_compaction_stats(id, now_seconds).ok()?;
    let positives = stats.bloom_filter_false_positives + stats.bloom_filter_true_positives;
    Some(TableSnapshot {
        live_sstables: stats.live_sstables as f64,
        levels: compaction
            .sstables_per_level
            .iter()
            .zip(&compaction.bytes_per_level)
            .map(|(n, b)| (*n as f64, *b as f64))
            .collect(),
        disk_space_used_bytes: stats.space_used_bytes as f64,
        pending_compactions: compaction.pending_tasks as f64,
        bloom_filter_false_positive_ratio: if positives == 0 {
            0.0
        } else {
            stats.bloom_filter_false_positives as f64 / positives as f64
        },
        droppable_tombstone_ratio: compaction.droppable_tombstone_ratio,
    })
}

/// Adds to `counter` what `total` grew by since it was last synced.
fn catch_up(counter: &Counter, total: u64) -> u64 {
    let delta = total.saturating_sub(counter.get());
    counter.add(delta);
    delta
}

impl Processor {
    /// Brings table and compaction metrics up to date; returns the
    /// compaction snapshot it used (running compactions for
    /// `system_views.sstable_tasks`).
    pub fn sync_metrics(&self) -> CompactionStats {
        let m = &self.metrics;
        let state = m.sync_lock.lock();
        let schema = self.schema();
        let live: Vec<(TableId, &str, &str)> = schema
            .keyspaces
            .values()
            .filter(|k| !k.is_system)
            .flat_map(|k| k.tables.values())
            .filter(|t| !t.is_virtual)
            .map(|t| (t.id, t.keyspace.as_str(), t.name.as_str()))
            .collect();
        let ids: HashSet<TableId> = live.iter().map(|t| t.0).collect();
        // Dropped tables go first, so a table re-created under the same
        // name gets fresh series rather than the old ones.
        let stale: Vec<(String, String)> = {
            let mut tables = m.tables.write();
            let gone: Vec<(String, String)> = tables
                .iter()
                .filter(|(id, _)| !ids.contains(id))
                .map(|(_, h)| (h.keyspace.clone(), h.table.clone()))
                .collect();
            tables.retain(|id, h| {
                ids.contains(id) && !gone.iter().any(|(k, t)| *k == h.keyspace && *t == h.table)
            });
            gone
        };
        for (k, t) in &stale {
            m.registry
                .remove_matching(&[(LABEL_KEYSPACE, k.as_str()), (LABEL_TABLE, t.as_str())]);
        }
        let now = varve_types::time::now_seconds() as i32;
        for (id, keyspace, table) in live {
            let h = m.table(id, keyspace, table);
            if let Some(s) = snapshot(self, id, now) {
                register_levels(&m.registry, &h, s.levels.len());
                *h.snapshot.lock() = s;
            }
        }
        let compaction = self.storage.compaction_stats();
        catch_up(&state.completed_tasks, compaction.completed_tasks);
        catch_up(&state.bytes_compacted, compaction.bytes_compacted);
        let done = state.compactions_completed.count();
        state
            .compactions_completed
            .mark_n(compaction.completed_tasks.saturating_sub(done));
        state.pending.set(compaction.pending_tasks as f64);
        catch_up(
            &state.commitlog_bytes,
            self.storage.commitlog_bytes_written(),
        );
        let (preallocated, missed) = self.storage.commitlog_segments_preallocated();
        catch_up(&state.segments_preallocated, preallocated);
        catch_up(&state.segments_not_preallocated, missed);
        state.chunk_cache.sync(&self.storage.block_cache_stats());
        compaction
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_catch_up_with_storage_totals() {
        let c = Counter::new();
        assert_eq!(catch_up(&c, 5), 5);
        assert_eq!(catch_up(&c, 5), 0);
        assert_eq!(catch_up(&c, 9), 4);
        assert_eq!(catch_up(&c, 3), 0, "never goes back");
        assert_eq!(c.get(), 9);
    }
}
