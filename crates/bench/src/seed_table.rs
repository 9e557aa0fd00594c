//! bench.md: the run's numbers in the shape of the seed's own result table,
//! so the two can be read side by side. Written next to the report (the
//! report itself is `varve-report`'s and knows nothing of scenarios).
//!
//! - tombstone-gc, compaction: one row per metric (throughput, latency
//!   avg / p95 / p99 per operation, timeouts), one column per measured
//!   phase, as in seeds 000 and 001.
//! - docsize: one row per document size: write and read op/s, p50, p95,
//!   p99 (seed 004's charts as a table).
//! - lwt: one row per concurrency: op/s and p99 of plain writes, of LWTs
//!   and of contended LWTs (seed 003's charts as a table).

use std::fmt::Write as _;

use varve_stress::output::summary::{OpResult, PhaseResult};
use varve_stress::RunSummary;

use crate::plan::{Scenario, DOC_SIZES};

/// One cell of a metric row, from an operation's results.
type Cell = fn(Option<&OpResult>) -> String;

fn phase<'a>(s: &'a RunSummary, name: &str) -> Option<&'a PhaseResult> {
    s.phases.iter().find(|p| p.name == name)
}

fn op<'a>(s: &'a RunSummary, phase_name: &str, op: &str) -> Option<&'a OpResult> {
    phase(s, phase_name)?.ops.get(op)
}

fn ops_s(r: Option<&OpResult>) -> String {
    r.map_or_else(|| "-".into(), |r| format!("{:.1}", r.throughput))
}

fn ms(r: Option<&OpResult>, f: fn(&varve_stress::output::summary::LatencyMs) -> f64) -> String {
    r.and_then(|r| r.latency_ms.as_ref())
        .map_or_else(|| "-".into(), |l| format!("{:.2}", f(l)))
}

fn table(out: &mut String, header: &[String], rows: &[Vec<String>]) {
    let _ = writeln!(out, "| {} |", header.join(" | "));
    let _ = writeln!(
        out,
        "|{}|",
        header
            .iter()
            .enumerate()
            .map(|(i, _)| if i == 0 { "---" } else { "---:" })
            .collect::<Vec<_>>()
            .join("|")
    );
    for row in rows {
        let _ = writeln!(out, "| {} |", row.join(" | "));
    }
    out.push('\n');
}

/// Seeds 000-002: metrics as rows, measured phases (all but `load`) as columns.
fn by_phase(s: &RunSummary, out: &mut String) {
    let phases: Vec<&PhaseResult> = s.phases.iter().filter(|p| p.name != "load").collect();
    let mut header = vec!["Metric".to_string()];
    header.extend(phases.iter().map(|p| {
        let cut = if p.interrupted { " (interrupted)" } else { "" };
        format!("{}{cut}", p.name)
    }));
    let mut rows = Vec::new();
    for name in ["read", "write", "delete"] {
        if !phases.iter().any(|p| p.ops.contains_key(name)) {
            continue;
        }
        let title = format!("{}{}", name[..1].to_uppercase(), &name[1..]);
        let metrics: [(&str, Cell); 5] = [
            ("Throughput (op/s)", ops_s),
            ("Latency avg (ms)", |r| ms(r, |l| l.mean)),
            ("Latency p95 (ms)", |r| ms(r, |l| l.p95)),
            ("Latency p99 (ms)", |r| ms(r, |l| l.p99)),
            ("Timeouts", |r| {
                r.map_or_else(|| "-".into(), |r| r.timeouts.to_string())
            }),
        ];
        for (metric, cell) in metrics {
            let mut row = vec![format!("{title} {metric}")];
            row.extend(phases.iter().map(|p| cell(p.ops.get(name))));
            rows.push(row);
        }
    }
    table(out, &header, &rows);
}

fn docsize(s: &RunSummary, out: &mut String) {
    let header: Vec<String> = [
        "Document",
        "write op/s",
        "write p50",
        "write p95",
        "write p99",
        "read op/s",
        "read p50",
        "read p95",
        "read p99",
    ]
    .map(String::from)
    .to_vec();
    let rows: Vec<Vec<String>> = DOC_SIZES
        .iter()
        .filter(|(label, _)| phase(s, &format!("write-{label}")).is_some())
        .map(|(label, _)| {
            let w = op(s, &format!("write-{label}"), "write");
            let r = op(s, &format!("read-{label}"), "read");
            vec![
                label.to_string(),
                ops_s(w),
                ms(w, |l| l.p50),
                ms(w, |l| l.p95),
                ms(w, |l| l.p99),
                ops_s(r),
                ms(r, |l| l.p50),
                ms(r, |l| l.p95),
                ms(r, |l| l.p99),
            ]
        })
        .collect();
    out.push_str("Latencies in ms.\n\n");
    table(out, &header, &rows);
}

fn lwt(s: &RunSummary, out: &mut String) {
    let header: Vec<String> = [
        "Concurrency",
        "plain op/s",
        "plain p99",
        "LWT op/s",
        "LWT p99",
        "contended op/s",
        "contended p99",
        "contended applied",
    ]
    .map(String::from)
    .to_vec();
    let mut concurrencies: Vec<u64> = s
        .phases
        .iter()
        .filter_map(|p| p.name.rsplit_once("-c")?.1.parse().ok())
        .collect();
    concurrencies.sort_unstable();
    concurrencies.dedup();
    let rows: Vec<Vec<String>> = concurrencies
        .iter()
        .map(|c| {
            let plain = op(s, &format!("plain-c{c}"), "write");
            let free = op(s, &format!("lwt-c{c}"), "cas_write");
            let hot_name = format!("lwt-contended-c{c}");
            let hot = op(s, &hot_name, "cas_write");
            let applied = phase(s, &hot_name).map_or_else(
                || "-".into(),
                |p| {
                    format!(
                        "{} of {}",
                        p.extra.applied,
                        p.extra.applied + p.extra.not_applied
                    )
                },
            );
            vec![
                c.to_string(),
                ops_s(plain),
                ms(plain, |l| l.p99),
                ops_s(free),
                ms(free, |l| l.p99),
                ops_s(hot),
                ms(hot, |l| l.p99),
                applied,
            ]
        })
        .collect();
    out.push_str("Latencies in ms. Plain writes and uncontended LWTs touch fresh keys; contended LWTs all hit one key.\n\n");
    table(out, &header, &rows);
}

/// The Markdown of bench.md for a run of `scenario`.
pub fn render(scenario: Scenario, seeds: &str, s: &RunSummary) -> String {
    let mut out = format!("# varve bench {scenario}: results in the seed's shape ({seeds})\n\n");
    match scenario {
        Scenario::TombstoneGc | Scenario::Compaction => by_phase(s, &mut out),
        Scenario::DocSize => docsize(s, &mut out),
        Scenario::Lwt => lwt(s, &mut out),
    }
    out.push_str("Full tables and charts: report.md, report.html.\n");
    out
}

/// The seeds a scenario reproduces.
pub fn seeds(scenario: Scenario, variant: Option<crate::plan::Variant>) -> &'static str {
    use crate::plan::Variant;
    match (scenario, variant) {
        (Scenario::TombstoneGc, Some(Variant::GarbageCollect)) => "seed 001",
        (Scenario::TombstoneGc, _) => "seed 000",
        (Scenario::Compaction, _) => "seed 002",
        (Scenario::DocSize, _) => "seed 004",
        (Scenario::Lwt, _) => "seed 003",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use varve_stress::output::summary::{Extra, LatencyMs, Target, WorkloadInfo};

    fn result(throughput: f64, p99: f64) -> OpResult {
        OpResult {
            count: 10,
            errors: 0,
            timeouts: 1,
            error_kinds: Default::default(),
            throughput,
            latency_ms: Some(LatencyMs {
                mean: 1.0,
                p50: 0.5,
                p95: 2.0,
                p99,
                max: 9.0,
            }),
        }
    }

    fn phase(name: &str, ops: &[(&str, f64, f64)], applied: u64, not: u64) -> PhaseResult {
        PhaseResult {
            name: name.into(),
            start_t: 0.0,
            end_t: 1.0,
            ops: ops
                .iter()
                .map(|(o, t, p)| (o.to_string(), result(*t, *p)))
                .collect(),
            extra: Extra {
                applied,
                not_applied: not,
                verified: 0,
                verify_failures: 0,
            },
            interrupted: false,
        }
    }

    fn summary(phases: Vec<PhaseResult>) -> RunSummary {
        RunSummary {
            format: 1,
            tool: "t".into(),
            started_at: "s".into(),
            target: Target {
                hosts: vec![],
                release_version: None,
                product: "varve".into(),
            },
            command: "c".into(),
            workload: WorkloadInfo {
                name: "kv".into(),
                rate: "unlimited".into(),
                concurrency: 1,
                consistency: "ONE".into(),
                population: "seq=1..1".into(),
                columns: 1,
                column_size: 1,
            },
            phases,
        }
    }

    #[test]
    fn tombstone_table_has_metrics_as_rows_and_phases_as_columns() {
        let s = summary(vec![
            phase("load", &[("write", 9.0, 9.0)], 0, 0),
            phase(
                "steady",
                &[("read", 1500.0, 19.76), ("write", 1200.0, 1.01)],
                0,
                0,
            ),
            phase(
                "overlapping-row",
                &[("read", 1500.0, 24.11), ("write", 1200.0, 1.02)],
                0,
                0,
            ),
        ]);
        let md = render(Scenario::TombstoneGc, "seed 000", &s);
        assert!(md.contains("| Metric | steady | overlapping-row |"), "{md}");
        assert!(
            md.contains("| Read Throughput (op/s) | 1500.0 | 1500.0 |"),
            "{md}"
        );
        assert!(
            md.contains("| Read Latency p99 (ms) | 19.76 | 24.11 |"),
            "{md}"
        );
        assert!(md.contains("| Write Timeouts | 1 | 1 |"), "{md}");
        assert!(!md.contains("Delete"), "no delete op, no delete rows");
    }

    #[test]
    fn docsize_and_lwt_tables() {
        let s = summary(vec![
            phase("write-180B", &[("write", 2000.0, 3.0)], 0, 0),
            phase("read-180B", &[("read", 2500.0, 2.0)], 0, 0),
        ]);
        let md = render(Scenario::DocSize, "seed 004", &s);
        assert!(
            md.contains("| 180B | 2000.0 | 0.50 | 2.00 | 3.00 | 2500.0 | 0.50 | 2.00 | 2.00 |"),
            "{md}"
        );
        assert!(!md.contains("| 2KiB"), "sizes not run are left out");
        let s = summary(vec![
            phase("plain-c4", &[("write", 900.0, 5.0)], 0, 0),
            phase("lwt-c4", &[("cas_write", 300.0, 8.0)], 10, 0),
            phase("lwt-contended-c4", &[("cas_write", 100.0, 20.0)], 3, 7),
            phase("plain-c16", &[("write", 1000.0, 6.0)], 0, 0),
        ]);
        let md = render(Scenario::Lwt, "seed 003", &s);
        assert!(
            md.contains("| 4 | 900.0 | 5.00 | 300.0 | 8.00 | 100.0 | 20.00 | 3 of 10 |"),
            "{md}"
        );
        assert!(
            md.contains("| 16 | 1000.0 | 6.00 | - | - | - | - | - |"),
            "{md}"
        );
    }
}
