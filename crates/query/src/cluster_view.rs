//! What this node knows of the other nodes of its cluster, as
//! `system.peers` and `system.peers_v2` show it to drivers (which find
//! the whole cluster from one contact point by reading them).
//!
//! The query layer only reads it: the server implements [`ClusterView`]
//! from the cluster's membership and metadata. A node alone has no peers
//! ([`NoPeers`]).

use std::net::IpAddr;

/// One other node, as the peers tables show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerInfo {
    /// Its internode address and port (`peer`, `peer_port`).
    pub listen_address: IpAddr,
    pub listen_port: u16,
    /// Where drivers reach it (`rpc_address`, `native_address`,
    /// `native_port`).
    pub rpc_address: IpAddr,
    pub native_port: u16,
    pub data_center: String,
    pub rack: String,
    pub host_id: [u8; 16],
    pub release_version: String,
    pub schema_version: [u8; 16],
    pub tokens: Vec<i64>,
    /// Whether this node counts it UP now.
    pub up: bool,
    /// Bytes of data it holds on disk, as it last said.
    pub load_bytes: Option<u64>,
    /// Whether it is bootstrapping: not yet a ring member for reads, so
    /// not in `system.peers` (drivers take every row for one).
    pub joining: bool,
}

/// The other nodes this node knows of.
pub trait ClusterView: Send + Sync {
    /// Every other node of the cluster, up or down.
    fn peers(&self) -> Vec<PeerInfo>;

    /// What gossip knows of every node, this one included, as `nodetool
    /// gossipinfo` prints it; `None` when no gossip runs.
    fn gossip_info(&self) -> Option<String> {
        None
    }

    /// Runs a nodetool operation of the cluster layer (`pausehandoff`,
    /// `resumehandoff`, `truncatehints`, `statushandoff`, `decommission`,
    /// `cleanup`) with its arguments: its output, or why it failed; `None`
    /// when this view does not know it. Called where it may block.
    fn command(&self, name: &str, args: &[String]) -> Option<Result<String, String>> {
        let _ = (name, args);
        None
    }
}

/// The view of a node alone.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoPeers;

impl ClusterView for NoPeers {
    fn peers(&self) -> Vec<PeerInfo> {
        Vec::new()
    }
}
