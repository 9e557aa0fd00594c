//! A local cluster of real `varve server` processes for driver tests,
//! started and stopped by the binary's own launcher (`varve cluster start
//! --dir DIR --nodes N ...`, `varve cluster stop --dir DIR`).
//!
//! Node N listens on 127.0.0.N, every node on the same ports (the
//! launcher's layout). `start` returns once the launcher does: every node
//! serves and counts every other one UP. `stop` (or `Drop`, if the test
//! failed first) stops the nodes and removes the cluster's directory.
//! Each node's output is in `DIR/nodeN/varve.log`; [`VarveCluster::logs`]
//! gathers their tails for failure messages.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use super::varve_bin;

/// Log lines of each node kept in [`VarveCluster::logs`].
const LOG_TAIL_LINES_MAX: usize = 40;

/// The ports every node of a cluster uses (on its own address).
#[derive(Clone, Copy, Debug)]
pub struct ClusterPorts {
    pub native: u16,
    pub admin: u16,
    pub storage: u16,
}

/// A running cluster started by `varve cluster start`.
pub struct VarveCluster {
    dir: PathBuf,
    nodes: usize,
    ports: ClusterPorts,
    running: bool,
}

impl VarveCluster {
    /// Starts `nodes` nodes in `dir` (which must not hold a cluster yet),
    /// each with `server_args` (e.g. `--config FILE`); panics (this is a
    /// test helper) with the launcher's and nodes' output if it fails.
    pub fn start(
        dir: &Path,
        nodes: usize,
        ports: ClusterPorts,
        server_args: &[OsString],
    ) -> VarveCluster {
        let bin = varve_bin();
        assert!(
            bin.is_file(),
            "varve binary not found at {}: run `cargo build -p varve` first \
             (or set VARVE_BIN to the binary)",
            bin.display()
        );
        let cluster = VarveCluster {
            dir: dir.to_path_buf(),
            nodes,
            ports,
            running: true,
        };
        let mut args: Vec<OsString> =
            vec!["start".into(), "--nodes".into(), nodes.to_string().into()];
        for (flag, port) in [
            ("--native-port", ports.native),
            ("--admin-port", ports.admin),
            ("--storage-port", ports.storage),
        ] {
            args.push(flag.into());
            args.push(port.to_string().into());
        }
        args.push("--".into());
        args.extend(server_args.iter().cloned());
        let out = cluster.launcher(&args);
        assert!(
            out.status.success(),
            "varve cluster start failed ({}):\n{}{}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            cluster.logs()
        );
        cluster
    }

    /// Node `node`'s (1-based) CQL address, `127.0.0.N:PORT`.
    pub fn contact_point(&self, node: usize) -> String {
        format!("{}:{}", Self::address(node), self.ports.native)
    }

    /// Node `node`'s (1-based) address.
    pub fn address(node: usize) -> String {
        format!("127.0.0.{node}")
    }

    /// The node numbers, 1 to N.
    pub fn nodes(&self) -> std::ops::RangeInclusive<usize> {
        1..=self.nodes
    }

    /// Stops every node (`varve cluster stop`) and removes the directory;
    /// panics if the launcher reports a failure.
    pub fn stop(&mut self) {
        self.running = false;
        let out = self.launcher(&["stop".into()]);
        assert!(
            out.status.success(),
            "varve cluster stop failed ({}):\n{}{}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            self.logs()
        );
        let _ = std::fs::remove_dir_all(&self.dir);
    }

    /// The last lines of each node's log, headed by the node's name.
    pub fn logs(&self) -> String {
        let mut text = String::new();
        for node in self.nodes() {
            let path = self.dir.join(format!("node{node}")).join("varve.log");
            let log = std::fs::read_to_string(&path).unwrap_or_default();
            let lines: Vec<&str> = log.lines().collect();
            let tail = &lines[lines.len().saturating_sub(LOG_TAIL_LINES_MAX)..];
            text.push_str(&format!(
                "--- node{node} ({})\n{}\n",
                path.display(),
                tail.join("\n")
            ));
        }
        text
    }

    /// Runs `varve cluster --dir DIR ARGS` and returns its output.
    fn launcher(&self, args: &[OsString]) -> Output {
        Command::new(varve_bin())
            .arg("cluster")
            .arg("--dir")
            .arg(&self.dir)
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("running varve cluster: {e}"))
    }
}

impl Drop for VarveCluster {
    fn drop(&mut self) {
        if self.running {
            // The test failed before `stop`: do not leave nodes behind.
            // Kept: the directory, with the nodes' logs.
            let _ = self.launcher(&["stop".into()]);
        }
    }
}
