//! Delivering hints (docs/design/cluster.md, section 8.5): when a target
//! comes UP, and every [`DISPATCH_INTERVAL`] for targets that are UP, its
//! files are replayed oldest first, each hint a HINT request on the
//! messaging, throttled to `hinted_handoff_throttle` divided by the other
//! nodes; a file is deleted once every hint in it was acknowledged. A
//! hint that fails or times out stops that target's delivery until the
//! next round (the file stays; hints applied twice change nothing, their
//! timestamps being the write's). `nodetool pausehandoff` stops delivery,
//! `resumehandoff` starts it again.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::broadcast::error::RecvError;

use super::file;
use super::store::HintStore;
use crate::env::Clock;
use crate::membership::{Change, Membership};
use crate::net::{HostId, Messaging, Verb};

/// How often targets that are UP are checked for hints to deliver.
pub const DISPATCH_INTERVAL: Duration = Duration::from_secs(10);
/// How long one HINT waits for its acknowledgement.
pub const HINT_TIMEOUT: Duration = Duration::from_secs(10);

/// Delivers the store's hints to their targets.
pub struct HintDispatcher {
    store: Arc<HintStore>,
    messaging: Messaging,
    membership: Arc<dyn Membership>,
    clock: Arc<dyn Clock>,
    paused: AtomicBool,
}

impl HintDispatcher {
    pub fn new(
        store: Arc<HintStore>,
        messaging: Messaging,
        membership: Arc<dyn Membership>,
        clock: Arc<dyn Clock>,
    ) -> Arc<HintDispatcher> {
        Arc::new(HintDispatcher {
            store,
            messaging,
            membership,
            clock,
            paused: AtomicBool::new(false),
        })
    }

    /// `nodetool pausehandoff` (true) and `resumehandoff` (false).
    pub fn set_paused(&self, paused: bool) {
        self.paused.store(paused, Ordering::Relaxed);
    }

    pub fn is_paused(&self) -> bool {
        self.paused.load(Ordering::Relaxed)
    }

    /// Runs until the membership stops: follows UP and DOWN (for the hint
    /// window), delivers on UP and every [`DISPATCH_INTERVAL`], and syncs
    /// the files every `hints_flush_period`.
    pub fn start(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        let me = Arc::clone(self);
        let mut transitions = self.membership.transitions();
        tokio::spawn(async move {
            let mut next_round = me.clock.sleep(DISPATCH_INTERVAL);
            let mut next_flush = me.clock.sleep(me.store.config().flush_period);
            loop {
                tokio::select! {
                    biased;
                    t = transitions.recv() => match t {
                        Ok(t) => {
                            let up = matches!(t.change, Change::Up);
                            let now = me.clock.now();
                            me.store.set_down(t.host_id, (!up).then_some(now));
                            if up {
                                me.deliver(t.host_id).await;
                            }
                        }
                        Err(RecvError::Lagged(_)) => {}
                        Err(RecvError::Closed) => break,
                    },
                    () = &mut next_flush => {
                        me.store.flush();
                        next_flush = me.clock.sleep(me.store.config().flush_period);
                    }
                    () = &mut next_round => {
                        for target in me.store.targets() {
                            me.deliver(target).await;
                        }
                        next_round = me.clock.sleep(DISPATCH_INTERVAL);
                    }
                }
            }
            me.store.flush();
        })
    }

    /// Delivers `target`'s hints if it is UP and delivery is not paused;
    /// stops at the first hint not acknowledged.
    pub async fn deliver(&self, target: HostId) {
        if self.is_paused() {
            return;
        }
        for path in self.store.take(target) {
            let Some(address) = self.membership.live().get(target).map(|p| p.address) else {
                return;
            };
            if !self.deliver_file(target, address, &path).await {
                return;
            }
            self.store.delivered(target, &path);
        }
    }

    /// Sends every hint of one file; whether all were acknowledged.
    async fn deliver_file(&self, target: HostId, to: std::net::SocketAddr, path: &Path) -> bool {
        let contents = match file::read(path) {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!("hints file {} unreadable, dropped: {e}", path.display());
                return true;
            }
        };
        if contents.target != target {
            tracing::warn!("hints file {} names another node; dropped", path.display());
            return true;
        }
        let others = self.membership.peers().len().saturating_sub(1).max(1) as u64;
        let rate = (self.store.config().throttle_bytes_per_sec / others).max(1);
        for payload in contents.payloads {
            if self.is_paused() {
                return false;
            }
            let size = payload.len() as u64;
            let answer = match self
                .messaging
                .request(to, Verb::HINT, payload, HINT_TIMEOUT)
            {
                Ok(a) => a.await,
                Err(_) => return false,
            };
            if answer.is_err() {
                return false;
            }
            self.store.metrics.replayed.inc();
            self.clock
                .sleep(Duration::from_micros(size * 1_000_000 / rate))
                .await;
        }
        true
    }
}
