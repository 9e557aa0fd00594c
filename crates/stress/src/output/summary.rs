//! summary.json: what was run, against what, and one result table per
//! phase. Serde types mirror the format document key for key; readers
//! ignore keys they do not know, so new keys go at the end.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The whole file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    /// Format version ([`super::RUN_DIRECTORY_FORMAT`]).
    pub format: u32,
    /// `varve stress <version>`.
    pub tool: String,
    /// UTC start time, `YYYY-MM-DDTHH:MM:SSZ`.
    pub started_at: String,
    pub target: Target,
    /// The command line that made the run.
    pub command: String,
    pub workload: WorkloadInfo,
    pub phases: Vec<PhaseResult>,
}

/// What the run talked to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Target {
    pub hosts: Vec<String>,
    pub release_version: Option<String>,
    /// `varve`, `cassandra` or `unknown`.
    pub product: String,
}

/// The run's settings, as shown in reports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkloadInfo {
    pub name: String,
    pub rate: String,
    pub concurrency: usize,
    pub consistency: String,
    pub population: String,
    pub columns: usize,
    pub column_size: usize,
}

/// The results of one phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseResult {
    pub name: String,
    /// Seconds since the start of the run.
    pub start_t: f64,
    pub end_t: f64,
    /// Per operation kind, plus `total`.
    pub ops: BTreeMap<String, OpResult>,
    pub extra: Extra,
    /// True when Ctrl-C cut the phase short.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
}

/// One operation kind's results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpResult {
    /// Successful operations.
    pub count: u64,
    /// Failed operations (the sum of `error_kinds`).
    pub errors: u64,
    /// `error_kinds.timeout`, repeated.
    pub timeouts: u64,
    pub error_kinds: BTreeMap<String, u64>,
    /// Successful operations per second.
    pub throughput: f64,
    /// Absent when no operation succeeded.
    pub latency_ms: Option<LatencyMs>,
}

/// Latency statistics in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LatencyMs {
    pub mean: f64,
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub max: f64,
}

/// Workload-specific counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Extra {
    /// LWT: conditional writes applied.
    pub applied: u64,
    /// LWT: conditional writes whose condition did not hold.
    pub not_applied: u64,
    /// `--verify`: reads that returned the expected row.
    pub verified: u64,
    /// `--verify`: reads that returned something else (or nothing).
    pub verify_failures: u64,
}

impl RunSummary {
    /// The JSON text of summary.json.
    pub fn to_json(&self) -> serde_json::Result<String> {
        let mut s = serde_json::to_string_pretty(self)?;
        s.push('\n');
        Ok(s)
    }
}

/// `YYYY-MM-DDTHH:MM:SSZ` for seconds since the Unix epoch (proleptic
/// Gregorian calendar, days-from-civil inverted).
pub fn utc_timestamp(unix_s: u64) -> String {
    let days = (unix_s / 86_400) as i64;
    let rem = unix_s % 86_400;
    let (h, m, s) = (rem / 3600, rem % 3600 / 60, rem % 60);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}Z")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> RunSummary {
        let mut ops = BTreeMap::new();
        ops.insert(
            "write".to_string(),
            OpResult {
                count: 120_000,
                errors: 3,
                timeouts: 2,
                error_kinds: [("timeout".to_string(), 2), ("other".to_string(), 1)].into(),
                throughput: 2000.0,
                latency_ms: Some(LatencyMs {
                    mean: 0.8,
                    p50: 0.6,
                    p95: 1.9,
                    p99: 3.1,
                    max: 12.0,
                }),
            },
        );
        ops.insert(
            "read".to_string(),
            OpResult {
                count: 0,
                errors: 0,
                timeouts: 0,
                error_kinds: BTreeMap::new(),
                throughput: 0.0,
                latency_ms: None,
            },
        );
        RunSummary {
            format: 1,
            tool: "varve stress 0.1.0".into(),
            started_at: utc_timestamp(0),
            target: Target {
                hosts: vec!["127.0.0.1:9042".into()],
                release_version: Some("5.0.4".into()),
                product: "varve".into(),
            },
            command: "varve stress write --n 100000".into(),
            workload: WorkloadInfo {
                name: "kv".into(),
                rate: "fixed=2000/s".into(),
                concurrency: 64,
                consistency: "ONE".into(),
                population: "uniform=1..1000000".into(),
                columns: 5,
                column_size: 34,
            },
            phases: vec![PhaseResult {
                name: "steady".into(),
                start_t: 0.0,
                end_t: 60.0,
                ops,
                extra: Extra {
                    applied: 1,
                    not_applied: 2,
                    verified: 3,
                    verify_failures: 4,
                },
                interrupted: true,
            }],
        }
    }

    #[test]
    fn summary_round_trips_and_has_the_documented_keys() {
        let s = sample();
        let text = s.to_json().unwrap();
        let back: RunSummary = serde_json::from_str(&text).unwrap();
        assert_eq!(back, s);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["format"], 1);
        assert_eq!(v["phases"][0]["ops"]["write"]["latency_ms"]["p99"], 3.1);
        assert_eq!(v["phases"][0]["ops"]["write"]["error_kinds"]["timeout"], 2);
        assert_eq!(v["phases"][0]["extra"]["verify_failures"], 4);
        assert_eq!(v["phases"][0]["interrupted"], true);
        assert_eq!(v["workload"]["column_size"], 34);
        assert_eq!(v["target"]["product"], "varve");
    }

    #[test]
    fn interrupted_is_omitted_when_false_and_unknown_keys_are_ignored() {
        let mut s = sample();
        s.phases[0].interrupted = false;
        let text = s.to_json().unwrap();
        assert!(!text.contains("interrupted"));
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        v["future_key"] = serde_json::json!({"x": 1});
        let back: RunSummary = serde_json::from_value(v).unwrap();
        assert_eq!(back, s);
    }

    #[test]
    fn timestamps_are_utc_iso8601() {
        assert_eq!(utc_timestamp(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc_timestamp(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(utc_timestamp(1_795_354_800), "2026-11-22T13:40:00Z");
    }
}
