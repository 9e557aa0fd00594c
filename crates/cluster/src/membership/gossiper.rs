//! [`Gossiper`]: membership as a running service over the node's
//! messaging, and its [`Membership`] API.
//!
//! The exchange of gossip itself (the round loop and the GOSSIP handler)
//! is in `exchange.rs`. After every change and every round the gossiper
//! re-evaluates the peers ([`liveness`]), sends the ECHOs that decide UP,
//! publishes the new live set (an `ArcSwap` for lock-free reads, a
//! `watch` for waiters) and broadcasts the transitions.
//!
//! All state sits behind one short mutex that is never held across an
//! await. Dropping the `Gossiper` stops it without a word to the peers,
//! as a crash would; [`Membership::shutdown`] tells them first.
//!
//! [`liveness`]: super::liveness

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use arc_swap::ArcSwap;
use bytes::Bytes;
use parking_lot::Mutex;
use tokio::sync::{broadcast, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::{debug, info};

use super::codec::{GossipMessage, NodeDelta};
use super::config::{check_value, MembershipConfig, MembershipError, TRANSITIONS_CAPACITY};
use super::detector::FailureDetector;
use super::exchange::{gossip_loop, GossipHandler, DELTA_BUDGET_BYTES};
use super::keys::{GossipKey, Status};
use super::live_set::{Change, LivePeer, LiveSet, PeerState, Transition};
use super::liveness::{Echo, Liveness};
use super::state::ClusterState;
use super::Membership;
use crate::env::{timeout, BoxFuture, Env, StopSignal};
use crate::net::handshake::HostId;
use crate::net::limits::MAX_GOSSIP_ENTRIES_PER_NODE;
use crate::net::messaging::Messaging;
use crate::net::verb::Verb;

/// Membership by gossip over [`Messaging`]; see the module docs.
pub struct Gossiper {
    inner: Arc<Inner>,
}

pub(super) struct Inner {
    pub(super) env: Env,
    pub(super) messaging: Messaging,
    pub(super) config: MembershipConfig,
    pub(super) local: HostId,
    pub(super) address: SocketAddr,
    pub(super) core: Mutex<Core>,
    pub(super) live: ArcSwap<LiveSet>,
    /// `Membership::changes`. One of the two `watch`es of the crate (the
    /// other is per-peer TLS, env::tls::per_peer; clippy.toml):
    /// its waiters wake in an unseeded order, so no waiter may let that
    /// order decide anything a simulation replays.
    #[allow(clippy::disallowed_types)]
    pub(super) changes: watch::Sender<Arc<LiveSet>>,
    pub(super) transitions: broadcast::Sender<Transition>,
    pub(super) stop: StopSignal,
    pub(super) stopping: AtomicBool,
    pub(super) tasks: Mutex<Vec<JoinHandle<()>>>,
}

/// What the mutex guards.
pub(super) struct Core {
    pub(super) state: ClusterState,
    pub(super) detector: FailureDetector,
    pub(super) liveness: Liveness,
    /// Where the next SYN's digests start, for clusters larger than one
    /// message.
    pub(super) rotation: usize,
}

impl Gossiper {
    /// Starts gossiping as the node `messaging` speaks for (its host id,
    /// listen address and generation), and handles GOSSIP frames on it.
    /// The first round goes out at once. Needs a tokio runtime.
    pub async fn start(
        config: MembershipConfig,
        messaging: &Messaging,
        env: Env,
    ) -> Result<Gossiper, MembershipError> {
        config.validate()?;
        let identity = messaging.identity();
        if identity.generation <= 0 {
            return Err(MembershipError::NoGeneration);
        }
        let local = identity.host_id;
        let address = messaging.local_addr();
        let mut values = vec![
            (GossipKey::HOST_ID, local.to_string()),
            (GossipKey::DC, config.dc.clone()),
            (GossipKey::RACK, config.rack.clone()),
            (GossipKey::STATUS, Status::Normal.as_str().to_string()),
        ];
        values.extend(config.values.iter().map(|(k, v)| (*k, v.clone())));
        let core = Core {
            state: ClusterState::new(local, identity.generation, address, values),
            detector: FailureDetector::new(config.gossip_interval, config.phi_convict_threshold),
            liveness: Liveness::new(config.gossip_interval),
            rotation: 0,
        };
        let empty = Arc::new(LiveSet::default());
        #[allow(clippy::disallowed_types)]
        let changes = watch::Sender::new(empty.clone());
        let inner = Arc::new(Inner {
            env,
            messaging: messaging.clone(),
            local,
            address,
            core: Mutex::new(core),
            live: ArcSwap::new(empty.clone()),
            changes,
            transitions: broadcast::Sender::new(TRANSITIONS_CAPACITY),
            stop: StopSignal::new(),
            stopping: AtomicBool::new(false),
            tasks: Mutex::new(Vec::new()),
            config,
        });
        messaging.register(
            Verb::GOSSIP,
            GossipHandler {
                inner: Arc::downgrade(&inner),
            },
        );
        info!(
            host = %local, %address, generation = identity.generation,
            seeds = ?inner.config.seeds, "gossip started"
        );
        let task = tokio::spawn(gossip_loop(inner.clone()));
        inner.track(task);
        Ok(Gossiper { inner })
    }

    /// This node's generation.
    pub fn generation(&self) -> i64 {
        self.inner.messaging.identity().generation
    }

    /// Where this node listens for internode messages.
    pub fn address(&self) -> SocketAddr {
        self.inner.address
    }
}

impl Drop for Gossiper {
    /// Stops without announcing anything: peers find out by conviction.
    fn drop(&mut self) {
        self.inner.signal_stop();
    }
}

impl std::fmt::Debug for Gossiper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gossiper")
            .field("host", &self.inner.local)
            .field("address", &self.inner.address)
            .finish_non_exhaustive()
    }
}

impl Inner {
    pub(super) fn is_stopping(&self) -> bool {
        self.stopping.load(Ordering::Acquire)
    }

    fn signal_stop(&self) {
        self.stopping.store(true, Ordering::Release);
        self.stop.stop();
    }

    pub(super) fn track(&self, task: JoinHandle<()>) {
        let mut tasks = self.tasks.lock();
        tasks.retain(|t| !t.is_finished());
        tasks.push(task);
    }

    /// Re-evaluates UP and DOWN, announces the transitions, publishes the
    /// live set if it changed, and hands back the ECHOs to send.
    pub(super) fn refresh(&self, core: &mut Core, now: Instant) -> Vec<Echo> {
        let outcome = core.liveness.refresh(&core.state, &core.detector, now);
        for t in &outcome.transitions {
            match t.change {
                Change::Up => info!(host = %t.host_id, address = %t.address, "peer is now UP"),
                Change::Down(reason) => {
                    info!(host = %t.host_id, address = %t.address, ?reason, "peer is now DOWN")
                }
            }
            // No receiver is fine.
            let _ = self.transitions.send(*t);
        }
        let peers = core
            .liveness
            .up()
            .filter_map(|h| core.state.node(h).map(|n| (h, LivePeer::from_state(h, n))))
            .collect();
        let set = LiveSet { peers };
        if **self.live.load() != set {
            let set = Arc::new(set);
            self.live.store(set.clone());
            self.changes.send_replace(set);
        }
        outcome.echoes
    }

    pub(super) fn start_echoes(self: &Arc<Self>, echoes: Vec<Echo>) {
        for echo in echoes {
            let task = tokio::spawn(self.clone().echo(echo));
            self.track(task);
        }
    }

    /// One ECHO; its outcome goes to the liveness rules. Boxed: it starts
    /// further ECHOs itself.
    fn echo(self: Arc<Self>, echo: Echo) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            let request = self.messaging.request(
                echo.address,
                Verb::ECHO,
                Bytes::new(),
                self.config.echo_timeout,
            );
            let ok = match request {
                Ok(response) => tokio::select! {
                    biased;
                    () = self.stop.wait() => return,
                    // From the generation asked: a node restarted on the
                    // same address answers too, and that says nothing of
                    // the generation it left.
                    answer = response => answer.is_ok_and(|r| {
                        r.from_host == echo.host && r.from_generation == echo.generation
                    }),
                },
                Err(_) => false,
            };
            if !ok {
                debug!(host = %echo.host, address = %echo.address, "ECHO failed");
            }
            let now = self.env.clock.now();
            let echoes = {
                let mut guard = self.core.lock();
                let core = &mut *guard;
                core.liveness.echo_done(echo, ok, now);
                self.refresh(core, now)
            };
            self.start_echoes(echoes);
        })
    }

    fn peer_state(&self, core: &Core, host: HostId) -> Option<PeerState> {
        let node = core.state.node(host)?;
        let is_local = host == self.local;
        let up = is_local || core.liveness.is_up(host);
        Some(PeerState::from_state(host, node, up, is_local))
    }

    /// Says `SHUTDOWN` to every peer gossip counts live and waits, at most
    /// `shutdown_announce_timeout`, for an ECHO from each: an answer on
    /// the same connection means the GOSSIP before it arrived.
    async fn announce_shutdown(&self) {
        let (message, peers) = {
            let mut guard = self.core.lock();
            let core = &mut *guard;
            core.state
                .set_local(GossipKey::STATUS, Status::Shutdown.as_str().to_string());
            let deltas: Vec<NodeDelta> = core.state.local_delta(DELTA_BUDGET_BYTES);
            let peers: Vec<SocketAddr> = core
                .state
                .peers()
                .filter(|(h, _)| core.liveness.is_gossip_live(*h))
                .map(|(_, n)| n.address)
                .collect();
            (GossipMessage::Ack { deltas }, peers)
        };
        let wait = self.config.shutdown_announce_timeout;
        let mut answers = Vec::new();
        for to in &peers {
            self.send(*to, &message);
            if let Ok(answer) = self.messaging.request(*to, Verb::ECHO, Bytes::new(), wait) {
                answers.push(answer);
            }
        }
        let all = async {
            for answer in answers {
                let _ = answer.await;
            }
        };
        let _ = timeout(&*self.env.clock, wait, all).await;
        info!(host = %self.local, peers = peers.len(), "SHUTDOWN announced");
    }
}

impl Membership for Gossiper {
    fn local_host(&self) -> HostId {
        self.inner.local
    }

    fn live(&self) -> Arc<LiveSet> {
        self.inner.live.load_full()
    }

    fn changes(&self) -> watch::Receiver<Arc<LiveSet>> {
        self.inner.changes.subscribe()
    }

    fn transitions(&self) -> broadcast::Receiver<Transition> {
        self.inner.transitions.subscribe()
    }

    fn peer(&self, host: HostId) -> Option<PeerState> {
        let core = self.inner.core.lock();
        self.inner.peer_state(&core, host)
    }

    fn peers(&self) -> Vec<PeerState> {
        let core = self.inner.core.lock();
        core.state
            .nodes()
            .filter_map(|(h, _)| self.inner.peer_state(&core, h))
            .collect()
    }

    fn announce(&self, key: GossipKey, value: String) -> Result<(), MembershipError> {
        if self.inner.is_stopping() {
            return Err(MembershipError::Stopped);
        }
        if !key.is_announceable() {
            return Err(MembershipError::ReservedKey(key));
        }
        check_value(key, &value)?;
        let mut core = self.inner.core.lock();
        let local = self.inner.local;
        let (held, count) = core
            .state
            .node(local)
            .map_or((false, 0), |n| (n.get(key).is_some(), n.key_count()));
        if !held && count >= MAX_GOSSIP_ENTRIES_PER_NODE {
            return Err(MembershipError::TooManyKeys);
        }
        core.state.set_local(key, value);
        Ok(())
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let inner = &self.inner;
            if !inner.stopping.swap(true, Ordering::AcqRel) {
                inner.announce_shutdown().await;
            }
            inner.signal_stop();
            let tasks = std::mem::take(&mut *inner.tasks.lock());
            for task in tasks {
                let _ = task.await;
            }
        })
    }
}
