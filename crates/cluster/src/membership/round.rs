//! Whom a node gossips with each round (Cassandra's rules, with
//! chitchat's fan-out).
//!
//! Up to [`GOSSIP_FANOUT`] peers that gossip counts live (or, while none
//! is, any known peer); then, with probability `unreachable / (live + 1)`,
//! one unreachable peer, so a node that comes back is noticed even if it
//! does not gossip first; then one seed if none was chosen yet or fewer
//! peers are live than there are seeds (always while nothing is live), so
//! a cluster started from several seeds does not stay split. Every
//! choice draws from the node's [`SeededRng`], over lists in address
//! order, so a seed replays the same choices.

use std::collections::BTreeSet;
use std::net::SocketAddr;

use crate::env::SeededRng;

/// Live peers gossiped with per round.
pub const GOSSIP_FANOUT: usize = 3;

/// The peers of one round, by address.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Candidates {
    /// Peers gossip counts live.
    pub live: BTreeSet<SocketAddr>,
    /// Known peers it does not.
    pub unreachable: BTreeSet<SocketAddr>,
    /// The configured seeds other than this node.
    pub seeds: BTreeSet<SocketAddr>,
}

/// The addresses to send this round's SYN to, without repeats.
pub fn choose_targets(rng: &SeededRng, c: &Candidates) -> Vec<SocketAddr> {
    let mut chosen = BTreeSet::new();
    let pool: Vec<SocketAddr> = if c.live.is_empty() {
        c.unreachable.iter().copied().collect()
    } else {
        c.live.iter().copied().collect()
    };
    for addr in sample(rng, &pool, GOSSIP_FANOUT) {
        chosen.insert(addr);
    }
    if !c.unreachable.is_empty() && !c.live.is_empty() {
        let roll = rng.below_or_at(c.live.len() as u64);
        if roll < c.unreachable.len() as u64 {
            let pool: Vec<SocketAddr> = c.unreachable.iter().copied().collect();
            chosen.extend(sample(rng, &pool, 1));
        }
    }
    let seed_chosen = chosen.iter().any(|a| c.seeds.contains(a));
    if !c.seeds.is_empty() && (!seed_chosen || c.live.len() < c.seeds.len()) {
        let pool: Vec<SocketAddr> = c
            .seeds
            .iter()
            .filter(|a| !chosen.contains(a))
            .copied()
            .collect();
        chosen.extend(sample(rng, &pool, 1));
    }
    chosen.into_iter().collect()
}

/// Up to `k` distinct elements of `pool` (a partial Fisher-Yates shuffle).
fn sample(rng: &SeededRng, pool: &[SocketAddr], k: usize) -> Vec<SocketAddr> {
    let mut pool = pool.to_vec();
    let k = k.min(pool.len());
    for i in 0..k {
        let span = (pool.len() - i - 1) as u64;
        let j = i + rng.below_or_at(span) as usize;
        pool.swap(i, j);
    }
    pool.truncate(k);
    pool
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addrs(ports: &[u16]) -> BTreeSet<SocketAddr> {
        ports.iter().map(|p| ([127, 0, 0, 1], *p).into()).collect()
    }

    #[test]
    fn a_lone_node_gossips_with_its_seeds() {
        let rng = SeededRng::new(1);
        let c = Candidates {
            seeds: addrs(&[1, 2]),
            ..Candidates::default()
        };
        let targets = choose_targets(&rng, &c);
        assert_eq!(targets.len(), 1);
        assert!(c.seeds.contains(&targets[0]));
        assert!(choose_targets(&rng, &Candidates::default()).is_empty());
    }

    #[test]
    fn live_peers_up_to_the_fanout_and_a_seed_when_none_was_chosen() {
        let c = Candidates {
            live: addrs(&[10, 11, 12, 13, 14, 15]),
            unreachable: BTreeSet::new(),
            seeds: addrs(&[1]),
        };
        for seed in 0..50 {
            let targets = choose_targets(&SeededRng::new(seed), &c);
            assert_eq!(targets.len(), GOSSIP_FANOUT + 1, "{targets:?}");
            assert!(targets.contains(&([127, 0, 0, 1], 1).into()));
        }
    }

    #[test]
    fn few_live_peers_means_every_one() {
        let c = Candidates {
            live: addrs(&[10, 11]),
            unreachable: BTreeSet::new(),
            seeds: addrs(&[10]),
        };
        let targets = choose_targets(&SeededRng::new(3), &c);
        assert_eq!(targets, addrs(&[10, 11]).into_iter().collect::<Vec<_>>());
    }

    #[test]
    fn unreachable_peers_are_tried_now_and_then() {
        let c = Candidates {
            live: addrs(&[10]),
            unreachable: addrs(&[20]),
            seeds: BTreeSet::new(),
        };
        let tries = (0..200)
            .filter(|seed| choose_targets(&SeededRng::new(*seed), &c).len() == 2)
            .count();
        // Probability 1 / 2.
        assert!((50..150).contains(&tries), "{tries}");
    }

    #[test]
    fn the_same_seed_makes_the_same_choices() {
        let c = Candidates {
            live: addrs(&[10, 11, 12, 13, 14, 15, 16]),
            unreachable: addrs(&[20, 21]),
            seeds: addrs(&[1, 2]),
        };
        let run = |seed| {
            let rng = SeededRng::new(seed);
            (0..20)
                .map(|_| choose_targets(&rng, &c))
                .collect::<Vec<_>>()
        };
        assert_eq!(run(9), run(9));
        assert_ne!(run(9), run(10));
    }
}
