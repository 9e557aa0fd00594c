//! The human table printed on stdout at the end of a run: one line per
//! phase and operation kind.

use crate::output::summary::RunSummary;
use crate::spec::Op;

/// The table for every phase of `summary`.
pub fn render(summary: &RunSummary) -> String {
    let mut out = format!(
        "{:<10} {:<10} {:>10} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8}\n",
        "phase",
        "op",
        "count",
        "ops/s",
        "mean ms",
        "p50 ms",
        "p95 ms",
        "p99 ms",
        "max ms",
        "errors"
    );
    for phase in &summary.phases {
        let mut ops: Vec<_> = phase.ops.iter().collect();
        ops.sort_by_key(|(op, _)| report_rank(op));
        for (op, r) in ops {
            let l = r.latency_ms;
            let cell = |f: fn(&crate::output::summary::LatencyMs) -> f64| {
                l.as_ref()
                    .map_or_else(|| "-".to_string(), |l| format!("{:.2}", f(l)))
            };
            out.push_str(&format!(
                "{:<10} {:<10} {:>10} {:>10.1} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8}\n",
                phase.name,
                op,
                r.count,
                r.throughput,
                cell(|l| l.mean),
                cell(|l| l.p50),
                cell(|l| l.p95),
                cell(|l| l.p99),
                cell(|l| l.max),
                r.errors
            ));
        }
        let e = phase.extra;
        if e != Default::default() {
            out.push_str(&format!(
                "{:<10} applied {} not_applied {} verified {} verify_failures {}\n",
                phase.name, e.applied, e.not_applied, e.verified, e.verify_failures
            ));
        }
        if phase.interrupted {
            out.push_str(&format!("{:<10} interrupted\n", phase.name));
        }
    }
    out
}

/// Operation kinds in the order of [`Op::ALL`], unknown ones after them,
/// `total` last.
fn report_rank(op: &str) -> (usize, String) {
    let rank = match Op::ALL.iter().position(|o| o.name() == op) {
        Some(i) => i,
        None if op == "total" => Op::ALL.len() + 1,
        None => Op::ALL.len(),
    };
    (rank, op.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn total_comes_last() {
        let mut names = vec!["total", "read", "range", "write", "cas_read"];
        names.sort_by_key(|n| report_rank(n));
        assert_eq!(names, vec!["write", "read", "cas_read", "range", "total"]);
    }
}
