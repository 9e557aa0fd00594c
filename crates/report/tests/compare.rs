//! `varve report A B`: ratios are B/A, phases pair by name, columns are
//! labelled by product, and the overlaid charts have A solid and B dashed.

use std::path::{Path, PathBuf};

use varve_report::{compare, load_run};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("varve-compare-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Rows of the Markdown table under the heading `### {title}` (whole line).
fn table_rows(md: &str, title: &str) -> Vec<Vec<String>> {
    let start = md.find(&format!("### {title}\n")).expect("table heading");
    md[start..]
        .lines()
        .skip(1)
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .map(|l| {
            l.trim_matches('|')
                .split(" | ")
                .map(|c| c.trim().to_string())
                .collect()
        })
        .collect()
}

fn num(cell: &str) -> f64 {
    cell.parse()
        .unwrap_or_else(|_| panic!("not a number: {cell}"))
}

#[test]
fn ratios_are_b_over_a_and_columns_are_labelled() -> anyhow::Result<()> {
    let out = scratch("ratio");
    let rendered = compare(&fixture("varve"), &fixture("cassandra"), &out)?;
    assert_eq!(rendered.markdown, out.join("compare.md"));
    let md = std::fs::read_to_string(&rendered.markdown)?;
    assert!(
        md.contains("| Operation | varve (op/s) | cassandra (op/s) | throughput cassandra/varve |"),
        "{md}"
    );
    let a = load_run(&fixture("varve"))?;
    let b = load_run(&fixture("cassandra"))?;
    for (i, phase) in a.summary.phases.iter().enumerate() {
        let rows = table_rows(&md, &format!("Phase {}: {}", i + 1, phase.name));
        assert_eq!(rows.len(), 2);
        for row in rows {
            let sa = &phase.ops[&row[0]];
            let sb = &b.summary.phases[i].ops[&row[0]];
            assert!((num(&row[1]) - sa.throughput).abs() < 0.05);
            assert!((num(&row[2]) - sb.throughput).abs() < 0.05);
            assert!(
                (num(&row[3]) - sb.throughput / sa.throughput).abs() < 0.005,
                "{row:?}"
            );
            let (pa, pb) = (sa.latency_ms.p99.unwrap(), sb.latency_ms.p99.unwrap());
            assert!((num(&row[6]) - pb / pa).abs() < 0.005, "{row:?}");
            // The fixtures make Cassandra slower: fewer op/s, higher p99.
            assert!(num(&row[3]) < 1.0 && num(&row[6]) > 1.0);
        }
    }
    let html = std::fs::read_to_string(&rendered.html)?;
    rendered.check_html(&html).map_err(anyhow::Error::msg)?;
    let ids = rendered.expected_chart_ids();
    assert_eq!(ids, vec!["chart-compare-throughput", "chart-compare-p99"]);
    let svg = std::fs::read_to_string(out.join("charts/compare-throughput.svg"))?;
    assert_eq!(svg.matches("data-series=\"write varve\"").count(), 1);
    let dashed = svg.split("data-series=\"write cassandra\"").nth(1).unwrap();
    assert!(dashed
        .split("/>")
        .next()
        .unwrap()
        .contains("stroke-dasharray"));
    Ok(())
}

#[test]
fn phases_are_matched_by_name_not_position() -> anyhow::Result<()> {
    // B lists its phases in the other order; the table must still pair
    // steady with steady.
    let b_dir = scratch("reordered-b");
    for file in ["intervals.csv", "server.csv", "events.csv"] {
        std::fs::copy(fixture("cassandra").join(file), b_dir.join(file))?;
    }
    let text = std::fs::read_to_string(fixture("cassandra").join("summary.json"))?;
    let mut summary: serde_json::Value = serde_json::from_str(&text)?;
    summary["phases"].as_array_mut().unwrap().reverse();
    std::fs::write(b_dir.join("summary.json"), serde_json::to_string(&summary)?)?;

    let out = scratch("reordered-out");
    let rendered = compare(&fixture("varve"), &b_dir, &out)?;
    let md = std::fs::read_to_string(&rendered.markdown)?;
    let b = load_run(&b_dir)?;
    let b_steady = b
        .summary
        .phases
        .iter()
        .find(|p| p.name == "steady")
        .unwrap();
    let rows = table_rows(&md, "Phase 1: steady");
    let write = rows.iter().find(|r| r[0] == "write").unwrap();
    assert!((num(&write[2]) - b_steady.ops["write"].throughput).abs() < 0.05);
    // p99 tells the phases apart (the fixtures raise latency after the ALTER).
    let b_p99 = b_steady.ops["write"].latency_ms.p99.unwrap();
    assert!(
        (num(&write[5]) - b_p99).abs() < 0.005,
        "{write:?} vs {b_p99}"
    );
    assert!(md.contains("### Phase 2: after-alter"));
    Ok(())
}

#[test]
fn same_product_falls_back_to_directory_names() -> anyhow::Result<()> {
    let out = scratch("same");
    let rendered = compare(&fixture("varve"), &fixture("varve"), &out)?;
    let md = std::fs::read_to_string(&rendered.markdown)?;
    // Same product and same directory name: plain A and B.
    assert!(
        md.contains("| Operation | A (op/s) | B (op/s) | throughput B/A |"),
        "{md}"
    );
    let rows = table_rows(&md, "Phase 1: steady");
    assert!(rows.iter().all(|r| r[3] == "1.00" && r[6] == "1.00"));
    Ok(())
}
