//! Reading and validating a run directory.
//!
//! Each file has a `parse_*` function from bytes (public, so property tests
//! can feed them arbitrary input) and [`load_run`] ties them together. Input is
//! untrusted: every failure is an [`Error`] naming the file (and the line for
//! CSV and JSON), never a panic.

use std::path::Path;

use crate::csv::CsvTable;
use crate::error::{Error, Result};
use crate::model::{Event, IntervalRow, MemoryRow, Run, ServerRow, Summary, FORMAT_VERSION};

pub const SUMMARY_FILE: &str = "summary.json";
pub const INTERVALS_FILE: &str = "intervals.csv";
pub const SERVER_FILE: &str = "server.csv";
pub const EVENTS_FILE: &str = "events.csv";
pub const MEMORY_FILE: &str = "memory.csv";

/// Input files larger than this are refused rather than read into memory
/// (a day of one-second intervals for seven operations is ~50 MiB).
pub const MAX_INPUT_BYTES: u64 = 512 * 1024 * 1024;

/// Loads and validates the run in `dir`. `summary.json` and `intervals.csv`
/// are required; `server.csv`, `events.csv` and `memory.csv` are optional.
pub fn load_run(dir: &Path) -> Result<Run> {
    let summary_path = dir.join(SUMMARY_FILE);
    let summary = parse_summary(&summary_path, &read_capped(&summary_path)?)?;
    let intervals_path = dir.join(INTERVALS_FILE);
    let intervals = parse_intervals(&intervals_path, &read_capped(&intervals_path)?)?;
    let server_path = dir.join(SERVER_FILE);
    let server = match read_optional(&server_path)? {
        Some(bytes) => parse_server(&server_path, &bytes)?,
        None => Vec::new(),
    };
    let events_path = dir.join(EVENTS_FILE);
    let events = match read_optional(&events_path)? {
        Some(bytes) => parse_events(&events_path, &bytes)?,
        None => Vec::new(),
    };
    let memory_path = dir.join(MEMORY_FILE);
    let memory = match read_optional(&memory_path)? {
        Some(bytes) => parse_memory(&memory_path, &bytes)?,
        None => Vec::new(),
    };
    Ok(Run {
        dir: dir.to_path_buf(),
        summary,
        intervals,
        server,
        events,
        memory,
    })
}

fn read_capped(path: &Path) -> Result<Vec<u8>> {
    let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
    check_size(path, meta.len())?;
    std::fs::read(path).map_err(|e| Error::io(path, e))
}

/// An input file may hold at most [`MAX_INPUT_BYTES`].
fn check_size(path: &Path, len: u64) -> Result<()> {
    if len > MAX_INPUT_BYTES {
        return Err(Error::invalid(
            path,
            format!("file is {len} bytes, more than the limit of {MAX_INPUT_BYTES}"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod size_limit_tests {
    use super::*;

    #[test]
    fn input_size_limit_holds_at_n_and_fails_at_n_plus_one() {
        let p = Path::new("summary.json");
        assert!(check_size(p, MAX_INPUT_BYTES).is_ok());
        assert!(check_size(p, MAX_INPUT_BYTES + 1).is_err());
        // Through the file system: a sparse file one byte over is refused
        // before anything is read.
        let dir = std::env::temp_dir().join(format!("varve-report-cap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let big = dir.join("intervals.csv");
        let f = std::fs::File::create(&big).unwrap();
        f.set_len(MAX_INPUT_BYTES + 1).unwrap();
        let err = read_capped(&big).unwrap_err().to_string();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(err.contains("more than the limit"), "{err}");
    }
}

fn read_optional(path: &Path) -> Result<Option<Vec<u8>>> {
    if path.exists() {
        read_capped(path).map(Some)
    } else {
        Ok(None)
    }
}

fn utf8<'a>(file: &Path, bytes: &'a [u8]) -> Result<&'a str> {
    std::str::from_utf8(bytes).map_err(|e| {
        let valid = &bytes[..e.valid_up_to()];
        let line = valid.iter().filter(|b| **b == b'\n').count() + 1;
        Error::Csv {
            file: file.to_path_buf(),
            line,
            message: format!("invalid UTF-8 at byte {}", e.valid_up_to()),
        }
    })
}

/// Parses and validates `summary.json`.
pub fn parse_summary(file: &Path, bytes: &[u8]) -> Result<Summary> {
    let summary: Summary = serde_json::from_slice(bytes).map_err(|e| Error::Json {
        file: file.to_path_buf(),
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    })?;
    if summary.format != FORMAT_VERSION {
        return Err(Error::invalid(
            file,
            format!(
                "format {} is not supported (this reader knows format {FORMAT_VERSION})",
                summary.format
            ),
        ));
    }
    for phase in &summary.phases {
        if !(phase.start_t.is_finite() && phase.end_t.is_finite() && phase.start_t <= phase.end_t) {
            return Err(Error::invalid(
                file,
                format!(
                    "phase `{}`: start_t {} and end_t {} are not an interval",
                    phase.name, phase.start_t, phase.end_t
                ),
            ));
        }
    }
    Ok(summary)
}

/// Parses `intervals.csv`. All columns of format version 1 are required in
/// the header; latency fields may be empty.
pub fn parse_intervals(file: &Path, bytes: &[u8]) -> Result<Vec<IntervalRow>> {
    let table = CsvTable::parse(file, utf8(file, bytes)?, false)?;
    let t = table.require("t")?;
    let phase = table.require("phase")?;
    let op = table.require("op")?;
    let count = table.require("count")?;
    let errors = table.require("errors")?;
    let timeouts = table.require("timeouts")?;
    let throughput = table.require("throughput")?;
    let mean = table.require("mean_ms")?;
    let p50 = table.require("p50_ms")?;
    let p95 = table.require("p95_ms")?;
    let p99 = table.require("p99_ms")?;
    let max = table.require("max_ms")?;
    let mut rows = Vec::new();
    for row in table.rows() {
        let op_name = row.text(op);
        if op_name.is_empty() {
            return Err(Error::Csv {
                file: file.to_path_buf(),
                line: row.line(),
                message: "column `op` is empty".into(),
            });
        }
        rows.push(IntervalRow {
            t: row.f64(t)?,
            phase: row.text(phase).to_string(),
            op: op_name.to_string(),
            count: row.u64(count)?,
            errors: row.u64(errors)?,
            timeouts: row.u64(timeouts)?,
            throughput: row.f64(throughput)?,
            mean_ms: row.opt_f64(mean)?,
            p50_ms: row.opt_f64(p50)?,
            p95_ms: row.opt_f64(p95)?,
            p99_ms: row.opt_f64(p99)?,
            max_ms: row.opt_f64(max)?,
        });
    }
    Ok(rows)
}

/// Parses `server.csv`. Only `t` is required; a missing column is treated as
/// a column that is always empty (the server did not expose it).
pub fn parse_server(file: &Path, bytes: &[u8]) -> Result<Vec<ServerRow>> {
    let table = CsvTable::parse(file, utf8(file, bytes)?, false)?;
    let t = table.require("t")?;
    let col = |name: &str| table.column(name);
    let pending = col("pending_compactions");
    let bytes_per_s = col("compaction_bytes_per_s");
    let live = col("live_sstables");
    let unleveled = col("unleveled_sstables");
    let space = col("space_used_bytes");
    let cpu = col("server_cpu_s");
    let rss = col("server_rss_bytes");
    let completed = col("compactions_completed");
    let commitlog = col("commitlog_bytes_per_s");
    let pauses = col("pauses_per_s");
    let pause_ms = col("pause_ms_per_s");
    let mut rows = Vec::new();
    for row in table.rows() {
        rows.push(ServerRow {
            t: row.f64(t)?,
            pending_compactions: row.maybe_f64(pending)?,
            compaction_bytes_per_s: row.maybe_f64(bytes_per_s)?,
            live_sstables: row.maybe_f64(live)?,
            unleveled_sstables: row.maybe_f64(unleveled)?,
            space_used_bytes: row.maybe_f64(space)?,
            server_cpu_s: row.maybe_f64(cpu)?,
            server_rss_bytes: row.maybe_f64(rss)?,
            compactions_completed: row.maybe_f64(completed)?,
            commitlog_bytes_per_s: row.maybe_f64(commitlog)?,
            pauses_per_s: row.maybe_f64(pauses)?,
            pause_ms_per_s: row.maybe_f64(pause_ms)?,
        });
    }
    Ok(rows)
}

/// Parses `memory.csv` (written by `varve bench --memory-cap` or
/// `--memory-cgroup`): `node` and `cgroup` required, the numbers may be
/// empty.
pub fn parse_memory(file: &Path, bytes: &[u8]) -> Result<Vec<MemoryRow>> {
    let table = CsvTable::parse(file, utf8(file, bytes)?, false)?;
    let node = table.require("node")?;
    let cgroup = table.require("cgroup")?;
    let (cap, peak, oom) = (
        table.column("cap_bytes"),
        table.column("peak_bytes"),
        table.column("oom_kills"),
    );
    table
        .rows()
        .map(|row| {
            Ok(MemoryRow {
                node: row.text(node).to_string(),
                cgroup: row.text(cgroup).to_string(),
                cap_bytes: row.maybe_f64(cap)?,
                peak_bytes: row.maybe_f64(peak)?,
                oom_kills: row.maybe_f64(oom)?,
            })
        })
        .collect()
}

/// Parses `events.csv`; the label is the rest of the line after `t`, so it
/// may contain commas without quoting.
pub fn parse_events(file: &Path, bytes: &[u8]) -> Result<Vec<Event>> {
    let table = CsvTable::parse(file, utf8(file, bytes)?, true)?;
    let t = table.require("t")?;
    let label = table.require("label")?;
    table
        .rows()
        .map(|row| {
            Ok(Event {
                t: row.f64(t)?,
                label: row.text(label).to_string(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str =
        "t,phase,op,count,errors,timeouts,throughput,mean_ms,p50_ms,p95_ms,p99_ms,max_ms\n";

    #[test]
    fn intervals_allow_empty_latency() {
        let text = format!("{HEADER}1.000,steady,read,0,0,0,0.0,,,,,\n");
        let rows = parse_intervals(Path::new("i.csv"), text.as_bytes()).unwrap();
        assert_eq!(rows[0].p99_ms, None);
        assert_eq!(rows[0].count, 0);
    }

    #[test]
    fn summary_rejects_other_format_and_bad_phase() {
        let f = Path::new("s.json");
        assert!(parse_summary(f, br#"{"format":2,"phases":[]}"#).is_err());
        let bad = br#"{"format":1,"phases":[{"name":"a","start_t":5,"end_t":1}]}"#;
        assert!(parse_summary(f, bad)
            .unwrap_err()
            .to_string()
            .contains("phase `a`"));
        assert!(parse_summary(f, br#"{"format":1,"phases":[]}"#).is_ok());
    }

    #[test]
    fn memory_rows_allow_empty_numbers_and_refuse_bad_ones() {
        let f = Path::new("memory.csv");
        let text = "node,cgroup,cap_bytes,peak_bytes,oom_kills\n1,/cg/node1,2147483648,2000000000,0\n2,/cg/node2,2147483648,,\n";
        let rows = parse_memory(f, text.as_bytes()).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].peak_bytes, Some(2e9));
        assert_eq!(rows[1].oom_kills, None);
        assert!(parse_memory(f, b"node,cgroup,cap_bytes\n1,x,lots\n").is_err());
        assert!(parse_memory(f, b"cgroup\nx\n").is_err(), "node is required");
    }

    #[test]
    fn invalid_utf8_names_the_line() {
        let err = parse_events(Path::new("e.csv"), b"t,label\n1,\xff\n").unwrap_err();
        assert!(err.to_string().starts_with("e.csv:2:"), "{err}");
    }
}
