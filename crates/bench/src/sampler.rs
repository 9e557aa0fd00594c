//! Server-side sampling into server.csv, once per interval while the run
//! lasts and once more when it ends (so a run shorter than one interval
//! still has its start and its end): from a Varve node's `GET /metrics`, or for another server
//! from a Jolokia agent in each node's JVM (`--jolokia`, [`crate::jolokia`]) or `--nodetool`, and
//! `--server-pid`. Which table is under test (and
//! whether it is on LCS) changes between phases, so it is shared state the
//! phase loop updates ([`SampleTarget`]).

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::clock::Clock;
use crate::commitlog_dirs::CommitlogDirs;
use crate::error::{BenchError, Result};
use crate::external;
use crate::gc_log::GcLog;
use crate::http::{self, BaseUrl};
use crate::jolokia;
use crate::prom::{Derivative, Exposition};

/// The header of server.csv (docs/format/run-directory.md).
pub const HEADER: &str = "t,pending_compactions,compaction_bytes_per_s,live_sstables,unleveled_sstables,space_used_bytes,server_cpu_s,server_rss_bytes,compactions_completed,commitlog_bytes_per_s,pauses_per_s,pause_ms_per_s";
/// How long one scrape of /metrics may take.
pub const SCRAPE_TIMEOUT: Duration = Duration::from_secs(5);

/// Metric names as the node renders them (crates/metrics/src/names.rs with
/// the `varve_` prefix; counters get `_total`).
pub mod metric {
    pub const PENDING: &str = "varve_compaction_pending_tasks";
    pub const BYTES_COMPACTED: &str = "varve_compaction_bytes_compacted_total";
    pub const COMPACTIONS_COMPLETED: &str = "varve_compactions_completed_total";
    pub const COMMITLOG_BYTES: &str = "varve_commitlog_bytes_written_total";
    pub const STALLS: &str = "varve_runtime_stalls_total";
    pub const STALL_MICROS: &str = "varve_runtime_stall_micros_total";
    pub const LIVE_SSTABLES: &str = "varve_table_live_sstables";
    pub const SSTABLES_PER_LEVEL: &str = "varve_table_sstables_per_level";
    pub const SPACE_USED: &str = "varve_table_live_disk_space_used_bytes";
    pub const CPU: &str = "process_cpu_seconds_total";
    pub const RSS: &str = "process_resident_memory_bytes";
}

/// One row of server.csv (`None` is an empty cell): the report's own type,
/// so that what the bench writes is what the report reads.
pub use varve_report::ServerRow;

/// The table under test.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TableUnderTest {
    pub keyspace: String,
    pub table: String,
    /// On LCS: report level 0 as the unleveled sstables.
    pub leveled: bool,
}

/// The table under test, updated by the phase loop.
pub type SampleTarget = Arc<Mutex<TableUnderTest>>;

/// Where server numbers come from.
#[derive(Debug, Clone)]
pub enum Source {
    /// Varve admin ports: one node's, or every node's of a cluster the
    /// bench started (their numbers summed).
    Admin(Vec<BaseUrl>),
    /// Nodetool command prefixes (for Cassandra): one node's, or one per
    /// node of a cluster (their numbers summed).
    Nodetool(Vec<Vec<String>>),
    /// Jolokia agents (for Cassandra), one per node, sampled every
    /// interval (numbers summed); nodetool, if given, for the actions
    /// (flush, garbagecollect).
    Jolokia {
        agents: Vec<BaseUrl>,
        nodetool: Vec<Vec<String>>,
    },
    /// Nothing but, perhaps, `/proc/PID`.
    None,
}

/// The cumulative counters a row turns into rates, each with its last
/// reading.
#[derive(Debug, Clone, Default)]
pub struct Rates {
    pub compacted: Derivative,
    pub commitlog: Derivative,
    pub stalls: Derivative,
    pub stall_micros: Derivative,
}

/// A row from one /metrics exposition. `rates` turns the cumulative
/// bytes-compacted and commitlog counters into bytes per second.
pub fn row_from_metrics(
    t: f64,
    e: &Exposition,
    table: &TableUnderTest,
    rates: &mut Rates,
) -> ServerRow {
    let filter = [
        ("keyspace", table.keyspace.as_str()),
        ("table", table.table.as_str()),
    ];
    let unleveled = if table.leveled && e.has(metric::SSTABLES_PER_LEVEL, &filter) {
        // Levels exist but level 0 may have no series: then it is empty.
        let l0 = [filter[0], filter[1], ("level", "0")];
        Some(e.sum(metric::SSTABLES_PER_LEVEL, &l0).unwrap_or(0.0))
    } else {
        None
    };
    ServerRow {
        t,
        pending_compactions: e.sum(metric::PENDING, &[]),
        compaction_bytes_per_s: rates.compacted.next(t, e.sum(metric::BYTES_COMPACTED, &[])),
        live_sstables: e.sum(metric::LIVE_SSTABLES, &filter),
        unleveled_sstables: unleveled,
        space_used_bytes: e.sum(metric::SPACE_USED, &filter),
        server_cpu_s: e.sum(metric::CPU, &[]),
        server_rss_bytes: e.sum(metric::RSS, &[]),
        compactions_completed: e.sum(metric::COMPACTIONS_COMPLETED, &[]),
        commitlog_bytes_per_s: rates.commitlog.next(t, e.sum(metric::COMMITLOG_BYTES, &[])),
        pauses_per_s: rates.stalls.next(t, e.sum(metric::STALLS, &[])),
        pause_ms_per_s: rates
            .stall_micros
            .next(t, e.sum(metric::STALL_MICROS, &[]))
            .map(|us| us / 1000.0),
    }
}

/// Fills `row`'s pause columns from the JVM GC logs: their pauses and
/// milliseconds, summed over the logs, as rates.
fn gc_pauses(row: &mut ServerRow, logs: &mut [GcLog], rates: &mut Rates) {
    let (mut pauses, mut ms) = (0u64, 0.0f64);
    for log in logs {
        let (n, m) = log.poll();
        pauses += n;
        ms += m;
    }
    row.pauses_per_s = rates.stalls.next(row.t, Some(pauses as f64));
    row.pause_ms_per_s = rates
        .stall_micros
        .next(row.t, Some(ms * 1000.0))
        .map(|us| us / 1000.0);
}

/// The sum of the values present; `None` when none is.
pub fn sum_present(values: impl IntoIterator<Item = Option<f64>>) -> Option<f64> {
    values
        .into_iter()
        .flatten()
        .fold(None, |acc: Option<f64>, v| Some(acc.unwrap_or(0.0) + v))
}

/// Rows of several nodes at `t` as one: each number summed over the
/// nodes that have it (empty where none has).
pub fn sum_rows(t: f64, rows: &[ServerRow]) -> ServerRow {
    let sum = |f: fn(&ServerRow) -> Option<f64>| sum_present(rows.iter().map(f));
    ServerRow {
        t,
        pending_compactions: sum(|r| r.pending_compactions),
        compaction_bytes_per_s: sum(|r| r.compaction_bytes_per_s),
        live_sstables: sum(|r| r.live_sstables),
        unleveled_sstables: sum(|r| r.unleveled_sstables),
        space_used_bytes: sum(|r| r.space_used_bytes),
        server_cpu_s: sum(|r| r.server_cpu_s),
        server_rss_bytes: sum(|r| r.server_rss_bytes),
        compactions_completed: sum(|r| r.compactions_completed),
        commitlog_bytes_per_s: sum(|r| r.commitlog_bytes_per_s),
        pauses_per_s: sum(|r| r.pauses_per_s),
        pause_ms_per_s: sum(|r| r.pause_ms_per_s),
    }
}

/// A row from every node's /metrics: each number summed over the nodes
/// (empty where no node has it), compaction bytes per second from the
/// summed counter.
pub fn row_from_nodes(
    t: f64,
    nodes: &[Exposition],
    table: &TableUnderTest,
    rates: &mut Rates,
) -> ServerRow {
    let mut each = Rates::default();
    let rows: Vec<ServerRow> = nodes
        .iter()
        .map(|e| row_from_metrics(t, e, table, &mut each))
        .collect();
    let summed = |name: &str| sum_present(nodes.iter().map(|e| e.sum(name, &[])));
    ServerRow {
        compaction_bytes_per_s: rates.compacted.next(t, summed(metric::BYTES_COMPACTED)),
        commitlog_bytes_per_s: rates.commitlog.next(t, summed(metric::COMMITLOG_BYTES)),
        pauses_per_s: rates.stalls.next(t, summed(metric::STALLS)),
        pause_ms_per_s: rates
            .stall_micros
            .next(t, summed(metric::STALL_MICROS))
            .map(|us| us / 1000.0),
        ..sum_rows(t, &rows)
    }
}

fn cell(v: Option<f64>) -> String {
    match v {
        Some(v) if v.is_finite() => {
            if v.fract() == 0.0 && v.abs() < 1e15 {
                format!("{}", v as i64)
            } else {
                format!("{v:.3}")
            }
        }
        _ => String::new(),
    }
}

/// The text of server.csv.
pub fn render(rows: &[ServerRow]) -> String {
    let mut out = format!("{HEADER}\n");
    for r in rows {
        let cells = [
            r.pending_compactions,
            r.compaction_bytes_per_s,
            r.live_sstables,
            r.unleveled_sstables,
            r.space_used_bytes,
            r.server_cpu_s,
            r.server_rss_bytes,
            r.compactions_completed,
            r.commitlog_bytes_per_s,
            r.pauses_per_s,
            r.pause_ms_per_s,
        ]
        .map(cell);
        out.push_str(&format!("{:.3},{}\n", r.t.max(0.0), cells.join(",")));
    }
    out
}

/// The rows sampled so far, readable while the run goes on (the rate
/// judgement reads a phase's rows as it ends).
#[derive(Debug, Clone, Default)]
pub struct SampledRows(Arc<Mutex<Vec<ServerRow>>>);

impl SampledRows {
    fn push(&self, row: ServerRow) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(row);
    }

    /// The rows with `from <= t <= to`.
    pub fn between(&self, from: f64, to: f64) -> Vec<ServerRow> {
        let rows = self.0.lock().unwrap_or_else(|e| e.into_inner());
        rows.iter()
            .filter(|r| r.t >= from && r.t <= to)
            .cloned()
            .collect()
    }

    fn take(&self) -> Vec<ServerRow> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// The running sampler.
pub struct Sampler {
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
    rows: SampledRows,
}

/// What the sampler needs.
#[derive(Debug, Clone)]
pub struct SamplerConfig {
    pub source: Source,
    /// Server processes to read `/proc/PID` of (a cluster's nodes: summed),
    /// used when the source does not give CPU or RSS.
    pub pids: Vec<u32>,
    pub interval: Duration,
    /// JVM GC logs (`--gc-log`, one per node) whose pauses fill the pause
    /// columns where the source gives none.
    pub gc_logs: Vec<std::path::PathBuf>,
    /// Commitlog directories (`--commitlog-dir`, one per node) whose
    /// segments' bytes fill the commitlog column where the source gives
    /// none ([`crate::commitlog_dirs`]).
    pub commitlog_dirs: Vec<std::path::PathBuf>,
}

impl Sampler {
    /// Starts sampling on `clock` (first row at once, last row when
    /// stopped).
    pub fn start(config: SamplerConfig, clock: Clock, target: SampleTarget) -> Sampler {
        let (stop, mut stopped) = watch::channel(false);
        let rows = SampledRows::default();
        let shared = rows.clone();
        let task = tokio::spawn(async move {
            let mut rates = Rates::default();
            let mut gc: Vec<GcLog> = config.gc_logs.iter().cloned().map(GcLog::new).collect();
            let mut commitlog = CommitlogDirs::new(config.commitlog_dirs.clone());
            let mut ticks = tokio::time::interval(config.interval);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            loop {
                let last = tokio::select! {
                    _ = ticks.tick() => false,
                    _ = stopped.changed() => true,
                };
                let table = target.lock().unwrap_or_else(|e| e.into_inner()).clone();
                let mut row = sample(&config, &clock, &table, &mut rates).await;
                if !gc.is_empty() && row.pauses_per_s.is_none() {
                    gc_pauses(&mut row, &mut gc, &mut rates);
                }
                if !commitlog.is_empty() && row.commitlog_bytes_per_s.is_none() {
                    row.commitlog_bytes_per_s = rates.commitlog.next(row.t, commitlog.poll());
                }
                shared.push(row);
                if last {
                    break;
                }
            }
        });
        Sampler { stop, task, rows }
    }

    /// The rows so far, shared with the sampling task.
    pub fn rows(&self) -> SampledRows {
        self.rows.clone()
    }

    /// Stops sampling and returns the rows.
    pub async fn finish(self) -> Vec<ServerRow> {
        self.stop.send_replace(true);
        let _ = self.task.await;
        self.rows.take()
    }
}

async fn sample(
    config: &SamplerConfig,
    clock: &Clock,
    table: &TableUnderTest,
    rates: &mut Rates,
) -> ServerRow {
    let t = clock.now_s();
    let mut row = match &config.source {
        Source::Admin(bases) => {
            let scrapes = bases
                .iter()
                .map(|base| http::request(base, "GET", "/metrics", SCRAPE_TIMEOUT));
            let mut expositions = Vec::with_capacity(bases.len());
            for answer in futures::future::join_all(scrapes).await {
                match answer {
                    Ok(r) if r.status == 200 => expositions.push(Exposition::parse(&r.body)),
                    _ => break,
                }
            }
            match expositions.len() == bases.len() {
                true => row_from_nodes(t, &expositions, table, rates),
                // A failed scrape is a row of empty cells: a gap in the charts.
                false => ServerRow {
                    t,
                    ..ServerRow::default()
                },
            }
        }
        Source::Nodetool(prefixes) => {
            let rows = prefixes.iter().map(|p| nodetool_row(t, p, table));
            sum_rows(t, &futures::future::join_all(rows).await)
        }
        Source::Jolokia { agents, .. } => jolokia_row(t, agents, table, rates).await,
        Source::None => ServerRow {
            t,
            ..ServerRow::default()
        },
    };
    if !config.pids.is_empty() {
        let (cpu, rss) = external::read_processes(&config.pids);
        row.server_cpu_s = row.server_cpu_s.or(cpu);
        row.server_rss_bytes = row.server_rss_bytes.or(rss);
    }
    row
}

/// A row from every node's Jolokia agent; a node that does not answer
/// makes the row a gap, as a failed scrape of /metrics does.
async fn jolokia_row(
    t: f64,
    agents: &[BaseUrl],
    table: &TableUnderTest,
    rates: &mut Rates,
) -> ServerRow {
    let body = jolokia::request_body(table);
    let reads = agents.iter().map(|agent| {
        let body = http::Body {
            content_type: "application/json",
            text: &body,
        };
        http::request_with_body(agent, "POST", jolokia::PATH, Some(body), SCRAPE_TIMEOUT)
    });
    let mut nodes = Vec::with_capacity(agents.len());
    for answer in futures::future::join_all(reads).await {
        match answer
            .ok()
            .filter(|r| r.status == 200)
            .and_then(|r| jolokia::parse(&r.body))
        {
            Some(n) => nodes.push(n),
            None => break,
        }
    }
    match nodes.len() == agents.len() {
        true => jolokia::row(t, &nodes, table, rates),
        false => ServerRow {
            t,
            ..ServerRow::default()
        },
    }
}

async fn nodetool_row(t: f64, prefix: &[String], table: &TableUnderTest) -> ServerRow {
    let qualified = format!("{}.{}", table.keyspace, table.table);
    let pending = external::run_nodetool(prefix, &["compactionstats"], external::NODETOOL_TIMEOUT)
        .await
        .ok()
        .and_then(|s| external::parse_compactionstats_pending(&s));
    let stats = external::run_nodetool(
        prefix,
        &["tablestats", &qualified],
        external::NODETOOL_TIMEOUT,
    )
    .await
    .map(|s| external::parse_tablestats(&s))
    .unwrap_or_default();
    ServerRow {
        t,
        pending_compactions: pending,
        live_sstables: stats.live_sstables,
        unleveled_sstables: stats.level0_sstables.filter(|_| table.leveled),
        space_used_bytes: stats.space_used_bytes,
        ..ServerRow::default()
    }
}

/// Writes server.csv into `dir`.
pub fn write(dir: &Path, rows: &[ServerRow]) -> Result<()> {
    let path = dir.join("server.csv");
    std::fs::write(&path, render(rows)).map_err(|e| BenchError::io(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exposition(live: u32, l0: Option<u32>, bytes: u64) -> Exposition {
        let mut text = format!(
            "varve_compaction_pending_tasks 1\nvarve_compaction_pending_tasks{{x=\"y\"}} 2\n\
             varve_compaction_bytes_compacted_total {bytes}\n\
             varve_table_live_sstables{{keyspace=\"ks\",table=\"t\"}} {live}\n\
             varve_table_live_sstables{{keyspace=\"ks\",table=\"other\"}} 99\n\
             varve_table_sstables_per_level{{keyspace=\"ks\",table=\"t\",level=\"1\"}} 3\n\
             process_cpu_seconds_total 1.25\n\
             varve_compactions_completed_total 4\n\
             varve_commitlog_bytes_written_total {commitlog}\n\
             varve_runtime_stalls_total {stalls}\n\
             varve_runtime_stall_micros_total {micros}\n",
            commitlog = bytes * 2,
            stalls = bytes / 1000,
            micros = bytes * 20
        );
        if let Some(l0) = l0 {
            text.push_str(&format!(
                "varve_table_sstables_per_level{{keyspace=\"ks\",table=\"t\",level=\"0\"}} {l0}\n"
            ));
        }
        Exposition::parse(&text)
    }

    #[test]
    fn rows_of_nodes_sum_where_any_node_has_a_number() {
        let a = ServerRow {
            t: 1.0,
            pending_compactions: Some(2.0),
            live_sstables: Some(5.0),
            ..ServerRow::default()
        };
        let b = ServerRow {
            t: 1.0,
            pending_compactions: Some(1.0),
            ..ServerRow::default()
        };
        let sum = sum_rows(1.0, &[a, b]);
        assert_eq!(sum.pending_compactions, Some(3.0));
        assert_eq!(sum.live_sstables, Some(5.0));
        assert_eq!(sum.space_used_bytes, None, "no node has it");
    }

    #[test]
    fn a_clusters_row_sums_its_nodes() {
        let table = TableUnderTest {
            keyspace: "ks".into(),
            table: "t".into(),
            leveled: true,
        };
        let nodes = [exposition(3, Some(2), 1_000), exposition(4, None, 3_000)];
        let mut rates = Rates::default();
        let first = row_from_nodes(1.0, &nodes, &table, &mut rates);
        assert_eq!(first.live_sstables, Some(7.0));
        assert_eq!(
            first.unleveled_sstables,
            Some(2.0),
            "a node without level 0 adds 0"
        );
        assert_eq!(
            first.compaction_bytes_per_s, None,
            "no rate from one reading"
        );
        let later = [exposition(3, Some(2), 2_000), exposition(4, None, 5_000)];
        let second = row_from_nodes(2.0, &later, &table, &mut rates);
        assert_eq!(second.compaction_bytes_per_s, Some(3_000.0));
        assert_eq!(second.commitlog_bytes_per_s, Some(6_000.0));
        let one = row_from_metrics(2.0, &later[0], &table, &mut Rates::default());
        let alone = row_from_nodes(2.0, &later[..1], &table, &mut Rates::default());
        assert_eq!(alone.live_sstables, one.live_sstables);
    }

    #[test]
    fn rows_from_metrics() {
        let mut table = TableUnderTest {
            keyspace: "ks".into(),
            table: "t".into(),
            leveled: false,
        };
        let mut d = Rates::default();
        let r1 = row_from_metrics(1.0, &exposition(5, Some(2), 1000), &table, &mut d);
        assert_eq!(r1.pending_compactions, Some(3.0), "summed over label sets");
        assert_eq!(r1.compaction_bytes_per_s, None, "first reading");
        assert_eq!(r1.live_sstables, Some(5.0));
        assert_eq!(r1.unleveled_sstables, None, "not on LCS");
        assert_eq!(r1.space_used_bytes, None, "missing metric: empty cell");
        assert_eq!(r1.server_cpu_s, Some(1.25));
        assert_eq!(r1.server_rss_bytes, None);
        table.leveled = true;
        let r2 = row_from_metrics(3.0, &exposition(6, Some(2), 5000), &table, &mut d);
        assert_eq!(r2.compaction_bytes_per_s, Some(2000.0));
        assert_eq!(r2.unleveled_sstables, Some(2.0));
        let r3 = row_from_metrics(4.0, &exposition(6, None, 5000), &table, &mut d);
        assert_eq!(
            r3.unleveled_sstables,
            Some(0.0),
            "levels without a level-0 series"
        );
        let csv = render(&[r1, r2, r3]);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines[0], HEADER);
        assert_eq!(lines[1], "1.000,3,,5,,,1.250,,4,,,");
        // Over 2 s: 4 stalls more (2 per second), 80 ms more (40 per second).
        assert_eq!(lines[2], "3.000,3,2000,6,2,,1.250,,4,4000,2,40");
        let parsed = varve_report::load::parse_server(Path::new("server.csv"), csv.as_bytes())
            .expect("the report reads what we write");
        assert_eq!(parsed[1].unleveled_sstables, Some(2.0));
        assert_eq!(parsed[0].space_used_bytes, None);
    }

    #[tokio::test]
    async fn a_sampler_without_a_source_reads_proc() {
        let target: SampleTarget = Arc::default();
        let config = SamplerConfig {
            source: Source::None,
            pids: vec![std::process::id()],
            interval: Duration::from_millis(100),
            gc_logs: Vec::new(),
            commitlog_dirs: Vec::new(),
        };
        let sampler = Sampler::start(config, Clock::start(), target);
        tokio::time::sleep(Duration::from_millis(350)).await;
        let so_far = sampler.rows().between(0.0, 60.0);
        assert!(
            so_far.len() >= 3,
            "readable while sampling: {}",
            so_far.len()
        );
        assert!(sampler.rows().between(60.0, 120.0).is_empty());
        let rows = sampler.finish().await;
        assert!(rows.len() >= 3, "{}", rows.len());
        assert!(rows
            .iter()
            .all(|r| r.server_cpu_s.is_some() && r.live_sstables.is_none()));
        assert!(rows.windows(2).all(|w| w[0].t < w[1].t));
    }

    /// A JVM's GC log fills the pause columns: pauses written between the
    /// first sample and the last come out as a rate.
    #[tokio::test]
    async fn a_gc_log_gives_pauses_per_second() {
        let dir = std::env::temp_dir().join(format!("varve-sampler-gc-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("gc.log");
        let pause = "[..] GC(1) Pause Young (Normal) (G1 Evacuation Pause) 5M->1M(64M) 25.000ms\n";
        std::fs::write(&path, pause).unwrap();
        let config = SamplerConfig {
            source: Source::None,
            pids: Vec::new(),
            interval: Duration::from_secs(3600),
            gc_logs: vec![path.clone()],
            commitlog_dirs: Vec::new(),
        };
        let sampler = Sampler::start(config, Clock::start(), Arc::default());
        tokio::time::sleep(Duration::from_millis(100)).await;
        std::fs::write(&path, pause.repeat(3)).unwrap();
        let rows = sampler.finish().await;
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].pauses_per_s, None, "no rate from one reading");
        let (per_s, ms) = (
            rows[1].pauses_per_s.unwrap(),
            rows[1].pause_ms_per_s.unwrap(),
        );
        // Two pauses of 25 ms more, over the time between the two rows.
        let dt = rows[1].t - rows[0].t;
        assert!((per_s * dt - 2.0).abs() < 1e-6, "{per_s} over {dt}");
        assert!((ms * dt - 50.0).abs() < 1e-6, "{ms} over {dt}");
    }

    /// Commitlog directories fill the commitlog column: bytes a segment
    /// took between the first sample and the last come out as a rate.
    #[tokio::test]
    async fn commitlog_directories_give_bytes_per_second() {
        let dir = std::env::temp_dir().join(format!("varve-sampler-cl-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let config = SamplerConfig {
            source: Source::None,
            pids: Vec::new(),
            interval: Duration::from_secs(3600),
            gc_logs: Vec::new(),
            commitlog_dirs: vec![dir.clone()],
        };
        let sampler = Sampler::start(config, Clock::start(), Arc::default());
        tokio::time::sleep(Duration::from_millis(100)).await;
        std::fs::write(dir.join("CommitLog-7-1.log"), vec![1u8; 256 << 10]).unwrap();
        let rows = sampler.finish().await;
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(
            rows[0].commitlog_bytes_per_s, None,
            "no rate from one reading"
        );
        let bytes = rows[1].commitlog_bytes_per_s.unwrap() * (rows[1].t - rows[0].t);
        assert!(
            (255.0 * 1024.0..300.0 * 1024.0).contains(&bytes),
            "256 KiB written: {bytes}"
        );
    }

    /// A run shorter than one interval has two rows: its start and its end.
    #[tokio::test]
    async fn a_run_shorter_than_the_interval_has_its_start_and_end() {
        let config = SamplerConfig {
            source: Source::None,
            pids: vec![std::process::id()],
            interval: Duration::from_secs(3600),
            gc_logs: Vec::new(),
            commitlog_dirs: Vec::new(),
        };
        let sampler = Sampler::start(config, Clock::start(), Arc::default());
        tokio::time::sleep(Duration::from_millis(50)).await;
        let rows = sampler.finish().await;
        assert_eq!(rows.len(), 2, "{rows:?}");
        assert!(
            rows[1].t >= 0.04,
            "the last row is taken at the end: {rows:?}"
        );
    }

    /// A node's agent answering in chunks, as Jolokia's does, and one that
    /// does not answer: the first gives numbers, the second a gap.
    #[tokio::test]
    async fn jolokia_agents_are_read_in_one_request_each() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let agent = BaseUrl::parse(&listener.local_addr().unwrap().to_string()).unwrap();
        let answer = r#"[{"value":3,"status":200},{"value":9,"status":200},{"value":100,"status":200},{"value":5,"status":200},{"value":4096,"status":200},{"value":[2,3],"status":200}]"#;
        let server = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut request = Vec::new();
            let mut buf = [0u8; 4096];
            // The head and its JSON body (ends with `]`).
            while !request.ends_with(b"]") {
                let n = s.read(&mut buf).await.unwrap();
                assert!(n > 0, "closed before the body");
                request.extend_from_slice(&buf[..n]);
            }
            let (a, b) = answer.split_at(40);
            let reply = format!(
                "HTTP/1.1 200 OK\r\nTransfer-encoding: chunked\r\n\r\n{:x}\r\n{a}\r\n{:x}\r\n{b}\r\n0\r\n\r\n",
                a.len(),
                b.len()
            );
            s.write_all(reply.as_bytes()).await.unwrap();
            String::from_utf8(request).unwrap()
        });
        let table = TableUnderTest {
            keyspace: "ks".into(),
            table: "t".into(),
            leveled: true,
        };
        let mut rates = Rates::default();
        let row = jolokia_row(1.0, std::slice::from_ref(&agent), &table, &mut rates).await;
        let request = server.await.unwrap();
        assert!(
            request.starts_with("POST /jolokia/ HTTP/1.1\r\n"),
            "{request}"
        );
        assert!(request.contains("Content-Type: application/json\r\n"));
        assert!(request.contains("keyspace=ks,scope=t,name=LiveSSTableCount"));
        assert_eq!(row.pending_compactions, Some(3.0));
        assert_eq!(row.compactions_completed, Some(9.0));
        assert_eq!(row.live_sstables, Some(5.0));
        assert_eq!(row.unleveled_sstables, Some(2.0));
        assert_eq!(row.space_used_bytes, Some(4096.0));
        // Nobody listens there any more: the row is a gap.
        let gap = jolokia_row(2.0, &[agent], &table, &mut rates).await;
        assert_eq!(gap.pending_compactions, None);
        assert_eq!(gap.t, 2.0);
    }
}
