//! The report's tables as plain cells, shared by the Markdown and HTML
//! writers: run metadata, one result table per phase (the seeds' shape:
//! operations by throughput, latency mean/p95/p99, timeouts, errors), and the
//! side-by-side tables of a comparison.

use crate::model::{MemoryRow, OpStats, Phase, Run};

/// A titled table of text cells, with notes printed under it.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    pub title: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
    pub notes: Vec<String>,
}

/// The column headers of a phase table.
pub const PHASE_COLUMNS: [&str; 7] = [
    "Operation",
    "Throughput (op/s)",
    "Latency mean (ms)",
    "p95 (ms)",
    "p99 (ms)",
    "Timeouts",
    "Errors",
];

/// Throughput with one decimal.
pub fn fmt_rate(v: f64) -> String {
    format!("{v:.1}")
}

/// A latency in ms: three decimals below 1 ms, two above; `-` if absent.
pub fn fmt_ms(v: Option<f64>) -> String {
    match v {
        Some(v) if v.abs() < 1.0 => format!("{v:.3}"),
        Some(v) => format!("{v:.2}"),
        None => "-".to_string(),
    }
}

/// A ratio B/A with two decimals; `n/a` when A is zero or either is absent.
pub fn fmt_ratio(r: Option<f64>) -> String {
    match r {
        Some(r) => format!("{r:.2}"),
        None => "n/a".to_string(),
    }
}

/// B divided by A, if both exist and A is not zero.
pub fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if a != 0.0 => Some(b / a).filter(|r| r.is_finite()),
        _ => None,
    }
}

/// `key: value` lines describing what was run and against what.
pub fn metadata(run: &Run) -> Vec<(String, String)> {
    let s = &run.summary;
    let mut meta = Vec::new();
    let mut target = s.target.product.clone().unwrap_or_else(|| "unknown".into());
    if let Some(v) = &s.target.release_version {
        target.push_str(&format!(" {v}"));
    }
    if !s.target.hosts.is_empty() {
        target.push_str(&format!(" ({})", s.target.hosts.join(", ")));
    }
    meta.push(("Target".into(), target));
    if !s.workload.is_empty() {
        meta.push(("Workload".into(), workload_text(&s.workload)));
    }
    let optional = [
        ("Command", &s.command),
        ("Tool", &s.tool),
        ("Started at", &s.started_at),
    ];
    for (key, value) in optional {
        if let Some(v) = value {
            meta.push((key.into(), v.clone()));
        }
    }
    meta.push(("Run directory".into(), run.dir.display().to_string()));
    meta
}

fn workload_text(w: &std::collections::BTreeMap<String, serde_json::Value>) -> String {
    let plain = |v: &serde_json::Value| match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let mut parts = Vec::new();
    if let Some(name) = w.get("name") {
        parts.push(plain(name));
    }
    let rest: Vec<String> = w
        .iter()
        .filter(|(k, _)| k.as_str() != "name")
        .map(|(k, v)| format!("{k}={}", plain(v)))
        .collect();
    if !rest.is_empty() {
        parts.push(rest.join(", "));
    }
    parts.join(": ")
}

/// A phase's title: number, name and time range.
pub fn phase_title(index: usize, phase: &Phase) -> String {
    let mut title = format!(
        "Phase {}: {} ({} – {})",
        index + 1,
        phase.name,
        crate::scale::fmt_time(phase.start_t),
        crate::scale::fmt_time(phase.end_t)
    );
    if phase.interrupted {
        title.push_str(", interrupted");
    }
    title
}

fn op_row(op: &str, stats: &OpStats) -> Vec<String> {
    vec![
        op.to_string(),
        fmt_rate(stats.throughput),
        fmt_ms(stats.latency_ms.mean),
        fmt_ms(stats.latency_ms.p95),
        fmt_ms(stats.latency_ms.p99),
        stats.timeouts.to_string(),
        stats.errors.to_string(),
    ]
}

/// One result table per phase of the run.
pub fn phase_tables(run: &Run) -> Vec<Table> {
    run.summary
        .phases
        .iter()
        .enumerate()
        .map(|(i, phase)| {
            let ops = phase.op_names();
            let rows = ops
                .iter()
                .filter_map(|op| phase.ops.get(op).map(|s| op_row(op, s)))
                .collect();
            let mut notes = Vec::new();
            for op in &ops {
                if let Some(stats) = phase.ops.get(op) {
                    let kinds: Vec<String> = stats
                        .error_kinds
                        .iter()
                        .filter(|(_, n)| **n > 0)
                        .map(|(k, n)| format!("{k}={n}"))
                        .collect();
                    if !kinds.is_empty() {
                        notes.push(format!("{op} errors by kind: {}", kinds.join(", ")));
                    }
                }
            }
            if !phase.extra.is_empty() {
                let extra: Vec<String> = phase
                    .extra
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect();
                notes.push(format!("Counters: {}", extra.join(", ")));
            }
            if phase.ops.values().all(|s| s.errors == 0 && s.timeouts == 0) {
                notes.push("No timeouts or errors were observed.".into());
            }
            if let Some((cpu, per_cpu)) = crate::cpu::phase_efficiency(&run.server, phase) {
                notes.push(format!(
                    "Server CPU: {cpu:.1} s, {} operations per server CPU-second.",
                    fmt_rate(per_cpu)
                ));
            }
            Table {
                title: phase_title(i, phase),
                header: PHASE_COLUMNS.iter().map(|c| c.to_string()).collect(),
                rows,
                notes,
            }
        })
        .collect()
}

/// Bytes as MiB with no decimals; `-` if absent.
fn fmt_mib(v: Option<f64>) -> String {
    v.map_or("-".into(), |b| format!("{:.0}", b / (1u64 << 20) as f64))
}

/// The nodes' memory cgroups (memory.csv): cap, peak and OOM kills per
/// node; `None` when the run has none.
pub fn memory_table(run: &Run) -> Option<Table> {
    if run.memory.is_empty() {
        return None;
    }
    let row = |m: &MemoryRow| {
        let share = match (m.peak_bytes, m.cap_bytes) {
            (Some(p), Some(c)) if c > 0.0 => format!("{:.0}%", 100.0 * p / c),
            _ => "-".into(),
        };
        let kills = m.oom_kills.map_or("-".into(), |k| format!("{k:.0}"));
        vec![
            m.node.clone(),
            fmt_mib(m.cap_bytes),
            fmt_mib(m.peak_bytes),
            share,
            kills,
            m.cgroup.clone(),
        ]
    };
    let killed: f64 = run.memory.iter().filter_map(|m| m.oom_kills).sum();
    let mut notes = vec![
        "Cgroup v1 memory controller: the cap and the peak count the node's own memory and the \
         page cache of its files (memory.max_usage_in_bytes)."
            .to_string(),
    ];
    if killed > 0.0 {
        notes.push(format!(
            "The kernel's OOM killer killed {killed:.0} process(es) in these cgroups."
        ));
    }
    Some(Table {
        title: "Memory per node".into(),
        header: [
            "Node",
            "Cap (MiB)",
            "Peak (MiB)",
            "Peak / cap",
            "OOM kills",
            "Cgroup",
        ]
        .map(String::from)
        .to_vec(),
        rows: run.memory.iter().map(row).collect(),
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_memory_table_shows_each_nodes_cap_peak_and_oom_kills() {
        let summary = crate::load::parse_summary(
            std::path::Path::new("summary.json"),
            br#"{"format":1,"phases":[]}"#,
        )
        .unwrap();
        let mut run = Run {
            dir: "x".into(),
            summary,
            intervals: Vec::new(),
            server: Vec::new(),
            events: Vec::new(),
            memory: Vec::new(),
        };
        assert_eq!(memory_table(&run), None, "no memory.csv, no table");
        let gib = (1u64 << 30) as f64;
        run.memory = vec![
            MemoryRow {
                node: "1".into(),
                cgroup: "/cg/node1".into(),
                cap_bytes: Some(2.0 * gib),
                peak_bytes: Some(1.5 * gib),
                oom_kills: Some(0.0),
            },
            MemoryRow {
                node: "2".into(),
                cgroup: "/cg/node2".into(),
                cap_bytes: Some(2.0 * gib),
                peak_bytes: None,
                oom_kills: Some(2.0),
            },
        ];
        let table = memory_table(&run).unwrap();
        assert_eq!(
            table.rows[0],
            ["1", "2048", "1536", "75%", "0", "/cg/node1"]
        );
        assert_eq!(table.rows[1], ["2", "2048", "-", "-", "2", "/cg/node2"]);
        assert!(table.notes.iter().any(|n| n.contains("killed 2 process")));
    }

    #[test]
    fn formats() {
        assert_eq!(fmt_ms(Some(0.8)), "0.800");
        assert_eq!(fmt_ms(Some(19.766)), "19.77");
        assert_eq!(fmt_ms(None), "-");
        assert_eq!(fmt_rate(1500.04), "1500.0");
        assert_eq!(ratio(Some(2.0), Some(3.0)), Some(1.5));
        assert_eq!(ratio(Some(0.0), Some(3.0)), None);
        assert_eq!(fmt_ratio(None), "n/a");
    }
}
