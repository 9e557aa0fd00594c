//! The token allocator a server gives the metadata log: a joining node's
//! `num_tokens` tokens balanced for its data centre's replication factor
//! (`ring::allocation`, as Cassandra's
//! `allocate_tokens_for_local_replication_factor`), over the ring of the
//! nodes the applied metadata lists. Every node that runs it on the same
//! metadata for the same node gets the same tokens.

use super::forming::TokenAllocator;
use super::state::{ClusterMetadata, NodeRecord};
use crate::ring::{allocation, Location, TokenRing};

/// Balanced tokens for a joining node.
#[derive(Debug, Clone, Copy)]
pub struct BalancedTokens {
    pub num_tokens: usize,
    /// The replication factor the data centre is balanced for.
    pub rf: usize,
}

impl TokenAllocator for BalancedTokens {
    fn allocate(&self, metadata: &ClusterMetadata, own: &NodeRecord) -> Result<Vec<i64>, String> {
        let ring = ring_without(metadata, own)?;
        let location = Location {
            dc: own.dc.clone(),
            rack: own.rack.clone(),
        };
        let tokens = allocation::allocate(&ring, &location, own.host_id, self.num_tokens, self.rf);
        if tokens.len() < self.num_tokens {
            return Err(format!(
                "only {} of {} tokens could be placed: the data centre's ring has no room left",
                tokens.len(),
                self.num_tokens
            ));
        }
        Ok(tokens)
    }
}

/// The ring of every listed node with tokens, `own` left out.
fn ring_without(metadata: &ClusterMetadata, own: &NodeRecord) -> Result<TokenRing, String> {
    let nodes = metadata
        .nodes
        .values()
        .filter(|r| r.host_id != own.host_id && !r.tokens.is_empty())
        .map(|r| {
            let location = Location {
                dc: r.dc.clone(),
                rack: r.rack.clone(),
            };
            (location, r.tokens.clone())
        })
        .collect();
    TokenRing::new(nodes).map_err(|e| format!("the metadata's ring is not valid: {e:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::state::NodeState;
    use crate::net::handshake::HostId;

    fn record(id: u8, dc: &str, tokens: Vec<i64>) -> NodeRecord {
        NodeRecord {
            host_id: HostId([id; 16]),
            storage_addr: format!("127.0.0.{id}:7000").parse().expect("addr"),
            rpc_addr: None,
            dc: dc.to_string(),
            rack: "rack1".to_string(),
            tokens,
            state: NodeState::Normal,
        }
    }

    /// The largest over the smallest share of the ring each node replicates
    /// at RF 3 (SimpleStrategy is the data centre's ring here).
    fn spread(nodes: &[NodeRecord]) -> f64 {
        let mut owners: Vec<(i64, usize)> = nodes
            .iter()
            .enumerate()
            .flat_map(|(i, n)| n.tokens.iter().map(move |t| (*t, i)))
            .collect();
        owners.sort_unstable();
        let mut load = vec![0f64; nodes.len()];
        for (k, (t, _)) in owners.iter().enumerate() {
            let prev = owners[(k + owners.len() - 1) % owners.len()].0;
            let width = (i128::from(*t) - i128::from(prev)).rem_euclid(1 << 64) as f64;
            let mut seen = Vec::new();
            let mut j = k;
            while seen.len() < 3.min(nodes.len()) {
                let owner = owners[j % owners.len()].1;
                if !seen.contains(&owner) {
                    seen.push(owner);
                    load[owner] += width;
                }
                j += 1;
            }
        }
        let max = load.iter().cloned().fold(f64::MIN, f64::max);
        let min = load.iter().cloned().fold(f64::MAX, f64::min);
        max / min
    }

    #[test]
    fn nodes_joining_one_by_one_get_a_balanced_ring() {
        let allocator = BalancedTokens {
            num_tokens: 16,
            rf: 3,
        };
        let mut metadata = ClusterMetadata::default();
        let mut joined = Vec::new();
        for id in 1..=9u8 {
            let own = record(id, "dc1", Vec::new());
            let tokens = allocator.allocate(&metadata, &own).expect("room");
            assert_eq!(tokens.len(), 16);
            // The same metadata gives the same tokens (any node may compute them).
            assert_eq!(allocator.allocate(&metadata, &own).expect("room"), tokens);
            let node = record(id, "dc1", tokens);
            metadata.nodes.insert(node.host_id, node.clone());
            joined.push(node);
        }
        let ratio = spread(&joined);
        assert!(ratio < 1.15, "max/min replicated load {ratio}");
    }

    #[test]
    fn a_node_already_listed_is_left_out_of_its_own_ring() {
        let allocator = BalancedTokens {
            num_tokens: 4,
            rf: 3,
        };
        let mut metadata = ClusterMetadata::default();
        let first = record(1, "dc1", vec![-100, 0, 100, 200]);
        metadata.nodes.insert(first.host_id, first.clone());
        // A node that finds itself listed (a join applied before a restart)
        // gets tokens computed as if it were not there, so no duplicates.
        let tokens = allocator.allocate(&metadata, &first).expect("room");
        let alone = allocator
            .allocate(&ClusterMetadata::default(), &first)
            .expect("room");
        assert_eq!(tokens, alone);
    }
}
