//! The embedded node: this same executable started as
//! `varve server --data-dir OUT/node-data --port 0 --admin-port 0`, its log
//! in OUT/server.log, its ports read from the ready line
//! (`varve ready: CQL on ADDR, admin on http://ADDR`). It runs in a process
//! group of its own, so a Ctrl-C at the terminal reaches only `varve bench`,
//! which then stops it with SIGTERM once the outputs are written.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::{BenchError, Result};
use crate::http::BaseUrl;

/// How long the node may take to print its ready line.
pub const READY_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the node may take to drain and exit after SIGTERM.
pub const STOP_TIMEOUT: Duration = Duration::from_secs(60);
/// The marker of the ready line.
pub const READY_MARKER: &str = "varve ready: CQL on ";

/// A running embedded node.
pub struct EmbeddedNode {
    child: Option<Child>,
    /// `host:port` of its CQL port.
    pub cql: String,
    /// Its admin port.
    pub admin: BaseUrl,
    pub log: PathBuf,
}

/// `(cql, admin)` addresses from a log text holding the ready line.
pub fn parse_ready(log: &str) -> Option<(String, String)> {
    let line = log.lines().find(|l| l.contains(READY_MARKER))?;
    let rest = &line[line.find(READY_MARKER)? + READY_MARKER.len()..];
    let (cql, rest) = rest.split_once(", admin on ")?;
    // The admin URL ends the line, or is followed by ", internode on ...".
    // It keeps its scheme: an https one is refused by BaseUrl::parse.
    let admin = rest.split([',', ' ', '\t']).next()?;
    Some((cql.trim().to_string(), admin.to_string()))
}

impl EmbeddedNode {
    /// Starts `exe server` with its data under `out` and waits until ready.
    /// `config` is passed as `--config`; with `cgroup`, the node runs in
    /// that cgroup from its first instruction ([`crate::cgroup`]).
    pub async fn start(
        exe: &Path,
        out: &Path,
        config: &Path,
        cgroup: Option<&Path>,
    ) -> Result<EmbeddedNode> {
        let data = out.join("node-data");
        let log = out.join("server.log");
        let log_file = File::create(&log).map_err(|e| BenchError::io(&log, e))?;
        let log_err = log_file.try_clone().map_err(|e| BenchError::io(&log, e))?;
        let mut command = Command::new(exe);
        if let Some(cgroup) = cgroup {
            crate::cgroup::join_before_exec(&mut command, cgroup)?;
        }
        command
            .arg("server")
            .args(["--listen", "127.0.0.1", "--port", "0", "--admin-port", "0"])
            .args(["--storage-port", "0"])
            .arg("--data-dir")
            .arg(&data)
            .arg("--config")
            .arg(config)
            .stdin(Stdio::null())
            .stdout(Stdio::from(log_file))
            .stderr(Stdio::from(log_err));
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let child = command
            .spawn()
            .map_err(|e| BenchError::Node(format!("cannot start {}: {e}", exe.display())))?;
        let mut node = EmbeddedNode {
            child: Some(child),
            cql: String::new(),
            admin: BaseUrl {
                authority: String::new(),
            },
            log,
        };
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            let text = std::fs::read_to_string(&node.log).unwrap_or_default();
            if let Some((cql, admin)) = parse_ready(&text) {
                node.cql = cql;
                node.admin = BaseUrl::parse(&admin)?;
                return Ok(node);
            }
            if let Some(status) = node
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                return Err(BenchError::Node(format!(
                    "exited with {status} before it was ready; see {}:\n{}",
                    node.log.display(),
                    tail(&text, 20)
                )));
            }
            if Instant::now() > deadline {
                return Err(BenchError::Node(format!(
                    "not ready after {READY_TIMEOUT:?}; see {}",
                    node.log.display()
                )));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The node's process id.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// SIGTERM, then waits for the node to drain and exit (killed after
    /// [`STOP_TIMEOUT`]). Returns an error when it did not exit cleanly.
    pub async fn stop(mut self) -> Result<()> {
        let Some(mut child) = self.child.take() else {
            return Ok(());
        };
        // std has no signal API; `kill` is in every base system.
        let sent = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .is_ok_and(|s| s.success());
        let deadline = Instant::now() + STOP_TIMEOUT;
        loop {
            match child.try_wait() {
                Ok(Some(status)) if status.success() => return Ok(()),
                Ok(Some(status)) => {
                    return Err(BenchError::Node(format!(
                        "exited with {status}; see {}",
                        self.log.display()
                    )))
                }
                Ok(None) if sent && Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(BenchError::Node(format!(
                        "did not stop within {STOP_TIMEOUT:?} of SIGTERM; killed"
                    )));
                }
            }
        }
    }
}

impl Drop for EmbeddedNode {
    /// A node left behind by an error is killed, never orphaned.
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// The YAML config written for the nodes when `--config` is not given:
/// small memtables so that short runs flush and compact, or (`None`) the
/// server's defaults.
pub fn default_config(memtable_space: Option<&str>) -> String {
    let mut text = "# Written by varve bench for the nodes it starts.\n".to_string();
    if let Some(space) = memtable_space {
        text.push_str(&format!("memtable_heap_space: {space}\n"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_line() {
        let log = "2026-01-01T00:00:00Z  INFO varve: opening\n\
                   2026-01-01T00:00:01Z  INFO varve: varve ready: CQL on 127.0.0.1:40001, admin on http://127.0.0.1:40002\n";
        assert_eq!(
            parse_ready(log),
            Some(("127.0.0.1:40001".into(), "http://127.0.0.1:40002".into()))
        );
        assert_eq!(
            parse_ready(
                "INFO varve ready: CQL on 127.0.0.1:9042, admin on http://127.0.0.1:9180, \
                 internode on 127.0.0.1:7000"
            ),
            Some((
                "127.0.0.1:9042".to_string(),
                "http://127.0.0.1:9180".to_string()
            ))
        );
        assert_eq!(
            parse_ready("varve ready: CQL on 127.0.0.1:1, admin on https://127.0.0.1:2")
                .map(|r| r.1),
            Some("https://127.0.0.1:2".to_string())
        );
        assert_eq!(parse_ready("varve ready: CQL on x"), None);
        assert_eq!(parse_ready(""), None);
    }

    #[test]
    fn default_config_is_yaml_with_the_memtable_size() {
        assert!(default_config(Some("256KiB")).contains("\nmemtable_heap_space: 256KiB\n"));
        assert!(!default_config(None).contains("memtable"));
    }
}
