//! `varve cluster`: start, stop and inspect a local cluster on 127.0.0.x
//! (see [`crate::launcher`]).
//!
//! `start --nodes N [--dcs D]` creates the cluster (or starts the one the
//! directory holds) and returns once every node it started counts every
//! running node UP (gossip), printing the contact points; `start N` starts one node; `add` adds
//! one that bootstraps into the cluster; `stop`, `status`, `kill N`
//! (SIGKILL, as a crash) and `nodetool N ...` (any `varve nodetool`
//! command, sent to node N).

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context};
use clap::{Args, Subcommand};

use crate::launcher::{self, Layout, Node, Ports};

#[derive(Args, Debug)]
pub struct ClusterArgs {
    /// The cluster's directory.
    #[arg(
        long,
        value_name = "DIR",
        default_value = "./varve-cluster",
        global = true
    )]
    pub dir: PathBuf,
    #[command(subcommand)]
    pub command: ClusterCommand,
}

#[derive(Subcommand, Debug)]
pub enum ClusterCommand {
    /// Start every node (creating the cluster), or node N.
    Start {
        /// Only this node (1-based).
        node: Option<usize>,
        /// Nodes of a new cluster.
        #[arg(long, default_value_t = 3)]
        nodes: usize,
        /// Data centres of a new cluster.
        #[arg(long, default_value_t = 1)]
        dcs: usize,
        /// CQL port of every node of a new cluster.
        #[arg(long, default_value_t = launcher::NATIVE_PORT)]
        native_port: u16,
        /// Admin HTTP port of every node of a new cluster.
        #[arg(long, default_value_t = launcher::ADMIN_PORT)]
        admin_port: u16,
        /// Internode port of every node of a new cluster.
        #[arg(long, default_value_t = launcher::STORAGE_PORT)]
        storage_port: u16,
        /// A new cluster's nodes each join DIR/nodeN, an existing cgroup v1
        /// directory, before they run (`varve bench --memory-cap` uses it).
        #[arg(long, value_name = "DIR")]
        cgroup_parent: Option<PathBuf>,
        /// Extra `varve server` arguments for every node of a new cluster,
        /// after `--`, e.g. `-- --config cassandra.yaml`.
        #[arg(last = true)]
        server_args: Vec<String>,
    },
    /// Add a node (127.0.0.N+1) and start it: it bootstraps into the
    /// cluster, streaming its ranges; returns once it serves (progress is
    /// printed, and shown by `status`). Extra `varve server` arguments go
    /// after `--`, e.g. `-- --replace-address-first-boot 127.0.0.3`.
    Add {
        /// Its data centre (default: the last node's).
        #[arg(long)]
        dc: Option<String>,
        #[arg(last = true)]
        server_args: Vec<String>,
    },
    /// Stop every node (SIGTERM, then SIGKILL after a while).
    Stop,
    /// Each node: address, data centre, process, and whether it answers.
    Status,
    /// SIGKILL node N (a crash).
    Kill { node: usize },
    /// Run `varve nodetool` against node N: `nodetool N info`.
    #[command(disable_help_flag = true)]
    Nodetool {
        node: usize,
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

pub fn run(args: ClusterArgs) -> anyhow::Result<()> {
    let dir = args.dir;
    match args.command {
        ClusterCommand::Start {
            node,
            nodes,
            dcs,
            native_port,
            admin_port,
            storage_port,
            cgroup_parent,
            server_args,
        } => {
            let ports = Ports {
                native: native_port,
                admin: admin_port,
                storage: storage_port,
            };
            let layout = Layout::new(nodes, dcs, ports).map(|mut l| {
                l.server_args = server_args;
                l.cgroup_parent = cgroup_parent;
                l
            });
            start(&dir, node, layout)
        }
        ClusterCommand::Add { dc, server_args } => add(&dir, dc, server_args),
        ClusterCommand::Stop => stop(&dir),
        ClusterCommand::Status => status(&dir),
        ClusterCommand::Kill { node } => kill(&dir, node),
        ClusterCommand::Nodetool { node, args } => nodetool(&dir, node, &args),
    }
}

fn layout(dir: &Path) -> anyhow::Result<Layout> {
    Layout::load(dir)?.with_context(|| {
        format!(
            "{} holds no cluster: `varve cluster start --nodes N --dir {}` creates one",
            dir.display(),
            dir.display()
        )
    })
}

/// Starts node `only`, or every node; `new` is the layout of a cluster
/// the directory does not hold yet.
fn start(dir: &Path, only: Option<usize>, new: anyhow::Result<Layout>) -> anyhow::Result<()> {
    let layout = match (Layout::load(dir)?, only) {
        (Some(l), _) => l,
        (None, Some(_)) => return layout(dir).map(|_| ()),
        (None, None) => {
            let l = new?;
            l.save(dir)?;
            l
        }
    };
    let targets: Vec<Node> = match only {
        Some(i) => vec![layout.node(i)?],
        None => layout.all(),
    };
    let binary = std::env::current_exe().context("finding the varve binary")?;
    let started = Instant::now();
    let mut spawned = Vec::new();
    for node in &targets {
        if let Some(pid) = launcher::running_pid(dir, node.index) {
            println!("node{} already runs (pid {pid})", node.index);
            continue;
        }
        launcher::spawn(&binary, dir, &layout, node)?;
        spawned.push(node.index);
    }
    let running: Vec<usize> = layout
        .all()
        .iter()
        .map(|n| n.index)
        .filter(|&i| launcher::running_pid(dir, i).is_some())
        .collect();
    for node in &targets {
        if let Err(e) = wait_ready(dir, node, layout.ports, &running) {
            // A start that fails leaves nothing of its own running.
            stop_nodes(dir, &spawned)?;
            return Err(e);
        }
    }
    println!(
        "ready in {:.2} s; contact points: {}",
        started.elapsed().as_secs_f64(),
        targets
            .iter()
            .map(|n| format!("{}:{}", n.address, layout.ports.native))
            .collect::<Vec<_>>()
            .join(",")
    );
    Ok(())
}

/// Waits until `node` answers, counts every `running` node UP (itself
/// included) and sees one schema version everywhere, or fails naming the
/// log of the node that exited (any of `running`) or did not get ready.
fn wait_ready(dir: &Path, node: &Node, ports: Ports, running: &[usize]) -> anyhow::Result<()> {
    let until = Instant::now() + launcher::READY_TIMEOUT;
    let log = |index| launcher::node_dir(dir, index).join("varve.log");
    while Instant::now() < until {
        if is_ready(node, ports, running) {
            return Ok(());
        }
        if let Some(&gone) = running
            .iter()
            .find(|&&i| launcher::running_pid(dir, i).is_none())
        {
            bail!(
                "node{gone} exited while starting; see {}",
                log(gone).display()
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    bail!(
        "node{} not ready within {:?}; see {}",
        node.index,
        launcher::READY_TIMEOUT,
        log(node.index).display()
    )
}

/// `add`: a new node in the layout, started and waited for while it
/// streams (no time limit: a bootstrap takes as long as its data).
fn add(dir: &Path, dc: Option<String>, server_args: Vec<String>) -> anyhow::Result<()> {
    let mut layout = layout(dir)?;
    let index = layout.add(dc, server_args)?;
    layout.save(dir)?;
    let node = layout.node(index)?;
    let binary = std::env::current_exe().context("finding the varve binary")?;
    let started = Instant::now();
    launcher::spawn(&binary, dir, &layout, &node)?;
    println!(
        "node{index} added on {} in {}; joining",
        node.address, node.dc
    );
    let running: Vec<usize> = layout
        .all()
        .iter()
        .map(|n| n.index)
        .filter(|&i| launcher::running_pid(dir, i).is_some())
        .collect();
    let mut shown = Vec::new();
    while !is_ready(&node, layout.ports, &running) {
        if launcher::running_pid(dir, index).is_none() {
            bail!(
                "node{index} exited while joining; see {}",
                launcher::node_dir(dir, index).join("varve.log").display()
            );
        }
        let now = launcher::streams(&node, layout.ports);
        if now != shown && !now.is_empty() {
            println!("node{index}: {}", now.join("; "));
            shown = now;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    println!(
        "node{index} joined in {:.2} s; contact point {}:{}",
        started.elapsed().as_secs_f64(),
        node.address,
        layout.ports.native
    );
    Ok(())
}

/// Whether `node` counts every `running` node UP (itself included) and
/// sees one schema version everywhere.
fn is_ready(node: &Node, ports: Ports, running: &[usize]) -> bool {
    launcher::serving(node, ports)
        && launcher::nodes_up(node, ports).is_some_and(|up| up >= running.len())
        && launcher::schema_versions(node, ports) == Some(1)
}

fn stop(dir: &Path) -> anyhow::Result<()> {
    let indexes: Vec<usize> = layout(dir)?.all().iter().map(|n| n.index).collect();
    stop_nodes(dir, &indexes)
}

/// Stops the listed nodes that run: SIGTERM, then SIGKILL after
/// `STOP_TIMEOUT`.
fn stop_nodes(dir: &Path, indexes: &[usize]) -> anyhow::Result<()> {
    let mut stopping = Vec::new();
    for &index in indexes {
        if let Some(pid) = launcher::running_pid(dir, index) {
            launcher::signal(pid, libc::SIGTERM)?;
            stopping.push((index, pid));
        }
    }
    for (index, pid) in stopping {
        if !launcher::wait_exit(pid, launcher::STOP_TIMEOUT) {
            eprintln!(
                "node{index} did not stop within {:?}: killed",
                launcher::STOP_TIMEOUT
            );
            launcher::signal(pid, libc::SIGKILL)?;
            launcher::wait_exit(pid, launcher::STOP_TIMEOUT);
        }
        println!("node{index} stopped");
    }
    Ok(())
}

fn status(dir: &Path) -> anyhow::Result<()> {
    let layout = layout(dir)?;
    println!(
        "{:<7} {:<11} {:<12} {:<8} state",
        "node", "address", "dc", "pid"
    );
    for node in layout.all() {
        let pid = launcher::running_pid(dir, node.index);
        let healthy = pid.is_some() && launcher::healthy(&node, layout.ports);
        // A joining node answers on its admin port while it streams.
        let streams = match healthy {
            true => launcher::streams(&node, layout.ports),
            false => Vec::new(),
        };
        let mut state = match (pid, healthy) {
            (None, _) => "down".to_string(),
            (Some(_), true) if launcher::serving(&node, layout.ports) => "up".to_string(),
            (Some(_), true) => "joining".to_string(),
            (Some(_), false) => "starting or not answering".to_string(),
        };
        for stream in &streams {
            state.push_str("; ");
            state.push_str(stream);
        }
        let pid = pid.map_or("-".to_string(), |p| p.to_string());
        println!(
            "node{:<3} {:<11} {:<12} {:<8} {state}",
            node.index, node.address, node.dc, pid
        );
    }
    Ok(())
}

fn kill(dir: &Path, index: usize) -> anyhow::Result<()> {
    let layout = layout(dir)?;
    layout.node(index)?;
    let pid =
        launcher::running_pid(dir, index).with_context(|| format!("node{index} is not running"))?;
    launcher::signal(pid, libc::SIGKILL)?;
    launcher::wait_exit(pid, launcher::STOP_TIMEOUT);
    println!("node{index} killed");
    Ok(())
}

fn nodetool(dir: &Path, index: usize, args: &[String]) -> anyhow::Result<()> {
    let layout = layout(dir)?;
    let node = layout.node(index)?;
    let binary = std::env::current_exe().context("finding the varve binary")?;
    let status = std::process::Command::new(binary)
        .arg("nodetool")
        .args(["-h", &node.address.to_string()])
        .args(["-p", &layout.ports.admin.to_string()])
        .args(args)
        .status()
        .context("running nodetool")?;
    if !status.success() {
        bail!("nodetool on node{index} failed");
    }
    Ok(())
}
