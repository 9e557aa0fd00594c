//! Server-side numbers without a Varve admin port: `/proc/PID` for the CPU
//! and memory of a server process (`--server-pid`, e.g. a Cassandra JVM),
//! and the text of `nodetool compactionstats` / `tablestats` (`--nodetool`).
//! Parsers are pure functions of the text; unknown text gives `None`.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

/// Clock ticks per second of `/proc/PID/stat` times (`getconf CLK_TCK`;
/// 100 on every Linux architecture Varve builds for).
pub const CLOCK_TICKS_PER_S: f64 = 100.0;
/// How long one sampling nodetool command may take before its sample is dropped.
pub const NODETOOL_TIMEOUT: Duration = Duration::from_secs(20);

/// CPU seconds (user + system) from the text of `/proc/PID/stat`.
pub fn parse_proc_stat_cpu_s(stat: &str) -> Option<f64> {
    // The command name (field 2) is in parentheses and may contain spaces:
    // count fields from the last `)`. utime and stime are fields 14 and 15,
    // so the 12th and 13th after it.
    let after = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / CLOCK_TICKS_PER_S)
}

/// Resident bytes from the text of `/proc/PID/status` (`VmRSS: N kB`).
pub fn parse_proc_status_rss_bytes(status: &str) -> Option<f64> {
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let mut parts = line["VmRSS:".len()..].split_whitespace();
    let kb: f64 = parts.next()?.parse().ok()?;
    match parts.next() {
        Some("kB") | None => Some(kb * 1024.0),
        Some(_) => None,
    }
}

/// `(cpu_s, rss_bytes)` of process `pid`; `None` fields when unreadable.
pub fn read_process(pid: u32) -> (Option<f64>, Option<f64>) {
    let dir = Path::new("/proc").join(pid.to_string());
    let cpu = std::fs::read_to_string(dir.join("stat"))
        .ok()
        .and_then(|s| parse_proc_stat_cpu_s(&s));
    let rss = std::fs::read_to_string(dir.join("status"))
        .ok()
        .and_then(|s| parse_proc_status_rss_bytes(&s));
    (cpu, rss)
}

/// CPU seconds and RSS bytes summed over `pids` (a cluster's nodes); each
/// is `None` unless every process answered (a partial sum would read as a
/// drop).
pub fn read_processes(pids: &[u32]) -> (Option<f64>, Option<f64>) {
    let (cpu, rss): (Vec<_>, Vec<_>) = pids.iter().map(|&p| read_process(p)).unzip();
    (cpu.into_iter().sum(), rss.into_iter().sum())
}

/// `pending tasks: N` of `nodetool compactionstats`.
pub fn parse_compactionstats_pending(text: &str) -> Option<f64> {
    text.lines().find_map(|l| {
        let l = l.trim();
        let rest = l.strip_prefix("pending tasks:")?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// What `nodetool tablestats ks.table` says about the table.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TableStats {
    pub live_sstables: Option<f64>,
    pub space_used_bytes: Option<f64>,
    /// The first entry of `SSTables in each level: [a/b, ...]` (level 0).
    pub level0_sstables: Option<f64>,
}

/// Parses `nodetool tablestats` output for one table (run it with
/// `ks.table` so only that table is listed).
pub fn parse_tablestats(text: &str) -> TableStats {
    let mut out = TableStats::default();
    for line in text.lines() {
        let Some((key, value)) = line.trim().split_once(':') else {
            continue;
        };
        let value = value.trim();
        let number = || value.split_whitespace().next()?.parse::<f64>().ok();
        match key.trim() {
            "SSTable count" => out.live_sstables = number(),
            "Space used (live)" => out.space_used_bytes = number(),
            "SSTables in each level" => {
                out.level0_sstables = value
                    .trim_start_matches('[')
                    .split([',', '/', ']'])
                    .next()
                    .and_then(|v| v.trim().parse().ok());
            }
            _ => {}
        }
    }
    out
}

/// Runs `prefix args...` (prefix split on whitespace, e.g.
/// `/tmp/cass-lab/nodetool.sh`) and returns its stdout, or an error text.
pub async fn run_nodetool(
    prefix: &[String],
    args: &[&str],
    timeout: Duration,
) -> Result<String, String> {
    let Some((program, fixed)) = prefix.split_first() else {
        return Err("empty --nodetool command".into());
    };
    let child = tokio::process::Command::new(program)
        .args(fixed)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .output();
    match tokio::time::timeout(timeout, child).await {
        Err(_) => Err(format!("no answer within {timeout:?}")),
        Ok(Err(e)) => Err(format!("cannot run {program}: {e}")),
        Ok(Ok(out)) if out.status.success() => {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        }
        Ok(Ok(out)) => Err(format!(
            "{} ({})",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cluster's processes are summed; one that is gone makes the sum
    /// unknown rather than smaller.
    #[test]
    fn processes_are_summed_and_a_missing_one_makes_the_sum_unknown() {
        let me = std::process::id();
        let (Some(cpu), Some(rss)) = read_process(me) else {
            panic!("this process has /proc files")
        };
        let (Some(cpu2), Some(rss2)) = read_processes(&[me, me]) else {
            panic!("twice this process")
        };
        assert!(cpu2 >= 2.0 * cpu, "{cpu2} {cpu}");
        assert!(rss2 >= rss * 1.5, "{rss2} {rss}");
        assert_eq!(read_processes(&[me, u32::MAX]), (None, None));
    }

    #[test]
    fn proc_files() {
        let stat = "1234 (java (x) y) S 1 1234 1234 0 -1 4194560 5 0 0 0 250 150 0 0 20 0 60 0 100 1000 50";
        assert_eq!(parse_proc_stat_cpu_s(stat), Some(4.0));
        assert_eq!(parse_proc_stat_cpu_s("1 (x) S 1 2"), None);
        assert_eq!(parse_proc_stat_cpu_s("no paren"), None);
        let status = "Name:\tjava\nVmPeak:\t 1 kB\nVmRSS:\t  2048 kB\n";
        assert_eq!(parse_proc_status_rss_bytes(status), Some(2048.0 * 1024.0));
        assert_eq!(parse_proc_status_rss_bytes("VmRSS: x kB"), None);
        let (cpu, rss) = read_process(std::process::id());
        assert!(
            cpu.is_some() && rss.is_some_and(|r| r > 0.0),
            "our own process"
        );
    }

    #[test]
    fn nodetool_texts() {
        let cs =
            "pending tasks: 7\n- tlp_stress.keyvaluelargeblob_2: 7\n\nid compaction type ...\n";
        assert_eq!(parse_compactionstats_pending(cs), Some(7.0));
        assert_eq!(parse_compactionstats_pending("nothing"), None);
        let ts = "Total number of tables: 1\n----------------\nKeyspace : tlp_stress\n\tTable: keyvaluelargeblob_2\n\tSSTable count: 12\n\tOld SSTable count: 0\n\tSSTables in each level: [5/4, 7, 0, 0, 0, 0, 0, 0, 0]\n\tSpace used (live): 123456\n\tSpace used (total): 123456\n";
        assert_eq!(
            parse_tablestats(ts),
            TableStats {
                live_sstables: Some(12.0),
                space_used_bytes: Some(123456.0),
                level0_sstables: Some(5.0),
            }
        );
        assert_eq!(parse_tablestats("junk: \n:"), TableStats::default());
    }
}
