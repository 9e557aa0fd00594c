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

    /// `slices` (sorted, disjoint) cut just past the row `last` in the
    /// read's direction: up to and including it, or from it on when
    /// `reversed`. What a replica that stopped at `last` covered.
    pub fn cut_at(slices: &[Slice], last: &ClusteringKey, reversed: bool) -> Vec<Slice> {
        let cmp = last.comparator();
        slices
            .iter()
            .map(|s| match reversed {
                false => Slice {
                    start: s.start.clone(),
                    end: (&s.end)
                        .min(&ClusteringKey::after(last.values.clone(), cmp))
                        .clone(),
                },
                true => Slice {
                    start: (&s.start)
                        .max(&ClusteringKey::before(last.values.clone(), cmp))
                        .clone(),
                    end: s.end.clone(),
                },
            })
            .filter(|s| !s.is_empty())
            .collect()
    }

    /// The rest of `slices` past the row `last` in the read's direction
    /// (before it when `reversed`), `last` excluded.
    pub fn past(slices: &[Slice], last: &ClusteringKey, reversed: bool) -> Vec<Slice> {
        let cmp = last.comparator();
        slices
            .iter()
            .map(|s| match reversed {
                false => Slice {
                    start: (&s.start)
                        .max(&ClusteringKey::after(last.values.clone(), cmp))
                        .clone(),
                    end: s.end.clone(),
                },
                true => Slice {
                    start: s.start.clone(),
                    end: (&s.end)
                        .min(&ClusteringKey::before(last.values.clone(), cmp))
                        .clone(),
                },
            })
            .filter(|s| !s.is_empty())
            .collect()
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
    fn slices_cut_at_a_row_and_past_it_split_them_there_in_either_direction() {
        let cmp = ClusteringComparator::new(vec![(CqlType::Int, false)]);
        let row = |v: i32| ClusteringKey::row(vec![int(v)], &cmp);
        let slices = vec![
            Slice {
                start: ClusteringKey::before(vec![int(0)], &cmp),
                end: ClusteringKey::after(vec![int(3)], &cmp),
            },
            Slice {
                start: ClusteringKey::before(vec![int(6)], &cmp),
                end: ClusteringKey::after(vec![int(9)], &cmp),
            },
        ];
        let rows_in = |s: &[Slice]| -> Vec<i32> {
            (0..12)
                .filter(|&v| s.iter().any(|s| s.contains(&row(v))))
                .collect()
        };
        assert_eq!(rows_in(&slices), [0, 1, 2, 3, 6, 7, 8, 9]);
        for (last, reversed, cut, past) in [
            (2, false, vec![0, 1, 2], vec![3, 6, 7, 8, 9]),
            (7, false, vec![0, 1, 2, 3, 6, 7], vec![8, 9]),
            (9, false, vec![0, 1, 2, 3, 6, 7, 8, 9], vec![]),
            (7, true, vec![7, 8, 9], vec![0, 1, 2, 3, 6]),
            (2, true, vec![2, 3, 6, 7, 8, 9], vec![0, 1]),
            (0, true, vec![0, 1, 2, 3, 6, 7, 8, 9], vec![]),
        ] {
            let at = row(last);
            assert_eq!(
                rows_in(&Slice::cut_at(&slices, &at, reversed)),
                cut,
                "cut at {last} {reversed}"
            );
            assert_eq!(
                rows_in(&Slice::past(&slices, &at, reversed)),
                past,
                "past {last} {reversed}"
            );
        }
        // Nothing empty is kept.
        assert_eq!(Slice::cut_at(&slices, &row(4), false).len(), 1);
        assert!(Slice::past(&slices, &row(9), false).is_empty());
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
