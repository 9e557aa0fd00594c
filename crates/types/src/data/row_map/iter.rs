//! Iterators over a [`RowMap`](super::RowMap), one variant per
//! representation, all double-ended.

use super::Repr;
use crate::data::clustering::ClusteringKey;
use crate::data::row::Row;
use std::collections::btree_map;

type Entry = (ClusteringKey, Row);

/// The rows in key order, by reference.
#[derive(Clone)]
pub struct Iter<'a>(IterRepr<'a>);

#[derive(Clone)]
enum IterRepr<'a> {
    Vec(std::slice::Iter<'a, Entry>),
    Tree(btree_map::Iter<'a, ClusteringKey, Row>),
}

impl<'a> Iter<'a> {
    pub(super) fn new(repr: &'a Repr) -> Self {
        Iter(match repr {
            Repr::Vec(v) => IterRepr::Vec(v.iter()),
            Repr::Tree(t) => IterRepr::Tree(t.iter()),
        })
    }
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a ClusteringKey, &'a Row);

    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.0 {
            IterRepr::Vec(i) => i.next().map(|(k, r)| (k, r)),
            IterRepr::Tree(i) => i.next(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.0 {
            IterRepr::Vec(i) => i.size_hint(),
            IterRepr::Tree(i) => i.size_hint(),
        }
    }
}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        match &mut self.0 {
            IterRepr::Vec(i) => i.next_back().map(|(k, r)| (k, r)),
            IterRepr::Tree(i) => i.next_back(),
        }
    }
}

impl ExactSizeIterator for Iter<'_> {}

/// The rows of a key range, in key order, by reference.
#[derive(Clone)]
pub struct Range<'a>(RangeRepr<'a>);

#[derive(Clone)]
enum RangeRepr<'a> {
    Vec(std::slice::Iter<'a, Entry>),
    Tree(btree_map::Range<'a, ClusteringKey, Row>),
}

impl<'a> Range<'a> {
    pub(super) fn slice(entries: &'a [Entry]) -> Self {
        Range(RangeRepr::Vec(entries.iter()))
    }

    pub(super) fn tree(range: btree_map::Range<'a, ClusteringKey, Row>) -> Self {
        Range(RangeRepr::Tree(range))
    }
}

impl<'a> Iterator for Range<'a> {
    type Item = (&'a ClusteringKey, &'a Row);

    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.0 {
            RangeRepr::Vec(i) => i.next().map(|(k, r)| (k, r)),
            RangeRepr::Tree(i) => i.next(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.0 {
            RangeRepr::Vec(i) => i.size_hint(),
            RangeRepr::Tree(i) => i.size_hint(),
        }
    }
}

impl DoubleEndedIterator for Range<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        match &mut self.0 {
            RangeRepr::Vec(i) => i.next_back().map(|(k, r)| (k, r)),
            RangeRepr::Tree(i) => i.next_back(),
        }
    }
}

/// The rows in key order, by value.
pub struct IntoIter(IntoIterRepr);

enum IntoIterRepr {
    Vec(std::vec::IntoIter<Entry>),
    Tree(btree_map::IntoIter<ClusteringKey, Row>),
}

impl IntoIter {
    pub(super) fn new(repr: Repr) -> Self {
        IntoIter(match repr {
            Repr::Vec(v) => IntoIterRepr::Vec(v.into_iter()),
            Repr::Tree(t) => IntoIterRepr::Tree(t.into_iter()),
        })
    }
}

impl Iterator for IntoIter {
    type Item = Entry;

    fn next(&mut self) -> Option<Entry> {
        match &mut self.0 {
            IntoIterRepr::Vec(i) => i.next(),
            IntoIterRepr::Tree(i) => i.next(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.0 {
            IntoIterRepr::Vec(i) => i.size_hint(),
            IntoIterRepr::Tree(i) => i.size_hint(),
        }
    }
}

impl DoubleEndedIterator for IntoIter {
    fn next_back(&mut self) -> Option<Entry> {
        match &mut self.0 {
            IntoIterRepr::Vec(i) => i.next_back(),
            IntoIterRepr::Tree(i) => i.next_back(),
        }
    }
}

impl ExactSizeIterator for IntoIter {}
