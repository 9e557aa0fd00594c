//! The [`Runner`]: one connection, any number of phases, one run directory.
//!
//! ```text
//! let mut runner = Runner::new(config).await?;          // connect, schema, prepare
//! runner.run_phase("warmup", warmup_spec).await?;       // recorded: false -> no trace
//! let steady = runner.run_phase("steady", spec).await?; // PhaseResult
//! let summary = runner.finish()?;                       // writes config.out if set
//! ```
//!
//! `t = 0` of the run is the start of its first recorded phase. A phase
//! spawns `concurrency` workers that share a ticket counter (ticket = the
//! operation's number in the phase, which drives `seq` populations and the
//! fixed-rate schedule); the calling task reports every interval. Stopping
//! ([`StopHandle::stop`], Ctrl-C in `varve stress`) ends issuing at once,
//! waits up to [`DRAIN_TIMEOUT`] for operations in flight, and marks the
//! phase `interrupted`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use rand::SeedableRng;
use scylla::client::session::Session;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::config::{consistency_name, StressConfig, CONCURRENCY_MAX};
use crate::error::{Result, StressError};
use crate::output::hlog::HlogBuffer;
use crate::output::intervals::IntervalRow;
use crate::output::summary::{PhaseResult, RunSummary, Target, WorkloadInfo};
use crate::output::{intervals, write_file, RUN_DIRECTORY_FORMAT};
use crate::schedule::{later, Schedule};
use crate::spec::{Limit, Op, PhaseSpec, Rate};
use crate::stats::{latency_ms, OpCounters, Recorder};
use crate::values::mix64;
use crate::worker::PhaseCtx;
use crate::workload::{setup_schema, Statements, WorkerState};

/// How long a stopped phase waits for operations in flight.
pub const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest phase name.
pub const PHASE_NAME_MAX: usize = 64;

/// Stops the running phase (and every later one) from another task.
#[derive(Debug, Clone)]
pub struct StopHandle(Arc<watch::Sender<bool>>);

impl StopHandle {
    /// Stop issuing operations; the phase ends once those in flight do.
    pub fn stop(&self) {
        self.0.send_replace(true);
    }

    /// True once [`StopHandle::stop`] was called.
    pub fn is_stopped(&self) -> bool {
        *self.0.borrow()
    }
}

/// A connected load generator (see the module documentation).
pub struct Runner {
    config: StressConfig,
    session: Arc<Session>,
    statements: Arc<Statements>,
    target: Target,
    stop: StopHandle,
    started_wall: SystemTime,
    /// Start of the first recorded phase: `t = 0`.
    run_start: Option<(Instant, SystemTime)>,
    workload_info: Option<WorkloadInfo>,
    phases: Vec<PhaseResult>,
    intervals: Vec<IntervalRow>,
    hlogs: BTreeMap<Op, HlogBuffer>,
    phases_started: u64,
}

impl Runner {
    /// Validates `config`, connects, creates the schema and prepares the
    /// workload's statements.
    pub async fn new(config: StressConfig) -> Result<Runner> {
        config.validate()?;
        let started_wall = SystemTime::now();
        let session = crate::target::connect(&config).await?;
        let target = crate::target::detect(&session, &config).await;
        setup_schema(&session, &config).await?;
        let statements = Statements::prepare(&session, &config).await?;
        let (stop, _) = watch::channel(false);
        Ok(Runner {
            config,
            session: Arc::new(session),
            statements: Arc::new(statements),
            target,
            stop: StopHandle(Arc::new(stop)),
            started_wall,
            run_start: None,
            workload_info: None,
            phases: Vec::new(),
            intervals: Vec::new(),
            hlogs: BTreeMap::new(),
            phases_started: 0,
        })
    }

    /// A handle that stops the current phase (Ctrl-C).
    pub fn stop_handle(&self) -> StopHandle {
        self.stop.clone()
    }

    /// What the runner is connected to.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// The recorded phases so far.
    pub fn phases(&self) -> &[PhaseResult] {
        &self.phases
    }

    /// The driver session, for callers that run their own statements
    /// between phases (e.g. `ALTER TABLE` in `varve bench`).
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// Seconds since `t = 0` of the run (0 before the first recorded phase).
    pub fn elapsed_s(&self) -> f64 {
        self.run_start
            .map_or(0.0, |(i, _)| i.elapsed().as_secs_f64())
    }

    /// Runs one phase to its limit (or until stopped) and returns its
    /// results; a recorded phase is also kept for [`Runner::finish`].
    pub async fn run_phase(&mut self, name: &str, spec: PhaseSpec) -> Result<PhaseResult> {
        let spec = self.check_phase(name, spec)?;
        let phase_start = Instant::now();
        if spec.recorded && self.run_start.is_none() {
            self.run_start = Some((phase_start, SystemTime::now()));
        }
        if spec.recorded && self.workload_info.is_none() {
            self.workload_info = Some(self.workload_info_for(&spec));
        }
        self.phases_started += 1;
        let recorder = Arc::new(Recorder::new(spec.mix.ops()));
        let ctx = Arc::new(PhaseCtx {
            schedule: Schedule::new(spec.rate, phase_start),
            deadline: match spec.limit {
                Limit::Duration(d) => Some(later(phase_start, d)),
                Limit::Ops(_) => None,
            },
            spec,
            session: Arc::clone(&self.session),
            statements: Arc::clone(&self.statements),
            recorder: Arc::clone(&recorder),
            tickets: AtomicU64::new(0),
            population: self.config.population,
            stop: self.stop.0.subscribe(),
        });
        let mut workers = JoinSet::new();
        for id in 0..ctx.spec.concurrency as u64 {
            let seed = mix64(self.config.seed ^ mix64(id | self.phases_started << 32));
            let state = WorkerState {
                rng: rand::rngs::StdRng::seed_from_u64(seed),
                lwt_seen: Default::default(),
            };
            workers.spawn(crate::worker::run(Arc::clone(&ctx), state));
        }
        let interrupted = self
            .report_until_done(name, &ctx, phase_start, &mut workers)
            .await;
        let end = Instant::now();
        let result = self.phase_result(name, &ctx, phase_start, end, interrupted);
        if ctx.spec.recorded {
            self.phases.push(result.clone());
        }
        Ok(result)
    }

    /// Checks a phase before it starts; lwt gets its own names for write/read.
    fn check_phase(&self, name: &str, mut spec: PhaseSpec) -> Result<PhaseSpec> {
        check_phase_limits(name, spec.concurrency)?;
        spec.rate.validate()?;
        let workload = self.config.workload;
        spec.mix = spec.mix.map(|op| workload.translate(op));
        if let Some(op) = spec.mix.ops().find(|op| !workload.supports(*op)) {
            return Err(StressError::config(
                "ratio",
                format!("workload {workload} has no `{op}` operation"),
            ));
        }
        Ok(spec)
    }

    fn workload_info_for(&self, spec: &PhaseSpec) -> WorkloadInfo {
        let c = &self.config;
        WorkloadInfo {
            name: c.workload.name().to_string(),
            rate: spec.rate.to_string(),
            concurrency: spec.concurrency,
            consistency: consistency_name(c.consistency).to_string(),
            population: c.population.to_string(),
            columns: c.column_count,
            column_size: c.column_size,
        }
    }

    /// Reports every interval until all workers are done; returns whether
    /// the phase was stopped.
    async fn report_until_done(
        &mut self,
        name: &str,
        ctx: &PhaseCtx,
        phase_start: Instant,
        workers: &mut JoinSet<()>,
    ) -> bool {
        let interval = self.config.interval;
        let mut stop = self.stop.0.subscribe();
        let mut last_tick = phase_start;
        let mut next_tick = later(phase_start, interval);
        let mut drain_deadline: Option<Instant> = None;
        let mut interrupted = *stop.borrow();
        loop {
            tokio::select! {
                joined = workers.join_next() => {
                    if joined.is_none() {
                        break;
                    }
                }
                _ = tokio::time::sleep_until(next_tick) => {
                    if ctx.deadline.is_some_and(|d| next_tick >= d) {
                        // Issuing is over: the last interval ends when the
                        // operations still in flight do, so they land in it
                        // instead of in a sliver of their own.
                        next_tick = far_future();
                        continue;
                    }
                    self.flush_interval(name, ctx, last_tick, next_tick);
                    last_tick = next_tick;
                    next_tick = later(next_tick, interval);
                }
                changed = stop.changed(), if drain_deadline.is_none() => {
                    if changed.is_err() || *stop.borrow() {
                        interrupted = true;
                        drain_deadline = Some(later(Instant::now(), DRAIN_TIMEOUT));
                    }
                }
                _ = sleep_until_opt(drain_deadline) => {
                    workers.abort_all();
                    while workers.join_next().await.is_some() {}
                    break;
                }
            }
        }
        let end = Instant::now();
        if end > last_tick {
            self.flush_interval(name, ctx, last_tick, end);
        }
        interrupted
    }

    /// Takes the interval's counters: intervals.csv rows and hlog intervals
    /// (recorded phases), and the progress line (all phases).
    fn flush_interval(&mut self, name: &str, ctx: &PhaseCtx, from: Instant, to: Instant) {
        let seconds = to.saturating_duration_since(from).as_secs_f64();
        let mut total = OpCounters::default();
        for op in ctx.recorder.ops().collect::<Vec<_>>() {
            let counters = ctx.recorder.take_interval(op);
            total.merge(&counters);
            let Some((run_start, _)) = self.run_start.filter(|_| ctx.spec.recorded) else {
                continue;
            };
            let t = to.saturating_duration_since(run_start).as_secs_f64();
            self.intervals.push(IntervalRow::from_counters(
                t,
                seconds,
                name,
                op.name(),
                &counters,
            ));
            let start = from.saturating_duration_since(run_start);
            let length = to.saturating_duration_since(from);
            // An hlog that cannot be appended to is reported at the end, by
            // its missing intervals; it must not stop the run.
            let _ =
                self.hlogs
                    .entry(op)
                    .or_default()
                    .append(&counters.latency_us, start, length, name);
        }
        if self.config.progress {
            let ops_per_s = if seconds > 0.0 {
                total.count() as f64 / seconds
            } else {
                0.0
            };
            let p99 = latency_ms(&total.latency_us)
                .map_or_else(|| "-".to_string(), |l| format!("{:.2}", l.p99));
            let elapsed = to
                .saturating_duration_since(ctx.schedule.start())
                .as_secs_f64();
            eprintln!(
                "[{name}] {elapsed:7.1}s {ops_per_s:10.1} ops/s  p99 {p99:>8} ms  errors {}",
                total.error_count()
            );
        }
    }

    fn phase_result(
        &self,
        name: &str,
        ctx: &PhaseCtx,
        start: Instant,
        end: Instant,
        interrupted: bool,
    ) -> PhaseResult {
        let elapsed = end.saturating_duration_since(start);
        let mut ops = BTreeMap::new();
        let mut total = OpCounters::default();
        for op in ctx.recorder.ops() {
            let counters = ctx.recorder.phase(op);
            total.merge(&counters);
            ops.insert(op.name().to_string(), counters.result(elapsed));
        }
        ops.insert("total".to_string(), total.result(elapsed));
        let t = |i: Instant| {
            self.run_start.map_or(0.0, |(s, _)| {
                crate::stats::round3(i.saturating_duration_since(s).as_secs_f64())
            })
        };
        PhaseResult {
            name: name.to_string(),
            start_t: t(start),
            end_t: t(end),
            ops,
            extra: ctx.recorder.extra(),
            interrupted,
        }
    }

    /// The summary of the recorded phases; with `config.out`, also writes
    /// summary.json, intervals.csv and hdr/<op>.hlog there.
    pub fn finish(self) -> Result<RunSummary> {
        let summary = self.summary();
        if let Some(dir) = &self.config.out {
            self.write_outputs(dir, &summary)?;
        }
        Ok(summary)
    }

    fn summary(&self) -> RunSummary {
        let started = self.run_start.map_or(self.started_wall, |(_, wall)| wall);
        let unix_s = started
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        RunSummary {
            format: RUN_DIRECTORY_FORMAT,
            tool: format!("varve stress {}", env!("CARGO_PKG_VERSION")),
            started_at: crate::output::summary::utc_timestamp(unix_s),
            target: self.target.clone(),
            command: self.config.command.clone(),
            workload: self.workload_info.clone().unwrap_or_else(|| {
                self.workload_info_for(&PhaseSpec {
                    mix: crate::spec::OpMix::only(Op::Write),
                    rate: Rate::Unlimited,
                    limit: Limit::Ops(0),
                    concurrency: 0,
                    recorded: true,
                })
            }),
            phases: self.phases.clone(),
        }
    }

    fn write_outputs(&self, dir: &std::path::Path, summary: &RunSummary) -> Result<PathBuf> {
        let path = write_file(dir, "summary.json", summary.to_json()?.as_bytes())?;
        write_file(
            dir,
            "intervals.csv",
            intervals::render(&self.intervals).as_bytes(),
        )?;
        let base = self.run_start.map_or(self.started_wall, |(_, wall)| wall);
        for (op, log) in &self.hlogs {
            let bytes = log
                .render(op.name(), base)
                .map_err(|source| StressError::Output {
                    path: dir.join("hdr"),
                    source,
                })?;
            write_file(dir, &format!("hdr/{}.hlog", op.name()), &bytes)?;
        }
        Ok(path)
    }
}

/// A tick that never comes.
fn far_future() -> Instant {
    later(Instant::now(), crate::schedule::FAR_FUTURE)
}

/// Sleeps until `at`, or forever when `None`.
async fn sleep_until_opt(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// The phase name (it becomes a CSV cell and a report heading) and the
/// concurrency, against their limits.
fn check_phase_limits(name: &str, concurrency: usize) -> Result<()> {
    let name_ok = !name.is_empty()
        && name.len() <= PHASE_NAME_MAX
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.');
    if !name_ok {
        return Err(StressError::config(
            "phase name",
            format!("`{name}` (letters, digits, _-. only)"),
        ));
    }
    if concurrency == 0 || concurrency > CONCURRENCY_MAX {
        return Err(StressError::config(
            "concurrency",
            format!("{concurrency} is outside 1..={CONCURRENCY_MAX}"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod limit_tests {
    use super::*;

    #[test]
    fn phase_limits_hold_at_n_and_fail_at_n_plus_one() {
        assert!(check_phase_limits("steady", CONCURRENCY_MAX).is_ok());
        assert!(check_phase_limits("steady", CONCURRENCY_MAX + 1).is_err());
        assert!(check_phase_limits("steady", 0).is_err());
        let longest = "p".repeat(PHASE_NAME_MAX);
        assert!(check_phase_limits(&longest, 1).is_ok());
        assert!(check_phase_limits(&format!("{longest}p"), 1).is_err());
        assert!(check_phase_limits("a,b", 1).is_err());
    }
}
