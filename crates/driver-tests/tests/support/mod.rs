//! A real `varve server` child process for driver tests.
//!
//! `VarveProcess::start()` runs the binary on free ports (`--port 0
//! --admin-port 0`) with a fresh data directory, waits for its ready line
//! (the real ports are read from it) and keeps draining its output so the
//! child never blocks on a full pipe. `stop()` sends SIGTERM and returns the
//! exit status; `Drop` kills the process (SIGKILL) if the test failed before
//! `stop()`, and removes the data directory.
//!
//! The binary is `$VARVE_BIN`, else `$CARGO_TARGET_DIR/debug/varve`, else
//! `<workspace>/target/debug/varve`. It is never built here: run
//! `cargo build -p varve` first.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How long the node may take to print its ready line (it aims at well
/// under a second; a loaded CI machine is slower).
const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a SIGTERM'd node may take to drain and exit.
const STOP_TIMEOUT: Duration = Duration::from_secs(15);
/// Output lines kept for failure messages.
const LOG_TAIL_LINES_MAX: usize = 60;
/// What the node logs once it serves; the CQL address follows it.
const READY_MARKER: &str = "varve ready: CQL on ";

// Each test file compiles these; not every one starts a cluster, reads
// metrics, cuts the network or uses TLS.
#[allow(dead_code)]
pub mod cluster;
#[allow(dead_code)]
pub mod metrics;
#[allow(dead_code)]
pub mod netcut;
#[allow(dead_code)]
pub mod sessions;
#[allow(dead_code)]
pub mod tls;

/// Tells apart the data directories of nodes started by one test binary.
static NODE_SEQ: AtomicU32 = AtomicU32::new(0);

/// Where the `varve` binary is, or a message saying how to get it.
pub fn varve_bin() -> PathBuf {
    if let Some(path) = std::env::var_os("VARVE_BIN") {
        return PathBuf::from(path);
    }
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|dir| {
            if dir.is_absolute() {
                dir
            } else {
                workspace.join(dir)
            }
        })
        .unwrap_or_else(|| workspace.join("target"));
    target.join("debug").join("varve")
}

/// A running `varve server` and what its ready line said.
pub struct VarveProcess {
    child: Option<Child>,
    /// The CQL address from the ready line.
    pub addr: SocketAddr,
    data_dir: PathBuf,
    log_tail: Arc<Mutex<VecDeque<String>>>,
}

impl VarveProcess {
    /// Starts a node and waits until it serves; panics (this is a test
    /// helper) with the node's output if it does not.
    // Each test file compiles this module; not every one starts a plain node.
    #[allow(dead_code)]
    pub fn start() -> VarveProcess {
        Self::start_with_config(None)
    }

    /// [`VarveProcess::start`] with `config` as its cassandra.yaml (kept
    /// in the data directory).
    pub fn start_with_config(config: Option<&str>) -> VarveProcess {
        let bin = varve_bin();
        assert!(
            bin.is_file(),
            "varve binary not found at {}: run `cargo build -p varve` first \
             (or set VARVE_BIN to the binary)",
            bin.display()
        );
        let data_dir = fresh_data_dir();
        let mut extra = Vec::new();
        if let Some(yaml) = config {
            std::fs::create_dir_all(&data_dir).expect("creating the data directory");
            let path = data_dir.join("cassandra.yaml");
            std::fs::write(&path, yaml).expect("writing the config");
            extra = vec!["--config".into(), path.into_os_string()];
        }
        let mut child = Command::new(&bin)
            .args([
                "server",
                "--listen",
                "127.0.0.1",
                "--port",
                "0",
                "--admin-port",
                "0",
                "--storage-port",
                "0",
            ])
            .arg("--data-dir")
            .arg(&data_dir)
            .args(&extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("spawning {}: {e}", bin.display()));

        let log_tail = Arc::new(Mutex::new(VecDeque::new()));
        let (lines_tx, lines_rx) = mpsc::channel();
        let stdout = child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>);
        let stderr = child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>);
        for stream in [stdout, stderr].into_iter().flatten() {
            drain(stream, lines_tx.clone(), Arc::clone(&log_tail));
        }
        drop(lines_tx);

        let mut node = VarveProcess {
            child: Some(child),
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            data_dir,
            log_tail,
        };
        node.addr = node.wait_ready(&lines_rx);
        node
    }

    fn wait_ready(&mut self, lines: &Receiver<String>) -> SocketAddr {
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match lines.recv_timeout(left) {
                Ok(line) => {
                    if let Some(addr) = parse_ready_line(&line) {
                        return addr;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    panic!(
                        "varve not ready after {READY_TIMEOUT:?}:\n{}",
                        self.log_tail()
                    )
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let status = self.child.as_mut().and_then(|c| c.wait().ok());
                    panic!(
                        "varve exited ({status:?}) before ready:\n{}",
                        self.log_tail()
                    )
                }
            }
        }
    }

    /// The CQL address as `host:port`, for `SessionBuilder::known_node`.
    pub fn known_node(&self) -> String {
        self.addr.to_string()
    }

    /// The node's last output lines.
    pub fn log_tail(&self) -> String {
        let tail = self.log_tail.lock().unwrap_or_else(|e| e.into_inner());
        tail.iter().cloned().collect::<Vec<_>>().join("\n")
    }

    /// Sends SIGTERM and waits for the exit (SIGKILL after a timeout).
    pub fn stop(&mut self) -> ExitStatus {
        let mut child = self.child.take().expect("node already stopped");
        let sent = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        let deadline = Instant::now() + STOP_TIMEOUT;
        while sent && Instant::now() < deadline {
            if let Ok(Some(status)) = child.try_wait() {
                return status;
            }
            thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        child.wait().expect("waiting for the killed varve")
    }
}

impl Drop for VarveProcess {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.data_dir);
    }
}

/// `varve ready: CQL on 127.0.0.1:PORT, admin on ...` → the CQL address.
fn parse_ready_line(line: &str) -> Option<SocketAddr> {
    let rest = &line[line.find(READY_MARKER)? + READY_MARKER.len()..];
    let addr = rest.split([',', ' ']).next()?;
    addr.parse().ok()
}

/// Forwards each output line to `lines` (while someone listens) and keeps
/// the last ones in `tail`, until the stream closes.
fn drain(
    stream: Box<dyn Read + Send>,
    lines: mpsc::Sender<String>,
    tail: Arc<Mutex<VecDeque<String>>>,
) {
    thread::spawn(move || {
        for line in BufReader::new(stream).lines() {
            let Ok(line) = line else { break };
            {
                let mut tail = tail.lock().unwrap_or_else(|e| e.into_inner());
                if tail.len() == LOG_TAIL_LINES_MAX {
                    tail.pop_front();
                }
                tail.push_back(line.clone());
            }
            let _ = lines.send(line);
        }
    });
}

fn fresh_data_dir() -> PathBuf {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let name = format!(
        "varve-driver-test-{}-{}-{nanos}",
        std::process::id(),
        NODE_SEQ.fetch_add(1, Ordering::Relaxed)
    );
    std::env::temp_dir().join(name)
}

#[cfg(test)]
mod tests {
    use super::parse_ready_line;

    #[test]
    fn reads_the_cql_address_from_the_ready_line() {
        let line = "2026-01-01T00:00:00Z  INFO varve: varve ready: CQL on 127.0.0.1:40123, \
                    admin on http://127.0.0.1:40124";
        assert_eq!(
            parse_ready_line(line),
            Some("127.0.0.1:40123".parse().unwrap())
        );
        assert_eq!(parse_ready_line("varve stopped"), None);
    }
}
