//! A local cluster of `varve server` processes, in the spirit of ccm: node
//! N listens on 127.0.0.N with the same ports on every address, keeps its
//! data, log and process id under `DIR/nodeN`, and the cluster's shape is
//! in `DIR/cluster.json`.
//!
//! Data centres: one is `datacenter1`, as a single node's; several are
//! `dc1`, `dc2`, ..., nodes split among them in order (five nodes over two
//! data centres: three in dc1, two in dc2). Every node is in `rack1`. The
//! first node of each data centre is a seed.

use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use serde::{Deserialize, Serialize};

/// The most nodes a local cluster has (127.0.0.1 to 127.0.0.MAX).
pub const MAX_NODES: usize = 32;
/// Ports every node uses on its own address.
pub const NATIVE_PORT: u16 = 9042;
pub const ADMIN_PORT: u16 = 9180;
pub const STORAGE_PORT: u16 = 7000;
/// How long `start` waits for a node to be ready.
pub const READY_TIMEOUT: Duration = Duration::from_secs(60);
/// How long `stop` waits for a node to exit after SIGTERM before SIGKILL.
pub const STOP_TIMEOUT: Duration = Duration::from_secs(30);
/// The cluster name of a local cluster.
pub const CLUSTER_NAME: &str = "varve-local";

/// `DIR/cluster.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Layout {
    pub nodes: usize,
    pub dcs: usize,
    /// The ports every node uses on its own address.
    #[serde(default)]
    pub ports: Ports,
    /// Nodes added after the cluster was created (`varve cluster add`),
    /// numbered from `nodes + 1` on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub added: Vec<Added>,
    /// Extra `varve server` arguments every node starts with (`varve
    /// cluster start ... -- --config cassandra.yaml`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub server_args: Vec<String>,
    /// A cgroup v1 directory whose `nodeN` each node N joins before it
    /// runs (`varve cluster start --cgroup-parent DIR`; `varve bench
    /// --memory-cap` creates them capped): every byte it allocates and
    /// every page it caches is charged there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup_parent: Option<PathBuf>,
}

/// A node `varve cluster add` added.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Added {
    pub dc: String,
    /// Extra `varve server` arguments it starts with.
    #[serde(default)]
    pub args: Vec<String>,
}

/// CQL, admin and internode ports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ports {
    pub native: u16,
    pub admin: u16,
    pub storage: u16,
}

impl Default for Ports {
    fn default() -> Self {
        Ports {
            native: NATIVE_PORT,
            admin: ADMIN_PORT,
            storage: STORAGE_PORT,
        }
    }
}

/// One node of the layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// 1-based.
    pub index: usize,
    pub address: IpAddr,
    pub dc: String,
    pub rack: String,
    /// Extra `varve server` arguments (an added node's).
    pub args: Vec<String>,
}

impl Layout {
    pub fn new(nodes: usize, dcs: usize, ports: Ports) -> anyhow::Result<Layout> {
        if nodes == 0 || nodes > MAX_NODES {
            bail!("--nodes must be between 1 and {MAX_NODES}, not {nodes}");
        }
        if dcs == 0 || dcs > nodes {
            bail!("--dcs must be between 1 and the number of nodes ({nodes}), not {dcs}");
        }
        if ports.native == 0 || ports.admin == 0 || ports.storage == 0 {
            bail!("a local cluster's ports must be fixed (not 0): every node uses the same ones");
        }
        Ok(Layout {
            nodes,
            dcs,
            ports,
            added: Vec::new(),
            server_args: Vec::new(),
            cgroup_parent: None,
        })
    }

    /// Every node's count, added ones included.
    pub fn total(&self) -> usize {
        self.nodes + self.added.len()
    }

    /// Adds a node in data centre `dc` (none: the last node's) starting
    /// with `args`; its index.
    pub fn add(&mut self, dc: Option<String>, args: Vec<String>) -> anyhow::Result<usize> {
        let index = self.total() + 1;
        if index > MAX_NODES {
            bail!("a local cluster has at most {MAX_NODES} nodes");
        }
        let dc = match dc {
            Some(dc) => dc,
            None => self.node(index - 1)?.dc,
        };
        self.added.push(Added { dc, args });
        Ok(index)
    }

    /// The data centre of node `index` (1-based): nodes split in order,
    /// the first data centres taking one more when they do not divide.
    pub fn dc_of(&self, index: usize) -> String {
        if self.dcs == 1 {
            return "datacenter1".to_string();
        }
        let (base, extra) = (self.nodes / self.dcs, self.nodes % self.dcs);
        let mut first = 1;
        for dc in 1..=self.dcs {
            let size = base + usize::from(dc <= extra);
            if index < first + size {
                return format!("dc{dc}");
            }
            first += size;
        }
        format!("dc{}", self.dcs)
    }

    pub fn node(&self, index: usize) -> anyhow::Result<Node> {
        if index == 0 || index > self.total() {
            bail!(
                "there is no node {index}: the cluster has nodes 1 to {}",
                self.total()
            );
        }
        let (dc, args) = match index.checked_sub(self.nodes + 1) {
            Some(i) => {
                let own = self.added[i].args.iter().cloned();
                let args = self.server_args.iter().cloned().chain(own).collect();
                (self.added[i].dc.clone(), args)
            }
            None => (self.dc_of(index), self.server_args.clone()),
        };
        Ok(Node {
            index,
            address: address_of(index),
            dc,
            rack: "rack1".to_string(),
            args,
        })
    }

    pub fn all(&self) -> Vec<Node> {
        (1..=self.total())
            .filter_map(|i| self.node(i).ok())
            .collect()
    }

    /// The first node of each data centre, as `host:port` seeds.
    pub fn seeds(&self) -> String {
        let mut seen: Vec<String> = Vec::new();
        let mut seeds = Vec::new();
        for n in self.all() {
            if !seen.contains(&n.dc) {
                seen.push(n.dc.clone());
                seeds.push(format!("{}:{}", n.address, self.ports.storage));
            }
        }
        seeds.join(",")
    }

    pub fn load(dir: &Path) -> anyhow::Result<Option<Layout>> {
        let path = dir.join("cluster.json");
        if !path.exists() {
            return Ok(None);
        }
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        let layout: Layout = serde_json::from_str(&text)
            .with_context(|| format!("{} is not a cluster layout", path.display()))?;
        let mut checked = Layout::new(layout.nodes, layout.dcs, layout.ports)?;
        checked.added = layout.added;
        checked.server_args = layout.server_args;
        checked.cgroup_parent = layout.cgroup_parent;
        if checked.total() > MAX_NODES {
            bail!("{} lists more than {MAX_NODES} nodes", path.display());
        }
        Ok(Some(checked))
    }

    pub fn save(&self, dir: &Path) -> anyhow::Result<()> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let text = serde_json::to_string_pretty(self)?;
        // Written aside then renamed: a `status` running meanwhile reads
        // the old layout or the new one, never half of one.
        let tmp = dir.join("cluster.json.tmp");
        std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, dir.join("cluster.json"))
            .with_context(|| format!("writing {}/cluster.json", dir.display()))
    }
}

/// 127.0.0.N for node N.
pub fn address_of(index: usize) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(127, 0, 0, index as u8))
}

/// Where node N keeps its data, log and process id.
pub fn node_dir(dir: &Path, index: usize) -> PathBuf {
    dir.join(format!("node{index}"))
}

/// The process id of a running node, if it runs.
pub fn running_pid(dir: &Path, index: usize) -> Option<i32> {
    let text = std::fs::read_to_string(node_dir(dir, index).join("pid")).ok()?;
    let pid: i32 = text.trim().parse().ok()?;
    alive(pid).then_some(pid)
}

/// Whether process `pid` exists and is not a zombie.
pub fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name in parentheses.
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// Starts node `node` of `layout` in the background with `binary`; its
/// output goes to `nodeN/varve.log`, its pid to `nodeN/pid`.
pub fn spawn(binary: &Path, dir: &Path, layout: &Layout, node: &Node) -> anyhow::Result<i32> {
    refuse_admin_tls(&node.args)?;
    let home = node_dir(dir, node.index);
    std::fs::create_dir_all(home.join("data"))
        .with_context(|| format!("creating {}", home.display()))?;
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(home.join("varve.log"))
        .with_context(|| format!("opening {}/varve.log", home.display()))?;
    let child = {
        use std::os::unix::process::CommandExt;
        let mut command = Command::new(binary);
        if let Some(parent) = &layout.cgroup_parent {
            let cgroup = parent.join(format!("node{}", node.index));
            varve_bench::cgroup::join_before_exec(&mut command, &cgroup)?;
        }
        command
            .arg("server")
            .args(["--listen", &node.address.to_string()])
            .args(["--data-dir", &home.join("data").to_string_lossy()])
            .args(["--cluster-name", CLUSTER_NAME])
            .args(["--seeds", &layout.seeds()])
            .args(["--dc", &node.dc, "--rack", &node.rack])
            .args(["--port", &layout.ports.native.to_string()])
            .args(["--admin-port", &layout.ports.admin.to_string()])
            .args(["--storage-port", &layout.ports.storage.to_string()])
            .args(&node.args)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            // Its own process group: a Ctrl-C in the launcher's terminal
            // does not reach the nodes.
            .process_group(0)
            .spawn()
            .with_context(|| match &layout.cgroup_parent {
                Some(parent) => format!(
                    "starting {} in cgroup {}/node{}",
                    binary.display(),
                    parent.display(),
                    node.index
                ),
                None => format!("starting {}", binary.display()),
            })?
    };
    let pid = child.id() as i32;
    std::fs::write(home.join("pid"), pid.to_string())?;
    // Not waited for: it outlives this command (and init reaps it).
    drop(child);
    Ok(pid)
}

/// The launcher waits for nodes over their admin port in plain HTTP
/// ([`admin_get`]), so a node whose `--config` turns admin TLS on is not
/// started: it would never look ready.
fn refuse_admin_tls(args: &[String]) -> anyhow::Result<()> {
    let configs = args
        .iter()
        .enumerate()
        .filter_map(|(i, a)| match a.strip_prefix("--config") {
            Some("") => args.get(i + 1).map(String::as_str),
            Some(rest) => rest.strip_prefix('='),
            None => None,
        });
    for config in configs {
        if crate::admin_config::tls_enabled_in(Path::new(config))? {
            bail!("{config}: varve cluster talks to its nodes' admin ports in plain HTTP and does not support {}; leave it off for local clusters (they listen on loopback)", crate::admin_config::ADMIN_TLS_KEY);
        }
    }
    Ok(())
}

/// Sends `signal` to `pid`.
pub fn signal(pid: i32, signal: i32) -> anyhow::Result<()> {
    // SAFETY: kill(2) with a pid read from our own pid file and a valid
    // signal number; it touches no memory of this process.
    let rc = unsafe { libc::kill(pid, signal) };
    if rc != 0 {
        bail!(
            "signal {signal} to {pid}: {}",
            std::io::Error::last_os_error()
        );
    }
    Ok(())
}

/// Waits until `pid` has exited, at most `limit`; whether it did.
pub fn wait_exit(pid: i32, limit: Duration) -> bool {
    let until = Instant::now() + limit;
    while Instant::now() < until {
        if !alive(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    !alive(pid)
}

/// Whether node `node` answers on its admin port (`GET /health`).
pub fn healthy(node: &Node, ports: Ports) -> bool {
    admin_get(node, ports, "/health").is_some()
}

/// Whether node `node` serves CQL (`GET /ready`; not while it joins).
pub fn serving(node: &Node, ports: Ports) -> bool {
    admin_get(node, ports, "/ready").is_some()
}

/// How many nodes node `node` counts UP, itself included (from its
/// `nodetool status`); `None` when it does not answer.
pub fn nodes_up(node: &Node, ports: Ports) -> Option<usize> {
    let text = admin_get(node, ports, "/nodetool/status")?;
    Some(text.lines().filter(|l| l.starts_with("UN ")).count())
}

/// The schema versions node `node` sees (its own and its UP peers'), from
/// its `nodetool describecluster`; `None` when it does not answer.
pub fn schema_versions(node: &Node, ports: Ports) -> Option<usize> {
    let text = admin_get(node, ports, "/nodetool/describecluster")?;
    let versions = text.split("Schema versions:").nth(1)?;
    Some(
        versions
            .lines()
            .filter(|l| l.trim_start().contains(": [") && !l.contains("UNREACHABLE"))
            .count(),
    )
}

/// The operations streaming on node `node` (a bootstrap, a
/// decommission, a repair...) as its `nodetool netstats` lists them:
/// `bootstrap ks.t: 3 of 16 ranges, 1048576 bytes`; empty when none or
/// when it does not answer.
pub fn streams(node: &Node, ports: Ports) -> Vec<String> {
    let Some(text) = admin_get(node, ports, "/nodetool/netstats") else {
        return Vec::new();
    };
    text.lines()
        .filter(|l| l.contains(" ranges, "))
        .map(str::to_string)
        .collect()
}

/// The body of a 200 answer to `GET path` on the node's admin port.
fn admin_get(node: &Node, ports: Ports, path: &str) -> Option<String> {
    use std::io::{Read, Write};
    let addr = std::net::SocketAddr::new(node.address, ports.admin);
    let mut s = std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)).ok()?;
    let _ = s.set_read_timeout(Some(Duration::from_secs(1)));
    let request = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    s.write_all(request.as_bytes()).ok()?;
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    let (head, body) = answer.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.1 200").then(|| body.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_whose_config_turns_admin_tls_on_is_not_started() {
        let dir = std::env::temp_dir().join(format!("varve-launcher-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let config = dir.join("c.yaml");
        std::fs::write(&config, "admin_encryption_options:\n  enabled: true\n").unwrap();
        let path = config.to_string_lossy().to_string();
        for args in [
            vec!["--config".to_string(), path.clone()],
            vec![format!("--config={path}")],
        ] {
            let err = refuse_admin_tls(&args).unwrap_err().to_string();
            assert!(
                err.contains("does not support admin_encryption_options"),
                "{err}"
            );
        }
        assert!(refuse_admin_tls(&["--seeds".to_string(), path]).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn nodes_split_over_data_centres_in_order_with_a_seed_each() {
        let one = Layout::new(3, 1, Ports::default()).expect("valid");
        assert!(one.all().iter().all(|n| n.dc == "datacenter1"));
        assert_eq!(one.seeds(), "127.0.0.1:7000");
        let two = Layout::new(5, 2, Ports::default()).expect("valid");
        let dcs: Vec<String> = two.all().into_iter().map(|n| n.dc).collect();
        assert_eq!(dcs, ["dc1", "dc1", "dc1", "dc2", "dc2"]);
        assert_eq!(two.seeds(), "127.0.0.1:7000,127.0.0.4:7000");
        let six = Layout::new(6, 2, Ports::default()).expect("valid");
        assert_eq!(six.node(4).expect("node 4").dc, "dc2");
        assert_eq!(six.node(4).expect("node 4").address, address_of(4));
    }

    #[test]
    fn layouts_are_limited() {
        assert!(Layout::new(MAX_NODES, 1, Ports::default()).is_ok());
        assert!(Layout::new(MAX_NODES + 1, 1, Ports::default()).is_err());
        assert!(Layout::new(0, 1, Ports::default()).is_err());
        assert!(Layout::new(3, 4, Ports::default()).is_err());
        assert!(Layout::new(3, 0, Ports::default()).is_err());
        let zero = Ports {
            admin: 0,
            ..Ports::default()
        };
        assert!(Layout::new(3, 1, zero).is_err());
        let l = Layout::new(3, 1, Ports::default()).expect("valid");
        assert!(l.node(0).is_err());
        assert!(l.node(4).is_err());
    }

    #[test]
    fn a_layout_survives_a_round_trip_through_its_file() {
        let dir = std::env::temp_dir().join(format!("varve-layout-{}", std::process::id()));
        let mut l = Layout::new(4, 2, Ports::default()).expect("valid");
        l.server_args = vec!["--config".into(), "c.yaml".into()];
        l.cgroup_parent = Some(PathBuf::from("/sys/fs/cgroup/memory/x"));
        l.add(None, vec!["--x".into()]).expect("adds");
        l.save(&dir).expect("saves");
        assert_eq!(Layout::load(&dir).expect("loads"), Some(l.clone()));
        assert_eq!(l.node(1).expect("node 1").args, ["--config", "c.yaml"]);
        assert_eq!(
            l.node(5).expect("node 5").args,
            ["--config", "c.yaml", "--x"]
        );
        std::fs::remove_dir_all(&dir).expect("cleans up");
    }

    #[test]
    fn this_process_is_alive_and_a_reaped_one_is_not() {
        assert!(alive(std::process::id() as i32));
        let mut child = Command::new("true").spawn().expect("spawns");
        let pid = child.id() as i32;
        child.wait().expect("exits");
        assert!(!alive(pid));
    }
}
