//! Server CPU per phase: the seconds of CPU the server process used during
//! a phase (from `server.csv`'s cumulative `server_cpu_s`, interpolated
//! between its samples) and the operations per server CPU-second. Client
//! and server often share one machine, so this, not raw throughput, is
//! what compares two servers' efficiency.

use crate::model::{Phase, ServerRow};

/// Operations of a phase: its `total` row when there is one, else the sum
/// of its operations.
pub fn phase_ops(phase: &Phase) -> u64 {
    match phase.ops.get("total") {
        Some(t) => t.count,
        None => phase.ops.values().map(|s| s.count).sum(),
    }
}

/// How far outside the sampled span a phase may start or end and still be
/// given the nearest sample's value (the sampler runs once a second and
/// stops with the run, so the last phase usually ends just past it).
pub const EDGE_TOLERANCE_S: f64 = 1.5;

/// The cumulative CPU seconds at time `t`, interpolated between the two
/// samples around it; the first or last sample within
/// [`EDGE_TOLERANCE_S`] outside the span; `None` further out.
fn cpu_at(samples: &[(f64, f64)], t: f64) -> Option<f64> {
    let (first, last) = (samples.first()?, samples.last()?);
    if t < first.0 {
        return (first.0 - t <= EDGE_TOLERANCE_S).then_some(first.1);
    }
    if t > last.0 {
        return (t - last.0 <= EDGE_TOLERANCE_S).then_some(last.1);
    }
    let i = samples.partition_point(|(st, _)| *st < t);
    if let Some(&(st, c)) = samples.get(i) {
        if st == t {
            return Some(c);
        }
    }
    let (t0, c0) = *samples.get(i.checked_sub(1)?)?;
    let (t1, c1) = *samples.get(i)?;
    Some(c0 + (c1 - c0) * (t - t0) / (t1 - t0))
}

/// Server CPU seconds between `start` and `end` (run seconds), or `None`
/// when the server's CPU was not sampled over that whole span.
pub fn cpu_between(rows: &[ServerRow], start: f64, end: f64) -> Option<f64> {
    let mut samples: Vec<(f64, f64)> = rows
        .iter()
        .filter_map(|r| r.server_cpu_s.map(|c| (r.t, c)))
        .filter(|(t, c)| t.is_finite() && c.is_finite())
        .collect();
    samples.sort_by(|a, b| a.0.total_cmp(&b.0));
    samples.dedup_by(|a, b| a.0 == b.0);
    if end <= start {
        return None;
    }
    let used = cpu_at(&samples, end)? - cpu_at(&samples, start)?;
    (used >= 0.0).then_some(used)
}

/// (server CPU seconds, operations per server CPU-second) of `phase`.
pub fn phase_efficiency(rows: &[ServerRow], phase: &Phase) -> Option<(f64, f64)> {
    let cpu = cpu_between(rows, phase.start_t, phase.end_t)?;
    (cpu > 0.0).then(|| (cpu, phase_ops(phase) as f64 / cpu))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(points: &[(f64, Option<f64>)]) -> Vec<ServerRow> {
        points
            .iter()
            .map(|&(t, c)| ServerRow {
                t,
                server_cpu_s: c,
                ..ServerRow::default()
            })
            .collect()
    }

    #[test]
    fn interpolates_between_samples() {
        let r = rows(&[(0.0, Some(0.0)), (1.0, Some(2.0)), (2.0, Some(3.0))]);
        assert_eq!(cpu_between(&r, 0.5, 1.5), Some(1.5));
        assert_eq!(cpu_between(&r, 0.0, 2.0), Some(3.0));
        assert_eq!(cpu_between(&r, 1.0, 2.0), Some(1.0));
    }

    #[test]
    fn unknown_outside_the_sampled_span_or_without_samples() {
        let r = rows(&[(1.0, Some(1.0)), (2.0, None), (3.0, Some(2.0))]);
        // Within the tolerance of the edges: the edge sample's value.
        assert_eq!(cpu_between(&r, 1.0 - EDGE_TOLERANCE_S, 2.0), Some(0.5));
        assert_eq!(cpu_between(&r, 2.0, 3.0 + EDGE_TOLERANCE_S), Some(0.5));
        // Past it: unknown.
        assert_eq!(cpu_between(&r, 0.9 - EDGE_TOLERANCE_S, 2.0), None);
        assert_eq!(cpu_between(&r, 2.0, 3.1 + EDGE_TOLERANCE_S), None);
        assert_eq!(cpu_between(&r, 2.0, 3.0), Some(0.5));
        assert_eq!(cpu_between(&rows(&[]), 0.0, 1.0), None);
        assert_eq!(cpu_between(&r, 2.0, 2.0), None);
        // A counter that went backwards (a restarted server) is no answer.
        let back = rows(&[(0.0, Some(5.0)), (1.0, Some(1.0))]);
        assert_eq!(cpu_between(&back, 0.0, 1.0), None);
    }
}
