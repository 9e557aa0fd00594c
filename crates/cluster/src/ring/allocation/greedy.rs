//! Step 3 of token allocation: the next token of the new node goes to the
//! range midpoint that minimises the sum, over the data centre's nodes, of
//! the squared difference between a node's *load* (the total width of the
//! ranges it replicates, by placement's NetworkTopologyStrategy rule, racks
//! included) and its *target* (`2^64 × rf / nodes`; for the new node that
//! share times the fraction of its tokens placed once this one is). Ties go
//! to the smallest token.
//!
//! Incremental: a range's replicas come from a walk clockwise from its end,
//! and a token inserted at `m` changes only the walks that pass `m` before
//! they are complete, plus the new range ending at `m` and the width of
//! the range it splits. Each range remembers how many positions its walk
//! looked at (its *extent*), so a candidate re-walks only the few ranges
//! just before it whose extent reaches it, instead of the whole ring.

use std::collections::BTreeSet;

use super::super::placement::DcNeeds;
use super::{distance, DcRing, RING_WIDTH};

/// Low bits dropped from load differences before they are squared: a
/// difference is below `2^67` (five replicas of the whole ring), so the
/// squares stay far below `i128::MAX` even summed over many nodes. What
/// is dropped is a few parts in `2^48` of a range, far below any choice
/// that matters.
const COST_SHIFT: u32 = 16;

/// The next token for the new node of `dc`: the midpoint (free of
/// `taken`) with the smallest cost, the smallest token among equals;
/// `placed` of the new node's `num_tokens` tokens are already in `dc`.
pub(super) fn best_midpoint(
    dc: &DcRing<'_>,
    rf: usize,
    (placed, num_tokens): (usize, usize),
    taken: &BTreeSet<i64>,
) -> Option<i64> {
    let replication = Replication::of(dc, rf);
    let targets = Targets::new(dc, rf, placed + 1, num_tokens);
    let mut best: Option<(i128, i64)> = None;
    for i in 0..dc.tokens.len() {
        let Some(m) = dc.midpoint(i, taken) else {
            continue;
        };
        let cost = replication.cost_with(i, m, &targets);
        if best.is_none_or(|b| (cost, m) < b) {
            best = Some((cost, m));
        }
    }
    best.map(|(_, token)| token)
}

/// What each member should replicate.
struct Targets {
    /// An existing node's share of `rf` copies of the ring.
    existing: i128,
    /// The new node's target: its share, scaled by its tokens placed.
    new: i128,
    new_member: usize,
}

impl Targets {
    /// Targets once `placed` of `num_tokens` new tokens are in `dc`.
    fn new(dc: &DcRing<'_>, rf: usize, placed: usize, num_tokens: usize) -> Targets {
        let members = dc.members.len() as i128;
        let existing = RING_WIDTH * rf.min(dc.members.len()) as i128 / members;
        Targets {
            existing,
            new: existing * placed as i128 / num_tokens.max(1) as i128,
            new_member: dc.new_member(),
        }
    }

    fn of(&self, member: usize) -> i128 {
        if member == self.new_member {
            self.new
        } else {
            self.existing
        }
    }
}

/// The result of one range's walk.
struct Walk {
    /// The replicas, in walk order.
    replicas: Vec<usize>,
    /// Positions the walk looked at before it was complete; `usize::MAX`
    /// when the ring ran out first (any token added anywhere is met).
    extent: usize,
}

/// Placement's rule for one data centre, over member indices.
struct Rule<'r, 'a> {
    racks_of: &'r [&'a str],
    rf: usize,
    racks: usize,
}

impl Rule<'_, '_> {
    /// Replicas of a walk that meets `owner_at(k)` at its `k`-th position,
    /// for `k` below `len`.
    fn walk(&self, len: usize, owner_at: impl Fn(usize) -> usize) -> Walk {
        let mut needs = DcNeeds::new("", self.rf, self.racks_of.len(), self.racks);
        let mut replicas = Vec::with_capacity(self.rf);
        if needs.is_full() {
            return Walk {
                replicas,
                extent: 0,
            };
        }
        for k in 0..len {
            let member = owner_at(k);
            if needs.offer(member, self.racks_of[member], &replicas) {
                replicas.push(member);
                if needs.is_full() {
                    return Walk {
                        replicas,
                        extent: k + 1,
                    };
                }
            }
        }
        Walk {
            replicas,
            extent: usize::MAX,
        }
    }
}

/// Every range's walk on a data centre ring, and the members' loads.
struct Replication<'r, 'a> {
    dc: &'r DcRing<'a>,
    rule: Rule<'r, 'a>,
    walks: Vec<Walk>,
    loads: Vec<i128>,
    /// The largest extent of any walk.
    max_extent: usize,
}

impl<'r, 'a> Replication<'r, 'a> {
    fn of(dc: &'r DcRing<'a>, rf: usize) -> Replication<'r, 'a> {
        let rule = Rule {
            racks_of: &dc.members,
            rf,
            racks: dc.racks(),
        };
        let n = dc.tokens.len();
        let mut loads = vec![0i128; dc.members.len()];
        let walks: Vec<Walk> = (0..n)
            .map(|j| {
                let walk = rule.walk(n, |k| dc.owners[(j + k) % n]);
                for &r in &walk.replicas {
                    loads[r] += dc.width(j);
                }
                walk
            })
            .collect();
        let max_extent = walks.iter().map(|w| w.extent).max().unwrap_or(0);
        Replication {
            dc,
            rule,
            walks,
            loads,
            max_extent,
        }
    }

    /// The cost (up to a constant shared by every candidate) of the ring
    /// with the new node's token `m` inserted in range `i`.
    fn cost_with(&self, i: usize, m: i64, targets: &Targets) -> i128 {
        let dc = self.dc;
        let n = dc.tokens.len();
        let new_member = dc.new_member();
        // The range `i` splits into (start, m], the new node's, and (m, end].
        let split = distance(dc.range_start(i), m);
        let mut delta = Delta::default();
        let mut range_i_rewalked = false;
        // The walk of range j meets m right after position i - 1, which
        // is `d` positions past j.
        for d in 0..self.max_extent.min(n) {
            let j = (i + 2 * n - 1 - d) % n;
            if self.walks[j].extent <= d + 1 {
                continue;
            }
            let width = dc.width(j);
            let new_width = if j == i { width - split } else { width };
            let walk = self.rule.walk(n + 1, |k| match k {
                k if k <= d => dc.owners[(j + k) % n],
                k if k == d + 1 => new_member,
                k => dc.owners[(j + k - 1) % n],
            });
            delta.add_all(&self.walks[j].replicas, -width);
            delta.add_all(&walk.replicas, new_width);
            range_i_rewalked |= j == i;
        }
        if !range_i_rewalked {
            delta.add_all(&self.walks[i].replicas, -split);
        }
        let new_range = self.rule.walk(n + 1, |k| match k {
            0 => new_member,
            k => dc.owners[(i + k - 1) % n],
        });
        delta.add_all(&new_range.replicas, split);
        delta.cost(&self.loads, targets)
    }
}

/// Load changes per member, for the few members a candidate touches.
#[derive(Default)]
struct Delta(Vec<(usize, i128)>);

impl Delta {
    fn add_all(&mut self, members: &[usize], amount: i128) {
        for &member in members {
            match self.0.iter_mut().find(|(m, _)| *m == member) {
                Some((_, d)) => *d += amount,
                None => self.0.push((member, amount)),
            }
        }
    }

    /// How much the sum of squared (shifted) differences from the targets
    /// changes.
    fn cost(&self, loads: &[i128], targets: &Targets) -> i128 {
        let square = |x: i128| {
            let x = x >> COST_SHIFT;
            x * x
        };
        self.0
            .iter()
            .map(|&(member, d)| {
                let before = loads[member] - targets.of(member);
                square(before + d) - square(before)
            })
            .sum()
    }
}

/// The cost of inserting `m` in range `i` of `dc` both ways: as
/// [`best_midpoint`] computes it, from the few walks it changes, and from
/// every range's walk on the ring with `m` in it. Tests check they agree.
#[cfg(test)]
pub(super) fn incremental_and_full_cost(
    dc: &DcRing<'_>,
    rf: usize,
    (i, m): (usize, i64),
    (placed, num_tokens): (usize, usize),
) -> (i128, i128) {
    let targets = Targets::new(dc, rf, placed, num_tokens);
    let before = Replication::of(dc, rf);
    let mut with_m = dc.clone();
    with_m.insert(m);
    let after = Replication::of(&with_m, rf);
    let all: Vec<usize> = (0..dc.members.len()).collect();
    let mut changes = Delta::default();
    for member in all {
        changes.add_all(&[member], after.loads[member] - before.loads[member]);
    }
    (
        before.cost_with(i, m, &targets),
        changes.cost(&before.loads, &targets),
    )
}
