//! Process statistics from `/proc` (Linux), exposed under the standard
//! Prometheus process metric names. Everything fails soft: a missing or
//! unreadable file leaves that field `None` and its metric absent.
//!
//! Sources: `/proc/self/stat` (utime, stime, threads, start time in clock
//! ticks after boot), `/proc/self/status` (`VmRSS`), `/proc/self/fd` (one
//! entry per open descriptor, including the one used to list it),
//! `/proc/self/limits` (max open files), `/proc/stat` (`btime`). The clock
//! tick rate comes from the `AT_CLKTCK` entry of `/proc/self/auxv`, which is
//! what `sysconf(_SC_CLK_TCK)` returns, read without libc; if that fails we
//! assume [`DEFAULT_CLOCK_TICKS`] (100 Hz, the value on every mainstream
//! Linux architecture).

use std::fs;
use std::path::Path;

use crate::registry::Row;
use crate::render::{FamilyView, SeriesValue};

/// Clock ticks per second when `/proc/self/auxv` cannot tell.
pub const DEFAULT_CLOCK_TICKS: u64 = 100;
/// The auxiliary vector key of the clock tick rate.
const AT_CLKTCK: u64 = 17;

/// One sample of the process's statistics.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProcessStats {
    /// User plus system CPU time.
    pub cpu_seconds: Option<f64>,
    /// Resident set size.
    pub rss_bytes: Option<u64>,
    pub open_fds: Option<u64>,
    /// Soft limit on open files.
    pub max_fds: Option<u64>,
    pub threads: Option<u64>,
    /// Process start, seconds since the Unix epoch.
    pub start_time_seconds: Option<f64>,
}

/// The fields of `/proc/<pid>/stat` we use, in clock ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatFields {
    pub utime: u64,
    pub stime: u64,
    pub threads: u64,
    pub start_ticks: u64,
}

/// Samples this process now.
pub fn sample() -> ProcessStats {
    sample_from(Path::new("/proc"))
}

/// Samples from a `/proc`-like tree at `root` (tests point it elsewhere).
pub fn sample_from(root: &Path) -> ProcessStats {
    let me = root.join("self");
    let read = |p: &Path| fs::read_to_string(p).ok();
    let ticks = fs::read(me.join("auxv"))
        .ok()
        .and_then(|b| parse_auxv(&b, AT_CLKTCK))
        .filter(|&t| t > 0)
        .unwrap_or(DEFAULT_CLOCK_TICKS) as f64;
    let stat = read(&me.join("stat")).and_then(|t| parse_stat(&t));
    let boot = read(&root.join("stat")).and_then(|t| parse_btime(&t));
    let status = read(&me.join("status"));
    ProcessStats {
        cpu_seconds: stat.map(|s| (s.utime + s.stime) as f64 / ticks),
        rss_bytes: status
            .as_deref()
            .and_then(|t| status_field(t, "VmRSS:"))
            .map(|kb| kb * 1024),
        open_fds: fs::read_dir(me.join("fd")).ok().map(|d| d.count() as u64),
        max_fds: read(&me.join("limits")).and_then(|t| parse_max_open_files(&t)),
        threads: stat.map(|s| s.threads),
        start_time_seconds: stat
            .zip(boot)
            .map(|(s, b)| b as f64 + s.start_ticks as f64 / ticks),
    }
}

/// Parses `/proc/<pid>/stat`. The command name (field 2) is in parentheses
/// and may hold spaces or parentheses, so fields are counted after the last
/// `)`: there field 3 (state) is index 0.
pub fn parse_stat(text: &str) -> Option<StatFields> {
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| fields.get(n.checked_sub(3)?)?.parse::<u64>().ok();
    Some(StatFields {
        utime: field(14)?,
        stime: field(15)?,
        threads: field(20)?,
        start_ticks: field(22)?,
    })
}

/// The number after `key` in a `/proc/<pid>/status`-style text (`kB` units
/// are the caller's business).
pub fn status_field(text: &str, key: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(key))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// `btime` (boot time, seconds since the epoch) from `/proc/stat`.
pub fn parse_btime(text: &str) -> Option<u64> {
    status_field(text, "btime")
}

/// The soft "Max open files" limit from `/proc/<pid>/limits` (`None` when
/// unlimited).
pub fn parse_max_open_files(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix("Max open files"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The value of `key` in an auxiliary vector: native-endian machine words,
/// `(key, value)` pairs, ended by key 0.
pub fn parse_auxv(bytes: &[u8], key: u64) -> Option<u64> {
    const WORD: usize = std::mem::size_of::<usize>();
    let word = |chunk: &[u8]| -> Option<u64> {
        let mut buf = [0u8; WORD];
        buf.copy_from_slice(chunk.get(..WORD)?);
        Some(usize::from_ne_bytes(buf) as u64)
    };
    for pair in bytes.chunks_exact(2 * WORD) {
        let (k, v) = (word(&pair[..WORD])?, word(&pair[WORD..])?);
        if k == 0 {
            return None;
        }
        if k == key {
            return Some(v);
        }
    }
    None
}

/// The standard Prometheus process families for `stats` (absent fields
/// give no family).
pub fn families(stats: &ProcessStats) -> Vec<FamilyView> {
    let one = |name: &str, help: &str, value: SeriesValue| FamilyView {
        name: name.to_string(),
        help: help.to_string(),
        series: vec![(Vec::new(), value)],
    };
    let gauge = |v: u64| SeriesValue::Gauge(v as f64);
    let mut out = Vec::new();
    if let Some(v) = stats.cpu_seconds {
        let help = "Total user and system CPU time spent in seconds.";
        out.push(one(
            "process_cpu_seconds_total",
            help,
            SeriesValue::FloatCounter(v),
        ));
    }
    if let Some(v) = stats.rss_bytes {
        out.push(one(
            "process_resident_memory_bytes",
            "Resident memory size in bytes.",
            gauge(v),
        ));
    }
    if let Some(v) = stats.open_fds {
        out.push(one(
            "process_open_fds",
            "Number of open file descriptors.",
            gauge(v),
        ));
    }
    if let Some(v) = stats.max_fds {
        out.push(one(
            "process_max_fds",
            "Maximum number of open file descriptors.",
            gauge(v),
        ));
    }
    if let Some(v) = stats.threads {
        out.push(one(
            "process_threads",
            "Number of OS threads in the process.",
            gauge(v),
        ));
    }
    if let Some(v) = stats.start_time_seconds {
        let help = "Start time of the process since unix epoch in seconds.";
        out.push(one(
            "process_start_time_seconds",
            help,
            SeriesValue::Gauge(v),
        ));
    }
    out
}

/// `stats` as virtual-table rows of family `process`.
pub fn rows(stats: &ProcessStats) -> Vec<Row> {
    let fields: [(&'static str, Option<f64>); 6] = [
        ("cpu_seconds", stats.cpu_seconds),
        ("resident_memory_bytes", stats.rss_bytes.map(|v| v as f64)),
        ("open_fds", stats.open_fds.map(|v| v as f64)),
        ("max_fds", stats.max_fds.map(|v| v as f64)),
        ("threads", stats.threads.map(|v| v as f64)),
        ("start_time_seconds", stats.start_time_seconds),
    ];
    fields
        .into_iter()
        .filter_map(|(field, v)| {
            Some(Row {
                family: "process".to_string(),
                labels: Vec::new(),
                field,
                value: v?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests;
