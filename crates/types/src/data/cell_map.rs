//! The cells of one row, kept as a vector sorted by [`CellPath`].
//!
//! A row rarely has more than a few dozen cells, and rows are built in
//! path order (decoding, the query layer's column order), so a sorted
//! vector beats a `BTreeMap` on both counts that matter for the memtable:
//! one allocation of exactly the entries instead of whole tree nodes
//! (11 slots each, however few are used), and appends instead of node
//! walks. Lookups are binary searches. The API follows the subset of
//! `BTreeMap` the engine and query layer use, so call sites read the same.

use crate::data::cell::Cell;
use crate::data::row::CellPath;
use std::ops::{Bound, RangeBounds};

/// Cells keyed by path, in ascending path order, each path at most once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CellMap {
    entries: Vec<(CellPath, Cell)>,
}

impl CellMap {
    pub fn new() -> Self {
        CellMap::default()
    }

    pub fn with_capacity(n: usize) -> Self {
        CellMap {
            entries: Vec::with_capacity(n),
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Entries the allocation has room for (for memory accounting).
    pub fn capacity(&self) -> usize {
        self.entries.capacity()
    }

    /// Releases unused capacity (a row about to live long in a memtable).
    pub fn shrink_to_fit(&mut self) {
        self.entries.shrink_to_fit();
    }

    fn search(&self, path: &CellPath) -> Result<usize, usize> {
        self.entries.binary_search_by(|(p, _)| p.cmp(path))
    }

    /// Sets the cell at `path`, returning the one it replaced. Appending
    /// past the last path (the usual case) costs no search.
    pub fn insert(&mut self, path: CellPath, cell: Cell) -> Option<Cell> {
        if self.entries.last().is_none_or(|(last, _)| *last < path) {
            self.entries.push((path, cell));
            return None;
        }
        match self.search(&path) {
            Ok(i) => Some(std::mem::replace(&mut self.entries[i].1, cell)),
            Err(i) => {
                self.entries.insert(i, (path, cell));
                None
            }
        }
    }

    /// Sets the cell at `path`, or, when one is there, keeps the winner of
    /// the two ([`crate::data::cell::reconcile`]): what one statement that
    /// writes a cell twice (`SET s = s - {3}, s = s + {3}`) leaves, as
    /// Cassandra merges its update.
    pub fn put_reconciled(&mut self, path: CellPath, cell: Cell) {
        match self.search(&path) {
            Ok(i) => {
                let old =
                    std::mem::replace(&mut self.entries[i].1, Cell::live(0, Default::default()));
                self.entries[i].1 = crate::data::cell::reconcile(old, cell);
            }
            Err(_) => {
                self.insert(path, cell);
            }
        }
    }

    pub fn get(&self, path: &CellPath) -> Option<&Cell> {
        self.search(path).ok().map(|i| &self.entries[i].1)
    }

    pub fn contains_key(&self, path: &CellPath) -> bool {
        self.search(path).is_ok()
    }

    pub fn remove(&mut self, path: &CellPath) -> Option<Cell> {
        self.search(path).ok().map(|i| self.entries.remove(i).1)
    }

    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&CellPath, &Cell)> + ExactSizeIterator {
        self.entries.iter().map(|(p, c)| (p, c))
    }

    pub fn values(&self) -> impl DoubleEndedIterator<Item = &Cell> + ExactSizeIterator {
        self.entries.iter().map(|(_, c)| c)
    }

    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &CellPath> + ExactSizeIterator {
        self.entries.iter().map(|(p, _)| p)
    }

    /// The entries whose paths fall in `range`, in order.
    pub fn range<R: RangeBounds<CellPath>>(
        &self,
        range: R,
    ) -> impl DoubleEndedIterator<Item = (&CellPath, &Cell)> {
        let start = match range.start_bound() {
            Bound::Included(p) => self.search(p).unwrap_or_else(|i| i),
            Bound::Excluded(p) => self.search(p).map_or_else(|i| i, |i| i + 1),
            Bound::Unbounded => 0,
        };
        let end = match range.end_bound() {
            Bound::Included(p) => self.search(p).map_or_else(|i| i, |i| i + 1),
            Bound::Excluded(p) => self.search(p).unwrap_or_else(|i| i),
            Bound::Unbounded => self.entries.len(),
        };
        let end = end.max(start);
        self.entries[start..end].iter().map(|(p, c)| (p, c))
    }

    /// Keeps only the entries for which `keep` is true.
    pub fn retain(&mut self, mut keep: impl FnMut(&CellPath, &mut Cell) -> bool) {
        self.entries.retain_mut(|(p, c)| keep(p, c));
    }

    /// Merges `other` in, combining the two versions of a path with
    /// `resolve`. Both sides are sorted, so this is one linear pass.
    pub fn merge_with(&mut self, other: CellMap, mut resolve: impl FnMut(Cell, Cell) -> Cell) {
        if other.is_empty() {
            return;
        }
        if self.is_empty() {
            *self = other;
            return;
        }
        if self.entries.last().map(|e| &e.0) < other.entries.first().map(|e| &e.0) {
            self.entries.extend(other.entries);
            return;
        }
        if self.covers(&other) {
            // An overwrite of cells the row already has: reconcile in place.
            let mut i = 0;
            for (p, c) in other.entries {
                while self.entries[i].0 < p {
                    i += 1;
                }
                let slot = &mut self.entries[i].1;
                let old = std::mem::replace(slot, Cell::live(0, bytes::Bytes::new()));
                *slot = resolve(old, c);
            }
            return;
        }
        let mine = std::mem::take(&mut self.entries);
        let mut out = Vec::with_capacity(mine.len() + other.entries.len());
        let mut a = mine.into_iter().peekable();
        let mut b = other.entries.into_iter().peekable();
        loop {
            let next = match (a.peek(), b.peek()) {
                (Some(x), Some(y)) => match x.0.cmp(&y.0) {
                    std::cmp::Ordering::Less => a.next(),
                    std::cmp::Ordering::Greater => b.next(),
                    std::cmp::Ordering::Equal => match (a.next(), b.next()) {
                        (Some((p, x)), Some((_, y))) => Some((p, resolve(x, y))),
                        _ => None,
                    },
                },
                (Some(_), None) => a.next(),
                (None, Some(_)) => b.next(),
                (None, None) => None,
            };
            match next {
                Some(e) => out.push(e),
                None => break,
            }
        }
        self.entries = out;
    }

    /// Whether every path of `other` is already in `self` (both sorted).
    fn covers(&self, other: &CellMap) -> bool {
        let mut mine = self.entries.iter();
        other
            .entries
            .iter()
            .all(|(p, _)| mine.by_ref().any(|(q, _)| q == p))
    }
}

impl IntoIterator for CellMap {
    type Item = (CellPath, Cell);
    type IntoIter = std::vec::IntoIter<(CellPath, Cell)>;

    fn into_iter(self) -> Self::IntoIter {
        self.entries.into_iter()
    }
}

impl<'a> IntoIterator for &'a CellMap {
    type Item = (&'a CellPath, &'a Cell);
    type IntoIter = std::iter::Map<
        std::slice::Iter<'a, (CellPath, Cell)>,
        fn(&'a (CellPath, Cell)) -> (&'a CellPath, &'a Cell),
    >;

    fn into_iter(self) -> Self::IntoIter {
        fn split(e: &(CellPath, Cell)) -> (&CellPath, &Cell) {
            (&e.0, &e.1)
        }
        self.entries
            .iter()
            .map(split as fn(&'a (CellPath, Cell)) -> _)
    }
}

impl FromIterator<(CellPath, Cell)> for CellMap {
    fn from_iter<I: IntoIterator<Item = (CellPath, Cell)>>(iter: I) -> Self {
        let mut map = CellMap::new();
        for (p, c) in iter {
            map.insert(p, c);
        }
        map
    }
}

impl<const N: usize> From<[(CellPath, Cell); N]> for CellMap {
    fn from(cells: [(CellPath, Cell); N]) -> Self {
        cells.into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::cell::reconcile;
    use bytes::Bytes;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    fn path(col: u32, p: Option<&'static [u8]>) -> CellPath {
        (col, p.map(Bytes::from_static))
    }

    fn cell(ts: i64) -> Cell {
        Cell::live(ts, Bytes::from(ts.to_be_bytes().to_vec()))
    }

    fn arb_path() -> impl Strategy<Value = CellPath> {
        (
            0u32..6,
            prop::option::of(prop::collection::vec(any::<u8>(), 0..3)),
        )
            .prop_map(|(c, p)| (c, p.map(Bytes::from)))
    }

    fn arb_ops() -> impl Strategy<Value = Vec<(CellPath, i64)>> {
        prop::collection::vec((arb_path(), 0i64..100), 0..40)
    }

    proptest! {
        /// Inserting in any order gives the map a BTreeMap would hold.
        #[test]
        fn behaves_like_a_btree_map(ops in arb_ops(), probe in arb_path()) {
            let mut ours = CellMap::new();
            let mut model = BTreeMap::new();
            for (p, ts) in ops {
                prop_assert_eq!(ours.insert(p.clone(), cell(ts)), model.insert(p, cell(ts)));
            }
            let a: Vec<_> = ours.iter().collect();
            let b: Vec<_> = model.iter().collect();
            prop_assert_eq!(a, b);
            prop_assert_eq!(ours.get(&probe), model.get(&probe));
            let a: Vec<_> = ours.range(probe.clone()..).collect();
            let b: Vec<_> = model.range(probe.clone()..).collect();
            prop_assert_eq!(a, b);
            let a: Vec<_> = ours.range(..=probe.clone()).collect();
            let b: Vec<_> = model.range(..=probe.clone()).collect();
            prop_assert_eq!(a, b);
            prop_assert_eq!(ours.remove(&probe), model.remove(&probe));
            prop_assert_eq!(ours.len(), model.len());
        }

        /// A linear merge equals inserting the other side's cells one by
        /// one with reconciliation.
        #[test]
        fn merge_with_equals_cellwise_reconcile(a in arb_ops(), b in arb_ops()) {
            let left: CellMap = a.into_iter().map(|(p, t)| (p, cell(t))).collect();
            let right: CellMap = b.into_iter().map(|(p, t)| (p, cell(t))).collect();
            let mut model: BTreeMap<CellPath, Cell> = left.clone().into_iter().collect();
            for (p, c) in right.clone() {
                let merged = match model.remove(&p) {
                    Some(old) => reconcile(old, c),
                    None => c,
                };
                model.insert(p, merged);
            }
            let mut ours = left;
            ours.merge_with(right, reconcile);
            let expect: Vec<_> = model.into_iter().collect();
            prop_assert_eq!(ours.into_iter().collect::<Vec<_>>(), expect);
        }
    }

    #[test]
    fn appends_in_order_and_replaces_in_place() {
        let mut m = CellMap::with_capacity(2);
        assert_eq!(m.insert(path(1, None), cell(1)), None);
        assert_eq!(m.insert(path(2, None), cell(2)), None);
        assert_eq!(m.insert(path(1, None), cell(3)), Some(cell(1)));
        assert_eq!(m.insert(path(0, None), cell(4)), None);
        let keys: Vec<u32> = m.keys().map(|p| p.0).collect();
        assert_eq!(keys, vec![0, 1, 2]);
        assert_eq!(m.get(&path(1, None)), Some(&cell(3)));
    }

    #[test]
    fn range_of_one_collection_column() {
        let mut m = CellMap::new();
        m.insert(path(1, None), cell(1));
        m.insert(path(2, Some(b"a")), cell(2));
        m.insert(path(2, Some(b"b")), cell(3));
        m.insert(path(3, None), cell(4));
        let elems: Vec<i64> = m
            .range((2, Some(Bytes::new()))..)
            .take_while(|((c, _), _)| *c == 2)
            .map(|(_, c)| c.timestamp)
            .collect();
        assert_eq!(elems, vec![2, 3]);
    }

    #[test]
    fn retain_drops_rejected_cells() {
        let mut m: CellMap = (0..5).map(|i| (path(i, None), cell(i as i64))).collect();
        m.retain(|_, c| c.timestamp % 2 == 0);
        assert_eq!(
            m.values().map(|c| c.timestamp).collect::<Vec<_>>(),
            vec![0, 2, 4]
        );
    }
}
