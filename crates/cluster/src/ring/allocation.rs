//! Token allocation for a joining node (docs/design/cluster.md, section 7,
//! "Token allocation"): what Cassandra's
//! `allocate_tokens_for_local_replication_factor` asks for, by our own
//! greedy algorithm. The answer depends only on the ring, the new node's
//! place, its host id, `num_tokens` and the factor, so every node that
//! computes it for a joining node agrees.
//!
//! Only the new node's data centre is looked at: under
//! NetworkTopologyStrategy a data centre's replicas depend only on its own
//! tokens, so its tokens form a ring of their own (the *data centre ring*).
//! Nodes of that data centre without tokens are not counted (they have not
//! joined).
//!
//! 1. The first node of a data centre takes `num_tokens` evenly spaced
//!    tokens from an offset derived from its host id.
//! 2. While the data centre, the new node included, has at most `rf`
//!    nodes, each of them replicates everything whatever the tokens; each
//!    new token goes to the midpoint of the widest range (the first of
//!    equals), which keeps the ring even for the nodes that come later.
//!    So does a factor of 0, which gives no load to balance.
//! 3. Afterwards each token is placed in turn at the range midpoint that
//!    brings the nodes' replicated loads closest to their targets
//!    (the `greedy` submodule).
//!
//! Widths are `i128`: the ring is `2^64` wide (tokens `i64::MIN + 1 ..=
//! i64::MAX`, and `i64::MIN`, the partitioner's minimum, which no node
//! takes). A range `(previous, t]` of a ring with one token is the whole
//! ring.

mod greedy;
#[cfg(test)]
mod tests;

use std::collections::BTreeSet;

use super::{Location, TokenRing};
use crate::net::handshake::HostId;

/// The width of the Murmur3 ring: every `i64`.
pub const RING_WIDTH: i128 = 1 << 64;

/// How far from a range's midpoint a candidate may move to avoid a token
/// already taken (by another data centre, or by this node just before).
const MIDPOINT_SEARCH_MAX: i128 = 16;

/// `num_tokens` tokens for `new_node` (not yet in `ring`), sorted, distinct,
/// none already in the ring and none `i64::MIN`, with `rf` the replication
/// factor the data centre is balanced for. Fewer only if the data centre
/// ring has no room left (ranges of width 1).
pub fn allocate(
    ring: &TokenRing,
    new_node: &Location,
    host_id: HostId,
    num_tokens: usize,
    rf: usize,
) -> Vec<i64> {
    let mut taken: BTreeSet<i64> = ring.tokens().iter().map(|(t, _)| *t).collect();
    let mut dc = DcRing::of(ring, new_node);
    if dc.tokens.is_empty() {
        return first_node_tokens(host_id, num_tokens, &taken);
    }
    let spread_only = rf == 0 || dc.members.len() <= rf;
    let mut placed = Vec::with_capacity(num_tokens);
    for k in 0..num_tokens {
        let token = if spread_only {
            dc.widest_midpoint(&taken)
        } else {
            greedy::best_midpoint(&dc, rf, (k, num_tokens), &taken)
        };
        let Some(token) = token else { break };
        taken.insert(token);
        dc.insert(token);
        placed.push(token);
    }
    placed.sort_unstable();
    placed
}

/// One data centre's ring, the new node included (as the last member).
#[derive(Debug, Clone)]
struct DcRing<'a> {
    /// Rack of each member, by member index; the new node is the last.
    members: Vec<&'a str>,
    /// The data centre's tokens, ascending.
    tokens: Vec<i64>,
    /// The member owning each token.
    owners: Vec<usize>,
}

impl<'a> DcRing<'a> {
    /// The ring of `new_node`'s data centre in `ring`, with `new_node`
    /// added as a member without tokens.
    fn of(ring: &'a TokenRing, new_node: &'a Location) -> DcRing<'a> {
        let mut member_of: Vec<Option<usize>> = vec![None; ring.nodes().len()];
        let mut members = Vec::new();
        let mut tokens = Vec::new();
        let mut owners = Vec::new();
        for &(token, node) in ring.tokens() {
            let location = &ring.nodes()[node];
            if location.dc != new_node.dc {
                continue;
            }
            let member = *member_of[node].get_or_insert_with(|| {
                members.push(location.rack.as_str());
                members.len() - 1
            });
            tokens.push(token);
            owners.push(member);
        }
        members.push(new_node.rack.as_str());
        DcRing {
            members,
            tokens,
            owners,
        }
    }

    /// The new node's member index.
    fn new_member(&self) -> usize {
        self.members.len() - 1
    }

    /// Distinct racks among the members.
    fn racks(&self) -> usize {
        let mut racks = self.members.clone();
        racks.sort_unstable();
        racks.dedup();
        racks.len()
    }

    /// The start of range `i`, `(start, tokens[i]]`: the token before it.
    fn range_start(&self, i: usize) -> i64 {
        self.tokens[(i + self.tokens.len() - 1) % self.tokens.len()]
    }

    /// The width of range `i`.
    fn width(&self, i: usize) -> i128 {
        if self.tokens.len() == 1 {
            return RING_WIDTH;
        }
        distance(self.range_start(i), self.tokens[i])
    }

    /// Adds `token` to the ring, owned by the new node.
    fn insert(&mut self, token: i64) {
        let i = self.tokens.partition_point(|t| *t < token);
        self.tokens.insert(i, token);
        self.owners.insert(i, self.new_member());
    }

    /// A free token near the midpoint of range `i`, if it has room.
    fn midpoint(&self, i: usize, taken: &BTreeSet<i64>) -> Option<i64> {
        free_token_inside(self.range_start(i), self.width(i), taken)
    }

    /// The midpoint of the widest range (ties: the first range).
    fn widest_midpoint(&self, taken: &BTreeSet<i64>) -> Option<i64> {
        let mut order: Vec<usize> = (0..self.tokens.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(self.width(i)));
        order.into_iter().find_map(|i| self.midpoint(i, taken))
    }
}

/// Clockwise distance from `from` to `to`, in `0..RING_WIDTH`.
fn distance(from: i64, to: i64) -> i128 {
    (i128::from(to) - i128::from(from)).rem_euclid(RING_WIDTH)
}

/// `t` brought back into the `i64` ring.
fn wrap(t: i128) -> i64 {
    let min = i128::from(i64::MIN);
    ((t - min).rem_euclid(RING_WIDTH) + min) as i64
}

/// The token nearest the midpoint of `(start, start + width)` (both ends
/// excluded) that is neither taken nor `i64::MIN`: the midpoint, then one
/// above, one below, two above, ...
fn free_token_inside(start: i64, width: i128, taken: &BTreeSet<i64>) -> Option<i64> {
    let half = width / 2;
    (0..=2 * MIDPOINT_SEARCH_MAX)
        .map(|k| {
            if k % 2 == 0 {
                half - k / 2
            } else {
                half + (k + 1) / 2
            }
        })
        .filter(|offset| *offset > 0 && *offset < width)
        .map(|offset| wrap(i128::from(start) + offset))
        .find(|t| *t != i64::MIN && !taken.contains(t))
}

/// The first node of a data centre: `num_tokens` tokens `2^64 /
/// num_tokens` apart from an offset drawn from its host id, each moved
/// up past any token taken (by another data centre).
fn first_node_tokens(host_id: HostId, num_tokens: usize, taken: &BTreeSet<i64>) -> Vec<i64> {
    let mut taken = taken.clone();
    let start = i128::from(host_offset(host_id));
    let step = RING_WIDTH / num_tokens.max(1) as i128;
    let mut tokens = Vec::with_capacity(num_tokens);
    for k in 0..num_tokens as i128 {
        let mut t = wrap(start + k * step);
        while t == i64::MIN || taken.contains(&t) {
            t = t.wrapping_add(1);
        }
        taken.insert(t);
        tokens.push(t);
    }
    tokens.sort_unstable();
    tokens
}

/// A token drawn from a host id: its 16 bytes folded and mixed
/// (SplitMix64's finaliser), so that nearby ids land far apart.
fn host_offset(host_id: HostId) -> i64 {
    let id = u128::from_be_bytes(host_id.0);
    let mut z = (id as u64) ^ ((id >> 64) as u64);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) as i64
}
