//! The UP / DOWN rules (docs/design/cluster.md, section 5), as a pure
//! bookkeeping of each peer that the gossiper re-evaluates after every
//! change and every round.
//!
//! A peer is *gossip-live* when the detector has heard of its current
//! generation and does not convict it, and it has not announced
//! `SHUTDOWN`. It is **UP** when it is gossip-live and an ECHO to it
//! succeeded in that generation: gossip alone (which may come second
//! hand) does not prove that messages reach it. It goes **DOWN** at once
//! when it announces `SHUTDOWN`, when the detector convicts it, or when a
//! newer generation shows it restarted (it is UP again after an ECHO to
//! the new one). A failed ECHO is retried no sooner than `retry_after`
//! later, so a peer that gossip sees but messages cannot reach costs one
//! ECHO per round at most.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::time::Instant;

use super::detector::FailureDetector;
use super::keys::Status;
use super::live_set::{Change, DownReason, Transition};
use super::state::ClusterState;
use crate::net::handshake::HostId;

/// An ECHO to send: to whom, and for which generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Echo {
    pub host: HostId,
    pub address: SocketAddr,
    pub generation: i64,
}

#[derive(Debug, Clone)]
struct Peer {
    generation: i64,
    address: SocketAddr,
    gossip_live: bool,
    up: bool,
    echoed: bool,
    echo_in_flight: bool,
    no_echo_before: Option<Instant>,
}

/// What one re-evaluation decided.
#[derive(Debug, Default)]
pub struct Refresh {
    pub transitions: Vec<Transition>,
    pub echoes: Vec<Echo>,
}

/// Each peer's standing.
#[derive(Debug)]
pub struct Liveness {
    peers: BTreeMap<HostId, Peer>,
    retry_after: Duration,
}

impl Liveness {
    /// `retry_after`: the wait after a failed ECHO (the gossip interval).
    pub fn new(retry_after: Duration) -> Liveness {
        Liveness {
            peers: BTreeMap::new(),
            retry_after,
        }
    }

    pub fn is_up(&self, host: HostId) -> bool {
        self.peers.get(&host).is_some_and(|p| p.up)
    }

    pub fn is_gossip_live(&self, host: HostId) -> bool {
        self.peers.get(&host).is_some_and(|p| p.gossip_live)
    }

    /// Peers that are UP, in host order.
    pub fn up(&self) -> impl Iterator<Item = HostId> + '_ {
        self.peers.iter().filter(|(_, p)| p.up).map(|(h, _)| *h)
    }

    /// Re-evaluates every peer of `state` at `now`.
    pub fn refresh(
        &mut self,
        state: &ClusterState,
        detector: &FailureDetector,
        now: Instant,
    ) -> Refresh {
        let mut out = Refresh::default();
        for (host, node) in state.peers() {
            let peer = self.peers.entry(host).or_insert_with(|| Peer {
                generation: node.generation,
                address: node.address,
                gossip_live: false,
                up: false,
                echoed: false,
                echo_in_flight: false,
                no_echo_before: None,
            });
            if peer.generation != node.generation {
                if peer.up {
                    out.transitions
                        .push(down(host, peer, DownReason::Restarted));
                }
                *peer = Peer {
                    generation: node.generation,
                    address: node.address,
                    gossip_live: false,
                    up: false,
                    echoed: false,
                    echo_in_flight: false,
                    no_echo_before: None,
                };
            }
            let shutdown = node.status() == Some(Status::Shutdown);
            peer.gossip_live = !shutdown && detector.is_live(host, now);
            if peer.up && !peer.gossip_live {
                let reason = if shutdown {
                    DownReason::Shutdown
                } else {
                    DownReason::Convicted
                };
                out.transitions.push(down(host, peer, reason));
            }
            if !peer.gossip_live {
                // A later UP needs a fresh ECHO.
                peer.echoed = false;
                continue;
            }
            if peer.up {
                continue;
            }
            if peer.echoed {
                peer.up = true;
                out.transitions.push(Transition {
                    host_id: host,
                    address: peer.address,
                    generation: peer.generation,
                    change: Change::Up,
                });
            } else if !peer.echo_in_flight && peer.no_echo_before.is_none_or(|t| now >= t) {
                peer.echo_in_flight = true;
                out.echoes.push(Echo {
                    host,
                    address: peer.address,
                    generation: peer.generation,
                });
            }
        }
        out
    }

    /// An ECHO finished; call [`Liveness::refresh`] next. Ignored if the
    /// peer moved to another generation meanwhile.
    pub fn echo_done(&mut self, echo: Echo, ok: bool, now: Instant) {
        let Some(peer) = self.peers.get_mut(&echo.host) else {
            return;
        };
        if peer.generation != echo.generation {
            return;
        }
        peer.echo_in_flight = false;
        if ok {
            peer.echoed = peer.gossip_live;
            peer.no_echo_before = None;
        } else {
            peer.no_echo_before = Some(now + self.retry_after);
        }
    }
}

fn down(host: HostId, peer: &mut Peer, reason: DownReason) -> Transition {
    peer.up = false;
    Transition {
        host_id: host,
        address: peer.address,
        generation: peer.generation,
        change: Change::Down(reason),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::{Clock, SystemClock};
    use crate::membership::keys::GossipKey;
    use crate::net::limits::MAX_GOSSIP_PAYLOAD_BYTES;

    const MS: Duration = Duration::from_millis(1);
    const INTERVAL: Duration = Duration::from_millis(100);

    fn host(n: u8) -> HostId {
        HostId([n; 16])
    }

    fn peer_state(generation: i64, status: Status) -> ClusterState {
        ClusterState::new(
            host(2),
            generation,
            ([127, 0, 0, 2], 7000).into(),
            [(GossipKey::STATUS, status.as_str().to_string())],
        )
    }

    /// This node's view after learning `peer`'s state at `now`.
    fn learn(
        local: &mut ClusterState,
        fd: &mut FailureDetector,
        peer: &ClusterState,
        now: Instant,
    ) {
        for d in peer.local_delta(MAX_GOSSIP_PAYLOAD_BYTES) {
            local.apply(d);
        }
        fd.report(host(2), now);
    }

    struct Fixture {
        local: ClusterState,
        fd: FailureDetector,
        live: Liveness,
        t0: Instant,
    }

    fn fixture() -> Fixture {
        Fixture {
            local: ClusterState::new(host(1), 1, ([127, 0, 0, 1], 7000).into(), []),
            fd: FailureDetector::new(INTERVAL, 8.0),
            live: Liveness::new(INTERVAL),
            t0: SystemClock.now(),
        }
    }

    #[test]
    fn gossip_then_echo_makes_a_peer_up() {
        let mut f = fixture();
        learn(
            &mut f.local,
            &mut f.fd,
            &peer_state(5, Status::Normal),
            f.t0,
        );
        let r = f.live.refresh(&f.local, &f.fd, f.t0);
        assert!(r.transitions.is_empty(), "gossip alone is not UP");
        assert_eq!(r.echoes.len(), 1);
        let echo = r.echoes[0];
        assert_eq!(echo.generation, 5);
        // No second ECHO while one is in flight.
        assert!(f.live.refresh(&f.local, &f.fd, f.t0).echoes.is_empty());
        f.live.echo_done(echo, true, f.t0);
        let r = f.live.refresh(&f.local, &f.fd, f.t0);
        assert_eq!(r.transitions.len(), 1);
        assert_eq!(r.transitions[0].change, Change::Up);
        assert!(f.live.is_up(host(2)));
    }

    #[test]
    fn a_failed_echo_waits_before_the_next() {
        let mut f = fixture();
        learn(
            &mut f.local,
            &mut f.fd,
            &peer_state(5, Status::Normal),
            f.t0,
        );
        let echo = f.live.refresh(&f.local, &f.fd, f.t0).echoes[0];
        f.live.echo_done(echo, false, f.t0);
        assert!(f
            .live
            .refresh(&f.local, &f.fd, f.t0 + 99 * MS)
            .echoes
            .is_empty());
        assert!(!f.live.is_up(host(2)));
        f.fd.report(host(2), f.t0 + 100 * MS);
        let r = f.live.refresh(&f.local, &f.fd, f.t0 + 100 * MS);
        assert_eq!(r.echoes.len(), 1);
    }

    #[test]
    fn conviction_marks_down_and_up_needs_a_new_echo() {
        let mut f = fixture();
        learn(
            &mut f.local,
            &mut f.fd,
            &peer_state(5, Status::Normal),
            f.t0,
        );
        let echo = f.live.refresh(&f.local, &f.fd, f.t0).echoes[0];
        f.live.echo_done(echo, true, f.t0);
        f.live.refresh(&f.local, &f.fd, f.t0);
        // Prior 100 ms, threshold 8: convicted after 1.842 s of silence.
        let later = f.t0 + 1_900 * MS;
        let r = f.live.refresh(&f.local, &f.fd, later);
        assert_eq!(r.transitions.len(), 1);
        assert_eq!(r.transitions[0].change, Change::Down(DownReason::Convicted));
        assert!(!f.live.is_up(host(2)));
        // Heard of again: an ECHO first, then UP.
        f.fd.report(host(2), later);
        let r = f.live.refresh(&f.local, &f.fd, later);
        assert!(r.transitions.is_empty());
        assert_eq!(r.echoes.len(), 1);
    }

    #[test]
    fn shutdown_marks_down_at_once() {
        let mut f = fixture();
        learn(
            &mut f.local,
            &mut f.fd,
            &peer_state(5, Status::Normal),
            f.t0,
        );
        let echo = f.live.refresh(&f.local, &f.fd, f.t0).echoes[0];
        f.live.echo_done(echo, true, f.t0);
        f.live.refresh(&f.local, &f.fd, f.t0);
        let mut peer = peer_state(5, Status::Normal);
        peer.set_local(GossipKey::STATUS, Status::Shutdown.as_str().into());
        learn(&mut f.local, &mut f.fd, &peer, f.t0 + MS);
        let r = f.live.refresh(&f.local, &f.fd, f.t0 + MS);
        assert_eq!(r.transitions.len(), 1);
        assert_eq!(r.transitions[0].change, Change::Down(DownReason::Shutdown));
        assert!(r.echoes.is_empty(), "no ECHO to a node shutting down");
    }

    #[test]
    fn a_new_generation_is_a_restart() {
        let mut f = fixture();
        learn(
            &mut f.local,
            &mut f.fd,
            &peer_state(5, Status::Normal),
            f.t0,
        );
        let old = f.live.refresh(&f.local, &f.fd, f.t0).echoes[0];
        f.live.echo_done(old, true, f.t0);
        f.live.refresh(&f.local, &f.fd, f.t0);
        learn(
            &mut f.local,
            &mut f.fd,
            &peer_state(6, Status::Normal),
            f.t0 + MS,
        );
        let r = f.live.refresh(&f.local, &f.fd, f.t0 + MS);
        assert_eq!(r.transitions.len(), 1);
        assert_eq!(r.transitions[0].change, Change::Down(DownReason::Restarted));
        assert_eq!(r.echoes.len(), 1);
        assert_eq!(r.echoes[0].generation, 6);
        // A late answer for the old generation changes nothing.
        f.live.echo_done(old, true, f.t0 + MS);
        assert!(f
            .live
            .refresh(&f.local, &f.fd, f.t0 + MS)
            .transitions
            .is_empty());
        f.live.echo_done(r.echoes[0], true, f.t0 + MS);
        let r = f.live.refresh(&f.local, &f.fd, f.t0 + MS);
        assert_eq!(r.transitions[0].change, Change::Up);
        assert_eq!(r.transitions[0].generation, 6);
    }
}
