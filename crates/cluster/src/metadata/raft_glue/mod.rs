//! Every openraft type of the crate lives under this module
//! (docs/design/cluster.md, section 3: openraft 0.9.25, pinned, with the
//! v2 storage API of its `storage-v2` feature), so moving to openraft
//! 0.10 touches nothing else.
//!
//! [`TypeConfig`] names our types to openraft: commands are
//! [`Command`]s, node ids are [`HostId`]s, a node is its messaging
//! address ([`Peer`]), and the runtime is [`runtime::SeededRuntime`].
//! The parts: [`codec`] (openraft's messages and entries in bytes),
//! [`log_store`] (`RaftLogStorage` over our log, vote and committed
//! files), [`state_machine`] (`RaftStateMachine`: our pure `apply` and
//! the snapshot file), [`network`] (`RaftNetwork` over RAFT_* frames)
//! and [`node`] ([`RaftNode`], what the service drives, in our types
//! only).

pub mod codec;
pub mod log_store;
pub mod network;
pub mod node;
pub mod runtime;
pub mod state_machine;

use std::fmt;
use std::io::Cursor;
use std::net::SocketAddr;

pub use node::{RaftNode, WriteError};

use super::state::{Command, Outcome};
use crate::net::handshake::HostId;

/// A member of the Raft group as openraft knows it: where its messaging
/// listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peer {
    pub addr: SocketAddr,
}

impl Default for Peer {
    fn default() -> Peer {
        Peer {
            addr: SocketAddr::from(([0, 0, 0, 0], 0)),
        }
    }
}

impl fmt::Display for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.addr)
    }
}

/// What applying a normal entry answers its proposer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApplyResult {
    pub epoch: u64,
    pub outcome: Outcome,
}

openraft::declare_raft_types!(
    /// The metadata log's openraft types.
    pub TypeConfig:
        D = Command,
        R = ApplyResult,
        NodeId = HostId,
        Node = Peer,
        Entry = openraft::Entry<TypeConfig>,
        SnapshotData = Cursor<Vec<u8>>,
        AsyncRuntime = runtime::SeededRuntime,
);

pub type LogId = openraft::LogId<HostId>;
pub type Vote = openraft::Vote<HostId>;
pub type Entry = openraft::Entry<TypeConfig>;
pub type Membership = openraft::Membership<HostId, Peer>;
pub type StoredMembership = openraft::StoredMembership<HostId, Peer>;
pub type SnapshotMeta = openraft::SnapshotMeta<HostId, Peer>;
pub type StorageError = openraft::StorageError<HostId>;
