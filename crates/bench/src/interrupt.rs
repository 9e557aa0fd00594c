//! Ctrl-C: the first stops the running phase (operations in flight finish,
//! the phase is marked interrupted, later phases are skipped) and the run
//! still writes, renders and stops its node; a second exits at once with
//! status 130 after killing the nodes the bench started (by their pids)
//! and removing their memory cgroups, so neither is orphaned.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::task::JoinHandle;
use varve_stress::StopHandle;

use crate::cgroup::CgroupPaths;

/// Exit status after a second Ctrl-C (128 + SIGINT).
pub const EXIT_INTERRUPTED_TWICE: i32 = 130;

#[derive(Debug, Default)]
struct Shared {
    stopped: AtomicBool,
    current: Mutex<Option<StopHandle>>,
    /// Process ids of the nodes the bench started.
    node_pids: Mutex<Vec<u32>>,
    /// Their memory cgroups, if capped.
    cgroups: Mutex<Option<CgroupPaths>>,
}

/// The run's Ctrl-C state.
#[derive(Debug, Clone, Default)]
pub struct Interrupt {
    shared: Arc<Shared>,
}

impl Interrupt {
    /// Listens for Ctrl-C until the returned task is aborted.
    pub fn install(&self) -> JoinHandle<()> {
        let this = self.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_err() {
                return;
            }
            eprintln!("interrupted: stopping the load, then writing what was measured (Ctrl-C again to exit at once)");
            this.stop();
            if tokio::signal::ctrl_c().await.is_ok() {
                this.kill_nodes();
                std::process::exit(EXIT_INTERRUPTED_TWICE);
            }
        })
    }

    /// Stops the current phase and every later one.
    pub fn stop(&self) {
        self.shared.stopped.store(true, Ordering::SeqCst);
        if let Some(h) = self.lock().as_ref() {
            h.stop();
        }
    }

    /// True once stopped.
    pub fn is_stopped(&self) -> bool {
        self.shared.stopped.load(Ordering::SeqCst)
    }

    /// The runner whose phase a Ctrl-C stops; stopped at once when the run
    /// already is (a Ctrl-C between two runners).
    pub fn set_runner(&self, handle: StopHandle) {
        if self.is_stopped() {
            handle.stop();
        }
        *self.lock() = Some(handle);
    }

    /// The nodes to kill on a second Ctrl-C.
    pub fn set_node_pids(&self, pids: &[u32]) {
        *self
            .shared
            .node_pids
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = pids.to_vec();
    }

    /// The memory cgroups to remove on a second Ctrl-C.
    pub fn set_cgroups(&self, paths: CgroupPaths) {
        *self
            .shared
            .cgroups
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(paths);
    }

    /// SIGKILL to every node the bench started, then their cgroups removed.
    fn kill_nodes(&self) {
        let pids = self
            .shared
            .node_pids
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        for pid in pids {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
        let cgroups = self
            .shared
            .cgroups
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if let Some(Err(e)) = cgroups.map(|c| c.remove()) {
            eprintln!("varve bench: {e}");
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<StopHandle>> {
        self.shared
            .current
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }
}
