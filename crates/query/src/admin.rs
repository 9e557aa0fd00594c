//! Operations behind `varve nodetool`: flush, drain, compact, garbagecollect,
//! compactionstats, tablestats.

use crate::error::{QueryError, Result};
use crate::processor::Processor;
use std::fmt::Write;
use std::sync::Arc;
use varve_schema::Table;
use varve_storage::Granularity;

impl Processor {
    /// The user tables a nodetool command names: all of them, one
    /// keyspace's, or some tables of one keyspace.
    pub(crate) fn tables_for(
        &self,
        keyspace: Option<&str>,
        tables: &[String],
    ) -> Result<Vec<Arc<Table>>> {
        let schema = self.schema();
        let mut out = Vec::new();
        for ks in schema.keyspaces.values().filter(|k| !k.is_system) {
            if keyspace.is_some_and(|k| k != ks.name) {
                continue;
            }
            for t in ks.tables.values() {
                if tables.is_empty() || tables.contains(&t.name) {
                    out.push(t.clone());
                }
            }
        }
        if let Some(k) = keyspace {
            if schema.keyspace(k).is_none() {
                return Err(QueryError::Invalid(format!(
                    "Keyspace [{k}] does not exist."
                )));
            }
        }
        for name in tables {
            if !out.iter().any(|t| &t.name == name) {
                return Err(QueryError::Invalid(format!("Unknown table {name}")));
            }
        }
        Ok(out)
    }

    /// `nodetool flush [keyspace [tables...]]`
    pub fn flush(&self, keyspace: Option<&str>, tables: &[String]) -> Result<usize> {
        let list = self.tables_for(keyspace, tables)?;
        for t in &list {
            self.storage.flush(t.id)?;
        }
        Ok(list.len())
    }

    /// `nodetool compact [keyspace [tables...]]`: a major compaction of each
    /// table (its memtable is flushed first, so everything is included).
    pub fn compact(&self, keyspace: Option<&str>, tables: &[String]) -> Result<usize> {
        let list = self.tables_for(keyspace, tables)?;
        let now = varve_types::time::now_seconds() as i32;
        for t in &list {
            self.storage.flush(t.id)?;
            self.storage.major_compact(t.id, now)?;
        }
        Ok(list.len())
    }

    /// The node's storage engine (the cluster's replica side serves
    /// other nodes' requests from it).
    pub fn engine(&self) -> Arc<varve_storage::Engine> {
        self.storage.engine()
    }

    /// Whether a write may block on an fsync (commitlog batch or group
    /// mode): the server then runs statements where blocking is allowed.
    pub fn writes_wait_for_sync(&self) -> bool {
        self.storage.writes_wait_for_sync()
    }

    /// `nodetool garbagecollect [-g ROW|CELL] [-j N] [keyspace [tables...]]`
    /// (`granularity` is ROW or CELL, any case):
    /// rewrites every sstable of each table alone, dropping what the
    /// table's other sstables shadow; returns once all are done. `jobs` 0
    /// means as many as concurrent_compactors.
    pub fn garbage_collect(
        &self,
        keyspace: Option<&str>,
        tables: &[String],
        granularity: &str,
        jobs: usize,
    ) -> Result<usize> {
        let Some(granularity) = Granularity::parse(granularity) else {
            return Err(QueryError::Invalid(format!(
                "granularity must be ROW or CELL, not {granularity}"
            )));
        };
        let list = self.tables_for(keyspace, tables)?;
        let now = varve_types::time::now_seconds() as i32;
        for t in &list {
            self.storage.garbage_collect(t.id, granularity, jobs, now)?;
        }
        Ok(list.len())
    }

    /// `nodetool compactionstats`, as text in nodetool's shape.
    pub fn compaction_stats_text(&self) -> String {
        let s = self.storage.compaction_stats();
        let mut out = String::new();
        let _ = writeln!(out, "pending tasks: {}", s.pending_tasks);
        for (ks, table, n) in &s.pending_by_table {
            let _ = writeln!(out, "- {ks}.{table}: {n}");
        }
        out.push('\n');
        if s.running.is_empty() {
            return out;
        }
        let mut rows = vec![[
            "id".to_string(),
            "compaction type".to_string(),
            "keyspace".to_string(),
            "table".to_string(),
            "completed".to_string(),
            "total".to_string(),
            "unit".to_string(),
            "progress".to_string(),
        ]];
        for r in &s.running {
            let progress = if r.bytes_total == 0 {
                100.0
            } else {
                r.bytes_done as f64 * 100.0 / r.bytes_total as f64
            };
            rows.push([
                r.id.to_string(),
                r.kind.label().to_string(),
                r.keyspace.clone(),
                r.table.clone(),
                r.bytes_done.to_string(),
                r.bytes_total.to_string(),
                r.unit.to_string(),
                format!("{progress:.2}%"),
            ]);
        }
        let widths: Vec<usize> = (0..8)
            .map(|i| rows.iter().map(|r| r[i].len()).max().unwrap_or(0))
            .collect();
        for r in &rows {
            let cells: Vec<String> = r
                .iter()
                .zip(&widths)
                .map(|(c, w)| format!("{c:<w$}"))
                .collect();
            let _ = writeln!(out, "{}", cells.join(" ").trim_end());
        }
        out
    }

    /// `nodetool getcompactionthroughput`, in MiB/s (0: unlimited).
    pub fn compaction_throughput(&self) -> u64 {
        self.storage.compaction_throughput()
    }

    /// `index_summary_capacity`: memory all partition summaries may take
    /// before they are downsampled (see varve_storage::engine_summary).
    pub fn set_index_summary_capacity(&self, bytes: u64) {
        self.storage.set_index_summary_capacity(bytes);
    }

    /// `key_cache_size`: the key caches' budget over all sstables (0: off;
    /// see varve_storage::sstable::key_cache).
    pub fn set_key_cache_size(&self, bytes: u64) {
        self.storage.set_key_cache_size(bytes);
    }

    /// `file_cache_size`: the chunk cache's budget (0: off; see
    /// varve_storage::sstable::BlockCache).
    pub fn set_file_cache_size(&self, bytes: u64) {
        self.storage.set_file_cache_size(bytes);
    }

    /// The share of `compaction_throughput` compactions may use now (the
    /// server's adaptive throttle sets it; see varve_storage::compaction::throttle).
    pub fn set_compaction_rate_factor(&self, factor: f64) {
        self.storage.set_compaction_rate_factor(factor);
    }

    /// Whether a compaction (garbagecollect included) runs now.
    pub fn compactions_running(&self) -> bool {
        self.storage.compactions_running()
    }

    /// `nodetool setcompactionthroughput N`: takes effect at once, also for
    /// running compactions.
    pub fn set_compaction_throughput(&self, mib_per_sec: u64) {
        self.storage.set_compaction_throughput(mib_per_sec);
    }

    /// `nodetool drain`: every memtable flushed, the commitlog synced.
    pub fn drain(&self) -> Result<()> {
        self.storage.drain()?;
        Ok(())
    }

    /// Stops compactions for good (the node is shutting down): a running
    /// one, background or asked for by nodetool, ends at its next
    /// partition with its inputs left live.
    pub fn stop_compactions(&self) {
        self.storage.stop_compactions();
    }

    /// `nodetool tablestats [keyspace[.table]]`, as text in nodetool's shape.
    pub fn table_stats_text(&self, keyspace: Option<&str>, table: Option<&str>) -> Result<String> {
        let names: Vec<String> = table.map(|t| vec![t.to_string()]).unwrap_or_default();
        let list = self.tables_for(keyspace, &names)?;
        let mut out = String::new();
        let _ = writeln!(out, "Total number of tables: {}", list.len());
        out.push_str("----------------\n");
        let mut current_ks = String::new();
        for t in &list {
            if t.keyspace != current_ks {
                current_ks = t.keyspace.clone();
                let _ = writeln!(out, "Keyspace : {}", t.keyspace);
            }
            let s = self.storage.table_stats(t.id)?;
            let checks = s.bloom_filter_false_positives + s.bloom_filter_true_positives;
            let ratio = if checks == 0 {
                0.0
            } else {
                s.bloom_filter_false_positives as f64 / checks as f64
            };
            let now = varve_types::time::now_seconds() as i32;
            let c = self.storage.table_compaction_stats(t.id, now)?;
            let list = |v: Vec<String>| format!("[{}]", v.join(", "));
            let _ = writeln!(out, "\t\tTable: {}", t.name);
            let _ = writeln!(out, "\t\tSSTable count: {}", s.live_sstables);
            let _ = writeln!(
                out,
                "\t\tSSTables in each level: {}",
                list(c.sstables_per_level.iter().map(|n| n.to_string()).collect())
            );
            let _ = writeln!(
                out,
                "\t\tSSTable bytes in each level: {}",
                list(c.bytes_per_level.iter().map(|n| n.to_string()).collect())
            );
            let _ = writeln!(out, "\t\tUnleveled SSTables: {}", c.unleveled_sstables);
            let _ = writeln!(out, "\t\tSpace used (live): {}", s.space_used_bytes);
            let _ = writeln!(out, "\t\tSpace used (total): {}", s.space_used_bytes);
            let _ = writeln!(
                out,
                "\t\tNumber of partitions (estimate): {}",
                s.memtable_partitions as u64 + s.sstable_partitions
            );
            let _ = writeln!(out, "\t\tMemtable cell count: {}", s.memtable_operations);
            let _ = writeln!(out, "\t\tMemtable data size: {}", s.memtable_bytes);
            let repaired = match s.space_used_bytes {
                0 => 0.0,
                used => 100.0 * s.repaired_bytes as f64 / used as f64,
            };
            let _ = writeln!(out, "\t\tPercent repaired: {repaired:.1}");
            let _ = writeln!(out, "\t\tBytes repaired: {}", s.repaired_bytes);
            let _ = writeln!(
                out,
                "\t\tBytes unrepaired: {}",
                s.space_used_bytes - s.repaired_bytes
            );
            let _ = writeln!(
                out,
                "\t\tBloom filter false positives: {}",
                s.bloom_filter_false_positives
            );
            let _ = writeln!(out, "\t\tBloom filter false ratio: {ratio:.5}");
            let _ = writeln!(
                out,
                "\t\tIndex summary off heap memory used: {}",
                s.index_summary_bytes
            );
            let _ = writeln!(
                out,
                "\t\tDroppable tombstone ratio: {:.5}",
                c.droppable_tombstone_ratio
            );
            let _ = writeln!(out, "\t\tPending compactions: {}", c.pending_tasks);
            let _ = writeln!(out, "\t\tWrite amplification: {:.2}", c.write_amplification);
            out.push('\n');
        }
        out.push_str("----------------\n");
        Ok(out)
    }
}
