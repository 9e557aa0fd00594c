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

/// A result table in a seed's shape: a note above it, the header, rows.
#[derive(Debug, Clone, PartialEq)]
pub struct SeedTable {
    pub note: &'static str,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// Seeds 000-002: metrics as rows, measured phases (all but `load`) as columns.
fn by_phase(s: &RunSummary) -> SeedTable {
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
    SeedTable {
        note: "",
        header,
        rows,
    }
}

fn docsize(s: &RunSummary) -> SeedTable {
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
    SeedTable {
        note: "Latencies in ms.",
        header,
        rows,
    }
}

fn lwt(s: &RunSummary) -> SeedTable {
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
    SeedTable {
        note: "Latencies in ms. Plain writes and uncontended LWTs touch fresh keys; contended LWTs all hit one key.",
        header,
        rows,
    }
}

/// The table of a run of `scenario` in its seed's shape.
pub fn seed_table(scenario: Scenario, s: &RunSummary) -> SeedTable {
    match scenario {
        Scenario::TombstoneGc | Scenario::Compaction => by_phase(s),
        Scenario::DocSize => docsize(s),
        Scenario::Lwt => lwt(s),
    }
}

fn write_table(out: &mut String, t: &SeedTable) {
    if !t.note.is_empty() {
        let _ = writeln!(out, "{}\n", t.note);
    }
    table(out, &t.header, &t.rows);
}

/// The Markdown of bench.md for a run of `scenario`.
pub fn render(scenario: Scenario, seeds: &str, s: &RunSummary) -> String {
    let mut out = format!("# varve bench {scenario}: results in the seed's shape ({seeds})\n\n");
    write_table(&mut out, &seed_table(scenario, s));
    out.push_str("Full tables and charts: report.md, report.html.\n");
    out
}

/// Two runs' tables as one, in the seed's shape: each cell `a · b (b/a)`,
/// rows matched by their first cell (a row only one run has keeps its
/// own values and `-` for the other's).
pub fn side_by_side(a: &SeedTable, b: &SeedTable) -> SeedTable {
    let rows = a
        .rows
        .iter()
        .map(|ra| {
            let rb = b.rows.iter().find(|rb| rb.first() == ra.first());
            let mut row = vec![ra[0].clone()];
            for (j, va) in ra.iter().enumerate().skip(1) {
                let vb = rb.and_then(|rb| rb.get(j)).map_or("-", String::as_str);
                row.push(pair(va, vb));
            }
            row
        })
        .collect();
    SeedTable {
        note: a.note,
        header: a.header.clone(),
        rows,
    }
}

/// `a · b (b/a)`, the ratio only when both are numbers and `a` is not 0.
fn pair(a: &str, b: &str) -> String {
    match (a.parse::<f64>(), b.parse::<f64>()) {
        (Ok(x), Ok(y)) if x != 0.0 => format!("{a} · {b} ({:.2}x)", y / x),
        _ => format!("{a} · {b}"),
    }
}

/// The Markdown of bench-compare.md: this run (`a_label`) beside another
/// (`b_label`) in the seed's shape, with the ratio b / a in each cell.
pub fn render_side_by_side(
    scenario: Scenario,
    seeds: &str,
    (a_label, a): (&str, &RunSummary),
    (b_label, b): (&str, &RunSummary),
) -> String {
    let mut out = format!(
        "# varve bench {scenario}: {a_label} · {b_label} (ratio {b_label} / {a_label}), in the seed's shape ({seeds})\n\n"
    );
    let joined = side_by_side(&seed_table(scenario, a), &seed_table(scenario, b));
    write_table(&mut out, &joined);
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

    fn seed(rows: &[&[&str]]) -> SeedTable {
        SeedTable {
            note: "n",
            header: vec!["Metric".into(), "steady".into()],
            rows: rows
                .iter()
                .map(|r| r.iter().map(|c| c.to_string()).collect())
                .collect(),
        }
    }

    #[test]
    fn two_runs_sit_side_by_side_with_the_ratio_per_cell() {
        let a = seed(&[
            &["Read p99 (ms)", "2.00"],
            &["Only here", "7"],
            &["Timeouts", "0"],
        ]);
        let b = seed(&[&["Timeouts", "3"], &["Read p99 (ms)", "10.00"]]);
        let joined = side_by_side(&a, &b);
        assert_eq!(joined.header, a.header);
        assert_eq!(joined.rows[0], ["Read p99 (ms)", "2.00 · 10.00 (5.00x)"]);
        assert_eq!(joined.rows[1], ["Only here", "7 · -"]);
        assert_eq!(joined.rows[2], ["Timeouts", "0 · 3"], "no ratio over 0");
    }

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
