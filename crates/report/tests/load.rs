//! Parsing the run directory: the fixtures load, and broken files give
//! errors naming the file (and line for CSV), never a panic.

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use varve_report::load::{parse_events, parse_intervals, parse_server, parse_summary};
use varve_report::{load_run, Error};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// A copy of a fixture in a fresh temporary directory, for breaking files.
fn scratch_copy(name: &str, tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("varve-report-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for entry in std::fs::read_dir(fixture(name)).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            std::fs::copy(&path, dir.join(path.file_name().unwrap())).unwrap();
        }
    }
    dir
}

#[test]
fn fixtures_load() -> anyhow::Result<()> {
    for name in ["varve", "cassandra"] {
        let run = load_run(&fixture(name))?;
        assert_eq!(run.summary.phases.len(), 2);
        assert_eq!(run.intervals.len(), 60);
        assert_eq!(run.server.len(), 31);
        assert_eq!(run.events.len(), 1);
        // The label keeps its commas: the last column takes the rest of the line.
        assert!(run.events[0].label.contains("'sstable_size_in_mb': 160"));
        assert_eq!(run.summary.target.product.as_deref(), Some(name));
    }
    let cassandra = load_run(&fixture("cassandra"))?;
    assert!(cassandra.server.iter().all(|r| r.server_cpu_s.is_none()));
    Ok(())
}

#[test]
fn optional_files_may_be_absent() -> anyhow::Result<()> {
    let dir = scratch_copy("varve", "optional");
    std::fs::remove_file(dir.join("server.csv"))?;
    std::fs::remove_file(dir.join("events.csv"))?;
    let run = load_run(&dir)?;
    assert!(run.server.is_empty() && run.events.is_empty());
    std::fs::remove_file(dir.join("intervals.csv"))?;
    let err = load_run(&dir).unwrap_err();
    assert!(matches!(err, Error::Io { .. }));
    assert!(err.to_string().contains("intervals.csv"), "{err}");
    Ok(())
}

fn break_file(file: &str, edit: impl Fn(String) -> String) -> Error {
    let dir = scratch_copy("varve", &format!("break-{}", file.replace('.', "-")));
    let path = dir.join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, edit(text)).unwrap();
    load_run(&dir).unwrap_err()
}

#[test]
fn bad_number_names_file_and_line() {
    // Line 4 is the third data row.
    let err = break_file("intervals.csv", |t| {
        let mut lines: Vec<String> = t.lines().map(str::to_string).collect();
        let mut fields: Vec<&str> = lines[3].split(',').collect();
        fields[6] = "9x7";
        lines[3] = fields.join(",");
        lines.join("\n")
    });
    let msg = err.to_string();
    assert!(matches!(err, Error::Csv { line: 4, .. }), "{msg}");
    assert!(
        msg.contains("intervals.csv:4:") && msg.contains("9x7"),
        "{msg}"
    );
}

#[test]
fn missing_column_names_file_and_header_line() {
    let err = break_file("intervals.csv", |t| t.replacen(",p99_ms,", ",p98_ms,", 1));
    let msg = err.to_string();
    assert!(
        msg.contains("intervals.csv:1:") && msg.contains("p99_ms"),
        "{msg}"
    );
    let err = break_file("events.csv", |t| t.replacen("label", "text", 1));
    assert!(err.to_string().contains("events.csv:1:"), "{err}");
}

#[test]
fn truncated_json_names_the_file() {
    let err = break_file("summary.json", |t| t[..t.len() / 2].to_string());
    let msg = err.to_string();
    assert!(matches!(err, Error::Json { .. }), "{msg}");
    assert!(msg.contains("summary.json:"), "{msg}");
    assert!(err.file().ends_with("summary.json"));
}

#[test]
fn short_row_and_bad_server_value() {
    let err = break_file("server.csv", |t| t.replacen("\n3.000,", "\n3.000,x", 1));
    assert!(err.to_string().contains("server.csv:5:"), "{err}");
    let err = break_file("intervals.csv", |t| format!("{t}31.000,steady,write\n"));
    assert!(err.to_string().contains("intervals.csv:62:"), "{err}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let f = Path::new("x");
        let _ = parse_summary(f, &bytes);
        let _ = parse_intervals(f, &bytes);
        let _ = parse_server(f, &bytes);
        let _ = parse_events(f, &bytes);
    }

    #[test]
    fn csv_like_text_never_panics(
        rows in proptest::collection::vec("[0-9a-z.,\"\\- ]{0,60}", 0..8),
        header in prop_oneof![
            Just("t,phase,op,count,errors,timeouts,throughput,mean_ms,p50_ms,p95_ms,p99_ms,max_ms"),
            Just("t,pending_compactions,server_cpu_s"),
            Just("t,label"),
        ],
    ) {
        let text = format!("{header}\n{}", rows.join("\n"));
        let f = Path::new("x.csv");
        let _ = parse_intervals(f, text.as_bytes());
        let _ = parse_server(f, text.as_bytes());
        let _ = parse_events(f, text.as_bytes());
    }
}
