//! Comparing two runs (`varve report A B`): phases are paired by name, then
//! the rest by index; per operation the table shows A, B and B/A for
//! throughput and p99 latency. Columns are labelled by each run's product
//! (e.g. `varve` and `cassandra`), else by directory name, else `A` and `B`.

use crate::model::{sorted_ops, OpStats, Phase, Run};
use crate::tables::{fmt_ms, fmt_rate, fmt_ratio, metadata, ratio, Table};

/// Column labels for the two runs; always distinct.
pub fn labels(a: &Run, b: &Run) -> (String, String) {
    let (la, lb) = (a.label(), b.label());
    if la != lb {
        return (la, lb);
    }
    let (da, db) = (a.dir_name(), b.dir_name());
    if da != db && !da.is_empty() && !db.is_empty() {
        return (da, db);
    }
    ("A".into(), "B".into())
}

/// Pairs phases of A and B: first those with the same name, then the
/// remaining ones at the same index; phases left over are paired with `None`.
/// Pairs come in A's order, then B's leftovers in B's order.
pub fn match_phases(a: &[Phase], b: &[Phase]) -> Vec<(Option<usize>, Option<usize>)> {
    let mut b_used = vec![false; b.len()];
    let mut pairs: Vec<(Option<usize>, Option<usize>)> = Vec::new();
    for phase in a {
        let found = b
            .iter()
            .enumerate()
            .position(|(j, p)| !b_used[j] && p.name == phase.name);
        if let Some(j) = found {
            b_used[j] = true;
        }
        pairs.push((Some(pairs.len()), found));
    }
    for (i, pair) in pairs.iter_mut().enumerate() {
        if pair.1.is_none() && i < b.len() && !b_used[i] {
            b_used[i] = true;
            pair.1 = Some(i);
        }
    }
    for (j, used) in b_used.iter().enumerate() {
        if !used {
            pairs.push((None, Some(j)));
        }
    }
    pairs
}

/// The column headers of a comparison table.
pub fn compare_columns(la: &str, lb: &str) -> Vec<String> {
    vec![
        "Operation".into(),
        format!("{la} (op/s)"),
        format!("{lb} (op/s)"),
        format!("throughput {lb}/{la}"),
        format!("{la} p99 (ms)"),
        format!("{lb} p99 (ms)"),
        format!("p99 {lb}/{la}"),
    ]
}

fn phase_name(phase: Option<&Phase>) -> &str {
    phase.map(|p| p.name.as_str()).unwrap_or("(none)")
}

/// One side-by-side table per phase pair.
pub fn compare_tables(a: &Run, b: &Run) -> Vec<Table> {
    let (la, lb) = labels(a, b);
    let pairs = match_phases(&a.summary.phases, &b.summary.phases);
    pairs
        .iter()
        .enumerate()
        .map(|(n, (i, j))| {
            let pa = i.and_then(|i| a.summary.phases.get(i));
            let pb = j.and_then(|j| b.summary.phases.get(j));
            let title = if phase_name(pa) == phase_name(pb) {
                format!("Phase {}: {}", n + 1, phase_name(pa))
            } else {
                format!(
                    "Phase {}: {} ({la}) vs {} ({lb})",
                    n + 1,
                    phase_name(pa),
                    phase_name(pb)
                )
            };
            let names = pa
                .into_iter()
                .chain(pb)
                .flat_map(|p| p.ops.keys().map(String::as_str));
            let rows = sorted_ops(names)
                .into_iter()
                .map(|op| {
                    let sa = pa.and_then(|p| p.ops.get(&op));
                    let sb = pb.and_then(|p| p.ops.get(&op));
                    compare_row(&op, sa, sb)
                })
                .collect();
            let per_cpu = |run: &Run, p: Option<&Phase>| {
                p.and_then(|p| crate::cpu::phase_efficiency(&run.server, p))
                    .map(|(_, ops)| ops)
            };
            let (ea, eb) = (per_cpu(a, pa), per_cpu(b, pb));
            let notes = if ea.is_some() || eb.is_some() {
                let rate = |v: Option<f64>| v.map(fmt_rate).unwrap_or_else(|| "n/a".into());
                vec![format!(
                    "Operations per server CPU-second: {la} {}, {lb} {} ({lb}/{la} {}).",
                    rate(ea),
                    rate(eb),
                    fmt_ratio(ratio(ea, eb))
                )]
            } else {
                Vec::new()
            };
            Table {
                title,
                header: compare_columns(&la, &lb),
                rows,
                notes,
            }
        })
        .collect()
}

fn compare_row(op: &str, a: Option<&OpStats>, b: Option<&OpStats>) -> Vec<String> {
    let thr = |s: Option<&OpStats>| s.map(|s| s.throughput);
    let p99 = |s: Option<&OpStats>| s.and_then(|s| s.latency_ms.p99);
    let rate = |v: Option<f64>| v.map(fmt_rate).unwrap_or_else(|| "-".into());
    vec![
        op.to_string(),
        rate(thr(a)),
        rate(thr(b)),
        fmt_ratio(ratio(thr(a), thr(b))),
        fmt_ms(p99(a)),
        fmt_ms(p99(b)),
        fmt_ratio(ratio(p99(a), p99(b))),
    ]
}

/// Metadata lines of both runs, each key prefixed with the run's label.
pub fn compare_metadata(a: &Run, b: &Run) -> Vec<(String, String)> {
    let (la, lb) = labels(a, b);
    let mut meta = Vec::new();
    for (run, label) in [(a, la), (b, lb)] {
        meta.extend(
            metadata(run)
                .into_iter()
                .map(|(k, v)| (format!("{label}: {k}"), v)),
        );
    }
    meta
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phases(names: &[&str]) -> Vec<Phase> {
        names
            .iter()
            .map(|n| Phase {
                name: n.to_string(),
                start_t: 0.0,
                end_t: 1.0,
                ops: Default::default(),
                extra: Default::default(),
                interrupted: false,
            })
            .collect()
    }

    #[test]
    fn matches_by_name_then_index() {
        let a = phases(&["load", "steady", "alter"]);
        let b = phases(&["steady", "warmup", "alter", "extra"]);
        let pairs = match_phases(&a, &b);
        // steady and alter pair by name; B's index 0 is taken by name, so
        // load stays alone, and warmup and extra are B's leftovers.
        assert_eq!(
            pairs,
            vec![
                (Some(0), None),
                (Some(1), Some(0)),
                (Some(2), Some(2)),
                (None, Some(1)),
                (None, Some(3)),
            ]
        );
        let pairs = match_phases(&phases(&["x", "y"]), &phases(&["p", "y"]));
        assert_eq!(pairs, vec![(Some(0), Some(0)), (Some(1), Some(1))]);
    }
}
