//! Rendering [`TableOptions`] as Cassandra 5.0 shows them: the `WITH ... AND ...` tail of
//! `DESCRIBE TABLE`, and the option columns of a `system_schema.tables` row (and back).

use super::java::{cql_map, double_to_string, quote};
use super::{
    config, CachingParams, CompactionParams, CompressionParams, ReadRepair, Result,
    SpeculativeRetry, TableOptions,
};
use std::collections::BTreeMap;
use std::fmt::Write;

/// Indentation of continuation lines in DESCRIBE output (`CqlBuilder`'s one level).
const INDENT: &str = "    ";

/// A cell of a `system_schema.tables` row, typed as that table declares the column.
#[derive(Debug, Clone, PartialEq)]
pub enum SchemaValue {
    /// The column is not written (Cassandra leaves some columns unset at their default).
    Null,
    Boolean(bool),
    Int(i32),
    Double(f64),
    Text(String),
    /// `frozen<map<text, text>>`
    TextMap(BTreeMap<String, String>),
    /// `frozen<map<text, blob>>`
    BlobMap(BTreeMap<String, Vec<u8>>),
}

impl TableOptions {
    /// The options part of `DESCRIBE TABLE`, exactly as Cassandra 5.0 prints it: it starts
    /// right after `WITH ` (or after the `CLUSTERING ORDER BY (...)` line's `AND `), every
    /// further option on its own line as `    AND name = value`, no trailing `;` or newline.
    pub fn to_cql(&self) -> String {
        self.to_cql_for(false)
    }

    /// As [`TableOptions::to_cql`]; a materialized view omits `default_time_to_live`.
    pub fn to_cql_for(&self, is_view: bool) -> String {
        let extensions: BTreeMap<String, String> = self
            .extensions
            .iter()
            .map(|(k, v)| (k.clone(), format!("0x{}", hex(v))))
            .collect();
        let mut lines: Vec<(&str, String)> = vec![
            (
                "additional_write_policy",
                quote(&self.additional_write_policy.to_string()),
            ),
            ("allow_auto_snapshot", self.allow_auto_snapshot.to_string()),
            (
                "bloom_filter_fp_chance",
                double_to_string(self.bloom_filter_fp_chance),
            ),
            ("caching", cql_map(&self.caching.to_map(), true)),
            ("cdc", self.cdc.to_string()),
            ("comment", quote(&self.comment)),
            ("compaction", cql_map(&self.compaction.to_map(), true)),
            ("compression", cql_map(&self.compression.to_map(), true)),
            ("memtable", quote(&self.memtable)),
            ("crc_check_chance", double_to_string(self.crc_check_chance)),
        ];
        if !is_view {
            lines.push((
                "default_time_to_live",
                self.default_time_to_live.to_string(),
            ));
        }
        lines.extend([
            ("extensions", cql_map(&extensions, false)),
            ("gc_grace_seconds", self.gc_grace_seconds.to_string()),
            ("incremental_backups", self.incremental_backups.to_string()),
            ("max_index_interval", self.max_index_interval.to_string()),
            (
                "memtable_flush_period_in_ms",
                self.memtable_flush_period_in_ms.to_string(),
            ),
            ("min_index_interval", self.min_index_interval.to_string()),
            ("read_repair", quote(self.read_repair.as_str())),
            (
                "speculative_retry",
                quote(&self.speculative_retry.to_string()),
            ),
        ]);
        let mut out = String::new();
        for (i, (name, value)) in lines.iter().enumerate() {
            if i > 0 {
                out.push('\n');
                out.push_str(INDENT);
                out.push_str("AND ");
            }
            let _ = write!(out, "{name} = {value}");
        }
        out
    }

    /// The option columns of this table's `system_schema.tables` row, for a node with
    /// `cdc_enabled: false` (the default): see [`TableOptions::to_schema_row_for`].
    pub fn to_schema_row(&self) -> Vec<(&'static str, SchemaValue)> {
        self.to_schema_row_for(false)
    }

    /// The option columns as Cassandra 5.0 writes them. Like Cassandra, it leaves `cdc` unset
    /// unless CDC is enabled on the node, `memtable` unset for the default configuration, and
    /// `allow_auto_snapshot` / `incremental_backups` unset unless false; the legacy
    /// `read_repair_chance` columns hold 0.0. Identity columns (`keyspace_name`, `table_name`,
    /// `id`, `flags`) belong to the table metadata and are not included.
    pub fn to_schema_row_for(&self, node_cdc_enabled: bool) -> Vec<(&'static str, SchemaValue)> {
        use SchemaValue::*;
        let unless_true = |b: bool| if b { Null } else { Boolean(false) };
        vec![
            (
                "additional_write_policy",
                Text(self.additional_write_policy.to_string()),
            ),
            ("allow_auto_snapshot", unless_true(self.allow_auto_snapshot)),
            (
                "bloom_filter_fp_chance",
                Double(self.bloom_filter_fp_chance),
            ),
            ("caching", TextMap(self.caching.to_map())),
            (
                "cdc",
                if node_cdc_enabled {
                    Boolean(self.cdc)
                } else {
                    Null
                },
            ),
            ("comment", Text(self.comment.clone())),
            ("compaction", TextMap(self.compaction.to_map())),
            ("compression", TextMap(self.compression.to_map())),
            ("crc_check_chance", Double(self.crc_check_chance)),
            ("dclocal_read_repair_chance", Double(0.0)),
            ("default_time_to_live", Int(self.default_time_to_live)),
            ("extensions", BlobMap(self.extensions.clone())),
            ("gc_grace_seconds", Int(self.gc_grace_seconds)),
            ("incremental_backups", unless_true(self.incremental_backups)),
            ("max_index_interval", Int(self.max_index_interval)),
            (
                "memtable",
                if self.memtable == "default" {
                    Null
                } else {
                    Text(self.memtable.clone())
                },
            ),
            (
                "memtable_flush_period_in_ms",
                Int(self.memtable_flush_period_in_ms),
            ),
            ("min_index_interval", Int(self.min_index_interval)),
            ("read_repair", Text(self.read_repair.as_str().to_string())),
            ("read_repair_chance", Double(0.0)),
            (
                "speculative_retry",
                Text(self.speculative_retry.to_string()),
            ),
        ]
    }

    /// Rebuilds options from the columns of a `system_schema.tables` row (missing or null
    /// columns take the values Cassandra assumes for them). Maps are re-validated.
    pub fn from_schema_row(row: &[(&str, SchemaValue)]) -> Result<TableOptions> {
        let mut o = TableOptions::default();
        for (name, value) in row {
            let bad = || {
                config(format!(
                    "Invalid type for system_schema.tables column {name}"
                ))
            };
            match (*name, value) {
                (_, SchemaValue::Null) => {}
                ("additional_write_policy", SchemaValue::Text(s)) => {
                    o.additional_write_policy = SpeculativeRetry::parse(s)?
                }
                ("allow_auto_snapshot", SchemaValue::Boolean(b)) => o.allow_auto_snapshot = *b,
                ("bloom_filter_fp_chance", SchemaValue::Double(d)) => o.bloom_filter_fp_chance = *d,
                ("caching", SchemaValue::TextMap(m)) => o.caching = CachingParams::from_map(m)?,
                ("cdc", SchemaValue::Boolean(b)) => o.cdc = *b,
                ("comment", SchemaValue::Text(s)) => o.comment = s.clone(),
                ("compaction", SchemaValue::TextMap(m)) => {
                    o.compaction = CompactionParams::from_map(m)?
                }
                ("compression", SchemaValue::TextMap(m)) => {
                    o.compression = CompressionParams::from_map(m)?
                }
                ("crc_check_chance", SchemaValue::Double(d)) => o.crc_check_chance = *d,
                ("default_time_to_live", SchemaValue::Int(n)) => o.default_time_to_live = *n,
                ("extensions", SchemaValue::BlobMap(m)) => o.extensions = m.clone(),
                ("gc_grace_seconds", SchemaValue::Int(n)) => o.gc_grace_seconds = *n,
                ("incremental_backups", SchemaValue::Boolean(b)) => o.incremental_backups = *b,
                ("max_index_interval", SchemaValue::Int(n)) => o.max_index_interval = *n,
                ("memtable", SchemaValue::Text(s)) => o.memtable = s.clone(),
                ("memtable_flush_period_in_ms", SchemaValue::Int(n)) => {
                    o.memtable_flush_period_in_ms = *n
                }
                ("min_index_interval", SchemaValue::Int(n)) => o.min_index_interval = *n,
                ("read_repair", SchemaValue::Text(s)) => o.read_repair = ReadRepair::parse(s)?,
                ("speculative_retry", SchemaValue::Text(s)) => {
                    o.speculative_retry = SpeculativeRetry::parse(s)?
                }
                ("dclocal_read_repair_chance" | "read_repair_chance", SchemaValue::Double(_)) => {}
                (
                    "additional_write_policy"
                    | "allow_auto_snapshot"
                    | "bloom_filter_fp_chance"
                    | "caching"
                    | "cdc"
                    | "comment"
                    | "compaction"
                    | "compression"
                    | "crc_check_chance"
                    | "default_time_to_live"
                    | "extensions"
                    | "gc_grace_seconds"
                    | "incremental_backups"
                    | "max_index_interval"
                    | "memtable"
                    | "memtable_flush_period_in_ms"
                    | "min_index_interval"
                    | "read_repair"
                    | "speculative_retry"
                    | "dclocal_read_repair_chance"
                    | "read_repair_chance",
                    _,
                ) => return bad(),
                // Columns owned by the table metadata (keyspace_name, id, flags, ...).
                _ => {}
            }
        }
        Ok(o)
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}
