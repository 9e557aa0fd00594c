//! The nodes and tokens the coordinator places replicas on, built from
//! what gossip knows of every node (its address, data centre, rack and
//! tokens), until the metadata log holds the ring (plan step 10).
//!
//! A snapshot: rebuilt when membership changes and swapped in whole, so
//! one request sees one ring. A node that has not announced its tokens
//! yet is left out; so is one whose tokens collide with a node earlier in
//! host order (with a warning): two owners of one token would make
//! placement ambiguous.

use std::collections::BTreeSet;
use std::net::SocketAddr;

use crate::membership::{GossipKey, PeerState};
use crate::net::handshake::HostId;
use crate::ring::placement;
use crate::ring::{Location, NodeId, TokenRing};

use super::replication::Replication;

/// A node of the ring.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host {
    pub host_id: HostId,
    /// Where it listens for internode messages.
    pub address: SocketAddr,
    pub location: Location,
    pub is_local: bool,
}

/// The ring as one request sees it.
///
/// Two rings when a node moves ranges (docs/design/topology.md,
/// section 1): the read ring of the nodes that own their tokens, whose
/// replicas are a token's natural ones, and the write ring as it will be
/// once the movement ends, whose extra replicas are pending ones. The
/// hosts of the read ring come first in `hosts`, so its `NodeId`s are
/// indexes into `hosts`; the write ring maps its own.
#[derive(Debug, Clone, Default)]
pub struct Topology {
    hosts: Vec<Host>,
    ring: TokenRing,
    /// The ring without leaving nodes and with joining ones; `None` when
    /// nobody moves.
    write_ring: Option<WriteRing>,
}

/// The write ring, and the host index of each of its node ids.
#[derive(Debug, Clone)]
struct WriteRing {
    ring: TokenRing,
    hosts: Vec<NodeId>,
}

impl WriteRing {
    fn replicas(&self, all: &[Host], token: i64, replication: &Replication) -> Vec<NodeId> {
        let mine: Vec<Host> = self.hosts.iter().map(|&h| all[h].clone()).collect();
        replicas_on(&self.ring, &mine, token, replication)
            .into_iter()
            .map(|n| self.hosts[n])
            .collect()
    }
}

impl Topology {
    /// One node owning `tokens` (a node whose gossip has not started).
    pub fn single(host: Host, tokens: Vec<i64>) -> Topology {
        let ring = TokenRing::new(vec![(host.location.clone(), tokens)]).unwrap_or_default();
        Topology {
            hosts: vec![host],
            ring,
            write_ring: None,
        }
    }

    /// The ring of the nodes the cluster's metadata lists, `local` being
    /// this node: known at once after a restart, before gossip says
    /// anything.
    pub fn from_records<'a>(
        records: impl IntoIterator<Item = &'a crate::metadata::NodeRecord>,
        local: HostId,
    ) -> Topology {
        // A token has one owner in each ring: a leaving node and the node
        // that replaces it share tokens, one in each.
        let (mut read_taken, mut write_taken) = (BTreeSet::new(), BTreeSet::new());
        let mut listed: Vec<&crate::metadata::NodeRecord> = Vec::new();
        for r in records {
            let reads = r.state.owns_for_reads();
            let writes = r.state.receives_writes();
            let collides = r
                .tokens
                .iter()
                .any(|t| (reads && read_taken.contains(t)) || (writes && write_taken.contains(t)));
            if r.tokens.is_empty() || collides {
                continue;
            }
            if reads {
                read_taken.extend(r.tokens.iter().copied());
            }
            if writes {
                write_taken.extend(r.tokens.iter().copied());
            }
            listed.push(r);
        }
        // Owners first: their places are the read ring's node ids.
        listed.sort_by_key(|r| !r.state.owns_for_reads());
        let owners = listed.iter().filter(|r| r.state.owns_for_reads()).count();
        let mut hosts = Vec::new();
        let mut nodes = Vec::new();
        let states: Vec<crate::metadata::NodeState> = listed.iter().map(|r| r.state).collect();
        for r in listed {
            let location = Location {
                dc: r.dc.clone(),
                rack: r.rack.clone(),
            };
            hosts.push(Host {
                host_id: r.host_id,
                address: r.storage_addr,
                location: location.clone(),
                is_local: r.host_id == local,
            });
            nodes.push((location, r.tokens.clone()));
        }
        let writers: Vec<NodeId> = (0..states.len())
            .filter(|&i| states[i].receives_writes())
            .collect();
        let moving = writers.len() != owners || states.iter().any(|s| s.is_moving());
        let write_ring = moving
            .then(|| {
                let mine = writers.iter().map(|&i| nodes[i].clone()).collect();
                TokenRing::new(mine).ok()
            })
            .flatten()
            .map(|ring| WriteRing {
                ring,
                hosts: writers,
            });
        nodes.truncate(owners);
        let ring = TokenRing::new(nodes).unwrap_or_default();
        Topology {
            hosts,
            ring,
            write_ring,
        }
    }

    /// The ring of every node gossip knows that has announced tokens.
    pub fn from_peers(peers: &[PeerState]) -> Topology {
        let mut hosts = Vec::new();
        let mut nodes = Vec::new();
        let mut taken = BTreeSet::new();
        for p in peers {
            let Some(tokens) = p.get(GossipKey::TOKENS).and_then(parse_tokens) else {
                continue;
            };
            if tokens.iter().any(|t| taken.contains(t)) {
                tracing::warn!(
                    "node {} at {} claims a token another node owns; left out of the ring",
                    p.host_id,
                    p.address
                );
                continue;
            }
            taken.extend(tokens.iter().copied());
            let location = Location {
                dc: p.get(GossipKey::DC).unwrap_or_default().to_string(),
                rack: p.get(GossipKey::RACK).unwrap_or_default().to_string(),
            };
            hosts.push(Host {
                host_id: p.host_id,
                address: p.address,
                location: location.clone(),
                is_local: p.is_local,
            });
            nodes.push((location, tokens));
        }
        // Tokens are distinct by construction.
        let ring = TokenRing::new(nodes).unwrap_or_default();
        Topology {
            hosts,
            ring,
            write_ring: None,
        }
    }

    pub fn hosts(&self) -> &[Host] {
        &self.hosts
    }

    pub fn host(&self, id: NodeId) -> &Host {
        &self.hosts[id]
    }

    /// Every ring token (each ends a range).
    pub fn range_ends(&self) -> Vec<i64> {
        self.ring.tokens().iter().map(|(t, _)| *t).collect()
    }

    /// Whether a node is moving ranges (some writes have pending
    /// replicas).
    pub fn is_moving(&self) -> bool {
        self.write_ring.is_some()
    }

    /// The pending replicas of `token`: those of the write ring that are
    /// not natural ones (none when nobody moves).
    pub fn pending(&self, token: i64, replication: &Replication) -> Vec<NodeId> {
        let Some(write_ring) = &self.write_ring else {
            return Vec::new();
        };
        let natural = self.replicas(token, replication);
        write_ring
            .replicas(&self.hosts, token, replication)
            .into_iter()
            .filter(|n| !natural.contains(n))
            .collect()
    }

    /// The ranges of the write ring, each as its end token with its
    /// natural replicas (read ring) and its replicas once the movement
    /// ends (write ring); the read ring's alone when nobody moves.
    pub fn movements(&self, replication: &Replication) -> Vec<RangeMove> {
        // Every token of either ring ends a range, so each range has one
        // set of replicas in each.
        let mut ends: Vec<i64> = self.ring.tokens().iter().map(|(t, _)| *t).collect();
        if let Some(w) = &self.write_ring {
            ends.extend(w.ring.tokens().iter().map(|(t, _)| *t));
        }
        ends.sort_unstable();
        ends.dedup();
        let future = |end| match &self.write_ring {
            Some(w) => w.replicas(&self.hosts, end, replication),
            None => self.replicas(end, replication),
        };
        ends.iter()
            .enumerate()
            .map(|(i, &end)| RangeMove {
                start: ends[(i + ends.len() - 1) % ends.len()],
                end,
                natural: self.replicas(end, replication),
                future: future(end),
            })
            .collect()
    }

    /// The replicas of `token`, primary first.
    pub fn replicas(&self, token: i64, replication: &Replication) -> Vec<NodeId> {
        replicas_on(&self.ring, &self.hosts, token, replication)
    }
}

/// One range of the ring, `(start, end]` (the whole ring when `start ==
/// end`, a single node's), and who replicates it now and once the
/// movement in progress ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeMove {
    pub start: i64,
    pub end: i64,
    pub natural: Vec<NodeId>,
    pub future: Vec<NodeId>,
}

/// The replicas of `token` on `ring` (whose node ids index `hosts`).
fn replicas_on(
    ring: &TokenRing,
    hosts: &[Host],
    token: i64,
    replication: &Replication,
) -> Vec<NodeId> {
    match replication {
        Replication::Local => hosts.iter().position(|h| h.is_local).into_iter().collect(),
        Replication::Simple(rf) => placement::simple(ring, token, *rf as usize),
        Replication::PerDc(dcs) => {
            let factors: Vec<(&str, usize)> = dcs
                .iter()
                .map(|(dc, rf)| (dc.as_str(), *rf as usize))
                .collect();
            placement::network_topology(ring, token, &factors)
        }
    }
}

/// Tokens as gossip carries them: decimal, comma-separated.
fn parse_tokens(text: &str) -> Option<Vec<i64>> {
    let tokens: Option<Vec<i64>> = text
        .split(',')
        .filter(|t| !t.is_empty())
        .map(|t| t.trim().parse().ok())
        .collect();
    tokens.filter(|t| !t.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::metadata::NodeState;

    use crate::metadata::state::tests::record;

    fn ids(t: &Topology, nodes: &[NodeId]) -> Vec<u8> {
        nodes.iter().map(|&n| t.host(n).host_id.0[0]).collect()
    }

    #[test]
    fn a_joining_node_is_pending_for_writes_and_absent_for_reads() {
        let records = [
            record(1, &[100], NodeState::Normal),
            record(4, &[150], NodeState::Joining),
            record(2, &[200], NodeState::Normal),
            record(3, &[300], NodeState::Normal),
        ];
        let t = Topology::from_records(records.iter(), HostId([1; 16]));
        assert!(t.is_moving());
        let rf2 = Replication::Simple(2);
        // (100, 150] is node 4's once it joins: read from 2 and 3 now.
        assert_eq!(ids(&t, &t.replicas(120, &rf2)), vec![2, 3]);
        assert_eq!(ids(&t, &t.pending(120, &rf2)), vec![4]);
        // (300, 100] will be 1 and 4: 4 pending, 2 loses it.
        assert_eq!(ids(&t, &t.replicas(50, &rf2)), vec![1, 2]);
        assert_eq!(ids(&t, &t.pending(50, &rf2)), vec![4]);
        // (150, 200] stays 2 and 3.
        assert!(t.pending(180, &rf2).is_empty());
        assert_eq!(t.range_ends(), vec![100, 200, 300]);
        let moves = t.movements(&rf2);
        assert_eq!(moves.len(), 4);
        let first = &moves[0];
        assert_eq!((first.start, first.end), (300, 100));
        assert_eq!(ids(&t, &first.natural), vec![1, 2]);
        assert_eq!(ids(&t, &first.future), vec![1, 4]);
    }

    #[test]
    fn a_replacing_node_is_pending_exactly_where_the_replaced_one_is_natural() {
        let records = [
            record(1, &[100], NodeState::Normal),
            record(2, &[200], NodeState::Leaving),
            record(3, &[300], NodeState::Normal),
            record(4, &[200], NodeState::Joining),
        ];
        let t = Topology::from_records(records.iter(), HostId([1; 16]));
        let rf2 = Replication::Simple(2);
        for token in [50, 150, 250, 350] {
            let natural = ids(&t, &t.replicas(token, &rf2));
            let pending = ids(&t, &t.pending(token, &rf2));
            let expected: Vec<u8> = if natural.contains(&2) {
                vec![4]
            } else {
                vec![]
            };
            assert_eq!(pending, expected, "token {token}: natural {natural:?}");
        }
        assert_eq!(t.range_ends(), vec![100, 200, 300]);
    }

    #[test]
    fn without_movement_there_is_nothing_pending() {
        let records = [
            record(1, &[100], NodeState::Normal),
            record(2, &[200], NodeState::Normal),
        ];
        let t = Topology::from_records(records.iter(), HostId([2; 16]));
        assert!(!t.is_moving());
        assert!(t.pending(150, &Replication::Simple(1)).is_empty());
        let moves = t.movements(&Replication::Simple(1));
        assert_eq!(moves.len(), 2);
        assert!(moves.iter().all(|m| m.natural == m.future));
    }

    #[test]
    fn tokens_parse_or_the_node_is_left_out() {
        assert_eq!(parse_tokens("-5,7"), Some(vec![-5, 7]));
        assert_eq!(parse_tokens(""), None);
        assert_eq!(parse_tokens("1,x"), None);
    }
}
