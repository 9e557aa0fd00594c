//! Which nodes replicate a token, as Cassandra places them for the same
//! ring, so that drivers' token-aware routing (which computes placement
//! itself) lands on real replicas.
//!
//! - **SimpleStrategy**: walk the ring clockwise from the token's owner and
//!   take distinct nodes until there are `rf` (or the ring runs out).
//! - **NetworkTopologyStrategy**: one walk for every data centre. A data
//!   centre with factor `rf` and `n` nodes wants `min(rf, n)` replicas. It
//!   takes a node from a rack it has not used yet; a node from a rack
//!   already used only while it may still repeat racks: `min(rf, n)` minus
//!   its number of racks, when that is positive (so with at least as many
//!   racks as replicas, every replica is on a distinct rack). The walk ends
//!   when every data centre has its replicas or the ring is done.
//!
//! The first replica of the walk is the token's primary (its owner, when
//! the owner's data centre has a factor).

use super::{NodeId, TokenRing};

/// Replicas of `token` under SimpleStrategy with factor `rf`, primary
/// first.
pub fn simple(ring: &TokenRing, token: i64, rf: usize) -> Vec<NodeId> {
    let mut out: Vec<NodeId> = Vec::with_capacity(rf);
    for (_, node) in ring.walk(token) {
        if out.len() == rf {
            break;
        }
        if !out.contains(&node) {
            out.push(node);
        }
    }
    out
}

/// What one data centre still needs during a NetworkTopologyStrategy walk:
/// the rack rule of one data centre, kept apart from the walk so that
/// token allocation (`allocation`) can apply the same rule to rings it
/// only imagines.
pub(crate) struct DcNeeds<'a> {
    dc: &'a str,
    /// Replicas still to find.
    left: usize,
    /// Racks already holding a replica.
    racks: Vec<&'a str>,
    /// Replicas that may still go to an already used rack.
    repeats: usize,
}

impl<'a> DcNeeds<'a> {
    /// Data centre `dc`, with factor `rf`, `nodes` nodes over `racks`
    /// racks, before the walk has taken anything.
    pub(crate) fn new(dc: &'a str, rf: usize, nodes: usize, racks: usize) -> DcNeeds<'a> {
        let wanted = rf.min(nodes);
        DcNeeds {
            dc,
            left: wanted,
            racks: Vec::with_capacity(wanted),
            repeats: wanted.saturating_sub(racks),
        }
    }

    /// Whether every replica of this data centre has been found.
    pub(crate) fn is_full(&self) -> bool {
        self.left == 0
    }

    /// Offers `node` of this data centre, on `rack`, to the walk that has
    /// taken `taken` so far: true (and counted) when the walk takes it.
    pub(crate) fn offer(&mut self, node: NodeId, rack: &'a str, taken: &[NodeId]) -> bool {
        if self.left == 0 || taken.contains(&node) {
            return false;
        }
        if !self.racks.contains(&rack) {
            self.racks.push(rack);
        } else if self.repeats > 0 {
            self.repeats -= 1;
        } else {
            return false;
        }
        self.left -= 1;
        true
    }
}

/// Replicas of `token` under NetworkTopologyStrategy with a factor per
/// data centre (`(dc, rf)`; data centres without nodes get none), in walk
/// order.
pub fn network_topology(ring: &TokenRing, token: i64, factors: &[(&str, usize)]) -> Vec<NodeId> {
    let mut needs: Vec<DcNeeds<'_>> = factors
        .iter()
        .map(|(dc, rf)| DcNeeds::new(dc, *rf, ring.nodes_in(dc), ring.racks_in(dc)))
        .collect();
    let mut out = Vec::new();
    for (_, node) in ring.walk(token) {
        if needs.iter().all(DcNeeds::is_full) {
            break;
        }
        let location = &ring.nodes()[node];
        let Some(need) = needs.iter_mut().find(|d| d.dc == location.dc) else {
            continue;
        };
        if need.offer(node, &location.rack, &out) {
            out.push(node);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::Location;
    use super::*;
    use proptest::prelude::*;

    fn at(dc: &str, rack: &str) -> Location {
        Location {
            dc: dc.into(),
            rack: rack.into(),
        }
    }

    /// Three nodes with one token each at 0, 100, 200, all in dc1.
    fn three(racks: [&str; 3]) -> TokenRing {
        TokenRing::new(
            racks
                .iter()
                .enumerate()
                .map(|(i, r)| (at("dc1", r), vec![100 * i as i64]))
                .collect(),
        )
        .unwrap()
    }

    #[test]
    fn simple_strategy_walks_clockwise_from_the_owner() {
        let ring = three(["r1", "r1", "r1"]);
        assert_eq!(simple(&ring, 50, 2), [1, 2]);
        assert_eq!(simple(&ring, 150, 3), [2, 0, 1]);
        assert_eq!(simple(&ring, 250, 1), [0], "wraps");
        assert_eq!(simple(&ring, 0, 5), [0, 1, 2], "no more than the nodes");
        assert!(simple(&ring, 0, 0).is_empty());
    }

    #[test]
    fn network_topology_prefers_a_new_rack_over_the_next_node() {
        // Walk from 0: node 0 (r1), node 1 (r1), node 2 (r2). With two
        // racks and rf 2, the second replica skips node 1 for rack r2.
        let ring = three(["r1", "r1", "r2"]);
        assert_eq!(network_topology(&ring, 0, &[("dc1", 2)]), [0, 2]);
        // rf 3 over two racks: one repeat is allowed, and node 1 is met
        // while it still is, so the walk takes every node in order.
        assert_eq!(network_topology(&ring, 0, &[("dc1", 3)]), [0, 1, 2]);
    }

    #[test]
    fn data_centres_fill_independently_and_empty_ones_get_nothing() {
        let ring = TokenRing::new(vec![
            (at("dc1", "r1"), vec![0]),
            (at("dc2", "r1"), vec![10]),
            (at("dc1", "r2"), vec![20]),
            (at("dc2", "r2"), vec![30]),
        ])
        .unwrap();
        assert_eq!(
            network_topology(&ring, 5, &[("dc1", 2), ("dc2", 1)]),
            [1, 2, 0]
        );
        assert_eq!(
            network_topology(&ring, 5, &[("dc3", 3)]),
            Vec::<usize>::new()
        );
        assert_eq!(
            network_topology(&ring, 5, &[("dc2", 0), ("dc1", 1)]),
            [2],
            "a factor of 0 takes nothing"
        );
    }

    fn arb_ring() -> impl Strategy<Value = TokenRing> {
        // 1 to 12 nodes over up to 3 data centres and 3 racks, 1 to 4
        // tokens each (rings where two tokens collide are filtered out).
        prop::collection::vec(
            (
                0..3usize,
                0..3usize,
                prop::collection::vec(any::<i64>(), 1..5),
            ),
            1..13,
        )
        .prop_filter_map("distinct tokens", |nodes| {
            TokenRing::new(
                nodes
                    .into_iter()
                    .map(|(dc, rack, tokens)| (at(&format!("dc{dc}"), &format!("r{rack}")), tokens))
                    .collect(),
            )
            .ok()
        })
    }

    proptest! {
        /// Replicas are distinct nodes; each data centre gets min(rf, its
        /// nodes), spread over min(those, its racks) racks; the first is
        /// the owner when the owner's data centre replicates.
        #[test]
        fn network_topology_keeps_its_promises(
            ring in arb_ring(),
            token in any::<i64>(),
            rfs in prop::collection::vec(0..5usize, 3),
        ) {
            let factors: Vec<(String, usize)> =
                rfs.iter().enumerate().map(|(i, rf)| (format!("dc{i}"), *rf)).collect();
            let borrowed: Vec<(&str, usize)> = factors.iter().map(|(d, r)| (d.as_str(), *r)).collect();
            let replicas = network_topology(&ring, token, &borrowed);
            let mut sorted = replicas.clone();
            sorted.sort_unstable();
            sorted.dedup();
            prop_assert_eq!(sorted.len(), replicas.len(), "distinct");
            for (dc, rf) in &borrowed {
                let mine: Vec<&Location> = replicas
                    .iter()
                    .map(|n| &ring.nodes()[*n])
                    .filter(|l| l.dc == *dc)
                    .collect();
                let wanted = (*rf).min(ring.nodes_in(dc));
                prop_assert_eq!(mine.len(), wanted, "replicas in {}", dc);
                let mut racks: Vec<&str> = mine.iter().map(|l| l.rack.as_str()).collect();
                racks.sort_unstable();
                racks.dedup();
                prop_assert_eq!(racks.len(), wanted.min(ring.racks_in(dc)), "racks in {}", dc);
            }
            let owner = ring.walk(token).next().unwrap().1;
            let owner_dc = &ring.nodes()[owner].dc;
            if borrowed.iter().any(|(d, rf)| d == owner_dc && *rf > 0) {
                prop_assert_eq!(replicas.first().copied(), Some(owner));
            }
        }

        /// SimpleStrategy gives min(rf, nodes) distinct nodes, the owner
        /// first, and a factor's replicas are a prefix of a larger one's.
        #[test]
        fn simple_strategy_keeps_its_promises(ring in arb_ring(), token in any::<i64>(), rf in 0..6usize) {
            let replicas = simple(&ring, token, rf);
            prop_assert_eq!(replicas.len(), rf.min(ring.nodes().len()));
            let mut sorted = replicas.clone();
            sorted.sort_unstable();
            sorted.dedup();
            prop_assert_eq!(sorted.len(), replicas.len());
            if rf > 0 {
                prop_assert_eq!(replicas[0], ring.walk(token).next().unwrap().1);
            }
            let more = simple(&ring, token, rf + 1);
            prop_assert_eq!(&more[..replicas.len()], &replicas[..]);
        }
    }
}
