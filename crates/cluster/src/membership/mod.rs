//! Membership and failure detection (docs/design/cluster.md, section 5):
//! which nodes exist, what each says about itself, and which are UP.
//!
//! The rest of the node sees the [`Membership`] trait only: a lock-free
//! snapshot of the peers that are UP ([`LiveSet`]), a watch that fires
//! when it changes, each UP / DOWN [`Transition`], what gossip knows of
//! any node ([`PeerState`]), `announce` for this node's own keys, and a
//! `shutdown` that tells the peers before it stops.
//!
//! [`Gossiper`] implements it with our own scuttlebutt gossip carried in
//! GOSSIP frames over [`crate::net::Messaging`] (so it shares the
//! handshake and its cluster-name check, the urgent queue and the
//! simulated network), a phi-accrual detector on Cassandra's scale, and
//! Cassandra's rule that a peer is UP only once an ECHO got through.
//! Everything reaches time and chance through [`crate::env::Env`], and
//! every map is ordered, so a simulation seed replays it. (The design
//! planned chitchat here; section 3 of the design says why it is not.)
//!
//! One role per file: [`keys`] (gossip keys and statuses), [`codec`]
//! (the GOSSIP payload), [`state`] (versions, digests, deltas),
//! [`detector`] (phi), [`liveness`] (the UP / DOWN rules), [`round`]
//! (whom to gossip with), [`generation`] (the generation file),
//! [`live_set`] (what is published), [`config`], [`gossiper`] (the
//! running service and its API), `exchange` (its rounds and its
//! GOSSIP handler) and [`locations`] (peers' data centres and racks for
//! per-peer internode TLS).

pub mod codec;
pub mod config;
pub mod detector;
mod exchange;
pub mod generation;
pub mod gossiper;
pub mod keys;
pub mod live_set;
pub mod liveness;
pub mod locations;
pub mod round;
pub mod state;

use std::sync::Arc;

use tokio::sync::{broadcast, watch};

pub use codec::GossipMessage;
pub use config::{MembershipConfig, MembershipError};
pub use generation::{next_generation, GenerationError};
pub use gossiper::Gossiper;
pub use keys::{GossipKey, Status};
pub use live_set::{Change, DownReason, LivePeer, LiveSet, PeerState, Transition};
pub use locations::GossipLocations;
pub use state::VersionedValue;

use crate::env::BoxFuture;
use crate::net::handshake::HostId;

/// A node's view of the cluster's membership. Object-safe; the server
/// holds it as `Arc<dyn Membership>`.
pub trait Membership: Send + Sync {
    /// This node's host id.
    fn local_host(&self) -> HostId;

    /// The peers that are UP now: a snapshot, read without a lock.
    fn live(&self) -> Arc<LiveSet>;

    /// Fires with each new live set (a peer UP or DOWN, or a value of an
    /// UP peer changed).
    fn changes(&self) -> watch::Receiver<Arc<LiveSet>>;

    /// Every UP and DOWN from now on, in order, for events and hint
    /// replay (a receiver that falls [`config::TRANSITIONS_CAPACITY`]
    /// behind is told it lagged).
    fn transitions(&self) -> broadcast::Receiver<Transition>;

    /// What gossip knows of `host` (this node included), UP or not.
    fn peer(&self, host: HostId) -> Option<PeerState>;

    /// What gossip knows of every node, in host order
    /// (`nodetool gossipinfo`).
    fn peers(&self) -> Vec<PeerState>;

    /// Sets one of this node's keys; peers learn it within a few rounds.
    /// Refuses the heartbeat, values over the length limit, a new key past
    /// the key limit, and anything after shutdown.
    fn announce(&self, key: GossipKey, value: String) -> Result<(), MembershipError>;

    /// Announces `SHUTDOWN`, waits (bounded) until the peers that are UP
    /// have it, then stops gossiping. Messaging is the caller's to stop
    /// afterwards.
    fn shutdown(&self) -> BoxFuture<'_, ()>;
}

// The trait stays object-safe: this fails to compile otherwise.
const _: Option<&dyn Membership> = None;
