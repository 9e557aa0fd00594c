//! Operations behind `varve nodetool snapshot`, `listsnapshots`,
//! `clearsnapshot` and `import`, with nodetool's words. Each works on this
//! node's own files only (a snapshot of a cluster is one per node, as in
//! Cassandra); storage does the work (`varve_storage::engine_snapshot`,
//! `engine_import`).

use crate::error::{QueryError, Result};
use crate::processor::Processor;
use std::fmt::Write;
use std::path::Path;
use std::sync::Arc;
use varve_schema::Table;
use varve_storage::{ImportOptions, SnapshotInfo};

/// What `nodetool import` did, in a line.
fn import_summary(keyspace: &str, table: &str, r: &varve_storage::ImportResult) -> String {
    format!(
        "Imported {} sstables ({} partitions, {}) into {keyspace}.{table}\n",
        r.sstables.len(),
        r.partitions,
        file_size(r.bytes)
    )
}

impl Processor {
    /// `auto_snapshot`: whether DROP and TRUNCATE snapshot a table first.
    pub fn set_auto_snapshot(&self, on: bool) {
        self.storage.set_auto_snapshot(on);
    }

    /// `nodetool snapshot [-t tag] [-cf table] [keyspace...]`: snapshots
    /// every table of the keyspaces named (all user keyspaces when none),
    /// or one table of one keyspace, as `tag` (the time in milliseconds
    /// when empty). A tag one of them already has is refused before any
    /// snapshot is taken.
    pub fn snapshot(&self, keyspaces: &[String], table: Option<&str>, tag: &str) -> Result<String> {
        let tag = match tag {
            "" => varve_types::time::now_millis().to_string(),
            t => t.to_string(),
        };
        let tables = self.snapshot_tables(keyspaces, table)?;
        for t in &tables {
            if self.storage.snapshot_exists(t.id, &tag)? {
                return Err(QueryError::Invalid(format!(
                    "snapshot {tag} already exists for {}.{}",
                    t.keyspace, t.name
                )));
            }
        }
        for t in &tables {
            self.storage.snapshot(t.id, &tag)?;
        }
        let mut out = format!(
            "Requested creating snapshot(s) for {} with snapshot name [{tag}] and options \
             {{skipFlush=false}}\n",
            keyspace_list(keyspaces)
        );
        let _ = writeln!(out, "Snapshot directory: {tag}");
        Ok(out)
    }

    /// The tables a snapshot takes (see [`Processor::snapshot`]).
    fn snapshot_tables(
        &self,
        keyspaces: &[String],
        table: Option<&str>,
    ) -> Result<Vec<Arc<Table>>> {
        let names: Vec<String> = table.map(|t| vec![t.to_string()]).unwrap_or_default();
        if table.is_some() && keyspaces.len() != 1 {
            return Err(QueryError::Invalid(
                "When specifying the table for a snapshot, you must specify one and only one \
                 keyspace"
                    .into(),
            ));
        }
        let mut out = Vec::new();
        if keyspaces.is_empty() {
            out = self.tables_for(None, &[])?;
        }
        for ks in keyspaces {
            out.extend(self.tables_for(Some(ks), &names)?);
        }
        // A keyspace named twice is snapshotted once.
        let mut seen = std::collections::HashSet::new();
        out.retain(|t| !t.is_virtual && seen.insert(t.id));
        Ok(out)
    }

    /// `nodetool listsnapshots`: every snapshot on this node's disk,
    /// dropped tables' included, in nodetool's table.
    pub fn list_snapshots_text(&self) -> Result<String> {
        let list = self.storage.list_snapshots(None)?;
        Ok(snapshots_table(&list))
    }

    /// `nodetool clearsnapshot [-t tag | --all] [keyspace...]`.
    pub fn clear_snapshot(
        &self,
        tag: Option<&str>,
        all: bool,
        keyspaces: &[String],
    ) -> Result<String> {
        let tag = tag.filter(|t| !t.is_empty());
        match (tag, all) {
            (None, false) => {
                return Err(QueryError::Invalid("Specify snapshot name or --all".into()))
            }
            (Some(_), true) => {
                return Err(QueryError::Invalid(
                    "Specify only one of snapshot name or --all".into(),
                ))
            }
            _ => {}
        }
        if keyspaces.is_empty() {
            self.storage.clear_snapshots(None, tag)?;
        }
        for ks in keyspaces {
            self.storage.clear_snapshots(Some(ks), tag)?;
        }
        let mut out = format!(
            "Requested clearing snapshot(s) for {}",
            keyspace_list(keyspaces)
        );
        match tag {
            Some(t) => {
                let _ = write!(out, " with snapshot name [{t}]");
            }
            None => out.push_str(" with [all snapshots]"),
        }
        out.push('\n');
        Ok(out)
    }

    /// `nodetool import [--copy-data] <keyspace> <table> <directory>`: the
    /// directory's sstables, checked whole, made live in the table (moved
    /// unless `copy_data`).
    pub fn import(
        &self,
        keyspace: &str,
        table: &str,
        dir: &Path,
        copy_data: bool,
    ) -> Result<String> {
        let t = self
            .tables_for(Some(keyspace), &[table.to_string()])?
            .pop()
            .ok_or_else(|| QueryError::Invalid(format!("Unknown table {table}")))?;
        let options = ImportOptions {
            copy_data,
            column_id_limit: Some(t.next_column_id),
        };
        let result = self.storage.import_sstables(t.id, dir, &options)?;
        Ok(import_summary(keyspace, table, &result))
    }
}

/// `[ks1, ks2]`, or `[all keyspaces]` when none is named.
fn keyspace_list(keyspaces: &[String]) -> String {
    if keyspaces.is_empty() {
        "[all keyspaces]".to_string()
    } else {
        format!("[{}]", keyspaces.join(", "))
    }
}

/// `nodetool listsnapshots`' text: a header, one line per snapshot in
/// aligned columns, and the total true size.
pub fn snapshots_table(list: &[SnapshotInfo]) -> String {
    let mut out = String::from("Snapshot Details: \n");
    if list.is_empty() {
        out.push_str("There are no snapshots\n");
        return out;
    }
    let mut rows = vec![[
        "Snapshot name",
        "Keyspace name",
        "Column family name",
        "True size",
        "Size on disk",
        "Creation time",
    ]
    .map(str::to_string)];
    for s in list {
        rows.push([
            s.tag.clone(),
            s.keyspace.clone(),
            s.table.clone(),
            file_size(s.true_size_bytes),
            file_size(s.size_on_disk_bytes),
            s.created_at_millis
                .map(varve_storage::snapshot_manifest::iso_instant)
                .unwrap_or_default(),
        ]);
    }
    let widths: Vec<usize> = (0..6)
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
    let total: u64 = list.iter().map(|s| s.true_size_bytes).sum();
    let _ = writeln!(out, "\nTotal TrueDiskSpaceUsed: {}", file_size(total));
    out
}

/// A size as nodetool prints it: `512 bytes`, `5.02 KiB`, `1 MiB`, ... (at
/// most two decimals, trailing zeros dropped).
pub fn file_size(bytes: u64) -> String {
    const UNITS: [(&str, u64); 4] = [
        ("TiB", 1 << 40),
        ("GiB", 1 << 30),
        ("MiB", 1 << 20),
        ("KiB", 1 << 10),
    ];
    for (unit, size) in UNITS {
        if bytes >= size {
            let text = format!("{:.2}", bytes as f64 / size as f64);
            let text = text.trim_end_matches('0').trim_end_matches('.');
            return format!("{text} {unit}");
        }
    }
    format!("{bytes} bytes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_nodetool_prints_them() {
        assert_eq!(file_size(0), "0 bytes");
        assert_eq!(file_size(1023), "1023 bytes");
        assert_eq!(file_size(1024), "1 KiB");
        assert_eq!(file_size(5140), "5.02 KiB");
        assert_eq!(file_size(3 << 20), "3 MiB");
        assert_eq!(file_size((1 << 30) + (1 << 29)), "1.5 GiB");
        assert_eq!(file_size(2 << 40), "2 TiB");
    }

    #[test]
    fn the_snapshots_table_aligns_its_columns() {
        assert_eq!(
            snapshots_table(&[]),
            "Snapshot Details: \nThere are no snapshots\n"
        );
        let info = SnapshotInfo {
            tag: "t1".into(),
            keyspace: "ks".into(),
            table: "users".into(),
            dir: "/d".into(),
            sstables: 1,
            true_size_bytes: 0,
            size_on_disk_bytes: 5140,
            created_at_millis: Some(1_700_000_000_123),
        };
        let text = snapshots_table(&[info]);
        let expected = "Snapshot Details: \n\
            Snapshot name Keyspace name Column family name True size Size on disk Creation time\n\
            t1            ks            users              0 bytes   5.02 KiB     2023-11-14T22:13:20.123Z\n\
            \nTotal TrueDiskSpaceUsed: 0 bytes\n";
        assert_eq!(text, expected);
    }
}
