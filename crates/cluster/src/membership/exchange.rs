//! The gossip exchange itself: the round loop (a heartbeat and a SYN to
//! each peer [`round`](super::round) chooses, every `gossip_interval` on
//! the node's clock) and the GOSSIP handler (a SYN gets a SYN_ACK, a
//! SYN_ACK an ACK, and the deltas either carries are applied, the
//! detector told which nodes advanced). GOSSIP frames are one-way, on the
//! urgent queue of the small connection, and are dropped if still queued
//! a round later: the next round makes up for a lost one.

use std::net::SocketAddr;
use std::sync::{Arc, Weak};

use bytes::Bytes;
use tokio::time::Instant;
use tracing::{debug, warn};

use super::codec::{GossipMessage, NodeDelta, MESSAGE_OVERHEAD_BYTES};
use super::gossiper::{Core, Inner};
use super::round::{choose_targets, Candidates};
use super::state::Applied;
use crate::env::BoxFuture;
use crate::net::failure::{Failure, FailureReason};
use crate::net::handler::{Handler, Reply, Request};
use crate::net::limits::{MAX_GOSSIP_NODES, MAX_GOSSIP_PAYLOAD_BYTES};
use crate::net::verb::Verb;

/// What the deltas of one message may take.
pub(super) const DELTA_BUDGET_BYTES: usize = MAX_GOSSIP_PAYLOAD_BYTES - MESSAGE_OVERHEAD_BYTES;

/// Rounds until shutdown is signalled.
pub(super) async fn gossip_loop(inner: Arc<Inner>) {
    loop {
        inner.round();
        let sleep = inner.env.clock.sleep(inner.config.gossip_interval);
        tokio::select! {
            biased;
            () = inner.stop.wait() => break,
            () = sleep => {}
        }
    }
    debug!(host = %inner.local, "gossip loop stopped");
}

impl Inner {
    /// One round: a heartbeat, a SYN to each chosen peer, a refresh.
    pub(super) fn round(self: &Arc<Self>) {
        let now = self.env.clock.now();
        let (syn, targets, echoes) = {
            let mut guard = self.core.lock();
            let core = &mut *guard;
            core.state.beat();
            core.rotation = core.rotation.wrapping_add(MAX_GOSSIP_NODES - 1);
            let digests = core.state.digests(core.rotation);
            let echoes = self.refresh(core, now);
            let targets = choose_targets(&self.env.rng, &self.candidates(core));
            (GossipMessage::Syn { digests }, targets, echoes)
        };
        if let Some(payload) = encode(&syn) {
            for to in targets {
                self.send_payload(to, payload.clone());
            }
        }
        self.start_echoes(echoes);
    }

    fn candidates(&self, core: &Core) -> Candidates {
        let mut c = Candidates::default();
        for (host, node) in core.state.peers() {
            if core.liveness.is_gossip_live(host) {
                c.live.insert(node.address);
            } else {
                c.unreachable.insert(node.address);
            }
        }
        // An address can hold a live node and an older, dead host id.
        c.unreachable.retain(|a| !c.live.contains(a));
        c.seeds = self
            .config
            .seeds
            .iter()
            .filter(|a| **a != self.address)
            .copied()
            .collect();
        c
    }

    /// A GOSSIP frame from the node listening at `from`.
    fn on_gossip(self: &Arc<Self>, from: SocketAddr, payload: &[u8]) {
        if self.is_stopping() {
            return;
        }
        let message = match GossipMessage::decode(payload) {
            Ok(message) => message,
            Err(error) => {
                debug!(%from, "GOSSIP payload refused: {error}");
                return;
            }
        };
        let now = self.env.clock.now();
        match message {
            GossipMessage::Syn { digests } => {
                let (requests, deltas) = self
                    .core
                    .lock()
                    .state
                    .answer_syn(&digests, DELTA_BUDGET_BYTES);
                // Nothing to ask and nothing to tell: no answer.
                if !requests.is_empty() || !deltas.is_empty() {
                    self.send(from, &GossipMessage::SynAck { requests, deltas });
                }
            }
            GossipMessage::SynAck { requests, deltas } => {
                let (ack, echoes) = {
                    let mut guard = self.core.lock();
                    let core = &mut *guard;
                    apply(core, deltas, now);
                    let ack = core.state.answer_requests(&requests, DELTA_BUDGET_BYTES);
                    (ack, self.refresh(core, now))
                };
                if !ack.is_empty() {
                    self.send(from, &GossipMessage::Ack { deltas: ack });
                }
                self.start_echoes(echoes);
            }
            GossipMessage::Ack { deltas } => {
                let echoes = {
                    let mut guard = self.core.lock();
                    let core = &mut *guard;
                    apply(core, deltas, now);
                    self.refresh(core, now)
                };
                self.start_echoes(echoes);
            }
        }
    }

    /// Queues one GOSSIP frame; a frame that cannot be queued is dropped
    /// (the next round makes up for it).
    pub(super) fn send(&self, to: SocketAddr, message: &GossipMessage) {
        if let Some(payload) = encode(message) {
            self.send_payload(to, payload);
        }
    }

    fn send_payload(&self, to: SocketAddr, payload: Bytes) {
        let sent =
            self.messaging
                .send_one_way(to, Verb::GOSSIP, payload, self.config.gossip_interval);
        if let Err(error) = sent {
            debug!(%to, "GOSSIP not sent: {error}");
        }
    }
}

/// The payload, unless it is over its limit (the builders keep within it,
/// so that would be a bug here, not a peer's fault).
fn encode(message: &GossipMessage) -> Option<Bytes> {
    let payload = message.encode();
    if payload.len() > MAX_GOSSIP_PAYLOAD_BYTES {
        warn!(
            len = payload.len(),
            "a GOSSIP payload over its limit was not sent"
        );
        return None;
    }
    Some(Bytes::from(payload))
}

/// Applies deltas, telling the detector about every node that advanced.
fn apply(core: &mut Core, deltas: Vec<NodeDelta>, now: Instant) {
    for delta in deltas {
        let host = delta.host;
        match core.state.apply(delta) {
            Applied::NewGeneration => {
                core.detector.forget(host);
                core.detector.report(host, now);
            }
            Applied::Advanced => core.detector.report(host, now),
            Applied::Nothing | Applied::Gap => {}
        }
    }
}

/// GOSSIP frames, handed to the gossiper while it runs.
pub(super) struct GossipHandler {
    pub(super) inner: Weak<Inner>,
}

impl Handler for GossipHandler {
    fn handle(&self, request: Request) -> BoxFuture<'static, Option<Reply>> {
        if !request.is_one_way() {
            let failure = Failure::new(FailureReason::MALFORMED_PAYLOAD, "GOSSIP is one-way");
            return Box::pin(async move { Some(Err(failure)) });
        }
        if let Some(inner) = self.inner.upgrade() {
            inner.on_gossip(request.from, &request.payload);
        }
        Box::pin(async { None })
    }
}
