//! The token ring and where each token's replicas are.
//!
//! Every node owns a few tokens (`num_tokens`). A node owns, for each of
//! its tokens `t`, the range `(previous token, t]`: a partition whose token
//! is `k` belongs to the first ring token `>= k`, wrapping to the smallest.
//! Replicas are found by walking the ring clockwise from there
//! ([`placement`]). A joining node's tokens are chosen by [`allocation`].
//!
//! Invariants: the ring's tokens are sorted and distinct; every token names
//! a node of the ring.

pub mod allocation;
pub mod placement;

use std::collections::BTreeMap;

/// A node's index in its ring.
pub type NodeId = usize;

/// Where a node is: its data centre and rack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub dc: String,
    pub rack: String,
}

/// The nodes and the tokens they own.
#[derive(Debug, Clone, Default)]
pub struct TokenRing {
    nodes: Vec<Location>,
    /// Ring tokens, ascending, each with its owner.
    tokens: Vec<(i64, NodeId)>,
}

/// Why a ring cannot be built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RingError {
    /// Two nodes (or one node twice) claim the same token.
    DuplicateToken(i64),
}

impl TokenRing {
    /// A ring of `nodes`, each with its location and tokens.
    pub fn new(nodes: Vec<(Location, Vec<i64>)>) -> Result<TokenRing, RingError> {
        let mut owners = BTreeMap::new();
        let mut locations = Vec::with_capacity(nodes.len());
        for (id, (location, tokens)) in nodes.into_iter().enumerate() {
            locations.push(location);
            for t in tokens {
                if owners.insert(t, id).is_some() {
                    return Err(RingError::DuplicateToken(t));
                }
            }
        }
        Ok(TokenRing {
            nodes: locations,
            tokens: owners.into_iter().collect(),
        })
    }

    /// Every node, by id.
    pub fn nodes(&self) -> &[Location] {
        &self.nodes
    }

    /// The ring's tokens, ascending, with their owners.
    pub fn tokens(&self) -> &[(i64, NodeId)] {
        &self.tokens
    }

    /// The index in [`TokenRing::tokens`] of the range that holds `token`:
    /// the first ring token `>= token`, or 0 past the last one (wrapping).
    /// `None` for an empty ring.
    pub fn first_index(&self, token: i64) -> Option<usize> {
        if self.tokens.is_empty() {
            return None;
        }
        let i = self.tokens.partition_point(|(t, _)| *t < token);
        Some(if i == self.tokens.len() { 0 } else { i })
    }

    /// The ring's tokens from the one that holds `token`, clockwise, each
    /// once.
    pub fn walk(&self, token: i64) -> impl Iterator<Item = (i64, NodeId)> + '_ {
        let start = self.first_index(token).unwrap_or(0);
        let n = self.tokens.len();
        (0..n).map(move |k| self.tokens[(start + k) % n])
    }

    /// Nodes in data centre `dc`.
    pub fn nodes_in(&self, dc: &str) -> usize {
        self.nodes.iter().filter(|l| l.dc == dc).count()
    }

    /// Distinct racks of data centre `dc`.
    pub fn racks_in(&self, dc: &str) -> usize {
        let mut racks: Vec<&str> = self
            .nodes
            .iter()
            .filter(|l| l.dc == dc)
            .map(|l| l.rack.as_str())
            .collect();
        racks.sort_unstable();
        racks.dedup();
        racks.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn at(dc: &str, rack: &str) -> Location {
        Location {
            dc: dc.into(),
            rack: rack.into(),
        }
    }

    #[test]
    fn a_token_belongs_to_the_first_ring_token_at_or_after_it() {
        let ring = TokenRing::new(vec![
            (at("dc1", "r1"), vec![-100, 50]),
            (at("dc1", "r1"), vec![0]),
        ])
        .unwrap();
        assert_eq!(ring.tokens(), &[(-100, 0), (0, 1), (50, 0)]);
        let owner = |t| ring.walk(t).next().unwrap().1;
        assert_eq!(owner(-100), 0, "a ring token is in its own range");
        assert_eq!(owner(-99), 1);
        assert_eq!(owner(0), 1);
        assert_eq!(owner(1), 0);
        assert_eq!(owner(51), 0, "past the last token: wraps to the first");
        assert_eq!(owner(i64::MIN), 0);
        assert_eq!(ring.walk(1).count(), 3, "every token once");
    }

    #[test]
    fn a_token_claimed_twice_is_refused() {
        let err = TokenRing::new(vec![(at("dc1", "r1"), vec![7]), (at("dc1", "r1"), vec![7])])
            .unwrap_err();
        assert_eq!(err, RingError::DuplicateToken(7));
        assert!(TokenRing::default().first_index(0).is_none());
    }
}
