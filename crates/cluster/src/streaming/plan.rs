//! Which ranges a joining node fetches, and from which replica.
//!
//! For each range of the write ring that the joining node will replicate,
//! the source is the natural replica the write ring drops: the node that
//! loses the range holds everything a quorum of the old replicas
//! acknowledged that the others may lack (docs/design/topology.md,
//! section 3). A losing node that is DOWN stops the bootstrap: another
//! replica could lack writes only it and a quorum partner acknowledged.
//! With fewer nodes than the replication factor nobody loses a range, and
//! any UP natural replica holds all of it; the same goes for a node that
//! replaces a dead one, whose ranges come from the surviving replicas.

use std::net::SocketAddr;

use crate::coordinator::{Host, Replication, Topology};
use crate::net::HostId;

/// One range `(start, end]` to fetch (the whole ring when `start ==
/// end`), and from where (or, when giving ranges away, to where).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeSource {
    pub start: i64,
    pub end: i64,
    pub source: HostId,
    pub address: SocketAddr,
}

/// The ranges this node (the topology's local host) gains while it joins,
/// each with its source; an error naming a range whose source is DOWN.
pub fn ranges_to_fetch(
    topology: &Topology,
    replication: &Replication,
    replacing: Option<HostId>,
    is_up: impl Fn(&Host) -> bool,
) -> Result<Vec<RangeSource>, String> {
    let is_local = |n: &usize| topology.host(*n).is_local;
    let mut out = Vec::new();
    for m in topology.movements(replication) {
        if !m.future.iter().any(is_local) || m.natural.iter().any(is_local) {
            continue;
        }
        // A replaced node is dead: its ranges come from the survivors.
        let losers: Vec<usize> = m
            .natural
            .iter()
            .copied()
            .filter(|n| !m.future.contains(n))
            .filter(|n| Some(topology.host(*n).host_id) != replacing)
            .collect();
        let source = if losers.is_empty() {
            m.natural
                .iter()
                .map(|&n| topology.host(n))
                .find(|h| is_up(h) && Some(h.host_id) != replacing)
        } else {
            losers.iter().map(|&n| topology.host(n)).find(|h| is_up(h))
        };
        let Some(source) = source else {
            let who: Vec<String> = (if losers.is_empty() {
                &m.natural
            } else {
                &losers
            })
            .iter()
            .map(|&n| topology.host(n).address.to_string())
            .collect();
            return Err(format!(
                "range ({}, {}] can come only from {} and none of them is UP; start it again, \
                 or remove this node and retry once it is",
                m.start,
                m.end,
                who.join(", ")
            ));
        };
        out.push(RangeSource {
            start: m.start,
            end: m.end,
            source: source.host_id,
            address: source.address,
        });
    }
    Ok(out)
}

/// The ranges this node (the topology's local host, `Leaving`) gives
/// away, each with a node that takes it over (several nodes for one range
/// when more than one gains it); an error naming a range whose new
/// replica is DOWN.
pub fn ranges_to_give(
    topology: &Topology,
    replication: &Replication,
    is_up: impl Fn(&Host) -> bool,
) -> Result<Vec<RangeSource>, String> {
    let is_local = |n: &usize| topology.host(*n).is_local;
    let mut out = Vec::new();
    for m in topology.movements(replication) {
        if !m.natural.iter().any(is_local) || m.future.iter().any(is_local) {
            continue;
        }
        for gainer in m.future.iter().filter(|n| !m.natural.contains(n)) {
            let host = topology.host(*gainer);
            if !is_up(host) {
                return Err(format!(
                    "range ({}, {}] goes to {}, which is DOWN; start it, or remove it first",
                    m.start, m.end, host.address
                ));
            }
            out.push(RangeSource {
                start: m.start,
                end: m.end,
                source: host.host_id,
                address: host.address,
            });
        }
    }
    Ok(out)
}

/// The Paxos state's sources: for each range of [`ranges_to_fetch`] that
/// no live node loses (a replacement, or fewer nodes than the replication
/// factor), every live natural replica but the replaced node, not one of
/// them; the others as they are. A proposal a quorum accepted may lack on
/// any one survivor (the dead node was in that quorum); merged by ballot
/// from all of them, the new replica holds every such proposal, as a
/// losing node's state holds everything a quorum without it accepted
/// (Cassandra repairs Paxos before a range moves for the same reason).
pub fn paxos_sources(
    topology: &Topology,
    replication: &Replication,
    replacing: Option<HostId>,
    is_up: impl Fn(&Host) -> bool + Copy,
) -> Result<Vec<RangeSource>, String> {
    let one_each = ranges_to_fetch(topology, replication, replacing, is_up)?;
    let mut out = Vec::new();
    for m in topology.movements(replication) {
        let Some(chosen) = one_each
            .iter()
            .find(|r| r.start == m.start && r.end == m.end)
        else {
            continue;
        };
        let has_live_loser = m.natural.iter().any(|n| {
            let h = topology.host(*n);
            !m.future.contains(n) && Some(h.host_id) != replacing && is_up(h)
        });
        if has_live_loser {
            out.push(chosen.clone());
            continue;
        }
        for &n in &m.natural {
            let h = topology.host(n);
            if is_up(h) && Some(h.host_id) != replacing && !h.is_local {
                out.push(RangeSource {
                    start: m.start,
                    end: m.end,
                    source: h.host_id,
                    address: h.address,
                });
            }
        }
    }
    Ok(out)
}

/// `ranges` grouped by the node at their other end (`source`), in the
/// order each node first comes, each group at most `max` ranges long: one
/// listing of whole sstables per group, which may then lie inside any of
/// its ranges.
pub fn by_node(ranges: &[RangeSource], max: usize) -> Vec<Vec<RangeSource>> {
    let mut groups: Vec<Vec<RangeSource>> = Vec::new();
    for r in ranges {
        let open = groups
            .iter_mut()
            .rev()
            .find(|g| g[0].source == r.source && g[0].address == r.address);
        match open {
            Some(g) if g.len() < max.max(1) => g.push(r.clone()),
            _ => groups.push(vec![r.clone()]),
        }
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::NodeState;

    use crate::metadata::state::tests::record;

    fn four() -> Topology {
        let records = [
            record(1, &[100], NodeState::Normal),
            record(2, &[200], NodeState::Normal),
            record(3, &[300], NodeState::Normal),
            record(4, &[150], NodeState::Joining),
        ];
        Topology::from_records(records.iter(), HostId([4; 16]))
    }

    /// Node 4 replaces node 2 (dead, `Leaving`), seen from node 4.
    fn replacing_2() -> Topology {
        let records = [
            record(1, &[100], NodeState::Normal),
            record(2, &[200], NodeState::Leaving),
            record(3, &[300], NodeState::Normal),
            record(4, &[200], NodeState::Joining),
        ];
        Topology::from_records(records.iter(), HostId([4; 16]))
    }

    #[test]
    fn ranges_group_by_node_in_order_and_bounded() {
        let at = |start: i64, host: u8| RangeSource {
            start,
            end: start + 1,
            source: HostId([host; 16]),
            address: ([127, 0, 0, host], 7000).into(),
        };
        let ranges = [at(1, 2), at(2, 3), at(3, 2), at(4, 2)];
        let starts = |groups: Vec<Vec<RangeSource>>| -> Vec<Vec<i64>> {
            groups
                .iter()
                .map(|g| g.iter().map(|r| r.start).collect())
                .collect()
        };
        assert_eq!(starts(by_node(&ranges, 10)), vec![vec![1, 3, 4], vec![2]]);
        assert_eq!(
            starts(by_node(&ranges, 2)),
            vec![vec![1, 3], vec![2], vec![4]]
        );
        assert!(by_node(&[], 2).is_empty());
    }

    #[test]
    fn each_gained_range_comes_from_the_node_that_loses_it() {
        let got = ranges_to_fetch(&four(), &Replication::Simple(2), None, |_| true).unwrap();
        let pairs: Vec<(i64, i64, u8)> = got
            .iter()
            .map(|r| (r.start, r.end, r.source.0[0]))
            .collect();
        // (300, 100]: 1,2 now, 1,4 then: 2 loses it. (100, 150]: 2,3 now,
        // 4,2 then: 3 loses it.
        assert_eq!(pairs, vec![(300, 100, 2), (100, 150, 3)]);
    }

    #[test]
    fn a_losing_node_that_is_down_stops_the_bootstrap() {
        let down = HostId([3; 16]);
        let err = ranges_to_fetch(&four(), &Replication::Simple(2), None, |h| {
            h.host_id != down
        })
        .unwrap_err();
        assert!(
            err.contains("(100, 150]") && err.contains("127.0.0.3:7000"),
            "{err}"
        );
    }

    #[test]
    fn a_replacement_fetches_each_range_from_a_live_survivor() {
        let t = replacing_2();
        let dead = HostId([2; 16]);
        let up = |h: &Host| h.host_id != dead;
        let got = ranges_to_fetch(&t, &Replication::Simple(2), Some(dead), up).unwrap();
        let sources: Vec<u8> = got.iter().map(|r| r.source.0[0]).collect();
        assert!(!sources.is_empty() && !sources.contains(&2), "{sources:?}");
        // Without naming the replaced node, its death stops the join.
        assert!(ranges_to_fetch(&t, &Replication::Simple(2), None, up).is_err());
    }

    #[test]
    fn a_replacement_takes_paxos_state_from_every_live_survivor_and_a_join_from_the_loser() {
        let t = replacing_2();
        let dead = HostId([2; 16]);
        let up = |h: &Host| h.host_id != dead;
        let rf3 = Replication::Simple(3);
        let got = paxos_sources(&t, &rf3, Some(dead), up).unwrap();
        let one = ranges_to_fetch(&t, &rf3, Some(dead), up).unwrap();
        for r in &one {
            let mut from: Vec<u8> = got
                .iter()
                .filter(|g| (g.start, g.end) == (r.start, r.end))
                .map(|g| g.source.0[0])
                .collect();
            from.sort();
            assert_eq!(from, vec![1, 3], "range ({}, {}]", r.start, r.end);
        }
        // A join with a live loser: the loser alone, as for the data.
        let join = paxos_sources(&four(), &Replication::Simple(2), None, |_| true).unwrap();
        assert_eq!(
            join,
            ranges_to_fetch(&four(), &Replication::Simple(2), None, |_| true).unwrap()
        );
    }

    #[test]
    fn a_leaving_node_gives_each_range_to_the_node_that_gains_it() {
        let records = [
            record(1, &[100], NodeState::Normal),
            record(2, &[200], NodeState::Leaving),
            record(3, &[300], NodeState::Normal),
            record(4, &[400], NodeState::Normal),
        ];
        let t = Topology::from_records(records.iter(), HostId([2; 16]));
        let got = ranges_to_give(&t, &Replication::Simple(2), |_| true).unwrap();
        let pairs: Vec<(i64, i64, u8)> = got
            .iter()
            .map(|r| (r.start, r.end, r.source.0[0]))
            .collect();
        // (100, 200]: 2,3 now, 3,4 then. (400, 100]: 1,2 now, 1,3 then.
        // (300, 400]... not 2's. (200, 300]: 3,4 unchanged.
        assert_eq!(pairs, vec![(400, 100, 3), (100, 200, 4)]);
        let down = HostId([4; 16]);
        let err = ranges_to_give(&t, &Replication::Simple(2), |h| h.host_id != down).unwrap_err();
        assert!(err.contains("127.0.0.4:7000"), "{err}");
    }

    #[test]
    fn with_fewer_nodes_than_replicas_any_up_replica_gives_the_range() {
        let records = [
            record(1, &[100], NodeState::Normal),
            record(2, &[200], NodeState::Joining),
        ];
        let t = Topology::from_records(records.iter(), HostId([2; 16]));
        let down = HostId([9; 16]);
        let got =
            ranges_to_fetch(&t, &Replication::Simple(3), None, |h| h.host_id != down).unwrap();
        let pairs: Vec<(i64, i64, u8)> = got
            .iter()
            .map(|r| (r.start, r.end, r.source.0[0]))
            .collect();
        assert_eq!(pairs, vec![(200, 100, 1), (100, 200, 1)]);
        // Nothing to fetch for a node that is not joining.
        let normal = Topology::from_records(
            [record(1, &[100], NodeState::Normal)].iter(),
            HostId([1; 16]),
        );
        assert!(
            ranges_to_fetch(&normal, &Replication::Simple(3), None, |_| true)
                .unwrap()
                .is_empty()
        );
    }
}
