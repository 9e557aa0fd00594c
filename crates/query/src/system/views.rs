//! `system_views`: the node's metrics and settings as CQL tables, with
//! Cassandra 4/5's names and columns where Cassandra has the table:
//!
//! - `coordinator_read_latency`, `coordinator_write_latency`,
//!   `coordinator_scan_latency` (per table: `count` all-time; `max_ms`,
//!   `p50th_ms`, `p99th_ms` over the recent window of 30-60 s, as
//!   Cassandra's decaying histograms cover about the last minutes;
//!   `per_second` the one-minute rate);
//! - `tombstones_per_read` (same, unscaled, columns without `_ms`);
//! - `sstable_tasks` (running compactions; `task_id` is the compaction's
//!   number in the low bytes of a UUID);
//! - `settings` (`name`, `value`: the node's configuration);
//! - `varve_metrics`: Varve's own (no Cassandra equivalent): every row of
//!   `Registry::rows()` as (`name`, `labels`, `field`, `value`), `name`
//!   being the metric's base name (`client_request_latency`).
//!
//! Reading any of them syncs storage's table and compaction numbers first.

use std::sync::Arc;

use varve_metrics::{LatencyHistogram, Snapshot};
use varve_types::Value;

use super::VRow;
use crate::metrics::{
    TableHandles, TableLatency, COORDINATOR_READ, COORDINATOR_SCAN, COORDINATOR_WRITE,
};
use crate::processor::Processor;

fn text(s: &str) -> Value {
    Value::Text(s.to_string())
}

fn big(n: u64) -> Value {
    Value::BigInt(i64::try_from(n).unwrap_or(i64::MAX))
}

/// The rows of `system_views.<name>` now.
pub fn rows(p: &Processor, name: &str) -> Vec<VRow> {
    let compaction = p.sync_metrics();
    match name {
        "coordinator_read_latency" => latency_rows(p, COORDINATOR_READ),
        "coordinator_write_latency" => latency_rows(p, COORDINATOR_WRITE),
        "coordinator_scan_latency" => latency_rows(p, COORDINATOR_SCAN),
        "tombstones_per_read" => tables(p)
            .iter()
            .map(|h| {
                let mut r = table_key(h);
                histogram_columns(&mut r, &h.tombstones_scanned, 1.0, "");
                r
            })
            .collect(),
        "sstable_tasks" => compaction
            .running
            .iter()
            .map(|c| {
                let mut id = [0u8; 16];
                id[8..].copy_from_slice(&c.id.to_be_bytes());
                let mut r = VRow::new();
                r.insert("keyspace_name", text(&c.keyspace));
                r.insert("table_name", text(&c.table));
                r.insert("task_id", Value::Uuid(id));
                r.insert("kind", text(c.kind.label()));
                r.insert("progress", big(c.bytes_done));
                r.insert("total", big(c.bytes_total));
                r.insert("unit", text(c.unit));
                r
            })
            .collect(),
        "settings" => p
            .metrics
            .settings
            .read()
            .iter()
            .map(|(k, v)| {
                let mut r = VRow::new();
                r.insert("name", text(k));
                r.insert("value", text(v));
                r
            })
            .collect(),
        "varve_metrics" => p
            .metrics
            .registry
            .rows()
            .into_iter()
            .map(|row| {
                let mut r = VRow::new();
                r.insert("labels", text(&row.labels_text()));
                r.insert("name", Value::Text(row.family));
                r.insert("field", text(row.field));
                r.insert("value", Value::Double(row.value));
                r
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// The handles of every table the last sync saw, sorted by name.
fn tables(p: &Processor) -> Vec<Arc<TableHandles>> {
    let mut all: Vec<Arc<TableHandles>> = p.metrics.tables.read().values().cloned().collect();
    all.sort_by(|a, b| (&a.keyspace, &a.table).cmp(&(&b.keyspace, &b.table)));
    all
}

fn table_key(h: &TableHandles) -> VRow {
    let mut r = VRow::new();
    r.insert("keyspace_name", text(&h.keyspace));
    r.insert("table_name", text(&h.table));
    r
}

/// `count` (all-time) and the recent max, p50, p99 divided by `divisor`,
/// in columns `max{suffix}`, `p50th{suffix}`, `p99th{suffix}`.
fn histogram_columns(r: &mut VRow, h: &LatencyHistogram, divisor: f64, suffix: &str) {
    let recent: Snapshot = h.snapshot_recent();
    r.insert("count", big(h.count()));
    let cols: [(&'static str, f64); 3] = match suffix {
        "_ms" => [
            ("max_ms", recent.max_micros as f64),
            ("p50th_ms", recent.p50),
            ("p99th_ms", recent.p99),
        ],
        _ => [
            ("max", recent.max_micros as f64),
            ("p50th", recent.p50),
            ("p99th", recent.p99),
        ],
    };
    for (name, v) in cols {
        r.insert(name, Value::Double(v / divisor));
    }
}

fn latency_rows(p: &Processor, which: usize) -> Vec<VRow> {
    tables(p)
        .iter()
        .map(|h| {
            let l: &TableLatency = &h.coordinator[which];
            let mut r = table_key(h);
            histogram_columns(&mut r, &l.latency, 1000.0, "_ms");
            r.insert("per_second", Value::Double(l.rate.rates().one_minute));
            r
        })
        .collect()
}
