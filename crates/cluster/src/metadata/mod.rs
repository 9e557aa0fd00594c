//! Cluster metadata in a Raft log (docs/design/cluster.md, section 6):
//! the nodes, their tokens, who votes, and the schema, replicated in the
//! same order to every node.
//!
//! The rest of the node sees the [`MetadataLog`] trait only: the applied
//! metadata as a lock-free snapshot, `propose` from any node (forwarded
//! to the leader), `wait_applied`, and a [`MetadataListener`] told of
//! every applied metadata in log order. openraft never shows through it.
//!
//! One role per file: [`state`] (the metadata, its commands and the pure
//! `apply`), [`codec`] (their bytes), [`limits`], [`store`] (the log,
//! vote and snapshot files), `raft_glue` (every openraft type: its type
//! config, storage, network and runtime), [`rpc`] (the METADATA_PROPOSE
//! payloads), [`fuzz`] (every decoder on arbitrary bytes), `applied`
//! (what is published, in order), `departed` (the leader takes nodes
//! that left out of the Raft group), `service` (the running
//! [`MetadataService`]) and `forming` (a new node finding or creating its
//! cluster).

mod applied;
mod balanced;
pub mod codec;
mod departed;
mod forming;
pub mod fuzz;
pub mod limits;
mod raft_glue;
pub mod rpc;
mod service;
pub mod state;
pub mod store;

use std::fmt;
use std::sync::Arc;

pub use balanced::BalancedTokens;
pub use forming::TokenAllocator;
pub use limits::{METADATA_REQUEST_TIMEOUT, METADATA_VOTERS_MAX};
pub use service::{MetadataConfig, MetadataHooks, MetadataService};
pub use state::{ClusterMetadata, Command, NodeRecord, NodeState, SchemaVersion};
pub use store::StoreError;

use crate::env::BoxFuture;
use crate::net::handshake::HostId;

/// Why a proposal or a wait failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MetadataError {
    /// The command expected another epoch; read the metadata again at
    /// `current_epoch` (with `wait_applied`) and decide again.
    #[error("cluster metadata moved on to epoch {current_epoch}")]
    Stale { current_epoch: u64 },
    /// No leader with a quorum answered within the request timeout.
    #[error("{}", no_quorum_message(*.reachable, *.voters))]
    NoQuorum {
        /// Voters that answered an ECHO when the proposal gave up,
        /// counting this node if it votes; `None` if not known.
        reachable: Option<usize>,
        voters: usize,
    },
    /// The command does not apply to the metadata (a token already
    /// owned, a cluster already created); the message says why.
    #[error("cluster metadata refused the change: {0}")]
    Rejected(String),
    #[error("the cluster metadata log is shut down")]
    Shutdown,
    #[error("cluster metadata: {0}")]
    Other(String),
}

fn no_quorum_message(reachable: Option<usize>, voters: usize) -> String {
    match reachable {
        Some(reachable) => {
            format!("cluster metadata has no quorum ({reachable} of {voters} voters reachable)")
        }
        None if voters == 0 => {
            "cluster metadata has no quorum (this node knows no voters yet)".to_string()
        }
        None => format!("cluster metadata has no quorum ({voters} voters)"),
    }
}

/// Told of every metadata the log applies, in log order, before
/// [`MetadataLog::current`] shows it and before `wait_applied` returns
/// for its epoch. Called on the log's apply task: it must be quick and
/// must not wait on the log itself. At start it is told of the
/// recovered metadata, then of every entry replayed after the snapshot,
/// so what it does must be safe to do twice. A node that was far behind
/// may receive a snapshot instead of entries: it then hears the
/// snapshot's metadata only, not each state in between, so the listener
/// must act on the difference from what it last saw, never on the
/// entry.
pub trait MetadataListener: Send + Sync + 'static {
    fn applied(&self, metadata: &Arc<ClusterMetadata>);
}

impl<F: Fn(&Arc<ClusterMetadata>) + Send + Sync + 'static> MetadataListener for F {
    fn applied(&self, metadata: &Arc<ClusterMetadata>) {
        self(metadata)
    }
}

/// A node's view of the metadata log. Object-safe; the server holds it
/// as `Arc<dyn MetadataLog>`.
pub trait MetadataLog: Send + Sync {
    /// This node's host id.
    fn local_host(&self) -> HostId;

    /// The last applied metadata, read without a lock.
    fn current(&self) -> Arc<ClusterMetadata>;

    /// Proposes `command` (from any node: a follower forwards it to the
    /// leader) and resolves with the epoch it applied at, once this node
    /// has applied it too.
    fn propose(&self, command: Command) -> BoxFuture<'_, Result<u64, MetadataError>>;

    /// Resolves once this node has applied `epoch` (at once if it has).
    fn wait_applied(&self, epoch: u64) -> BoxFuture<'_, Result<(), MetadataError>>;
}

impl fmt::Debug for dyn MetadataLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MetadataLog")
            .field("host", &self.local_host())
            .field("epoch", &self.current().epoch)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_quorum_says_what_it_knows() {
        let known = MetadataError::NoQuorum {
            reachable: Some(1),
            voters: 3,
        };
        assert_eq!(
            known.to_string(),
            "cluster metadata has no quorum (1 of 3 voters reachable)"
        );
        let unknown = MetadataError::NoQuorum {
            reachable: None,
            voters: 0,
        };
        assert_eq!(
            unknown.to_string(),
            "cluster metadata has no quorum (this node knows no voters yet)"
        );
    }
}
