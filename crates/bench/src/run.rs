//! One `varve bench` run: the node, the sampler, the segments with their
//! phases and actions, then the run directory and its report.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;
use varve_stress::{RunSummary, Runner, StressConfig};

use crate::actions;
use crate::cgroup::{self, RunCgroups};
use crate::cli::{BenchOptions, Target, SAMPLE_INTERVAL};
use crate::clock::Clock;
use crate::cluster::EmbeddedCluster;
use crate::error::{BenchError, Result};
use crate::events::EventLog;
use crate::interrupt::Interrupt;
use crate::judge;
use crate::merge::{self, BenchInfo, Part, SegmentInfo, PARTS_DIR};
use crate::node::{self, EmbeddedNode};
use crate::plan::{self, Action, Plan, Segment, Step};
use crate::rate_report::{self, RateResult, RateSearchInfo};
use crate::sampler::{
    self, SampleTarget, SampledRows, Sampler, SamplerConfig, Source, TableUnderTest,
};
use crate::seed_table;

/// How long the end of a segment waits for a garbagecollect still running.
pub const GARBAGECOLLECT_WAIT_MAX: Duration = Duration::from_secs(600);
/// The admin port `varve stress` probes when none is known (Varve's default).
const DEFAULT_ADMIN_PORT: u16 = 9180;

/// What a run produced.
#[derive(Debug)]
pub struct Outcome {
    pub out: PathBuf,
    pub summary: Option<RunSummary>,
    pub report: Option<varve_report::Rendered>,
    pub compare: Option<varve_report::Rendered>,
    pub interrupted: bool,
}

/// Where the load goes, once the node (if any) is up.
struct Endpoint {
    node: Option<EmbeddedNode>,
    cluster: Option<EmbeddedCluster>,
    hosts: Vec<String>,
    source: Source,
    pids: Vec<u32>,
    admin_port: u16,
    /// The started nodes' memory cgroups (`--memory-cap`). Declared after
    /// the nodes: dropped after them, so a node is gone before its cgroup.
    cgroups: Option<RunCgroups>,
}

/// Everything the phase loop shares.
struct Ctx<'a> {
    opts: &'a BenchOptions,
    hosts: &'a [String],
    admin_port: u16,
    source: &'a Source,
    events: EventLog,
    target: SampleTarget,
    interrupt: Interrupt,
    /// The server rows so far, for judging a phase as it ends.
    rows: SampledRows,
    /// End the run at the first judged phase that falls behind.
    stop_when_behind: bool,
    /// Each judged phase's outcome, in order.
    judged: std::sync::Mutex<Vec<RateResult>>,
}

/// Runs the benchmark `opts` describes (see the crate documentation).
pub async fn run(opts: BenchOptions) -> Result<Outcome> {
    let plan = match &opts.rate_search {
        Some(search) => plan::build_rates(search, opts.size),
        None => plan::build(opts.scenario, opts.variant, opts.size)?,
    };
    print!("{}", plan.describe());
    if opts.size.is_seed_scale() && opts.memory_cap.is_none() && !opts.plan_only {
        println!("note: no --memory-cap: the nodes' page cache may hold much of the data");
    }
    let mut outcome = Outcome {
        out: opts.out.clone(),
        summary: None,
        report: None,
        compare: None,
        interrupted: false,
    };
    if opts.plan_only {
        return Ok(outcome);
    }
    prepare_out(&opts.out)?;
    let interrupt = Interrupt::default();
    let signals = interrupt.install();
    let mut endpoint = connect(&opts).await?;
    interrupt.set_node_pids(match &opts.target {
        Target::Hosts { .. } => &[],
        _ => &endpoint.pids,
    });
    if let Some(cgroups) = &endpoint.cgroups {
        interrupt.set_cgroups(cgroups.paths().clone());
    }
    let clock = Clock::start();
    let events = EventLog::new(clock.clone());
    let target: SampleTarget = Arc::default();
    let sampler = Sampler::start(
        SamplerConfig {
            source: endpoint.source.clone(),
            pids: endpoint.pids.clone(),
            interval: SAMPLE_INTERVAL,
            gc_logs: match &opts.target {
                Target::Hosts { gc_logs, .. } => gc_logs.clone(),
                _ => Vec::new(),
            },
            commitlog_dirs: match &opts.target {
                Target::Hosts { commitlog_dirs, .. } => commitlog_dirs.clone(),
                _ => Vec::new(),
            },
        },
        clock.clone(),
        Arc::clone(&target),
    );
    let ctx = Ctx {
        opts: &opts,
        hosts: &endpoint.hosts,
        admin_port: endpoint.admin_port,
        source: &endpoint.source,
        events: events.clone(),
        target,
        interrupt: interrupt.clone(),
        rows: sampler.rows(),
        stop_when_behind: plan.stop_when_behind,
        judged: Default::default(),
    };
    let mut parts = Vec::new();
    let mut measured = Ok(());
    for segment in &plan.segments {
        if interrupt.is_stopped() || ctx.search_is_over() {
            break;
        }
        if let Err(e) = run_segment(&ctx, &clock, segment, &mut parts).await {
            measured = Err(e);
            break;
        }
    }
    outcome.interrupted = interrupt.is_stopped();
    // Whatever happened, keep what was measured.
    let rows = sampler.finish().await;
    sampler::write(&opts.out, &rows)?;
    events.write(&opts.out)?;
    let stopped = match (endpoint.node.take(), endpoint.cluster.take()) {
        (Some(node), _) => node.stop().await,
        (None, Some(cluster)) => cluster.stop(),
        (None, None) => Ok(()),
    };
    let uncapped = record_memory(&opts, endpoint.cgroups.take());
    signals.abort();
    let judged = std::mem::take(&mut *ctx.judged.lock().unwrap_or_else(|e| e.into_inner()));
    let rate_search = opts
        .rate_search
        .as_ref()
        .map(|s| RateSearchInfo::new(s.stop_when_behind, judged));
    if !parts.is_empty() {
        let mut info = bench_info(&plan, &opts);
        info.rate_search = rate_search.clone();
        let tool = format!("varve bench {}", env!("CARGO_PKG_VERSION"));
        let summary = merge::merge(&opts.out, &parts, &tool, &opts.command, &info)?;
        print!("{}", varve_stress::output::table::render(&summary));
        let seed_md = opts.out.join("bench.md");
        let seeds = seed_table::seeds(plan.scenario, plan.variant);
        let mut seed_text = seed_table::render(plan.scenario, seeds, &summary);
        if let Some(search) = &rate_search {
            let text = rate_report::render(search);
            let path = opts.out.join("rates.md");
            std::fs::write(&path, &text).map_err(|e| BenchError::io(&path, e))?;
            seed_text.push('\n');
            seed_text.push_str(&text);
            println!(
                "rate search: {} ({})",
                rate_report::conclusion(search),
                path.display()
            );
        }
        std::fs::write(&seed_md, seed_text).map_err(|e| BenchError::io(&seed_md, e))?;
        outcome.summary = Some(summary);
        let report = varve_report::render_dir(&opts.out, None)?;
        println!("summary: {}", opts.out.join("summary.json").display());
        println!("seed table: {}", seed_md.display());
        println!("report: {}", report.markdown.display());
        println!("report: {}", report.html.display());
        println!(
            "charts ({}): {}",
            report.charts.len(),
            report.expected_chart_ids().join(" ")
        );
        outcome.report = Some(report);
        if let Some(other) = &opts.compare_with {
            let path = seed_side_by_side(&plan, &opts.out, other, &summary_of(&opts.out)?)?;
            println!("seed table side by side: {}", path.display());
            let compared = varve_report::compare(&opts.out, other, &opts.out)?;
            println!("compare: {}", compared.markdown.display());
            println!("compare: {}", compared.html.display());
            outcome.compare = Some(compared);
        }
    }
    measured?;
    stopped?;
    uncapped?;
    if outcome.summary.is_none() {
        return Err(BenchError::Invalid {
            path: opts.out.clone(),
            detail: "stopped before any phase ran: nothing was measured".into(),
        });
    }
    Ok(outcome)
}

/// The run directory must be new or empty: a node-data/ left by an earlier
/// run would change what this one measures.
fn prepare_out(out: &Path) -> Result<()> {
    if let Ok(mut entries) = std::fs::read_dir(out) {
        if entries.next().is_some() {
            return Err(BenchError::config(
                "out",
                format!("{} exists and is not empty", out.display()),
            ));
        }
    }
    std::fs::create_dir_all(out).map_err(|e| BenchError::io(out, e))
}

/// Writes memory.csv from the nodes' cgroups (the bench's own, then
/// removed; or `--memory-cgroup`'s, only read), once the nodes are stopped.
fn record_memory(opts: &BenchOptions, cgroups: Option<RunCgroups>) -> Result<()> {
    let (rows, removed) = match (cgroups, &opts.target) {
        (Some(own), _) => (own.usage(), own.remove()),
        (None, Target::Hosts { memory_cgroups, .. }) if !memory_cgroups.is_empty() => {
            (cgroup::observe(memory_cgroups), Ok(()))
        }
        _ => return Ok(()),
    };
    cgroup::write_csv(&opts.out, &rows)?;
    for r in &rows {
        let mib = |b: Option<u64>| b.map_or("?".into(), |b| format!("{}", b >> 20));
        println!(
            "memory: node {} cap {} MiB, peak {} MiB, OOM kills {} ({})",
            r.node,
            r.cap_bytes >> 20,
            mib(r.peak_bytes),
            r.oom_kills.map_or("?".into(), |n| n.to_string()),
            r.cgroup
        );
    }
    removed
}

/// The run's fresh memory cgroups for `nodes` nodes when `--memory-cap`
/// is given; refused when they cannot be made.
fn make_cgroups(opts: &BenchOptions, nodes: usize) -> Result<Option<RunCgroups>> {
    let Some(cap) = opts.memory_cap else {
        return Ok(None);
    };
    let root = Path::new(cgroup::MEMORY_ROOT);
    cgroup::check_available(root)?;
    let name = cgroup::run_name(&opts.out, std::process::id());
    let cgroups = RunCgroups::create(root, &name, nodes, cap)?;
    println!(
        "memory cap: {} MiB per node, page cache included (cgroups {}/node1..{nodes})",
        cap >> 20,
        cgroups.paths().dir.display()
    );
    Ok(Some(cgroups))
}

/// Starts the embedded node, or describes the given hosts.
async fn connect(opts: &BenchOptions) -> Result<Endpoint> {
    match &opts.target {
        Target::Embedded { exe, config } => {
            let config = node_config(opts, config.as_deref())?;
            let cgroups = make_cgroups(opts, 1)?;
            let cgroup = cgroups.as_ref().and_then(|c| c.node(1));
            let node = EmbeddedNode::start(exe, &opts.out, &config, cgroup).await?;
            println!(
                "embedded node: CQL on {}, admin on {} (log {})",
                node.cql,
                node.admin.url(""),
                node.log.display()
            );
            Ok(Endpoint {
                hosts: vec![node.cql.clone()],
                source: Source::Admin(vec![node.admin.clone()]),
                pids: node.pid().into_iter().collect(),
                admin_port: port_of(&node.admin.authority).unwrap_or(DEFAULT_ADMIN_PORT),
                node: Some(node),
                cluster: None,
                cgroups,
            })
        }
        Target::Cluster { exe, config, nodes } => {
            let config = node_config(opts, config.as_deref())?;
            let cgroups = make_cgroups(opts, *nodes)?;
            let parent = cgroups.as_ref().map(|c| c.paths().dir.clone());
            let cluster =
                EmbeddedCluster::start(exe, &opts.out, &config, *nodes, parent.as_deref())?;
            println!(
                "local cluster of {nodes}: CQL on {} (admin port {}, directory {})",
                cluster.hosts.join(", "),
                crate::cluster::CLUSTER_ADMIN_PORT,
                opts.out.join("cluster").display()
            );
            Ok(Endpoint {
                node: None,
                hosts: cluster.hosts.clone(),
                source: Source::Admin(cluster.admins.clone()),
                pids: cluster.pids.clone(),
                admin_port: crate::cluster::CLUSTER_ADMIN_PORT,
                cluster: Some(cluster),
                cgroups,
            })
        }
        Target::Hosts {
            hosts,
            admin,
            nodetool,
            jolokia,
            server_pids,
            ..
        } => {
            let source = match (admin.is_empty(), jolokia.is_empty(), nodetool.is_empty()) {
                (false, _, _) => Source::Admin(admin.clone()),
                (true, false, _) => Source::Jolokia {
                    agents: jolokia.clone(),
                    nodetool: nodetool.clone(),
                },
                (true, true, false) => Source::Nodetool(nodetool.clone()),
                (true, true, true) => Source::None,
            };
            Ok(Endpoint {
                node: None,
                cluster: None,
                hosts: hosts.clone(),
                admin_port: admin
                    .first()
                    .and_then(|a| port_of(&a.authority))
                    .unwrap_or(DEFAULT_ADMIN_PORT),
                source,
                pids: server_pids.clone(),
                cgroups: None,
            })
        }
    }
}

/// This run's summary as merged and written (the outcome's is moved on).
fn summary_of(dir: &Path) -> Result<RunSummary> {
    let path = dir.join("summary.json");
    let text = std::fs::read_to_string(&path).map_err(|e| BenchError::io(&path, e))?;
    serde_json::from_str(&text).map_err(|e| BenchError::Invalid {
        path,
        detail: e.to_string(),
    })
}

/// Writes OUT/bench-compare.md: this run beside `other` in the seed's
/// shape, each run named by its directory.
fn seed_side_by_side(plan: &Plan, out: &Path, other: &Path, mine: &RunSummary) -> Result<PathBuf> {
    let theirs = summary_of(other)?;
    let name = |p: &Path| {
        p.file_name().map_or_else(
            || p.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        )
    };
    let text = seed_table::render_side_by_side(
        plan.scenario,
        seed_table::seeds(plan.scenario, plan.variant),
        (&name(out), mine),
        (&name(other), &theirs),
    );
    let path = out.join("bench-compare.md");
    std::fs::write(&path, text).map_err(|e| BenchError::io(&path, e))?;
    Ok(path)
}

/// The config file every started node gets: `config`, or one written to
/// OUT/node.yaml with the size's small memtables.
fn node_config(opts: &BenchOptions, config: Option<&Path>) -> Result<PathBuf> {
    if let Some(c) = config {
        return Ok(c.to_path_buf());
    }
    let path = opts.out.join("node.yaml");
    std::fs::write(&path, node::default_config(opts.size.memtable_space()))
        .map_err(|e| BenchError::io(&path, e))?;
    Ok(path)
}

fn port_of(authority: &str) -> Option<u16> {
    authority.rsplit_once(':')?.1.parse().ok()
}

fn stress_config(ctx: &Ctx<'_>, segment: &Segment, dir: PathBuf) -> StressConfig {
    StressConfig {
        hosts: ctx.hosts.to_vec(),
        workload: segment.workload,
        keyspace: segment.keyspace.clone(),
        compaction: segment.compaction.clone(),
        population: segment.population,
        column_size: segment.column_size,
        column_count: segment.column_count,
        lwt_keys: segment.lwt_keys,
        interval: SAMPLE_INTERVAL,
        progress: !ctx.opts.quiet,
        command: ctx.opts.command.clone(),
        out: Some(dir),
        admin_port: ctx.admin_port,
        replication_factor: ctx.opts.replication_factor,
        consistency: ctx.opts.consistency,
        ..StressConfig::default()
    }
}

/// Runs one segment on a runner of its own; its outputs go to
/// OUT/parts/<segment>/ and, if a phase ran, into `parts`.
async fn run_segment(
    ctx: &Ctx<'_>,
    clock: &Clock,
    segment: &Segment,
    parts: &mut Vec<Part>,
) -> Result<()> {
    let quiet = ctx.opts.quiet;
    let dir = ctx.opts.out.join(PARTS_DIR).join(&segment.name);
    let mut runner = Runner::new(stress_config(ctx, segment, dir.clone())).await?;
    ctx.interrupt.set_runner(runner.stop_handle());
    for statement in &segment.setup {
        actions::run_cql(runner.session(), statement, &ctx.events, quiet).await;
    }
    set_target(ctx, segment, false);
    let mut offset_s = None;
    let mut background: Vec<JoinHandle<()>> = Vec::new();
    let mut result = Ok(());
    for step in &segment.steps {
        if ctx.interrupt.is_stopped() {
            break;
        }
        set_target(ctx, segment, step.leveled);
        ctx.events.record(&format!("phase {}", step.name), quiet);
        for action in &step.actions {
            match action {
                Action::Cql(statement) => {
                    actions::run_cql(runner.session(), statement, &ctx.events, quiet).await
                }
                Action::GarbageCollect { keyspace, table } => {
                    background.push(actions::spawn_garbagecollect(
                        ctx.source.clone(),
                        keyspace.clone(),
                        table.clone(),
                        ctx.events.clone(),
                        quiet,
                    ))
                }
            }
        }
        let start_t = clock.now_s();
        if let Err(e) = runner.run_phase(&step.name, step.spec.clone()).await {
            result = Err(e.into());
            break;
        }
        // The runner's t = 0 on the run's clock, read at one instant.
        offset_s.get_or_insert_with(|| clock.now_s() - runner.elapsed_s());
        if step.judged && !ctx.interrupt.is_stopped() {
            judge_phase(ctx, step, start_t, clock.now_s());
            if ctx.search_is_over() {
                break;
            }
        }
    }
    for task in background {
        if ctx.interrupt.is_stopped() {
            task.abort();
        } else if tokio::time::timeout(GARBAGECOLLECT_WAIT_MAX, task)
            .await
            .is_err()
        {
            ctx.events
                .record("stopped waiting for garbagecollect", quiet);
        }
    }
    // The runner writes its part even after a failed phase.
    let finished = runner.finish();
    if let Some(offset_s) = offset_s {
        finished?;
        parts.push(Part {
            name: segment.name.clone(),
            dir,
            offset_s,
        });
    }
    result
}

impl Ctx<'_> {
    /// Whether `--find-rate` found its rate: nothing more to run.
    fn search_is_over(&self) -> bool {
        self.stop_when_behind
            && self
                .judged
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .iter()
                .any(RateResult::behind)
    }
}

/// Judges whether compaction kept up during `step` (from `start_t` to
/// `end_t`), marks the verdict in events.csv and keeps it for rates.md.
fn judge_phase(ctx: &Ctx<'_>, step: &Step, start_t: f64, end_t: f64) {
    let rows = ctx.rows.between(start_t, end_t);
    let verdict = judge::judge(&rows, start_t, end_t);
    let rate = match step.spec.rate {
        varve_stress::Rate::Fixed { per_s } => per_s,
        _ => 0.0,
    };
    let result = RateResult::new(&step.name, rate, &verdict);
    let growth = |g: Option<f64>| g.map_or("-".into(), |g| format!("{g:+.1}"));
    ctx.events.record(
        &format!(
            "{rate:.0} op/s: compaction {} (pending {}, unleveled {} over the second half)",
            result.verdict,
            growth(result.pending_growth),
            growth(result.unleveled_growth)
        ),
        ctx.opts.quiet,
    );
    ctx.judged
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(result);
}

fn set_target(ctx: &Ctx<'_>, segment: &Segment, leveled: bool) {
    let mut t = ctx.target.lock().unwrap_or_else(|e| e.into_inner());
    *t = TableUnderTest {
        keyspace: segment.keyspace.clone(),
        table: segment.workload.table().to_string(),
        leveled,
    };
}

fn bench_info(plan: &Plan, opts: &BenchOptions) -> BenchInfo {
    BenchInfo {
        scenario: plan.scenario.name().to_string(),
        variant: plan.variant.map(|v| v.name().to_string()),
        size: plan.size.name(),
        node: match opts.target {
            Target::Embedded { .. } => "embedded".into(),
            Target::Cluster { nodes, .. } => format!("local cluster of {nodes}"),
            Target::Hosts { .. } => "hosts".into(),
        },
        memory_cap_bytes: opts.memory_cap,
        rate_search: None,
        segments: plan
            .segments
            .iter()
            .map(|s| SegmentInfo {
                name: s.name.clone(),
                workload: s.workload.name().to_string(),
                table: s.qualified_table(),
                population: s.population.to_string(),
                column_size: s.column_size,
                phases: s.steps.iter().map(|st| st.name.clone()).collect(),
            })
            .collect(),
    }
}
