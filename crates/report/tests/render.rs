//! Rendering: the Markdown tables carry the summary's numbers, the SVG lines
//! carry every interval, event markers sit at the right time, the HTML holds
//! one <svg> per chart, and text from files is escaped.

use std::path::{Path, PathBuf};

use varve_report::{load_run, render, render_dir, MAX_POINTS_PER_LINE};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("varve-render-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn copy_run(name: &str, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for file in ["summary.json", "intervals.csv", "server.csv", "events.csv"] {
        std::fs::copy(fixture(name).join(file), to.join(file)).unwrap();
    }
}

/// The Markdown tables of a report: (title, data rows as cells).
fn md_tables(md: &str) -> Vec<(String, Vec<Vec<String>>)> {
    let mut tables: Vec<(String, Vec<Vec<String>>)> = Vec::new();
    let mut lines = md.lines().peekable();
    while let Some(line) = lines.next() {
        if let Some(title) = line.strip_prefix("### ") {
            let mut rows = Vec::new();
            let body: Vec<&str> = std::iter::from_fn(|| lines.next_if(|l| !l.starts_with("### ")))
                .filter(|l| l.starts_with('|'))
                .collect();
            for row in body.iter().skip(2) {
                let cells = row
                    .trim_matches('|')
                    .split(" | ")
                    .map(|c| c.trim().to_string());
                rows.push(cells.collect());
            }
            tables.push((title.to_string(), rows));
        }
    }
    tables
}

/// The points of the polyline(s) of one series in an SVG.
fn polyline_points(svg: &str, series: &str) -> Vec<(f64, f64)> {
    let marker = format!("<polyline class=\"series\" data-series=\"{series}\" points=\"");
    let mut points = Vec::new();
    for part in svg.split(&marker).skip(1) {
        let list = part.split('"').next().unwrap();
        for pair in list.split(' ') {
            let (x, y) = pair.split_once(',').unwrap();
            points.push((x.parse().unwrap(), y.parse().unwrap()));
        }
    }
    points
}

fn close(text: &str, value: f64, tolerance: f64) -> bool {
    text.parse::<f64>()
        .map(|v| (v - value).abs() <= tolerance)
        .unwrap_or(false)
}

#[test]
fn markdown_tables_match_summary() -> anyhow::Result<()> {
    let out = scratch("md");
    let run = load_run(&fixture("varve"))?;
    let rendered = render(&run, Some(&out))?;
    let md = std::fs::read_to_string(&rendered.markdown)?;
    assert!(md.contains("varve stress") || md.contains("varve bench stcs-alter"));
    assert!(
        md.contains("| Target | varve 5.0.4 (127.0.0.1:9042) |"),
        "{md}"
    );
    assert!(md.contains("| Workload | kv: "));
    let tables = md_tables(&md);
    for (i, phase) in run.summary.phases.iter().enumerate() {
        let (title, rows) = tables
            .iter()
            .find(|(t, _)| t.starts_with(&format!("Phase {}: {}", i + 1, phase.name)))
            .expect("a table per phase");
        assert_eq!(rows.len(), phase.ops.len(), "{title}");
        assert_eq!(rows[0][0], "write", "operations in display order");
        for row in rows {
            let stats = &phase.ops[&row[0]];
            assert!(close(&row[1], stats.throughput, 0.05), "{row:?}");
            assert!(
                close(&row[2], stats.latency_ms.mean.unwrap(), 0.005),
                "{row:?}"
            );
            assert!(
                close(&row[3], stats.latency_ms.p95.unwrap(), 0.005),
                "{row:?}"
            );
            assert!(
                close(&row[4], stats.latency_ms.p99.unwrap(), 0.005),
                "{row:?}"
            );
            assert_eq!(row[5], stats.timeouts.to_string());
            assert_eq!(row[6], stats.errors.to_string());
        }
        // Server CPU over the phase: the server_cpu_s samples at its start
        // and end (whole seconds in the fixture), and ops per CPU-second.
        let at = |t: f64| {
            let line = run.server.iter().find(|r| r.t == t).expect("a sample");
            line.server_cpu_s.expect("cpu")
        };
        let cpu = at(phase.end_t) - at(phase.start_t);
        let ops: u64 = phase.ops.values().map(|s| s.count).sum();
        let note = format!(
            "Server CPU: {cpu:.1} s, {:.1} operations per server CPU-second.",
            ops as f64 / cpu
        );
        assert!(md.contains(&note), "{note}\n{md}");
    }
    Ok(())
}

#[test]
fn throughput_line_has_one_point_per_interval_and_event_at_its_time() -> anyhow::Result<()> {
    let out = scratch("svg");
    let run = load_run(&fixture("varve"))?;
    render(&run, Some(&out))?;
    let svg = std::fs::read_to_string(out.join("charts/throughput.svg"))?;
    let write_rows: Vec<_> = run.intervals.iter().filter(|r| r.op == "write").collect();
    let points = polyline_points(&svg, "write");
    assert_eq!(points.len(), write_rows.len());
    assert_eq!(polyline_points(&svg, "read").len(), 30);
    // The event is at t = 15, which is also the end of the 15th interval.
    let at_15 = write_rows.iter().position(|r| r.t == 15.0).unwrap();
    let event = svg
        .split("<g class=\"event\">")
        .nth(1)
        .expect("an event marker");
    let x: f64 = event
        .split("x1=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .parse()?;
    assert!(
        (x - points[at_15].0).abs() < 0.11,
        "event x {x} vs point {:?}",
        points[at_15]
    );
    assert!(event.contains("ALTER TABLE kv.t"));
    // Later points lie to the right: time grows left to right.
    assert!(points.windows(2).all(|w| w[1].0 > w[0].0));
    Ok(())
}

#[test]
fn html_has_one_svg_per_chart_and_the_tables() -> anyhow::Result<()> {
    for (name, charts) in [("varve", 8), ("cassandra", 7)] {
        let out = scratch(&format!("html-{name}"));
        let rendered = render_dir(&fixture(name), Some(&out))?;
        let html = std::fs::read_to_string(&rendered.html)?;
        assert_eq!(
            rendered.expected_svg_count(),
            charts,
            "{:?}",
            rendered.charts
        );
        assert_eq!(html.matches("<svg").count(), charts);
        assert_eq!(rendered.html_tables, 3);
        rendered.check_html(&html).map_err(anyhow::Error::msg)?;
        assert!(html.contains("<th>Throughput (op/s)</th>"));
        assert!(
            !html.contains("<link") && !html.contains("src="),
            "self-contained"
        );
        for chart in &rendered.charts {
            assert!(chart.path.exists());
        }
    }
    // Cassandra exposes neither CPU nor RSS, and it had a timeout.
    let out = scratch("html-ids");
    let rendered = render_dir(&fixture("cassandra"), Some(&out))?;
    let ids = rendered.expected_chart_ids();
    assert!(ids.contains(&"chart-errors".to_string()));
    assert!(!ids.contains(&"chart-cpu".to_string()) && !ids.contains(&"chart-rss".to_string()));
    Ok(())
}

#[test]
fn default_output_is_the_run_directory() -> anyhow::Result<()> {
    let dir = scratch("default");
    copy_run("varve", &dir);
    let rendered = render_dir(&dir, None)?;
    assert_eq!(rendered.markdown, dir.join("report.md"));
    assert!(dir.join("report.html").exists() && dir.join("charts/throughput.svg").exists());
    Ok(())
}

#[test]
fn text_from_files_is_escaped() -> anyhow::Result<()> {
    let dir = scratch("escape");
    copy_run("varve", &dir);
    let evil = "<script>alert('x')</script>";
    std::fs::write(dir.join("events.csv"), format!("t,label\n10.0,{evil}\n"))?;
    let summary = std::fs::read_to_string(dir.join("summary.json"))?
        .replace("\"steady\"", "\"<script>steady</script>\"")
        .replace("\"kv\"", "\"kv & <b>\"");
    std::fs::write(dir.join("summary.json"), summary)?;
    let rendered = render_dir(&dir, None)?;
    let html = std::fs::read_to_string(&rendered.html)?;
    assert!(
        !html.contains("<script") && !html.contains("<b>"),
        "unescaped text in HTML"
    );
    assert!(html.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"));
    assert!(html.contains("kv &amp; &lt;b&gt;"));
    for chart in &rendered.charts {
        let svg = std::fs::read_to_string(&chart.path)?;
        assert!(!svg.contains("<script"), "{}", chart.id);
    }
    let md = std::fs::read_to_string(&rendered.markdown)?;
    assert!(!md.contains("<script"));
    Ok(())
}

#[test]
fn long_series_are_downsampled() -> anyhow::Result<()> {
    let dir = scratch("long");
    copy_run("varve", &dir);
    let mut csv = String::from(
        "t,phase,op,count,errors,timeouts,throughput,mean_ms,p50_ms,p95_ms,p99_ms,max_ms\n",
    );
    for i in 1..=10_000 {
        let spike = if i == 7_777 { 50.0 } else { 1.0 };
        csv.push_str(&format!(
            "{i}.000,steady,write,10,0,0,10.0,{spike},1,1,{spike},1\n"
        ));
    }
    std::fs::write(dir.join("intervals.csv"), csv)?;
    let rendered = render_dir(&dir, None)?;
    let svg = std::fs::read_to_string(dir.join("charts/latency.svg"))?;
    let points = polyline_points(&svg, "write p99");
    assert!(points.len() <= MAX_POINTS_PER_LINE && points.len() > MAX_POINTS_PER_LINE / 2);
    // The spike survives: some point is far above the baseline (smaller y).
    let min_y = points.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let max_y = points.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max);
    assert!(max_y - min_y > 100.0);
    assert!(rendered.charts.iter().any(|c| c.id == "latency"));
    Ok(())
}

mod arbitrary_series {
    use super::*;
    use proptest::prelude::*;
    use varve_report::load::parse_summary;
    use varve_report::{Event, IntervalRow, Run};

    fn value() -> impl Strategy<Value = f64> {
        prop_oneof![
            -1e6f64..1e6,
            Just(0.0),
            Just(f64::MAX),
            Just(-f64::MAX),
            Just(f64::MIN_POSITIVE),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Whatever finite numbers and labels a run holds, rendering neither
        /// panics nor writes a non-finite coordinate, and the HTML matches
        /// its own expectations.
        #[test]
        fn rendering_never_panics(
            rows in proptest::collection::vec((value(), value(), proptest::option::of(value()), "[a-z<>&\"]{1,6}"), 0..40),
            events in proptest::collection::vec((value(), ".{0,80}"), 0..4),
        ) {
            let summary = parse_summary(
                Path::new("summary.json"),
                br#"{"format":1,"phases":[{"name":"p","start_t":0,"end_t":10,"ops":{}}]}"#,
            ).unwrap();
            let run = Run {
                dir: PathBuf::from("x"),
                summary,
                intervals: rows.into_iter().map(|(t, thr, p99, op)| IntervalRow {
                    t, phase: "p".into(), op, count: 1, errors: 0, timeouts: 0, throughput: thr,
                    mean_ms: p99, p50_ms: None, p95_ms: None, p99_ms: p99, max_ms: None,
                }).collect(),
                server: Vec::new(),
                events: events.into_iter().map(|(t, label)| Event { t, label }).collect(),
                memory: Vec::new(),
            };
            let out = scratch("prop");
            let rendered = render(&run, Some(&out)).unwrap();
            let html = std::fs::read_to_string(&rendered.html).unwrap();
            prop_assert!(rendered.check_html(&html).is_ok());
            prop_assert!(!html.contains("NaN") && !html.contains("inf\""));
        }
    }
}
