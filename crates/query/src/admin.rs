//! Operations behind `varve nodetool`: flush, drain, tablestats.

use crate::error::{QueryError, Result};
use crate::processor::Processor;
use std::fmt::Write;
use std::sync::Arc;
use varve_schema::Table;

impl Processor {
    /// The user tables a nodetool command names: all of them, one
    /// keyspace's, or some tables of one keyspace.
    fn tables_for(&self, keyspace: Option<&str>, tables: &[String]) -> Result<Vec<Arc<Table>>> {
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

    /// Whether a write may block on an fsync (commitlog batch or group
    /// mode): the server then runs statements where blocking is allowed.
    pub fn writes_wait_for_sync(&self) -> bool {
        self.storage.writes_wait_for_sync()
    }

    /// `nodetool getcompactionthroughput`, in MiB/s (0: unlimited).
    pub fn compaction_throughput(&self) -> u64 {
        self.storage.compaction_throughput()
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
            let _ = writeln!(out, "\t\tTable: {}", t.name);
            let _ = writeln!(out, "\t\tSSTable count: {}", s.live_sstables);
            let _ = writeln!(out, "\t\tSpace used (live): {}", s.space_used_bytes);
            let _ = writeln!(out, "\t\tSpace used (total): {}", s.space_used_bytes);
            let _ = writeln!(
                out,
                "\t\tNumber of partitions (estimate): {}",
                s.memtable_partitions as u64 + s.sstable_partitions
            );
            let _ = writeln!(out, "\t\tMemtable cell count: {}", s.memtable_partitions);
            let _ = writeln!(out, "\t\tMemtable data size: {}", s.memtable_bytes);
            let _ = writeln!(
                out,
                "\t\tBloom filter false positives: {}",
                s.bloom_filter_false_positives
            );
            let _ = writeln!(out, "\t\tBloom filter false ratio: {ratio:.5}");
            out.push('\n');
        }
        out.push_str("----------------\n");
        Ok(out)
    }
}
