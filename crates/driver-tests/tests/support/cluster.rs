//! A local cluster of real `varve server` processes for driver tests,
//! started and stopped by the binary's own launcher (`varve cluster start
//! --dir DIR --nodes N ...`, `varve cluster stop --dir DIR`).
//!
//! Node N listens on 127.0.0.N, every node on the same ports (the
//! launcher's layout); with `--dcs D` the nodes split into data centres
//! `dc1` .. `dcD` in order. `start` returns once the launcher does: every
//! node serves and counts every other one UP. `kill N` (SIGKILL, a crash)
//! and `start_node N` act on one node, `node_states` reads what a node's
//! `nodetool status` says of the others. `stop` (or `Drop`, if the test
//! failed first) stops the nodes and removes the cluster's directory.
//! Each node's output is in `DIR/nodeN/varve.log`; [`VarveCluster::logs`]
//! gathers their tails for failure messages.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use super::varve_bin;

/// Log lines of each node kept in [`VarveCluster::logs`].
const LOG_TAIL_LINES_MAX: usize = 40;

/// A directory for test `name`'s cluster, in the temporary directory, per
/// process; emptied (a failed run keeps its directory, with the logs).
pub fn fresh_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "varve-scylla-cluster-{name}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

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
        Self::start_in_dcs(dir, nodes, 1, ports, server_args)
    }

    /// [`VarveCluster::start`] with the nodes split into `dcs` data
    /// centres (`--dcs`): `dc1` takes the first nodes, and so on.
    pub fn start_in_dcs(
        dir: &Path,
        nodes: usize,
        dcs: usize,
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
        let mut args: Vec<OsString> = vec![
            "start".into(),
            "--nodes".into(),
            nodes.to_string().into(),
            "--dcs".into(),
            dcs.to_string().into(),
        ];
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

    /// Node `node`'s (1-based) admin HTTP address, `127.0.0.N:PORT`.
    pub fn admin_address(&self, node: usize) -> String {
        format!("{}:{}", Self::address(node), self.ports.admin)
    }

    /// The ports every node uses.
    pub fn ports(&self) -> ClusterPorts {
        self.ports
    }

    /// The node numbers, 1 to N.
    pub fn nodes(&self) -> std::ops::RangeInclusive<usize> {
        1..=self.nodes
    }

    /// Stops every node (`varve cluster stop`) and removes the directory;
    /// panics if the launcher reports a failure.
    pub fn stop(&mut self) {
        self.running = false;
        self.launch_ok(&["stop".into()]);
        let _ = std::fs::remove_dir_all(&self.dir);
    }

    /// SIGKILLs node `node` (`varve cluster kill N`): a crash.
    pub fn kill(&self, node: usize) {
        self.launch_ok(&["kill".into(), node.to_string().into()]);
    }

    /// Starts node `node` again (`varve cluster start N`); returns once it
    /// serves and counts the running nodes UP.
    pub fn start_node(&self, node: usize) {
        self.launch_ok(&["start".into(), node.to_string().into()]);
    }

    /// `{address: "UN" | "DN"}` as node `node`'s `nodetool status` shows
    /// the nodes; empty if the node does not answer.
    pub fn node_states(&self, node: usize) -> HashMap<String, String> {
        let out = self.launcher(&["nodetool".into(), node.to_string().into(), "status".into()]);
        parse_node_states(&String::from_utf8_lossy(&out.stdout))
    }

    /// Whether node `node` shows every node of `others` in `state` (`"UN"`
    /// or `"DN"`).
    pub fn sees(&self, node: usize, others: &[usize], state: &str) -> bool {
        let states = self.node_states(node);
        others
            .iter()
            .all(|&o| states.get(&Self::address(o)).map(String::as_str) == Some(state))
    }

    /// `{address: its tokens, in order}` as node `node`'s `nodetool ring`
    /// lists them.
    pub fn ring(&self, node: usize) -> HashMap<String, Vec<i64>> {
        let out = self.launcher(&["nodetool".into(), node.to_string().into(), "ring".into()]);
        assert!(out.status.success(), "nodetool {node} ring: {out:?}");
        parse_ring(&String::from_utf8_lossy(&out.stdout))
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

    /// Runs the launcher and panics with its output and the nodes' logs if
    /// it fails.
    fn launch_ok(&self, args: &[OsString]) {
        let out = self.launcher(args);
        assert!(
            out.status.success(),
            "varve cluster {args:?} failed ({}):\n{}{}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            self.logs()
        );
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

/// The `UN` / `DN` lines of `nodetool status` as `{address: state}`.
fn parse_node_states(status: &str) -> HashMap<String, String> {
    status
        .lines()
        .filter(|line| line.starts_with("UN ") || line.starts_with("DN "))
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let state = fields.next()?;
            Some((fields.next()?.to_string(), state.to_string()))
        })
        .collect()
}

/// The node lines of `nodetool ring` (`ADDRESS RACK ... TOKEN`) as
/// `{address: tokens in order}`.
fn parse_ring(ring: &str) -> HashMap<String, Vec<i64>> {
    let mut tokens: HashMap<String, Vec<i64>> = HashMap::new();
    for line in ring.lines().filter(|line| line.starts_with("127.")) {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if let (Some(address), Some(Ok(token))) = (fields.first(), fields.last().map(|t| t.parse()))
        {
            tokens.entry(address.to_string()).or_default().push(token);
        }
    }
    for list in tokens.values_mut() {
        list.sort_unstable();
    }
    tokens
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

#[cfg(test)]
mod tests {
    use super::{parse_node_states, parse_ring};

    #[test]
    fn reads_each_node_state_from_nodetool_status() {
        let status = "Datacenter: dc1\n==============\n--  Address    Load\n\
                      UN  127.0.0.1  1 KiB\nDN  127.0.0.2  ?\n";
        let states = parse_node_states(status);
        assert_eq!(states.len(), 2);
        assert_eq!(states["127.0.0.1"], "UN");
        assert_eq!(states["127.0.0.2"], "DN");
    }

    #[test]
    fn reads_each_node_tokens_from_nodetool_ring() {
        let ring = "Address  Rack  Status State  Load  Owns  Token\n\
                    \x20                                      9\n\
                    127.0.0.2  rack1  Up  Normal  0 bytes  ?  5\n\
                    127.0.0.1  rack1  Up  Normal  0 bytes  ?  -7\n\
                    127.0.0.2  rack1  Up  Normal  0 bytes  ?  -3\n";
        let tokens = parse_ring(ring);
        assert_eq!(tokens["127.0.0.1"], vec![-7]);
        assert_eq!(tokens["127.0.0.2"], vec![-3, 5]);
    }
}
