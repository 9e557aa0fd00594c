//! `varve`: the one binary of Varve. Subcommands: `server` (run a node),
//! `nodetool` (operate a running node), `stress` (a CQL load generator),
//! `report` and `bench` (the seed experiments), `cluster` (a local cluster
//! of several nodes).
//!
//! The binary only wires things together: it reads flags and the YAML
//! config, prepares the data directory and the node's identity
//! ([`node`]), and hands the rest to `varve-server`.

mod admin_client;
mod admin_config;
mod allocator;
mod bench_cmd;
mod bootstrap;
mod cleanup;
mod cluster_cmd;
mod cluster_metadata;
mod cluster_node;
mod cluster_path;
mod cluster_schema;
mod config;
mod decommission;
mod getendpoints;
mod hints_config;
mod internode_tls_config;
mod launcher;
mod memory_limit;
mod node;
mod node_metrics;
mod nodetool;
mod removenode;
mod repair;
mod report_cmd;
mod security_config;
mod sizes;
mod stall_probe;
mod stress_cmd;
mod tls_config;
mod topology_config;

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use tracing::info;

use crate::config::Settings;

#[derive(Parser, Debug)]
#[command(
    name = "varve",
    version,
    about = "A Cassandra-compatible wide-column database"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a node: CQL native protocol v4/v5 plus an admin HTTP port.
    Server(ServerArgs),
    /// Operate a running node (flush, drain, tablestats) over its admin port.
    Nodetool(nodetool::NodetoolArgs),
    /// Load a Varve or Cassandra cluster over CQL and measure latency.
    Stress(Box<stress_cmd::StressArgs>),
    /// Render a run directory as Markdown, HTML and SVG charts, or compare two runs.
    Report(report_cmd::ReportArgs),
    /// Run a seed experiment end to end (embedded node or --hosts) into a report directory.
    Bench(Box<bench_cmd::BenchArgs>),
    /// A local cluster on 127.0.0.1 .. 127.0.0.N: start, stop, status, kill, nodetool.
    Cluster(cluster_cmd::ClusterArgs),
}

/// Flags of `varve server`; each overrides the same setting of `--config`.
#[derive(Args, Debug, Default)]
pub struct ServerArgs {
    /// Address to listen on for CQL and admin (default 127.0.0.1).
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<std::net::IpAddr>,
    /// CQL native protocol port (default 9042; 0 picks a free port).
    #[arg(long)]
    pub port: Option<u16>,
    /// Admin HTTP port: /health and /metrics (default 9180; 0 picks a free port).
    #[arg(long)]
    pub admin_port: Option<u16>,
    /// Data directory (default ./varve-data); created when missing.
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// YAML config file using cassandra.yaml names.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Cluster name shown in system.local (default "Test Cluster").
    #[arg(long)]
    pub cluster_name: Option<String>,
    /// Seeds: "host[:port],..." (cassandra.yaml `seed_provider`; default:
    /// this node alone).
    #[arg(long, value_name = "HOSTS")]
    pub seeds: Option<String>,
    /// Internode messaging port (cassandra.yaml `storage_port`, default 7000).
    #[arg(long)]
    pub storage_port: Option<u16>,
    /// This node's data centre (GossipingPropertyFileSnitch; default datacenter1).
    #[arg(long)]
    pub dc: Option<String>,
    /// This node's rack (GossipingPropertyFileSnitch; default rack1).
    #[arg(long)]
    pub rack: Option<String>,
}

fn main() -> std::process::ExitCode {
    allocator::tune(memory_limit::cgroup_memory_limit().is_some());
    let cli = Cli::parse_from(nodetool::cassandra_flags(std::env::args()));
    init_logging();
    // A server's failure goes to its log; a client command's is printed once.
    let logs_failure = matches!(cli.command, Command::Server(_));
    let result = match cli.command {
        Command::Server(args) => run_server(args),
        Command::Nodetool(args) => nodetool::run(args),
        Command::Stress(args) => stress_cmd::run(*args),
        Command::Report(args) => report_cmd::run(args),
        Command::Bench(args) => bench_cmd::run(*args),
        Command::Cluster(args) => cluster_cmd::run(args),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            if logs_failure {
                tracing::error!("varve failed: {e:#}");
            }
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Logs go to stderr, colored only on a terminal (openraft's chatter about
/// peers it cannot reach only at error); `RUST_LOG` overrides the
/// default level (info; the scylla driver used by `varve stress` at warn).
fn init_logging() {
    use std::io::IsTerminal;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,scylla=warn,openraft=error"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
}

/// How long an idle thread of the runtime's blocking pool (the read stage,
/// statements that may wait) lives before it exits: tokio's default is
/// 10 s. Each thread's allocator heap keeps the pages of blocks it
/// allocated that are still in use elsewhere (chunk cache entries, memtable
/// slabs); when the thread exits they stay behind, abandoned, and fill only
/// slowly again. In 1.5 GiB during a garbagecollect, read-stage threads
/// came and went with the disk's pace and anonymous memory grew to 1.4 GiB;
/// kept for an hour, it stayed at 0.8-0.9 GiB (docs/benchmarks.md, session
/// 13). The pool is bounded by `concurrent_reads` and the statements'
/// own limits, so threads that stay cost little.
const BLOCKING_THREAD_KEEP_ALIVE: std::time::Duration = std::time::Duration::from_secs(3600);

fn run_server(args: ServerArgs) -> anyhow::Result<()> {
    let settings = Settings::resolve(&args)?;
    let runtime = server_runtime().context("starting the async runtime")?;
    runtime.block_on(serve(settings))
}

/// The server's async runtime: its workers, and a blocking pool whose idle
/// threads live [`BLOCKING_THREAD_KEEP_ALIVE`].
fn server_runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("varve-worker")
        .thread_keep_alive(BLOCKING_THREAD_KEEP_ALIVE)
        .build()
}

/// How long a node waits to be listed in its cluster's metadata (created
/// or joined it) before it gives up starting. A node restarted into a
/// cluster it joined is listed at once, from its own copy of the log.
const JOIN_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

async fn serve(settings: Settings) -> anyhow::Result<()> {
    let shutdown = shutdown_flag(shutdown_signal()?);
    std::fs::create_dir_all(&settings.data_dir)
        .with_context(|| format!("creating data directory {}", settings.data_dir.display()))?;
    let (registry, _ticker) = node_metrics::start_registry().context("starting metrics")?;
    stall_probe::start(&registry);
    let mut server =
        varve_server::Server::bind_with_registry(settings.server_config(), registry.clone())
            .await
            .context("binding the CQL and admin ports")?;
    if let Some(limit) = settings.memory_limit_bytes {
        let mib = |b: u64| b >> 20;
        info!(
            "cgroup memory limit {} MiB: memtable_heap_space {} MiB, file_cache_size {} MiB, \
             key_cache_size {} MiB (defaults fitted to the limit unless set)",
            mib(limit),
            mib(settings.memtable_space_bytes),
            mib(settings.file_cache_bytes),
            mib(settings.key_cache_bytes),
        );
    } else {
        info!(
            "file_cache_size {} MiB (by default an eighth of the machine's memory)",
            settings.file_cache_bytes >> 20
        );
    }
    let node = node::node_info(&settings, server.cql_addr().port())?;
    let options = storage_options(&settings);
    let node_for_open = node.clone();
    let (processor, cluster_path, schema_parts) = tokio::task::spawn_blocking(move || {
        let mut path = None;
        let mut parts = None;
        let processor = varve_query::Processor::open_with_data_path(
            node_for_open,
            options,
            registry,
            |local| {
                let wrapped = Arc::new(cluster_path::ClusterPath::new(local));
                path = Some(Arc::clone(&wrapped));
                wrapped
            },
            |local| {
                let wrapped = Arc::new(cluster_schema::ClusterSchema::new(Arc::clone(&local)));
                parts = Some(cluster_metadata::SchemaParts {
                    schema: Arc::clone(&wrapped),
                    local,
                });
                wrapped
            },
        )?;
        Ok::<_, varve_query::QueryError>((processor, path, parts))
    })
    .await
    .context("opening storage")?
    .map_err(|e| anyhow::anyhow!("opening the data directory: {e}"))?;
    let cluster_path = cluster_path.context("the data path was not built")?;
    let schema_parts = schema_parts.context("the schema source was not built")?;
    processor.set_index_summary_capacity(settings.index_summary_capacity_bytes);
    processor.set_key_cache_size(settings.key_cache_bytes);
    processor.set_file_cache_size(settings.file_cache_bytes);
    processor.set_auto_snapshot(settings.auto_snapshot);
    processor.set_auth(settings.auth);
    processor
        .metrics()
        .set_settings(node_metrics::settings_rows(&settings));
    bootstrap::check_replaced_is_dead(&settings)?;
    let mut cluster = cluster_node::ClusterNode::start(
        &settings,
        &node,
        &processor,
        &cluster_path,
        schema_parts,
        server.events(),
    )
    .await?;
    cluster.send_status_events(server.events());
    let joining = async {
        cluster.wait_joined(JOIN_WAIT).await?;
        // A bootstrapping node answers nodetool (netstats) and /metrics.
        server.serve_admin_early(processor.clone());
        cluster.finish_joining(&processor).await
    };
    // SIGTERM while the node waits to join or streams its ranges stops it
    // (a restart starts the join over), as at any other time.
    let joined = tokio::select! {
        biased;
        () = signalled(shutdown.clone()) => None,
        joined = joining => Some(joined),
    };
    let Some(joined) = joined else {
        info!("stopping before this node joined its cluster");
        return stop_node(cluster, processor).await;
    };
    joined?;
    if let Err(e) = processor.ensure_default_superuser().await {
        tracing::error!("creating the default superuser role: {e}");
    }
    info!(
        "varve ready: CQL on {}, admin on {}://{}, internode on {}",
        server.cql_addr(),
        server.admin_scheme(),
        server.admin_addr(),
        cluster.internode_addr()
    );
    let left = cluster.left();
    let stop = async move {
        tokio::select! {
            () = signalled(shutdown) => {}
            () = left => info!("this node was decommissioned; stopping"),
        }
    };
    server
        .run(processor.clone(), stop)
        .await
        .context("serving")?;
    stop_node(cluster, processor).await
}

/// Leaves the cluster's gossip and drains storage, as Cassandra does on
/// shutdown: stop compactions (a running one would hold the exit until it
/// finished: a minute for a few GB at the default throttle), flush
/// memtables, sync the commitlog.
async fn stop_node(
    cluster: cluster_node::ClusterNode,
    processor: Arc<varve_query::Processor>,
) -> anyhow::Result<()> {
    cluster.shutdown().await;
    tokio::task::spawn_blocking(move || {
        processor.stop_compactions();
        processor.drain()
    })
    .await
    .context("draining")?
    .map_err(|e| anyhow::anyhow!("draining: {e}"))?;
    info!("varve stopped");
    Ok(())
}

/// The storage engine's options from the node's settings.
fn storage_options(settings: &Settings) -> varve_storage::StorageOptions {
    use std::time::Duration;
    use varve_storage::commitlog::{CommitLogConfig, SyncMode};
    let sync = match settings.commitlog_sync.as_str() {
        "batch" => SyncMode::Batch,
        "group" => SyncMode::Group {
            window: Duration::from_millis(settings.commitlog_group_window_ms),
        },
        _ => SyncMode::Periodic {
            period: Duration::from_millis(settings.commitlog_sync_period_ms),
        },
    };
    varve_storage::StorageOptions {
        data_dir: settings.data_dir.clone(),
        commitlog_dir: settings.commitlog_dir.clone(),
        commitlog: CommitLogConfig {
            sync,
            segment_size_bytes: settings.commitlog_segment_bytes,
            preallocate: settings.commitlog_preallocate,
            ..CommitLogConfig::default()
        },
        memtable_space_bytes: settings.memtable_space_bytes as usize,
        commitlog_total_space_bytes: 8 * settings.commitlog_segment_bytes,
        compaction_throughput_mib_per_sec: settings.compaction_throughput_mib_per_sec,
        concurrent_compactors: settings.concurrent_compactors,
        sstable_writes: settings.sstable_writes,
        fs: std::sync::Arc::new(varve_storage::fs::RealFs::new(settings.disk_access_mode)),
        clock: varve_storage::Clock::system(),
    }
}

/// Resolves on the first SIGINT or SIGTERM. The handlers are installed
/// when this is called (before the ready line), so a signal sent right after
/// the ready line is never lost to the default action.
fn shutdown_signal() -> anyhow::Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
    let mut int = signal(SignalKind::interrupt()).context("installing the SIGINT handler")?;
    Ok(async move {
        tokio::select! {
            _ = int.recv() => info!("SIGINT received, shutting down"),
            _ = term.recv() => info!("SIGTERM received, shutting down"),
        }
    })
}

/// The shutdown signal as a flag that every phase of the node's life can
/// wait on (joining, then serving).
fn shutdown_flag(
    signal: impl std::future::Future<Output = ()> + Send + 'static,
) -> tokio::sync::watch::Receiver<bool> {
    let (set, flag) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        signal.await;
        let _ = set.send(true);
        // Held until the process exits, so the flag never reads as closed.
        std::future::pending::<()>().await;
    });
    flag
}

/// Resolves once the shutdown flag is set.
async fn signalled(mut flag: tokio::sync::watch::Receiver<bool>) {
    let _ = flag.wait_for(|set| *set).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Past tokio's own keep-alive (10 s), the server's blocking pool still
    /// runs the next task on the thread that ran the last one.
    #[test]
    fn an_idle_blocking_thread_outlives_tokios_keep_alive() {
        let runtime = server_runtime().unwrap();
        let on_pool = || {
            let task = runtime.spawn_blocking(|| std::thread::current().id());
            runtime.block_on(task).unwrap()
        };
        let first = on_pool();
        std::thread::sleep(std::time::Duration::from_secs(11));
        assert_eq!(on_pool(), first, "the idle thread exited");
    }
}
