//! Clustering keys, their order, and slices of a partition.
//!
//! A [`ClusteringKey`] is either a row's full clustering or a *bound*: a
//! prefix that sorts just before (weight -1) or just after (weight +1) every
//! row that starts with it. A bound never compares equal to a row, so a
//! slice is simply "every row between its start and end bound", and a
//! range tombstone covers exactly the rows between its two bounds.

use crate::CqlType;
use bytes::Bytes;
use std::cmp::Ordering;
use std::sync::Arc;

/// The order of a table's clustering columns: one type each, and whether
/// the column is declared DESC.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusteringComparator {
    pub columns: Vec<(CqlType, bool)>,
}

impl ClusteringComparator {
    pub fn new(columns: Vec<(CqlType, bool)>) -> Arc<Self> {
        Arc::new(ClusteringComparator { columns })
    }

    /// Compares two component lists on their common prefix.
    fn compare_prefix(&self, a: &[Bytes], b: &[Bytes]) -> Ordering {
        for (i, (x, y)) in a.iter().zip(b.iter()).enumerate() {
            let ord = match self.columns.get(i) {
                Some((ty, descending)) => {
                    let ord = crate::compare::compare(ty, x, y);
                    if *descending {
                        ord.reverse()
                    } else {
                        ord
                    }
                }
                None => x.cmp(y),
            };
            if ord != Ordering::Equal {
                return ord;
            }
        }
        Ordering::Equal
    }
}

/// A row's clustering, or a slice bound (see the module doc).
#[derive(Clone)]
pub struct ClusteringKey {
    pub values: Vec<Bytes>,
    /// 0 for a row; -1 sorts before every row with this prefix, +1 after.
    pub weight: i8,
    comparator: Arc<ClusteringComparator>,
}

impl ClusteringKey {
    pub fn row(values: Vec<Bytes>, comparator: &Arc<ClusteringComparator>) -> Self {
        ClusteringKey {
            values,
            weight: 0,
            comparator: comparator.clone(),
        }
    }

    /// A bound that sorts before every row starting with `prefix`.
    pub fn before(prefix: Vec<Bytes>, comparator: &Arc<ClusteringComparator>) -> Self {
        ClusteringKey {
            values: prefix,
            weight: -1,
            comparator: comparator.clone(),
        }
    }

    /// A bound that sorts after every row starting with `prefix`.
    pub fn after(prefix: Vec<Bytes>, comparator: &Arc<ClusteringComparator>) -> Self {
        ClusteringKey {
            values: prefix,
            weight: 1,
            comparator: comparator.clone(),
        }
    }

    pub fn is_bound(&self) -> bool {
        self.weight != 0
    }

    pub fn comparator(&self) -> &Arc<ClusteringComparator> {
        &self.comparator
    }
}

impl std::fmt::Debug for ClusteringKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusteringKey")
            .field("values", &self.values)
            .field("weight", &self.weight)
            .finish()
    }
}

impl Ord for ClusteringKey {
    fn cmp(&self, other: &Self) -> Ordering {
        let ord = self.comparator.compare_prefix(&self.values, &other.values);
        if ord != Ordering::Equal {
            return ord;
        }
        match self.values.len().cmp(&other.values.len()) {
            // `self` is a strict prefix of `other`: its weight decides.
            Ordering::Less => {
                if self.weight > 0 {
                    Ordering::Greater
                } else {
                    Ordering::Less
                }
            }
            Ordering::Greater => {
                if other.weight > 0 {
                    Ordering::Less
                } else {
                    Ordering::Greater
                }
            }
            Ordering::Equal => self.weight.cmp(&other.weight),
        }
    }
}

impl PartialOrd for ClusteringKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for ClusteringKey {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for ClusteringKey {}

/// The rows strictly between two bounds, in clustering order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slice {
    pub start: ClusteringKey,
    pub end: ClusteringKey,
}

impl Slice {
    /// Every row of the partition.
    pub fn all(comparator: &Arc<ClusteringComparator>) -> Self {
        Slice {
            start: ClusteringKey::before(Vec::new(), comparator),
            end: ClusteringKey::after(Vec::new(), comparator),
        }
    }

    /// Exactly the rows whose clustering starts with `prefix`.
    pub fn prefix(prefix: Vec<Bytes>, comparator: &Arc<ClusteringComparator>) -> Self {
        Slice {
            start: ClusteringKey::before(prefix.clone(), comparator),
            end: ClusteringKey::after(prefix, comparator),
        }
    }

    pub fn contains(&self, key: &ClusteringKey) -> bool {
        &self.start < key && key < &self.end
    }

    pub fn is_empty(&self) -> bool {
        self.start >= self.end
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(v: i32) -> Bytes {
        Bytes::copy_from_slice(&v.to_be_bytes())
    }

    #[test]
    fn bounds_sort_around_their_prefix() {
        let cmp = ClusteringComparator::new(vec![(CqlType::Int, false), (CqlType::Int, false)]);
        let row = ClusteringKey::row(vec![int(1), int(5)], &cmp);
        assert!(ClusteringKey::before(vec![int(1)], &cmp) < row);
        assert!(ClusteringKey::after(vec![int(1)], &cmp) > row);
        assert!(ClusteringKey::after(vec![int(0)], &cmp) < row);
        assert!(ClusteringKey::before(vec![int(2)], &cmp) > row);
        assert!(ClusteringKey::before(vec![], &cmp) < row);
        assert!(ClusteringKey::after(vec![], &cmp) > row);
        assert!(Slice::prefix(vec![int(1)], &cmp).contains(&row));
        assert!(!Slice::prefix(vec![int(2)], &cmp).contains(&row));
    }

    #[test]
    fn descending_columns_reverse_order() {
        let cmp = ClusteringComparator::new(vec![(CqlType::Int, true)]);
        let a = ClusteringKey::row(vec![int(1)], &cmp);
        let b = ClusteringKey::row(vec![int(2)], &cmp);
        assert!(b < a);
    }

    #[test]
    fn signed_order_not_byte_order() {
        let cmp = ClusteringComparator::new(vec![(CqlType::Int, false)]);
        let neg = ClusteringKey::row(vec![int(-1)], &cmp);
        let pos = ClusteringKey::row(vec![int(1)], &cmp);
        assert!(neg < pos);
    }
}
