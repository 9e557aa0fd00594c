//! The rows of one partition, keyed by clustering, in clustering order.
//!
//! Most partitions hold one row (tables without clustering columns, such as
//! cassandra-stress's) or a few, and rows mostly arrive in clustering order
//! (decoding, slices, time series). A std `BTreeMap` allocates a whole node
//! of 11 slots for its first entry, about 1.5 KB for a one-row partition,
//! so a [`RowMap`] starts as a vector sorted by key: one allocation of the
//! entries, appends past the last key in amortised O(1), lookups by binary
//! search. It becomes a `BTreeMap` the first time a key that is neither
//! present nor past the last one arrives while it holds
//! [`ROW_MAP_VEC_MAX`] or more entries, so a wide partition written in
//! random order pays O(log n) per insert instead of shifting the vector.
//! A vector can still grow past the limit by appends and by linear merges
//! of two vectors (compaction): it stays sorted either way.
//!
//! Invariants: keys are unique and iterate in ascending order whichever
//! representation holds them; equality ignores the representation.
//! The API is the subset of `BTreeMap` the engine and the query layer use,
//! so call sites read the same (see also [`crate::data::cell_map`]).

mod iter;
#[cfg(test)]
mod tests;

use crate::data::clustering::ClusteringKey;
use crate::data::row::Row;
use std::collections::BTreeMap;
use std::ops::{Bound, RangeBounds};

pub use iter::{IntoIter, Iter, Range};

/// Entries a vector takes in before an insert out of order turns it into
/// a tree. Past it, inserting in the middle would move 136-byte entries
/// by the dozen on every write.
pub const ROW_MAP_VEC_MAX: usize = 32;

/// Rows keyed by clustering, in ascending order, each key at most once.
#[derive(Clone, Default)]
pub struct RowMap {
    repr: Repr,
}

#[derive(Clone)]
enum Repr {
    /// Sorted by key, keys unique.
    Vec(Vec<(ClusteringKey, Row)>),
    Tree(BTreeMap<ClusteringKey, Row>),
}

impl Default for Repr {
    fn default() -> Self {
        Repr::Vec(Vec::new())
    }
}

impl RowMap {
    pub fn new() -> Self {
        RowMap::default()
    }

    /// An empty map with room for `n` rows appended in order.
    pub fn with_capacity(n: usize) -> Self {
        RowMap {
            repr: Repr::Vec(Vec::with_capacity(n)),
        }
    }

    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::Vec(v) => v.len(),
            Repr::Tree(t) => t.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the rows are held in a tree rather than a vector (for
    /// memory accounting and tests).
    pub fn is_tree(&self) -> bool {
        matches!(self.repr, Repr::Tree(_))
    }

    /// Entries the vector has room for; `None` once the rows are in a tree.
    pub fn vec_capacity(&self) -> Option<usize> {
        match &self.repr {
            Repr::Vec(v) => Some(v.capacity()),
            Repr::Tree(_) => None,
        }
    }

    /// Sets the row at `key`, returning the one it replaced. Appending past
    /// the last key (the usual case) costs no search.
    pub fn insert(&mut self, key: ClusteringKey, row: Row) -> Option<Row> {
        let v = match &mut self.repr {
            Repr::Tree(t) => return t.insert(key, row),
            Repr::Vec(v) => v,
        };
        if v.last().is_none_or(|(last, _)| *last < key) {
            if v.capacity() == 0 {
                // Most partitions keep their one row: no room for four.
                v.reserve_exact(1);
            }
            v.push((key, row));
            return None;
        }
        match search(v, &key) {
            Ok(i) => Some(std::mem::replace(&mut v[i].1, row)),
            Err(i) if v.len() < ROW_MAP_VEC_MAX => {
                v.insert(i, (key, row));
                None
            }
            Err(_) => {
                let mut tree: BTreeMap<_, _> = std::mem::take(v).into_iter().collect();
                tree.insert(key, row);
                self.repr = Repr::Tree(tree);
                None
            }
        }
    }

    pub fn get(&self, key: &ClusteringKey) -> Option<&Row> {
        match &self.repr {
            Repr::Vec(v) => search(v, key).ok().map(|i| &v[i].1),
            Repr::Tree(t) => t.get(key),
        }
    }

    pub fn get_mut(&mut self, key: &ClusteringKey) -> Option<&mut Row> {
        match &mut self.repr {
            Repr::Vec(v) => search(v, key).ok().map(|i| &mut v[i].1),
            Repr::Tree(t) => t.get_mut(key),
        }
    }

    pub fn contains_key(&self, key: &ClusteringKey) -> bool {
        self.get(key).is_some()
    }

    pub fn remove(&mut self, key: &ClusteringKey) -> Option<Row> {
        match &mut self.repr {
            Repr::Vec(v) => search(v, key).ok().map(|i| v.remove(i).1),
            Repr::Tree(t) => t.remove(key),
        }
    }

    pub fn iter(&self) -> Iter<'_> {
        Iter::new(&self.repr)
    }

    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &ClusteringKey> + ExactSizeIterator {
        self.iter().map(|(k, _)| k)
    }

    pub fn values(&self) -> impl DoubleEndedIterator<Item = &Row> + ExactSizeIterator {
        self.iter().map(|(_, r)| r)
    }

    pub fn values_mut(&mut self) -> Box<dyn DoubleEndedIterator<Item = &mut Row> + '_> {
        match &mut self.repr {
            Repr::Vec(v) => Box::new(v.iter_mut().map(|(_, r)| r)),
            Repr::Tree(t) => Box::new(t.values_mut()),
        }
    }

    pub fn into_values(self) -> impl DoubleEndedIterator<Item = Row> + ExactSizeIterator {
        self.into_iter().map(|(_, r)| r)
    }

    pub fn first_key_value(&self) -> Option<(&ClusteringKey, &Row)> {
        self.iter().next()
    }

    pub fn last_key_value(&self) -> Option<(&ClusteringKey, &Row)> {
        self.iter().next_back()
    }

    /// The rows whose keys fall in `range`, in order. Unlike
    /// `BTreeMap::range`, an inverted or empty range yields nothing rather
    /// than panicking.
    pub fn range<R: RangeBounds<ClusteringKey>>(&self, range: R) -> Range<'_> {
        let (start, end) = (range.start_bound(), range.end_bound());
        match &self.repr {
            Repr::Vec(v) => {
                let from = match start {
                    Bound::Included(k) => search(v, k).unwrap_or_else(|i| i),
                    Bound::Excluded(k) => search(v, k).map_or_else(|i| i, |i| i + 1),
                    Bound::Unbounded => 0,
                };
                let to = match end {
                    Bound::Included(k) => search(v, k).map_or_else(|i| i, |i| i + 1),
                    Bound::Excluded(k) => search(v, k).unwrap_or_else(|i| i),
                    Bound::Unbounded => v.len(),
                };
                Range::slice(&v[from..to.max(from)])
            }
            Repr::Tree(t) if bounds_are_ordered(start, end) => Range::tree(t.range((start, end))),
            Repr::Tree(_) => Range::slice(&[]),
        }
    }

    /// Keeps only the rows for which `keep` is true.
    pub fn retain(&mut self, mut keep: impl FnMut(&ClusteringKey, &mut Row) -> bool) {
        match &mut self.repr {
            Repr::Vec(v) => v.retain_mut(|(k, r)| keep(k, r)),
            Repr::Tree(t) => t.retain(|k, r| keep(k, r)),
        }
    }

    /// Merges `other` in, reconciling the two versions of a row with
    /// [`Row::merge`]. Two vectors merge in one linear pass (in place when
    /// `other` only has rows `self` has), except a small update into a wide
    /// vector: that one is merged row by row, and a new row in the middle
    /// turns the vector into a tree. Rows past the last one are appended.
    pub fn merge(&mut self, other: RowMap) {
        if other.is_empty() {
            return;
        }
        if self.is_empty() {
            *self = other;
            return;
        }
        let theirs = match other.repr {
            Repr::Vec(theirs) => theirs,
            Repr::Tree(t) => return self.merge_each(t),
        };
        let Repr::Vec(mine) = &mut self.repr else {
            return self.merge_each(theirs);
        };
        let appends = match (mine.last(), theirs.first()) {
            (Some((last, _)), Some((first, _))) => last < first,
            _ => true,
        };
        let small_into_wide =
            mine.len() + theirs.len() > ROW_MAP_VEC_MAX && theirs.len() <= ROW_MAP_VEC_MAX;
        if appends {
            mine.extend(theirs);
        } else if small_into_wide {
            // A few rows into a wide partition (a memtable write): a binary
            // search each instead of a pass over the whole vector.
            self.merge_each(theirs);
        } else if covers(mine, &theirs) {
            merge_in_place(mine, theirs);
        } else {
            *mine = merge_sorted(std::mem::take(mine), theirs);
        }
    }

    fn merge_each(&mut self, rows: impl IntoIterator<Item = (ClusteringKey, Row)>) {
        for (key, row) in rows {
            match self.get_mut(&key) {
                Some(mine) => mine.merge(row),
                None => {
                    self.insert(key, row);
                }
            }
        }
    }
}

fn search(v: &[(ClusteringKey, Row)], key: &ClusteringKey) -> Result<usize, usize> {
    v.binary_search_by(|(k, _)| k.cmp(key))
}

/// Whether `BTreeMap::range` accepts the bounds (it panics on an inverted
/// range and on equal bounds both excluded).
fn bounds_are_ordered(start: Bound<&ClusteringKey>, end: Bound<&ClusteringKey>) -> bool {
    match (start, end) {
        (Bound::Excluded(a), Bound::Excluded(b)) => a < b,
        (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) => {
            a <= b
        }
        _ => true,
    }
}

/// Whether every key of `theirs` is already in `mine` (both sorted).
fn covers(mine: &[(ClusteringKey, Row)], theirs: &[(ClusteringKey, Row)]) -> bool {
    let mut mine = mine.iter();
    theirs
        .iter()
        .all(|(k, _)| mine.by_ref().any(|(m, _)| m == k))
}

/// Merges rows `mine` already has (see [`covers`]) without reallocating.
fn merge_in_place(mine: &mut [(ClusteringKey, Row)], theirs: Vec<(ClusteringKey, Row)>) {
    let mut i = 0;
    for (k, r) in theirs {
        while i < mine.len() && mine[i].0 < k {
            i += 1;
        }
        if let Some((_, slot)) = mine.get_mut(i) {
            slot.merge(r);
        }
    }
}

/// One pass over two sorted vectors; equal keys merge with [`Row::merge`].
fn merge_sorted(
    mine: Vec<(ClusteringKey, Row)>,
    theirs: Vec<(ClusteringKey, Row)>,
) -> Vec<(ClusteringKey, Row)> {
    let mut out = Vec::with_capacity(mine.len() + theirs.len());
    let mut a = mine.into_iter().peekable();
    let mut b = theirs.into_iter().peekable();
    loop {
        let take_a = match (a.peek(), b.peek()) {
            (Some(x), Some(y)) => match x.0.cmp(&y.0) {
                std::cmp::Ordering::Less => true,
                std::cmp::Ordering::Greater => false,
                std::cmp::Ordering::Equal => {
                    if let (Some((k, mut x)), Some((_, y))) = (a.next(), b.next()) {
                        x.merge(y);
                        out.push((k, x));
                    }
                    continue;
                }
            },
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => break,
        };
        let next = if take_a { a.next() } else { b.next() };
        out.extend(next);
    }
    out
}

impl PartialEq for RowMap {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for RowMap {}

impl std::fmt::Debug for RowMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl FromIterator<(ClusteringKey, Row)> for RowMap {
    /// Rows in key order are appended into one allocation of the size
    /// the iterator announces.
    fn from_iter<I: IntoIterator<Item = (ClusteringKey, Row)>>(iter: I) -> Self {
        let iter = iter.into_iter();
        let mut map = RowMap::with_capacity(iter.size_hint().0);
        map.extend(iter);
        map
    }
}

impl Extend<(ClusteringKey, Row)> for RowMap {
    fn extend<I: IntoIterator<Item = (ClusteringKey, Row)>>(&mut self, iter: I) {
        for (k, r) in iter {
            self.insert(k, r);
        }
    }
}

impl<const N: usize> From<[(ClusteringKey, Row); N]> for RowMap {
    fn from(rows: [(ClusteringKey, Row); N]) -> Self {
        rows.into_iter().collect()
    }
}

impl IntoIterator for RowMap {
    type Item = (ClusteringKey, Row);
    type IntoIter = IntoIter;

    fn into_iter(self) -> IntoIter {
        IntoIter::new(self.repr)
    }
}

impl<'a> IntoIterator for &'a RowMap {
    type Item = (&'a ClusteringKey, &'a Row);
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl std::ops::Index<&ClusteringKey> for RowMap {
    type Output = Row;

    /// The row at `key`; panics when there is none, as `BTreeMap` does
    /// (for tests and keys known to be present).
    fn index(&self, key: &ClusteringKey) -> &Row {
        self.get(key).expect("no row at this clustering key")
    }
}
