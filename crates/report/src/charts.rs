//! Which charts a report has, built from a [`Run`]: client series from
//! `intervals.csv`, server series from `server.csv`, phases as bands and
//! events as markers. A chart is kept only if it has data to draw.

use crate::model::{IntervalRow, Run, ServerRow};
use crate::scale::Point;
use crate::svg::{Band, Chart, Marker, Series};

const MIB: f64 = 1024.0 * 1024.0;
const GIB: f64 = 1024.0 * MIB;
/// Phases whose values do not set a chart's value axis: a load at full
/// speed (tens of thousands of operations per second) would flatten the
/// measured phases (a thousand per second) into the bottom of the chart.
pub const UNSCALED_PHASES: [&str; 1] = ["load"];
/// Opacity of the p95 and p50 lines drawn beside the p99 line.
const P95_OPACITY: f64 = 0.55;
const P50_OPACITY: f64 = 0.3;

/// Every chart of a single-run report that has data, in report order.
pub fn run_charts(run: &Run) -> Vec<Chart> {
    let ops = run.interval_ops();
    let frame = Frame::of(run);
    let mut charts = vec![
        frame.chart(
            "throughput",
            "Throughput per operation",
            "op/s",
            op_series(run, &ops, |r| Some(r.throughput)),
        ),
        frame.chart(
            "latency",
            "Latency per operation (p99 solid; p95 and p50 lighter)",
            "ms",
            latency_series(run, &ops),
        ),
    ];
    if run.intervals.iter().any(|r| r.errors > 0 || r.timeouts > 0) {
        let mut series = Vec::new();
        for (color, op) in ops.iter().enumerate() {
            series.push(Series::new(
                format!("{op} errors"),
                color,
                op_points(run, op, |r| Some(r.errors as f64)),
            ));
            let mut timeouts = Series::new(
                format!("{op} timeouts"),
                color,
                op_points(run, op, |r| Some(r.timeouts as f64)),
            );
            timeouts.dashed = true;
            series.push(timeouts);
        }
        charts.push(frame.chart(
            "errors",
            "Errors and timeouts per interval",
            "operations",
            series,
        ));
    }
    charts.extend(server_charts(run, &frame));
    charts.retain(Chart::has_data);
    charts
}

/// The overlaid throughput and p99 charts of a comparison: A solid, B dashed,
/// the same colour per operation.
pub fn compare_charts(a: &Run, a_label: &str, b: &Run, b_label: &str) -> Vec<Chart> {
    let ops = crate::model::sorted_ops(
        a.interval_ops()
            .iter()
            .chain(b.interval_ops().iter())
            .map(String::as_str),
    );
    let mut markers = Vec::new();
    for (run, label) in [(a, a_label), (b, b_label)] {
        markers.extend(run.events.iter().map(|e| Marker {
            t: e.t,
            label: format!("{label}: {}", e.label),
        }));
    }
    let frame = Frame {
        bands: Frame::of(a).bands,
        markers,
    };
    let overlay = |value: fn(&IntervalRow) -> Option<f64>| {
        let mut series = Vec::new();
        for (color, op) in ops.iter().enumerate() {
            series.push(Series::new(
                format!("{op} {a_label}"),
                color,
                op_points(a, op, value),
            ));
            let mut s = Series::new(format!("{op} {b_label}"), color, op_points(b, op, value));
            s.dashed = true;
            series.push(s);
        }
        series
    };
    let mut charts = vec![
        frame.chart(
            "compare-throughput",
            &format!("Throughput: {a_label} (solid) vs {b_label} (dashed)"),
            "op/s",
            overlay(|r| Some(r.throughput)),
        ),
        frame.chart(
            "compare-p99",
            &format!("p99 latency: {a_label} (solid) vs {b_label} (dashed)"),
            "ms",
            overlay(|r| r.p99_ms),
        ),
    ];
    charts.retain(Chart::has_data);
    charts
}

/// The time-axis decorations shared by all charts of a report.
struct Frame {
    bands: Vec<Band>,
    markers: Vec<Marker>,
}

impl Frame {
    fn of(run: &Run) -> Frame {
        Frame {
            bands: run
                .summary
                .phases
                .iter()
                .map(|p| Band {
                    start: p.start_t,
                    end: p.end_t,
                    label: p.name.clone(),
                    scaled: !UNSCALED_PHASES.contains(&p.name.as_str()),
                })
                .collect(),
            markers: run
                .events
                .iter()
                .map(|e| Marker {
                    t: e.t,
                    label: e.label.clone(),
                })
                .collect(),
        }
    }

    fn chart(&self, id: &str, title: &str, y_label: &str, series: Vec<Series>) -> Chart {
        Chart {
            id: id.to_string(),
            title: title.to_string(),
            y_label: y_label.to_string(),
            series,
            markers: self.markers.clone(),
            bands: self.bands.clone(),
        }
    }
}

/// The points of one operation's column, sorted by time.
fn op_points(run: &Run, op: &str, value: impl Fn(&IntervalRow) -> Option<f64>) -> Vec<Point> {
    let mut points: Vec<Point> = run
        .intervals
        .iter()
        .filter(|r| r.op == op)
        .map(|r| (r.t, value(r)))
        .collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    points
}

fn op_series(run: &Run, ops: &[String], value: fn(&IntervalRow) -> Option<f64>) -> Vec<Series> {
    ops.iter()
        .enumerate()
        .map(|(color, op)| Series::new(op.clone(), color, op_points(run, op, value)))
        .collect()
}

fn latency_series(run: &Run, ops: &[String]) -> Vec<Series> {
    let mut series = Vec::new();
    for (color, op) in ops.iter().enumerate() {
        series.push(Series::new(
            format!("{op} p99"),
            color,
            op_points(run, op, |r| r.p99_ms),
        ));
        let mut p95 = Series::new(format!("{op} p95"), color, op_points(run, op, |r| r.p95_ms));
        p95.opacity = P95_OPACITY;
        let mut p50 = Series::new(format!("{op} p50"), color, op_points(run, op, |r| r.p50_ms));
        p50.opacity = P50_OPACITY;
        series.push(p95);
        series.push(p50);
    }
    series
}

fn server_points(run: &Run, value: impl Fn(&ServerRow) -> Option<f64>) -> Vec<Point> {
    let mut points: Vec<Point> = run.server.iter().map(|r| (r.t, value(r))).collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    points
}

/// CPU use in cores: the change of cumulative CPU seconds over the change of
/// wall time between consecutive samples (a gap where it goes backwards).
pub fn cpu_cores(rows: &[ServerRow]) -> Vec<Point> {
    let mut samples: Vec<(f64, f64)> = rows
        .iter()
        .filter_map(|r| r.server_cpu_s.map(|c| (r.t, c)))
        .collect();
    samples.sort_by(|a, b| a.0.total_cmp(&b.0));
    samples
        .windows(2)
        .map(|w| {
            let (dt, dc) = (w[1].0 - w[0].0, w[1].1 - w[0].1);
            let rate = (dt > 0.0 && dc >= 0.0).then(|| dc / dt);
            (w[1].0, rate.filter(|r| r.is_finite()))
        })
        .collect()
}

fn server_charts(run: &Run, frame: &Frame) -> Vec<Chart> {
    let one = |name: &str, points: Vec<Point>| vec![Series::new(name, 0, points)];
    let mut unleveled = Series::new(
        "unleveled sstables",
        1,
        server_points(run, |r| r.unleveled_sstables),
    );
    unleveled.dashed = true;
    vec![
        frame.chart(
            "pending-compactions",
            "Pending compactions",
            "tasks",
            one(
                "pending compactions",
                server_points(run, |r| r.pending_compactions),
            ),
        ),
        frame.chart(
            "compaction-throughput",
            "Compaction throughput",
            "MiB/s",
            one(
                "compacted",
                server_points(run, |r| r.compaction_bytes_per_s.map(|b| b / MIB)),
            ),
        ),
        frame.chart(
            "compactions-completed",
            "Compactions completed since the server started",
            "compactions",
            one("completed", server_points(run, |r| r.compactions_completed)),
        ),
        frame.chart(
            "commitlog-throughput",
            "Commitlog writes",
            "MiB/s",
            one(
                "written",
                server_points(run, |r| r.commitlog_bytes_per_s.map(|b| b / MIB)),
            ),
        ),
        frame.chart(
            "pauses",
            "Pauses (Varve: runtime stalls over 10 ms; the JVM: GC pauses)",
            "per second",
            vec![
                Series::new("pauses", 0, server_points(run, |r| r.pauses_per_s)),
                Series::new("ms paused", 1, server_points(run, |r| r.pause_ms_per_s)),
            ],
        ),
        frame.chart(
            "sstables",
            "Live and unleveled sstables",
            "sstables",
            vec![
                Series::new("live sstables", 0, server_points(run, |r| r.live_sstables)),
                unleveled,
            ],
        ),
        frame.chart(
            "cpu",
            "Server CPU",
            "cores",
            one("server CPU", cpu_cores(&run.server)),
        ),
        frame.chart(
            "rss",
            "Server memory (RSS)",
            "MiB",
            one(
                "RSS",
                server_points(run, |r| r.server_rss_bytes.map(|b| b / MIB)),
            ),
        ),
        frame.chart(
            "space-used",
            "Space used on disk",
            "GiB",
            one(
                "space used",
                server_points(run, |r| r.space_used_bytes.map(|b| b / GIB)),
            ),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(t: f64, cpu: Option<f64>) -> ServerRow {
        ServerRow {
            t,
            server_cpu_s: cpu,
            ..ServerRow::default()
        }
    }

    #[test]
    fn cpu_is_the_derivative_of_cpu_seconds() {
        let rows = [
            row(0.0, Some(0.0)),
            row(1.0, Some(1.5)),
            row(2.0, None),
            row(3.0, Some(2.5)),
            row(4.0, Some(0.1)),
        ];
        let cores = cpu_cores(&rows);
        assert_eq!(cores, vec![(1.0, Some(1.5)), (3.0, Some(0.5)), (4.0, None)]);
    }
}
