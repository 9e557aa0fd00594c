//! The replicated state: [`ClusterMetadata`], the commands that change
//! it, and [`apply`], a pure function of (metadata, entry).
//!
//! Invariants, each kept by `apply` and checked by its property test:
//!
//! 1. `epoch` is the log index of the last applied entry, whatever the
//!    entry did: a blank entry, a voter change, an applied command and a
//!    rejected one all move it. Every node that applied the same prefix
//!    of the log holds equal metadata with the same epoch.
//! 2. A command with an `expected_epoch` applies only if it equals the
//!    epoch before it; otherwise it is `Stale`, changes nothing but the
//!    epoch, and reports the epoch after it (its own index), which is the
//!    epoch a retry must expect.
//! 3. `schema_version` is the MD5 of `schema` as a name-based (version 3)
//!    UUID, computed at apply: equal bytes give equal versions on every
//!    node, and it changes only when the bytes do.
//! 4. No token and no storage address belongs to two nodes (but for a
//!    replacement's pair, see 5), and a listed node's tokens never
//!    change (a `Join` of a listed node may change its addresses and
//!    location only: moving tokens needs streaming).
//! 5. At most one node moves ranges at a time: a node enters `Joining`
//!    or `Leaving` only while no other node is in either; a new node
//!    enters `Normal` or `Joining`, `Joining` becomes `Normal`, `Normal`
//!    may become `Leaving`, and a `Leaving` node goes with `Leave`
//!    (docs/design/topology.md). A replacement is the one exception: a
//!    new `Joining` node with exactly a `Normal` node's tokens makes that
//!    node `Leaving` in the same entry (the two share their tokens, and
//!    move together), and becoming `Normal` removes it.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::net::SocketAddr;

use bytes::Bytes;
use md5::{Digest, Md5};

use crate::net::handshake::{ClusterId, HostId};

/// What a node is doing in the ring (docs/design/topology.md, section 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NodeState {
    /// Owns its tokens and serves.
    Normal,
    /// Bootstrapping: receives the writes of the ranges its tokens will
    /// own (a pending replica), and is read from only once `Normal`.
    Joining,
    /// Decommissioning: still owns its tokens and serves, while the nodes
    /// that take its ranges over receive their writes and its data.
    Leaving,
}

impl NodeState {
    pub fn code(self) -> u8 {
        match self {
            NodeState::Normal => 1,
            NodeState::Joining => 2,
            NodeState::Leaving => 3,
        }
    }

    pub fn from_code(code: u8) -> Option<NodeState> {
        match code {
            1 => Some(NodeState::Normal),
            2 => Some(NodeState::Joining),
            3 => Some(NodeState::Leaving),
            _ => None,
        }
    }

    /// Whether reads find the node's tokens (the read ring).
    pub fn owns_for_reads(self) -> bool {
        matches!(self, NodeState::Normal | NodeState::Leaving)
    }

    /// Whether the node's tokens are in the ring once the movement in
    /// progress ends (the write ring).
    pub fn receives_writes(self) -> bool {
        matches!(self, NodeState::Normal | NodeState::Joining)
    }

    /// Whether the node's tokens move ranges (one movement at a time).
    pub fn is_moving(self) -> bool {
        matches!(self, NodeState::Joining | NodeState::Leaving)
    }
}

/// One node as the metadata knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeRecord {
    pub host_id: HostId,
    /// Where its internode messaging listens.
    pub storage_addr: SocketAddr,
    /// Where its CQL clients connect (`rpc_address`:`native_port`), if it
    /// serves them.
    pub rpc_addr: Option<SocketAddr>,
    pub dc: String,
    pub rack: String,
    pub tokens: Vec<i64>,
    pub state: NodeState,
}

/// A 16-byte digest of the schema, shown as a UUID.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct SchemaVersion(pub [u8; 16]);

impl SchemaVersion {
    /// MD5 of `schema`, with the version and variant bits of a
    /// name-based UUID (as Java's `UUID.nameUUIDFromBytes`).
    pub fn of(schema: &[u8]) -> SchemaVersion {
        let mut digest: [u8; 16] = Md5::digest(schema).into();
        digest[6] = (digest[6] & 0x0f) | 0x30;
        digest[8] = (digest[8] & 0x3f) | 0x80;
        SchemaVersion(digest)
    }
}

impl fmt::Display for SchemaVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&HostId(self.0), f)
    }
}

impl fmt::Debug for SchemaVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// The state every node replicates through the metadata log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterMetadata {
    /// Log index of the last applied entry; 0 before any.
    pub epoch: u64,
    /// Empty, and `cluster_id` zero, until `CreateCluster` applied.
    pub cluster_name: String,
    pub cluster_id: ClusterId,
    pub nodes: BTreeMap<HostId, NodeRecord>,
    /// The nodes that vote on the log (openraft's voter set, as last
    /// applied); the other nodes are learners.
    pub voters: BTreeSet<HostId>,
    /// The schema in the caller's canonical encoding; this crate never
    /// reads it.
    pub schema: Bytes,
    pub schema_version: SchemaVersion,
}

impl Default for ClusterMetadata {
    fn default() -> ClusterMetadata {
        ClusterMetadata {
            epoch: 0,
            cluster_name: String::new(),
            cluster_id: ClusterId::default(),
            nodes: BTreeMap::new(),
            voters: BTreeSet::new(),
            schema: Bytes::new(),
            schema_version: SchemaVersion::of(&[]),
        }
    }
}

impl ClusterMetadata {
    /// Whether `CreateCluster` has been applied.
    pub fn has_cluster(&self) -> bool {
        !self.cluster_id.is_zero()
    }

    /// The node that owns `token` exactly, if any.
    pub fn token_owner(&self, token: i64) -> Option<HostId> {
        self.nodes
            .values()
            .find(|n| n.tokens.contains(&token))
            .map(|n| n.host_id)
    }
}

/// A change proposed to the metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Names the cluster and adds its first node; applies once.
    CreateCluster {
        cluster_name: String,
        cluster_id: ClusterId,
        node: NodeRecord,
    },
    /// Adds a node, or replaces the record of one already there (its
    /// addresses changed; its tokens must be the same).
    Join {
        node: NodeRecord,
        expected_epoch: u64,
    },
    /// Replaces the whole schema.
    SchemaChange { schema: Bytes, expected_epoch: u64 },
    /// Removes a `Leaving` node whose ranges have moved (the end of a
    /// decommission).
    Leave { host: HostId, expected_epoch: u64 },
    /// Makes exactly these nodes voters. Carried by openraft's membership
    /// change, so it reaches the log as [`Entry::Voters`], never as a
    /// command; `apply` refuses it as one.
    SetVoters { voters: BTreeSet<HostId> },
}

/// One log entry as the state machine sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// A new leader's first entry.
    Blank,
    Command(Command),
    /// A voter change committed: the voters now.
    Voters(BTreeSet<HostId>),
}

/// What applying an entry did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Applied,
    /// The command expected another epoch; `current_epoch` is the epoch
    /// after this entry, the one a retry expects.
    Stale {
        current_epoch: u64,
    },
    /// The command cannot apply to this metadata (the reason says why).
    Rejected(String),
}

/// Applies the entry at log `index` to `metadata` (see the module's
/// invariants). Never panics; an index that does not follow the epoch is
/// applied anyway (openraft guarantees order), and sets the epoch.
pub fn apply(metadata: &mut ClusterMetadata, index: u64, entry: &Entry) -> Outcome {
    let before = metadata.epoch;
    metadata.epoch = index;
    match entry {
        Entry::Blank => Outcome::Applied,
        Entry::Voters(voters) => {
            metadata.voters = voters.clone();
            Outcome::Applied
        }
        Entry::Command(command) => apply_command(metadata, before, command),
    }
}

fn apply_command(metadata: &mut ClusterMetadata, before: u64, command: &Command) -> Outcome {
    if let Some(expected) = expected_epoch(command) {
        if expected != before {
            return Outcome::Stale {
                current_epoch: metadata.epoch,
            };
        }
    }
    match command {
        Command::CreateCluster {
            cluster_name,
            cluster_id,
            node,
        } => create_cluster(metadata, cluster_name, *cluster_id, node),
        Command::Join { node, .. } => join(metadata, node),
        Command::Leave { host, .. } => match metadata.nodes.get(host).map(|n| n.state) {
            Some(NodeState::Leaving) => {
                metadata.nodes.remove(host);
                Outcome::Applied
            }
            Some(state) => Outcome::Rejected(format!("{host} is {state:?}, not Leaving")),
            None => Outcome::Rejected(format!("{host} is not listed")),
        },
        Command::SchemaChange { schema, .. } => {
            if !metadata.has_cluster() {
                return Outcome::Rejected("no cluster yet".to_string());
            }
            metadata.schema_version = SchemaVersion::of(schema);
            metadata.schema = schema.clone();
            Outcome::Applied
        }
        Command::SetVoters { .. } => {
            Outcome::Rejected("voters change through a membership change".to_string())
        }
    }
}

fn expected_epoch(command: &Command) -> Option<u64> {
    match command {
        Command::Join { expected_epoch, .. }
        | Command::SchemaChange { expected_epoch, .. }
        | Command::Leave { expected_epoch, .. } => Some(*expected_epoch),
        Command::CreateCluster { .. } | Command::SetVoters { .. } => None,
    }
}

fn create_cluster(
    metadata: &mut ClusterMetadata,
    name: &str,
    id: ClusterId,
    node: &NodeRecord,
) -> Outcome {
    if metadata.has_cluster() {
        return Outcome::Rejected(format!("cluster {} exists", metadata.cluster_name));
    }
    if id.is_zero() {
        return Outcome::Rejected("a cluster id is not zero".to_string());
    }
    if let Some(reason) = token_conflict(&metadata.nodes, node) {
        return Outcome::Rejected(reason);
    }
    metadata.cluster_name = name.to_string();
    metadata.cluster_id = id;
    metadata.nodes.insert(node.host_id, node.clone());
    Outcome::Applied
}

fn join(metadata: &mut ClusterMetadata, node: &NodeRecord) -> Outcome {
    if !metadata.has_cluster() {
        return Outcome::Rejected("no cluster yet".to_string());
    }
    let listed = metadata.nodes.get(&node.host_id).map(|n| n.state);
    if let Some(state) = listed {
        if metadata.nodes[&node.host_id].tokens != node.tokens {
            return Outcome::Rejected(format!("{} is listed with other tokens", node.host_id));
        }
        if !may_become(Some(state), node.state) {
            return Outcome::Rejected(format!(
                "{} is {:?} and cannot become {:?}",
                node.host_id, state, node.state
            ));
        }
    } else if !may_become(None, node.state) {
        return Outcome::Rejected(format!("a new node cannot be {:?}", node.state));
    }
    // A new joining node with exactly a Normal node's tokens replaces it;
    // a listed one shares them with the node it replaces, now Leaving.
    let partner = metadata
        .nodes
        .values()
        .find(|n| n.host_id != node.host_id && !node.tokens.is_empty() && n.tokens == node.tokens)
        .map(|n| (n.host_id, n.state));
    let replaces = match (listed, node.state, partner) {
        (None, NodeState::Joining, Some((id, NodeState::Normal))) => Some(id),
        (Some(_), _, Some((id, NodeState::Leaving))) => Some(id),
        _ => None,
    };
    if node.state.is_moving() {
        if let Some(other) = metadata.nodes.values().find(|n| {
            n.host_id != node.host_id && Some(n.host_id) != replaces && n.state.is_moving()
        }) {
            return Outcome::Rejected(format!(
                "{} is moving ranges ({:?}); one node moves at a time",
                other.host_id, other.state
            ));
        }
    }
    let others: BTreeMap<HostId, NodeRecord> = metadata
        .nodes
        .iter()
        .filter(|(id, _)| Some(**id) != replaces)
        .map(|(id, n)| (*id, n.clone()))
        .collect();
    if let Some(reason) = token_conflict(&others, node) {
        return Outcome::Rejected(reason);
    }
    if let Some(owner) = others
        .values()
        .find(|n| n.host_id != node.host_id && n.storage_addr == node.storage_addr)
    {
        return Outcome::Rejected(format!(
            "address {} belongs to node {} ({:?}), a member of this cluster: to replace it, \
             start the new node with replace_address_first_boot: {}; to add a node, give it \
             an address of its own",
            node.storage_addr,
            owner.host_id,
            owner.state,
            node.storage_addr.ip()
        ));
    }
    metadata.nodes.insert(node.host_id, node.clone());
    if let Some(replaced) = replaces {
        match node.state {
            // The replacement serves: the replaced node goes.
            NodeState::Normal => {
                metadata.nodes.remove(&replaced);
            }
            _ => {
                if let Some(r) = metadata.nodes.get_mut(&replaced) {
                    r.state = NodeState::Leaving;
                }
            }
        }
    }
    Outcome::Applied
}

/// Whether a node in state `from` (`None`: not listed) may be listed in
/// state `to`: a new node enters `Normal` or `Joining`; `Joining` ends
/// `Normal`; `Normal` may start `Leaving`, which ends with `Leave`.
fn may_become(from: Option<NodeState>, to: NodeState) -> bool {
    use NodeState::*;
    matches!(
        (from, to),
        (None, Normal | Joining)
            | (Some(Normal), Normal | Leaving)
            | (Some(Joining), Joining | Normal)
            | (Some(Leaving), Leaving)
    )
}

/// Why `node`'s tokens cannot join `nodes`: a token repeated in its own
/// list or owned by another node.
fn token_conflict(nodes: &BTreeMap<HostId, NodeRecord>, node: &NodeRecord) -> Option<String> {
    let mut own = BTreeSet::new();
    for token in &node.tokens {
        if !own.insert(*token) {
            return Some(format!("token {token} repeated"));
        }
    }
    let other = nodes
        .values()
        .filter(|other| other.host_id != node.host_id)
        .find(|other| other.tokens.iter().any(|t| own.contains(t)))?;
    Some(format!("a token is owned by {}", other.host_id))
}

#[cfg(test)]
#[path = "state_tests.rs"]
pub(crate) mod tests;
