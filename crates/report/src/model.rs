//! The in-memory form of a run directory (see docs/format/run-directory.md).
//!
//! `summary.json` maps onto [`Summary`] through serde; unknown keys are
//! ignored, as the format asks. The CSV series become plain row structs with
//! `Option` where the format allows an empty field.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

/// The only `summary.json` format version this reader understands.
pub const FORMAT_VERSION: u64 = 1;

/// A loaded and validated run directory.
#[derive(Debug, Clone)]
pub struct Run {
    /// Where the run was loaded from (the default output directory).
    pub dir: PathBuf,
    pub summary: Summary,
    /// Client-side series, in file order.
    pub intervals: Vec<IntervalRow>,
    /// Server-side series; empty when `server.csv` is absent.
    pub server: Vec<ServerRow>,
    /// Time-axis marks; empty when `events.csv` is absent.
    pub events: Vec<Event>,
    /// Each node's memory cgroup; empty when `memory.csv` is absent.
    pub memory: Vec<MemoryRow>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Summary {
    pub format: u64,
    #[serde(default)]
    pub tool: Option<String>,
    #[serde(default)]
    pub started_at: Option<String>,
    #[serde(default)]
    pub target: Target,
    #[serde(default)]
    pub command: Option<String>,
    /// Workload parameters; `name` first when shown, the rest as key=value.
    #[serde(default)]
    pub workload: BTreeMap<String, serde_json::Value>,
    pub phases: Vec<Phase>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct Target {
    #[serde(default)]
    pub hosts: Vec<String>,
    #[serde(default)]
    pub release_version: Option<String>,
    /// `varve`, `cassandra` or `unknown`.
    #[serde(default)]
    pub product: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Phase {
    pub name: String,
    pub start_t: f64,
    pub end_t: f64,
    /// Per operation; shown in [`op_order`] order.
    #[serde(default)]
    pub ops: BTreeMap<String, OpStats>,
    #[serde(default)]
    pub extra: BTreeMap<String, serde_json::Value>,
    #[serde(default)]
    pub interrupted: bool,
}

#[derive(Debug, Clone, Deserialize)]
pub struct OpStats {
    pub count: u64,
    #[serde(default)]
    pub errors: u64,
    #[serde(default)]
    pub timeouts: u64,
    #[serde(default)]
    pub error_kinds: BTreeMap<String, u64>,
    pub throughput: f64,
    #[serde(default)]
    pub latency_ms: Latency,
}

/// Latency summary in milliseconds; a field is `None` when no operation
/// completed (the writer may then write `null` or leave it out).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Latency {
    #[serde(default)]
    pub mean: Option<f64>,
    #[serde(default)]
    pub p50: Option<f64>,
    #[serde(default)]
    pub p95: Option<f64>,
    #[serde(default)]
    pub p99: Option<f64>,
    #[serde(default)]
    pub max: Option<f64>,
}

/// One row of `intervals.csv`.
#[derive(Debug, Clone, PartialEq)]
pub struct IntervalRow {
    pub t: f64,
    pub phase: String,
    pub op: String,
    pub count: u64,
    pub errors: u64,
    pub timeouts: u64,
    pub throughput: f64,
    pub mean_ms: Option<f64>,
    pub p50_ms: Option<f64>,
    pub p95_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub max_ms: Option<f64>,
}

/// One row of `server.csv`; `None` where the server did not expose a value.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerRow {
    pub t: f64,
    pub pending_compactions: Option<f64>,
    pub compaction_bytes_per_s: Option<f64>,
    pub live_sstables: Option<f64>,
    pub unleveled_sstables: Option<f64>,
    pub space_used_bytes: Option<f64>,
    pub server_cpu_s: Option<f64>,
    pub server_rss_bytes: Option<f64>,
    /// Compactions completed since the server started (cumulative).
    pub compactions_completed: Option<f64>,
    /// Bytes the commitlog wrote per second.
    pub commitlog_bytes_per_s: Option<f64>,
    /// Pauses per second: Varve's runtime stalls (a JVM's GC pauses).
    pub pauses_per_s: Option<f64>,
    /// Milliseconds paused per second.
    pub pause_ms_per_s: Option<f64>,
}

/// One row of `memory.csv`: a node's memory cgroup as the kernel counted
/// it (cgroup v1, page cache included); `None` where it was not readable.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryRow {
    pub node: String,
    pub cgroup: String,
    pub cap_bytes: Option<f64>,
    pub peak_bytes: Option<f64>,
    pub oom_kills: Option<f64>,
}

/// One row of `events.csv`.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub t: f64,
    pub label: String,
}

/// The display order of operation names: the format's known operations in
/// their documented order, then unknown ones alphabetically, `total` last.
pub fn op_order(a: &str, b: &str) -> std::cmp::Ordering {
    const KNOWN: [&str; 6] = ["write", "read", "delete", "range", "cas_write", "cas_read"];
    let rank = |op: &str| match KNOWN.iter().position(|k| *k == op) {
        Some(i) => i,
        None if op == "total" => KNOWN.len() + 1,
        None => KNOWN.len(),
    };
    rank(a).cmp(&rank(b)).then_with(|| a.cmp(b))
}

/// Sorts and deduplicates operation names in display order.
pub fn sorted_ops<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut ops: Vec<String> = names.into_iter().map(str::to_string).collect();
    ops.sort_by(|a, b| op_order(a, b));
    ops.dedup();
    ops
}

impl Phase {
    /// The phase's operations in display order.
    pub fn op_names(&self) -> Vec<String> {
        sorted_ops(self.ops.keys().map(String::as_str))
    }
}

impl Run {
    /// Operation names that occur in `intervals.csv`, in display order.
    pub fn interval_ops(&self) -> Vec<String> {
        sorted_ops(self.intervals.iter().map(|r| r.op.as_str()))
    }

    /// A short name for the run: the target product if known, else the
    /// directory name.
    pub fn label(&self) -> String {
        match self.summary.target.product.as_deref() {
            Some(p) if !p.is_empty() && p != "unknown" => p.to_string(),
            _ => self.dir_name(),
        }
    }

    pub fn dir_name(&self) -> String {
        self.dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| self.dir.display().to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_sort_known_first_total_last() {
        let ops = sorted_ops(["total", "zeta", "read", "write", "read", "cas_read"]);
        assert_eq!(ops, vec!["write", "read", "cas_read", "zeta", "total"]);
    }
}
