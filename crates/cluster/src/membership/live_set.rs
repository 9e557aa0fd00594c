//! What membership shows the rest of the node: the set of peers that are
//! UP ([`LiveSet`], an immutable snapshot behind an `Arc`), what gossip
//! knows of any node ([`PeerState`], for `system.peers` and `nodetool
//! gossipinfo`), and each UP / DOWN change ([`Transition`], for the
//! STATUS_CHANGE events of registered clients and for hint replay).

use std::collections::BTreeMap;
use std::net::SocketAddr;

use super::keys::{GossipKey, Status};
use super::state::{NodeState, VersionedValue};
use crate::net::handshake::HostId;

/// A peer that is UP, with what it gossips about itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LivePeer {
    pub host_id: HostId,
    /// Where it listens for internode messages.
    pub address: SocketAddr,
    pub generation: i64,
    /// Its data centre and rack (empty if it did not say).
    pub dc: String,
    pub rack: String,
    /// Every key it gossips but the heartbeat, dc and rack included.
    pub values: BTreeMap<GossipKey, String>,
}

impl LivePeer {
    pub fn from_state(host_id: HostId, node: &NodeState) -> LivePeer {
        let values: BTreeMap<GossipKey, String> =
            node.values().map(|(k, v)| (k, v.value.clone())).collect();
        let text = |key| values.get(&key).cloned().unwrap_or_default();
        LivePeer {
            host_id,
            address: node.address,
            generation: node.generation,
            dc: text(GossipKey::DC),
            rack: text(GossipKey::RACK),
            values,
        }
    }

    pub fn get(&self, key: GossipKey) -> Option<&str> {
        self.values.get(&key).map(String::as_str)
    }
}

/// The peers that are UP, this node excluded (it is always up to
/// itself). A snapshot: it never changes once published.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LiveSet {
    pub peers: BTreeMap<HostId, LivePeer>,
}

impl LiveSet {
    pub fn is_up(&self, host: HostId) -> bool {
        self.peers.contains_key(&host)
    }

    pub fn get(&self, host: HostId) -> Option<&LivePeer> {
        self.peers.get(&host)
    }

    /// The UP peer listening at `address`.
    pub fn by_address(&self, address: SocketAddr) -> Option<&LivePeer> {
        self.peers.values().find(|p| p.address == address)
    }

    pub fn len(&self) -> usize {
        self.peers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.peers.is_empty()
    }
}

/// What gossip knows of one node, UP or not (`nodetool gossipinfo`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerState {
    pub host_id: HostId,
    pub address: SocketAddr,
    pub generation: i64,
    /// The version of its latest heartbeat.
    pub heartbeat: u64,
    /// The highest version known of this generation.
    pub max_version: u64,
    /// Every key but the heartbeat, with the version it was set at.
    pub values: BTreeMap<GossipKey, VersionedValue>,
    /// UP (always, for this node itself).
    pub up: bool,
    /// This node's own state.
    pub is_local: bool,
}

impl PeerState {
    pub fn from_state(host_id: HostId, node: &NodeState, up: bool, is_local: bool) -> PeerState {
        PeerState {
            host_id,
            address: node.address,
            generation: node.generation,
            heartbeat: node.heartbeat(),
            max_version: node.max_version(),
            values: node.values().map(|(k, v)| (k, v.clone())).collect(),
            up,
            is_local,
        }
    }

    pub fn get(&self, key: GossipKey) -> Option<&str> {
        self.values.get(&key).map(|v| v.value.as_str())
    }

    pub fn status(&self) -> Option<Status> {
        self.get(GossipKey::STATUS).and_then(Status::parse)
    }
}

/// Why a peer went DOWN.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DownReason {
    /// The failure detector convicted it.
    Convicted,
    /// It announced `SHUTDOWN`.
    Shutdown,
    /// A newer generation showed it restarted; it is UP again after an
    /// ECHO to the new one.
    Restarted,
}

/// UP, or DOWN and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Change {
    Up,
    Down(DownReason),
}

/// One peer going UP or DOWN.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transition {
    pub host_id: HostId,
    pub address: SocketAddr,
    /// The generation it went UP or DOWN in.
    pub generation: i64,
    pub change: Change,
}

impl Transition {
    pub fn is_up(&self) -> bool {
        self.change == Change::Up
    }
}
