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
#[derive(Debug, Clone, Default)]
pub struct Topology {
    hosts: Vec<Host>,
    ring: TokenRing,
}

impl Topology {
    /// One node owning `tokens` (a node whose gossip has not started).
    pub fn single(host: Host, tokens: Vec<i64>) -> Topology {
        let ring = TokenRing::new(vec![(host.location.clone(), tokens)]).unwrap_or_default();
        Topology {
            hosts: vec![host],
            ring,
        }
    }

    /// The ring of the nodes the cluster's metadata lists, `local` being
    /// this node: known at once after a restart, before gossip says
    /// anything.
    pub fn from_records<'a>(
        records: impl IntoIterator<Item = &'a crate::metadata::NodeRecord>,
        local: HostId,
    ) -> Topology {
        let mut hosts = Vec::new();
        let mut nodes = Vec::new();
        let mut taken = BTreeSet::new();
        for r in records {
            if r.tokens.is_empty() || r.tokens.iter().any(|t| taken.contains(t)) {
                continue;
            }
            taken.extend(r.tokens.iter().copied());
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
        let ring = TokenRing::new(nodes).unwrap_or_default();
        Topology { hosts, ring }
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
        Topology { hosts, ring }
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

    /// The replicas of `token`, primary first.
    pub fn replicas(&self, token: i64, replication: &Replication) -> Vec<NodeId> {
        match replication {
            Replication::Local => self
                .hosts
                .iter()
                .position(|h| h.is_local)
                .into_iter()
                .collect(),
            Replication::Simple(rf) => placement::simple(&self.ring, token, *rf as usize),
            Replication::PerDc(dcs) => {
                let factors: Vec<(&str, usize)> = dcs
                    .iter()
                    .map(|(dc, rf)| (dc.as_str(), *rf as usize))
                    .collect();
                placement::network_topology(&self.ring, token, &factors)
            }
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

    #[test]
    fn tokens_parse_or_the_node_is_left_out() {
        assert_eq!(parse_tokens("-5,7"), Some(vec![-5, 7]));
        assert_eq!(parse_tokens(""), None);
        assert_eq!(parse_tokens("1,x"), None);
    }
}
