//! Joining the segments' run directories (OUT/parts/<segment>/, one per
//! stress runner) into the run directory OUT: one summary.json whose phases
//! are on the run's clock, one intervals.csv, and hdr/ when there was a
//! single segment (with several, each part keeps its own hdr/: an hlog has
//! one base time and the parts have different ones).

use std::path::{Path, PathBuf};

use serde::Serialize;
use varve_stress::output::intervals::HEADER as INTERVALS_HEADER;
use varve_stress::RunSummary;

use crate::error::{BenchError, Result};

/// Where the parts go, under the run directory.
pub const PARTS_DIR: &str = "parts";

/// One finished segment: its directory and where its `t = 0` falls on the
/// run's clock.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    pub name: String,
    pub dir: PathBuf,
    pub offset_s: f64,
}

/// What the bench adds to summary.json (after the stress keys, as the
/// format asks of new keys).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct BenchInfo {
    pub scenario: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    pub size: String,
    /// `embedded`, `local cluster of N` or `hosts`.
    pub node: String,
    /// `--memory-cap`: each started node's cgroup limit (memory.csv has
    /// their peaks).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_cap_bytes: Option<u64>,
    /// `--find-rate` / `--rates`: each judged phase and the first rate
    /// where compaction fell behind.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_search: Option<crate::rate_report::RateSearchInfo>,
    pub segments: Vec<SegmentInfo>,
}

/// One segment as shown in summary.json.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SegmentInfo {
    pub name: String,
    pub workload: String,
    pub table: String,
    pub population: String,
    pub column_size: usize,
    pub phases: Vec<String>,
}

#[derive(Serialize)]
struct BenchSummary<'a> {
    #[serde(flatten)]
    run: &'a RunSummary,
    bench: &'a BenchInfo,
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|e| BenchError::io(path, e))
}

/// Shifts the `t` column (the first) of an intervals.csv text by `offset_s`
/// and returns its rows without the header.
pub fn shift_intervals(path: &Path, text: &str, offset_s: f64) -> Result<String> {
    let mut lines = text.lines();
    if lines.next() != Some(INTERVALS_HEADER) {
        return Err(BenchError::Invalid {
            path: path.to_path_buf(),
            detail: "unexpected header".into(),
        });
    }
    let mut out = String::new();
    for (i, line) in lines.enumerate() {
        let (t, rest) = line
            .split_once(',')
            .and_then(|(t, rest)| Some((t.parse::<f64>().ok()?, rest)))
            .ok_or_else(|| BenchError::Invalid {
                path: path.to_path_buf(),
                detail: format!("line {}: no time in `{line}`", i + 2),
            })?;
        out.push_str(&format!("{:.3},{rest}\n", round3(t + offset_s)));
    }
    Ok(out)
}

/// Merges `parts` into `out` (summary.json and intervals.csv; hdr/ of a
/// single part is moved up). `tool` and `command` replace the parts'.
/// Returns the merged summary.
pub fn merge(
    out: &Path,
    parts: &[Part],
    tool: &str,
    command: &str,
    info: &BenchInfo,
) -> Result<RunSummary> {
    let mut merged: Option<RunSummary> = None;
    let mut intervals = format!("{INTERVALS_HEADER}\n");
    for part in parts {
        let summary_path = part.dir.join("summary.json");
        let summary: RunSummary =
            serde_json::from_str(&read(&summary_path)?).map_err(|e| BenchError::Invalid {
                path: summary_path.clone(),
                detail: e.to_string(),
            })?;
        let intervals_path = part.dir.join("intervals.csv");
        intervals.push_str(&shift_intervals(
            &intervals_path,
            &read(&intervals_path)?,
            part.offset_s,
        )?);
        let phases = summary.phases.iter().cloned().map(|mut p| {
            p.start_t = round3(p.start_t + part.offset_s);
            p.end_t = round3(p.end_t + part.offset_s);
            p
        });
        match &mut merged {
            None => {
                let mut first = summary.clone();
                first.phases = phases.collect();
                merged = Some(first);
            }
            Some(m) => m.phases.extend(phases),
        }
    }
    let mut merged = merged.ok_or_else(|| BenchError::Invalid {
        path: out.to_path_buf(),
        detail: "no segment ran: nothing was measured".into(),
    })?;
    merged.tool = tool.to_string();
    merged.command = command.to_string();
    let mut json = serde_json::to_string_pretty(&BenchSummary {
        run: &merged,
        bench: info,
    })
    .map_err(|e| BenchError::Invalid {
        path: out.join("summary.json"),
        detail: e.to_string(),
    })?;
    json.push('\n');
    write(&out.join("summary.json"), &json)?;
    write(&out.join("intervals.csv"), &intervals)?;
    if let [single] = parts {
        let hdr = single.dir.join("hdr");
        if hdr.is_dir() {
            let to = out.join("hdr");
            std::fs::rename(&hdr, &to).map_err(|e| BenchError::io(&to, e))?;
        }
        std::fs::remove_dir_all(&single.dir).map_err(|e| BenchError::io(&single.dir, e))?;
        let parts_dir = out.join(PARTS_DIR);
        // Only removed when empty: a user's file there is left alone.
        let _ = std::fs::remove_dir(parts_dir);
    }
    Ok(merged)
}

fn write(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).map_err(|e| BenchError::io(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part_summary(phase: &str, start: f64, end: f64) -> String {
        format!(
            r#"{{"format":1,"tool":"varve stress 0.1.0","started_at":"2026-01-01T00:00:00Z",
            "target":{{"hosts":["127.0.0.1:9042"],"release_version":"5.0.4","product":"varve"}},
            "command":"x","workload":{{"name":"kv","rate":"unlimited","concurrency":4,"consistency":"ONE",
            "population":"seq=1..10","columns":5,"column_size":34}},
            "phases":[{{"name":"{phase}","start_t":{start},"end_t":{end},"ops":{{}},
            "extra":{{"applied":0,"not_applied":0,"verified":0,"verify_failures":0}}}}]}}"#
        )
    }

    fn make_part(root: &Path, name: &str, phase: &str, rows: &[f64]) -> PathBuf {
        let dir = root.join(PARTS_DIR).join(name);
        std::fs::create_dir_all(dir.join("hdr")).unwrap();
        std::fs::write(dir.join("summary.json"), part_summary(phase, 0.0, 2.0)).unwrap();
        let mut csv = format!("{INTERVALS_HEADER}\n");
        for t in rows {
            csv.push_str(&format!("{t:.3},{phase},write,10,0,0,10.0,1,1,1,1,1\n"));
        }
        std::fs::write(dir.join("intervals.csv"), csv).unwrap();
        std::fs::write(dir.join("hdr/write.hlog"), "#hlog\n").unwrap();
        dir
    }

    fn info() -> BenchInfo {
        BenchInfo {
            scenario: "docsize".into(),
            variant: None,
            size: "tiny".into(),
            node: "embedded".into(),
            memory_cap_bytes: None,
            rate_search: None,
            segments: Vec::new(),
        }
    }

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("varve-bench-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn two_parts_are_shifted_onto_the_run_clock() {
        let out = tmp("merge2");
        let a = make_part(&out, "a", "write-a", &[1.0, 2.0]);
        let b = make_part(&out, "b", "write-b", &[1.0, 2.0]);
        let parts = [
            Part {
                name: "a".into(),
                dir: a.clone(),
                offset_s: 0.25,
            },
            Part {
                name: "b".into(),
                dir: b,
                offset_s: 2.5,
            },
        ];
        let merged = merge(
            &out,
            &parts,
            "varve bench 0.1.0",
            "varve bench docsize",
            &info(),
        )
        .unwrap();
        let starts: Vec<(f64, f64)> = merged.phases.iter().map(|p| (p.start_t, p.end_t)).collect();
        assert_eq!(starts, [(0.25, 2.25), (2.5, 4.5)]);
        let csv = std::fs::read_to_string(out.join("intervals.csv")).unwrap();
        let ts: Vec<&str> = csv
            .lines()
            .skip(1)
            .map(|l| l.split(',').next().unwrap())
            .collect();
        assert_eq!(ts, ["1.250", "2.250", "3.500", "4.500"]);
        let run = varve_report::load_run(&out).expect("the report reads the merged run");
        assert_eq!(run.summary.phases.len(), 2);
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap())
                .unwrap();
        assert_eq!(v["tool"], "varve bench 0.1.0");
        assert_eq!(v["bench"]["scenario"], "docsize");
        assert!(
            a.join("hdr/write.hlog").exists(),
            "several parts keep their hdr/"
        );
        std::fs::remove_dir_all(&out).unwrap();
    }

    #[test]
    fn a_single_part_moves_its_hdr_up_and_bad_parts_are_errors() {
        let out = tmp("merge1");
        let a = make_part(&out, "main", "steady", &[1.0]);
        let parts = [Part {
            name: "main".into(),
            dir: a,
            offset_s: 0.0,
        }];
        merge(&out, &parts, "t", "c", &info()).unwrap();
        assert!(out.join("hdr/write.hlog").exists());
        assert!(!out.join(PARTS_DIR).exists());
        assert!(
            merge(&out, &[], "t", "c", &info()).is_err(),
            "nothing measured"
        );
        let bad = Path::new("i.csv");
        assert!(shift_intervals(bad, "t,x\n", 1.0).is_err());
        let text = format!("{INTERVALS_HEADER}\nnot-a-number,a\n");
        assert!(shift_intervals(bad, &text, 1.0)
            .unwrap_err()
            .to_string()
            .contains("line 2"));
        std::fs::remove_dir_all(&out).unwrap();
    }
}
