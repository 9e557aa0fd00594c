//! Merkle leaves over a token range (docs/design/topology.md, section 6):
//! the range `(start, end]` is cut into `2^depth` leaves of equal token
//! width, and each leaf's hash covers the partitions whose tokens fall in
//! it, in token order. Two replicas whose leaf hashes differ hold
//! different data in that leaf; the root, a hash of the leaves, says
//! whether anything differs at all.
//!
//! Pure: the arithmetic of leaves and the comparison. Offsets are counted
//! from `start` modulo 2^64, so a range that wraps the ring needs no
//! special case; `start == end` is the whole ring.

use md5::{Digest, Md5};

/// The leaves of a range: `2^depth` of them.
pub const MERKLE_DEPTH: u8 = 10;

/// The deepest tree a validation may ask for (leaves in one answer).
pub const MAX_MERKLE_DEPTH: u8 = 16;

/// A range's width in tokens: `(start, end]`, the whole ring when equal.
fn width(start: i64, end: i64) -> u128 {
    match end.wrapping_sub(start) as u64 {
        0 => 1u128 << 64,
        w => u128::from(w),
    }
}

/// Where leaf `i` begins, as an offset from `start` (its tokens are the
/// offsets in `(lower(i), lower(i + 1)]`).
fn lower(i: u128, width: u128, leaves: u128) -> u128 {
    (i * width).div_ceil(leaves)
}

/// The leaf of `token` in `(start, end]` with `2^depth` leaves (`None`
/// when the token is outside the range).
pub fn leaf_of(token: i64, start: i64, end: i64, depth: u8) -> Option<usize> {
    let w = width(start, end);
    let offset = match token.wrapping_sub(start) as u64 {
        0 if w == 1u128 << 64 => 1u128 << 64,
        0 => return None,
        o => u128::from(o),
    };
    if offset > w {
        return None;
    }
    let leaves = 1u128 << depth;
    Some(((offset - 1) * leaves / w) as usize)
}

/// Leaf `i`'s own range `(lo, hi]` in tokens; `None` when it holds no
/// token (a range narrower than its leaves).
pub fn leaf_range(i: usize, start: i64, end: i64, depth: u8) -> Option<(i64, i64)> {
    let w = width(start, end);
    let leaves = 1u128 << depth;
    let lo = lower(i as u128, w, leaves);
    let hi = lower(i as u128 + 1, w, leaves);
    (hi > lo).then(|| {
        (
            start.wrapping_add(lo as u64 as i64),
            start.wrapping_add(hi as u64 as i64),
        )
    })
}

/// One replica's leaves of one range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leaves {
    pub hashes: Vec<[u8; 16]>,
    /// Partitions hashed.
    pub partitions: u64,
}

impl Leaves {
    /// A hash of the leaves: equal roots, equal data.
    pub fn root(&self) -> [u8; 16] {
        let mut h = Md5::new();
        for leaf in &self.hashes {
            h.update(leaf);
        }
        h.finalize().into()
    }
}

/// Builds leaves from partitions given in token order.
pub struct LeafHasher {
    start: i64,
    end: i64,
    depth: u8,
    hashers: Vec<Option<Md5>>,
    partitions: u64,
}

impl LeafHasher {
    pub fn new(start: i64, end: i64, depth: u8) -> LeafHasher {
        LeafHasher {
            start,
            end,
            depth,
            hashers: (0..1usize << depth).map(|_| None).collect(),
            partitions: 0,
        }
    }

    /// Adds a partition: its key's token, and its bytes (key and content,
    /// as the caller encodes them).
    pub fn add(&mut self, token: i64, bytes: &[u8]) {
        let Some(i) = leaf_of(token, self.start, self.end, self.depth) else {
            return;
        };
        self.hashers[i].get_or_insert_with(Md5::new).update(bytes);
        self.partitions += 1;
    }

    pub fn finish(self) -> Leaves {
        Leaves {
            hashes: self
                .hashers
                .into_iter()
                .map(|h| h.map_or([0; 16], |h| h.finalize().into()))
                .collect(),
            partitions: self.partitions,
        }
    }
}

/// The leaves where the replicas disagree.
pub fn mismatched(replicas: &[Leaves]) -> Vec<usize> {
    let Some(first) = replicas.first() else {
        return Vec::new();
    };
    (0..first.hashes.len())
        .filter(|&i| {
            replicas
                .iter()
                .any(|r| r.hashes.get(i) != first.hashes.get(i))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn leaves_cover_a_range_once_even_when_it_wraps() {
        for (start, end) in [(-100, 100), (i64::MAX - 5, i64::MIN + 5), (7, 7), (0, 3)] {
            let depth = 3;
            let mut covered = 0u128;
            for i in 0..8 {
                if let Some((lo, hi)) = leaf_range(i, start, end, depth) {
                    covered += width(lo, hi);
                    // The leaf's last token maps back to it.
                    assert_eq!(
                        leaf_of(hi, start, end, depth),
                        Some(i),
                        "({start}, {end}] leaf {i}"
                    );
                    assert_eq!(leaf_of(lo.wrapping_add(1), start, end, depth), Some(i));
                }
            }
            assert_eq!(covered, width(start, end), "({start}, {end}]");
        }
        assert_eq!(leaf_of(-100, -100, 100, 3), None, "start is outside");
        assert_eq!(leaf_of(101, -100, 100, 3), None);
    }

    proptest! {
        #[test]
        fn every_token_of_a_range_is_in_the_leaf_whose_range_holds_it(
            start in any::<i64>(), end in any::<i64>(), token in any::<i64>(), depth in 0u8..12
        ) {
            if let Some(i) = leaf_of(token, start, end, depth) {
                let (lo, hi) = leaf_range(i, start, end, depth).expect("a leaf that holds a token");
                let offset = token.wrapping_sub(lo) as u64;
                prop_assert!(offset >= 1 && u128::from(offset) <= width(lo, hi));
            }
        }
    }

    #[test]
    fn a_difference_shows_in_its_leaf_and_the_root() {
        let build = |extra: bool| {
            let mut h = LeafHasher::new(-1000, 1000, 2);
            h.add(-900, b"a");
            h.add(10, b"b");
            if extra {
                h.add(600, b"c");
            }
            h.finish()
        };
        let (a, b) = (build(false), build(true));
        assert_ne!(a.root(), b.root());
        assert_eq!(mismatched(&[a.clone(), b]), vec![3]);
        assert!(mismatched(&[a.clone(), a]).is_empty());
    }
}
