//! A cluster the bench starts itself (`--nodes N`, N > 1): this same
//! executable's `varve cluster start --nodes N --dir OUT/cluster` on
//! 127.0.0.1 .. 127.0.0.N with the bench's own ports, every node with the
//! bench's node config; its nodes' process ids from the launcher's pid
//! files, their CQL and admin addresses from the layout the launcher uses.
//! `varve cluster stop` stops it once the outputs are written. With
//! `--memory-cap`, `--cgroup-parent` puts node N in the run's `nodeN`
//! cgroup ([`crate::cgroup`]).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{BenchError, Result};
use crate::http::BaseUrl;

/// The CQL port of every node (not 9042, so a node the user runs on
/// 127.0.0.1 does not clash with the bench's).
pub const CLUSTER_NATIVE_PORT: u16 = 9142;
/// The admin port of every node.
pub const CLUSTER_ADMIN_PORT: u16 = 9280;
/// The internode port of every node.
pub const CLUSTER_STORAGE_PORT: u16 = 7100;
/// Most nodes the bench starts (the launcher's own limit is higher; the
/// seeds ran three).
pub const MAX_BENCH_NODES: usize = 9;

/// A running cluster the bench started.
pub struct EmbeddedCluster {
    exe: PathBuf,
    dir: PathBuf,
    /// `host:port` of each node's CQL port.
    pub hosts: Vec<String>,
    /// Each node's admin port.
    pub admins: Vec<BaseUrl>,
    /// Each node's process id.
    pub pids: Vec<u32>,
    stopped: bool,
}

/// Node `n`'s address (1-based), as the launcher places it.
pub fn address(n: usize) -> String {
    format!("127.0.0.{n}")
}

impl EmbeddedCluster {
    /// Starts `nodes` nodes under `out/cluster` with `config`; returns
    /// once the launcher says every node serves and agrees on the schema.
    /// With `cgroup_parent`, node N runs in its `nodeN` cgroup.
    pub fn start(
        exe: &Path,
        out: &Path,
        config: &Path,
        nodes: usize,
        cgroup_parent: Option<&Path>,
    ) -> Result<EmbeddedCluster> {
        let dir = out.join("cluster");
        let log = out.join("cluster.log");
        let mut command = Command::new(exe);
        command.args(["cluster", "start", "--nodes", &nodes.to_string()]);
        if let Some(parent) = cgroup_parent {
            command.arg("--cgroup-parent").arg(parent);
        }
        let output = command
            .arg("--dir")
            .arg(&dir)
            .args(["--native-port", &CLUSTER_NATIVE_PORT.to_string()])
            .args(["--admin-port", &CLUSTER_ADMIN_PORT.to_string()])
            .args(["--storage-port", &CLUSTER_STORAGE_PORT.to_string()])
            .arg("--")
            .arg("--config")
            .arg(config)
            .output()
            .map_err(|e| BenchError::Node(format!("cannot start {}: {e}", exe.display())))?;
        let text = [output.stdout, output.stderr].concat();
        std::fs::write(&log, &text).map_err(|e| BenchError::io(&log, e))?;
        let mut cluster = EmbeddedCluster {
            exe: exe.to_path_buf(),
            dir,
            hosts: Vec::new(),
            admins: Vec::new(),
            pids: Vec::new(),
            stopped: false,
        };
        if !output.status.success() {
            return Err(BenchError::Node(format!(
                "`varve cluster start` failed ({}); see {}",
                output.status,
                log.display()
            )));
        }
        for n in 1..=nodes {
            let pid_file = cluster.dir.join(format!("node{n}")).join("pid");
            let pid = std::fs::read_to_string(&pid_file)
                .ok()
                .and_then(|t| t.trim().parse().ok())
                .ok_or_else(|| BenchError::Node(format!("no pid in {}", pid_file.display())))?;
            cluster.pids.push(pid);
            cluster
                .hosts
                .push(format!("{}:{CLUSTER_NATIVE_PORT}", address(n)));
            cluster.admins.push(BaseUrl::parse(&format!(
                "{}:{CLUSTER_ADMIN_PORT}",
                address(n)
            ))?);
        }
        Ok(cluster)
    }

    /// `varve cluster stop`; an error when it did not stop every node.
    pub fn stop(mut self) -> Result<()> {
        self.stopped = true;
        stop(&self.exe, &self.dir)
    }
}

fn stop(exe: &Path, dir: &Path) -> Result<()> {
    let status = Command::new(exe)
        .args(["cluster", "stop", "--dir"])
        .arg(dir)
        .output()
        .map_err(|e| BenchError::Node(format!("cannot stop the cluster: {e}")))?;
    match status.status.success() {
        true => Ok(()),
        false => Err(BenchError::Node(format!(
            "`varve cluster stop` failed: {}",
            String::from_utf8_lossy(&status.stderr).trim()
        ))),
    }
}

impl Drop for EmbeddedCluster {
    /// A cluster left behind by an error is stopped, never orphaned.
    fn drop(&mut self) {
        if !self.stopped {
            let _ = stop(&self.exe, &self.dir);
        }
    }
}
