//! What a node knows of every node by gossip, its own included, and the
//! scuttlebutt reconciliation over it (pure: no I/O, no clock).
//!
//! Each node's state belongs to one generation (its start). Within a
//! generation, every change the node makes to its own keys, heartbeats
//! included, takes the next number of one counter, its *version*; a key
//! keeps only its latest value and version. So "what changed since
//! version v" is every entry above v, and a node's `max_version` is the
//! version of its latest entry. A newer generation replaces the whole
//! state of that node.
//!
//! An exchange: the opener sends digests `(host, generation,
//! max_version)` of everything it knows (SYN); the other side answers
//! with the entries the opener lacks and digests of what it wants itself
//! (SYN_ACK); the opener sends those (ACK). Deltas are filled in version
//! order up to a byte budget, so a cut delta still covers a prefix of
//! versions: its receiver simply asks for the rest next round.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;

use super::codec::{delta_header_bytes, entry_bytes, Digest, Entry, NodeDelta, DIGEST_BYTES};
use super::keys::{GossipKey, Status};
use crate::net::handshake::HostId;
use crate::net::limits::{MAX_GOSSIP_ENTRIES_PER_NODE, MAX_GOSSIP_NODES};

/// A value and the version it was set at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionedValue {
    pub value: String,
    pub version: u64,
}

/// One node's gossiped state in one generation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeState {
    pub generation: i64,
    /// Where it listens for internode messages.
    pub address: SocketAddr,
    entries: BTreeMap<GossipKey, VersionedValue>,
    max_version: u64,
}

impl NodeState {
    fn new(generation: i64, address: SocketAddr) -> NodeState {
        NodeState {
            generation,
            address,
            entries: BTreeMap::new(),
            max_version: 0,
        }
    }

    pub fn max_version(&self) -> u64 {
        self.max_version
    }

    /// Keys held, the heartbeat included.
    pub fn key_count(&self) -> usize {
        self.entries.len()
    }

    /// The version of the latest heartbeat (0 before the first).
    pub fn heartbeat(&self) -> u64 {
        self.entries
            .get(&GossipKey::HEARTBEAT)
            .map_or(0, |v| v.version)
    }

    pub fn get(&self, key: GossipKey) -> Option<&str> {
        self.entries.get(&key).map(|v| v.value.as_str())
    }

    /// Every key but the heartbeat.
    pub fn values(&self) -> impl Iterator<Item = (GossipKey, &VersionedValue)> {
        self.entries
            .iter()
            .filter(|(k, _)| **k != GossipKey::HEARTBEAT)
            .map(|(k, v)| (*k, v))
    }

    /// The status it announced, if one this node knows.
    pub fn status(&self) -> Option<Status> {
        self.get(GossipKey::STATUS).and_then(Status::parse)
    }

    fn digest(&self, host: HostId) -> Digest {
        Digest {
            host,
            generation: self.generation,
            max_version: self.max_version,
        }
    }

    /// Entries above `from`, in version order.
    fn entries_since(&self, from: u64) -> Vec<Entry> {
        let mut out: Vec<Entry> = self
            .entries
            .iter()
            .filter(|(_, v)| v.version > from)
            .map(|(k, v)| Entry {
                key: *k,
                version: v.version,
                value: v.value.clone(),
            })
            .collect();
        out.sort_by_key(|e| e.version);
        out
    }

    /// Takes an entry newer than what it holds of the key. A key beyond
    /// [`MAX_GOSSIP_ENTRIES_PER_NODE`] is not kept; its version still
    /// counts as known, so it is not asked for again.
    fn take(&mut self, entry: Entry) {
        self.max_version = self.max_version.max(entry.version);
        let full = self.entries.len() >= MAX_GOSSIP_ENTRIES_PER_NODE;
        match self.entries.get_mut(&entry.key) {
            Some(held) if held.version < entry.version => {
                held.value = entry.value;
                held.version = entry.version;
            }
            Some(_) => {}
            None if full => {}
            None => {
                self.entries.insert(
                    entry.key,
                    VersionedValue {
                        value: entry.value,
                        version: entry.version,
                    },
                );
            }
        }
    }
}

/// What applying one node delta did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// Newer versions of the generation already held.
    Advanced,
    /// A generation newer than the one held (or a node not known before).
    NewGeneration,
    /// Nothing new: an older generation, versions already held, or this
    /// node's own state (only this node speaks for itself).
    Nothing,
    /// Starts above what is held: a gap, left for the next exchange.
    Gap,
}

/// Fills node deltas up to a byte budget.
#[derive(Debug)]
pub struct DeltaBuilder {
    left: usize,
    full: bool,
    deltas: Vec<NodeDelta>,
}

impl DeltaBuilder {
    pub fn new(budget_bytes: usize) -> DeltaBuilder {
        DeltaBuilder {
            left: budget_bytes,
            full: false,
            deltas: Vec::new(),
        }
    }

    /// Adds `node`'s entries above `from`, as many as fit (in version
    /// order). Once one does not fit, nothing more is added.
    fn push(&mut self, host: HostId, node: &NodeState, from: u64) {
        if self.full || from >= node.max_version {
            return;
        }
        if self.deltas.len() == MAX_GOSSIP_NODES {
            self.full = true;
            return;
        }
        let since = node.entries_since(from);
        if since.is_empty() {
            // Versions of keys it did not keep: nothing to send.
            return;
        }
        let header = delta_header_bytes(node.address);
        let mut entries = Vec::new();
        let mut need = header;
        for entry in since {
            let size = entry_bytes(entry.value.len());
            if need + size > self.left {
                self.full = true;
                break;
            }
            need += size;
            entries.push(entry);
        }
        if entries.is_empty() {
            self.full = true;
            return;
        }
        self.left -= need;
        self.deltas.push(NodeDelta {
            host,
            generation: node.generation,
            address: node.address,
            from_version: from,
            entries,
        });
    }

    pub fn finish(self) -> Vec<NodeDelta> {
        self.deltas
    }
}

/// Every node's state as this node knows it.
#[derive(Debug, Clone)]
pub struct ClusterState {
    local: HostId,
    nodes: BTreeMap<HostId, NodeState>,
}

impl ClusterState {
    /// A state holding only this node, with `values` set in order.
    pub fn new(
        local: HostId,
        generation: i64,
        address: SocketAddr,
        values: impl IntoIterator<Item = (GossipKey, String)>,
    ) -> ClusterState {
        let mut nodes = BTreeMap::new();
        nodes.insert(local, NodeState::new(generation, address));
        let mut state = ClusterState { local, nodes };
        for (key, value) in values {
            state.set_local(key, value);
        }
        state
    }

    pub fn local(&self) -> HostId {
        self.local
    }

    pub fn node(&self, host: HostId) -> Option<&NodeState> {
        self.nodes.get(&host)
    }

    pub fn nodes(&self) -> impl Iterator<Item = (HostId, &NodeState)> {
        self.nodes.iter().map(|(h, n)| (*h, n))
    }

    /// Every node but this one.
    pub fn peers(&self) -> impl Iterator<Item = (HostId, &NodeState)> {
        let local = self.local;
        self.nodes().filter(move |(h, _)| *h != local)
    }

    fn local_mut(&mut self) -> &mut NodeState {
        // The local node is inserted at creation and never removed.
        let local = self.local;
        self.nodes
            .entry(local)
            .or_insert_with(|| NodeState::new(0, ([0, 0, 0, 0], 0).into()))
    }

    /// Sets one of this node's keys under the next version; false (and no
    /// new version) if it already holds that value, or if the key is new
    /// and the node already has [`MAX_GOSSIP_ENTRIES_PER_NODE`] keys.
    pub fn set_local(&mut self, key: GossipKey, value: String) -> bool {
        let node = self.local_mut();
        match node.entries.get(&key) {
            Some(held) if key != GossipKey::HEARTBEAT && held.value == value => return false,
            None if node.entries.len() >= MAX_GOSSIP_ENTRIES_PER_NODE => return false,
            _ => {}
        }
        let version = node.max_version + 1;
        node.take(Entry {
            key,
            version,
            value,
        });
        true
    }

    /// One heartbeat: the next version of [`GossipKey::HEARTBEAT`].
    pub fn beat(&mut self) {
        self.set_local(GossipKey::HEARTBEAT, String::new());
    }

    /// Digests for a SYN: this node's first, then up to
    /// [`MAX_GOSSIP_NODES`] - 1 others starting at `rotation` (modulo
    /// their number), so a cluster larger than a message is covered over
    /// several rounds.
    pub fn digests(&self, rotation: usize) -> Vec<Digest> {
        let mut out = Vec::new();
        if let Some(node) = self.nodes.get(&self.local) {
            out.push(node.digest(self.local));
        }
        let peers: Vec<(HostId, &NodeState)> = self.peers().collect();
        if peers.is_empty() {
            return out;
        }
        let start = rotation % peers.len();
        let take = peers.len().min(MAX_GOSSIP_NODES - 1);
        for i in 0..take {
            let (host, node) = peers[(start + i) % peers.len()];
            out.push(node.digest(host));
        }
        out
    }

    /// The answer to a SYN: the digests this node wants (of what it holds)
    /// and deltas of what the opener lacks, within `budget_bytes`.
    pub fn answer_syn(
        &self,
        digests: &[Digest],
        budget_bytes: usize,
    ) -> (Vec<Digest>, Vec<NodeDelta>) {
        let mut requests = Vec::new();
        let mut sends: Vec<(HostId, u64)> = Vec::new();
        let mut named = BTreeSet::new();
        for d in digests {
            if !named.insert(d.host) {
                continue;
            }
            match self.nodes.get(&d.host) {
                // Never ask for this node's own state.
                None if d.host == self.local => {}
                None => requests.push(Digest {
                    max_version: 0,
                    ..*d
                }),
                Some(n) if n.generation < d.generation => {
                    if d.host != self.local {
                        requests.push(Digest {
                            max_version: 0,
                            ..*d
                        });
                    }
                }
                Some(n) if n.generation > d.generation => sends.push((d.host, 0)),
                Some(n) if n.max_version < d.max_version => {
                    if d.host != self.local {
                        requests.push(n.digest(d.host));
                    }
                }
                Some(n) if n.max_version > d.max_version => sends.push((d.host, d.max_version)),
                Some(_) => {}
            }
        }
        // Nodes the opener did not name: all of them.
        for host in self.nodes.keys() {
            if !named.contains(host) {
                sends.push((*host, 0));
            }
        }
        requests.truncate(MAX_GOSSIP_NODES);
        let left = budget_bytes.saturating_sub(requests.len() * DIGEST_BYTES);
        (requests, self.deltas(&sends, left))
    }

    /// The ACK to a SYN_ACK's requests, within `budget_bytes`.
    pub fn answer_requests(&self, requests: &[Digest], budget_bytes: usize) -> Vec<NodeDelta> {
        let mut sends = Vec::new();
        for r in requests {
            match self.nodes.get(&r.host) {
                Some(n) if n.generation == r.generation => sends.push((r.host, r.max_version)),
                Some(n) if n.generation > r.generation => sends.push((r.host, 0)),
                _ => {}
            }
        }
        self.deltas(&sends, budget_bytes)
    }

    /// This node's whole state, as one delta (its shutdown announcement).
    pub fn local_delta(&self, budget_bytes: usize) -> Vec<NodeDelta> {
        self.deltas(&[(self.local, 0)], budget_bytes)
    }

    fn deltas(&self, sends: &[(HostId, u64)], budget_bytes: usize) -> Vec<NodeDelta> {
        let mut builder = DeltaBuilder::new(budget_bytes);
        for (host, from) in sends {
            if let Some(node) = self.nodes.get(host) {
                builder.push(*host, node, *from);
            }
        }
        builder.finish()
    }

    /// Applies one node delta (entries in increasing version order above
    /// `from_version`, as the decoder checks).
    pub fn apply(&mut self, delta: NodeDelta) -> Applied {
        if delta.host == self.local {
            return Applied::Nothing;
        }
        let outcome = match self.nodes.get(&delta.host) {
            Some(n) if n.generation > delta.generation => return Applied::Nothing,
            Some(n) if n.generation == delta.generation => {
                if n.max_version < delta.from_version {
                    return Applied::Gap;
                }
                Applied::Advanced
            }
            _ => {
                if delta.from_version != 0 {
                    return Applied::Gap;
                }
                self.nodes
                    .insert(delta.host, NodeState::new(delta.generation, delta.address));
                Applied::NewGeneration
            }
        };
        let Some(node) = self.nodes.get_mut(&delta.host) else {
            return Applied::Nothing;
        };
        let before = node.max_version;
        for entry in delta.entries {
            if entry.version > before {
                node.take(entry);
            }
        }
        match outcome {
            Applied::Advanced if node.max_version == before => Applied::Nothing,
            other => other,
        }
    }
}

#[cfg(test)]
mod tests;
