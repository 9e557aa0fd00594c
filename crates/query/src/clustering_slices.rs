//! Clustering bounds as slices in clustering order.
//!
//! A relation on clustering columns, `(a, b) > (1, 2)` or `a > 1`, compares
//! tuples lexicographically in each column's natural (ASC) value order,
//! whatever the table's clustering order. When every bounded column has the
//! same direction, the rows it selects are one run in clustering order; when
//! the directions are mixed they are not: with `a ASC, b DESC`, the rows
//! `(a, b) > (1, 2)` are `(1, 3) (1, 4) ...` (read *before* `(1, 2)`), then
//! all of `a > 1`. So a bound becomes one piece per column it names:
//!
//! ```text
//! (v0, v1, ..., vn) <  x   ==   x0 > v0
//!                          or  x0 = v0 and x1 > v1
//!                          or  ...
//!                          or  x0..xn-1 = v0..vn-1 and xn > vn
//!                          (or x0..xn = v0..vn, when inclusive)
//! ```
//!
//! Each piece fixes a prefix and bounds one column, which is one slice in
//! clustering order (at its start or end, by the column's direction). A
//! lower and an upper bound give two such unions; their intersection, sorted
//! and with touching slices merged, is what the query reads (Cassandra splits
//! the slice the same way).

use bytes::Bytes;
use std::sync::Arc;
use varve_storage::{ClusteringComparator, ClusteringKey, Slice};

/// One end of a clustering range: the values of the columns from the first
/// bounded one on, and whether rows equal to them are in.
pub type Bound = (Vec<Bytes>, bool);

/// The slices (sorted, disjoint) holding the rows that start with `prefix`
/// and lie between `lower` and `upper` in natural tuple order.
pub fn bounded(
    prefix: &[Bytes],
    lower: Option<&Bound>,
    upper: Option<&Bound>,
    cmp: &Arc<ClusteringComparator>,
) -> Vec<Slice> {
    let above = match lower {
        Some(bound) => pieces(prefix, bound, Side::Lower, cmp),
        None => vec![Slice::prefix(prefix.to_vec(), cmp)],
    };
    let below = match upper {
        Some(bound) => pieces(prefix, bound, Side::Upper, cmp),
        None => vec![Slice::prefix(prefix.to_vec(), cmp)],
    };
    let mut out = Vec::new();
    for a in &above {
        for b in &below {
            if let Some(s) = intersect(a, b) {
                out.push(s);
            }
        }
    }
    merge(out)
}

/// Sorts `slices` by start and merges those that overlap or touch.
pub fn merge(mut slices: Vec<Slice>) -> Vec<Slice> {
    slices.sort_by(|a, b| a.start.cmp(&b.start));
    let mut out: Vec<Slice> = Vec::with_capacity(slices.len());
    for s in slices {
        match out.last_mut() {
            Some(last) if s.start <= last.end => {
                if s.end > last.end {
                    last.end = s.end;
                }
            }
            _ => out.push(s),
        }
    }
    out
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    /// Rows above the bound (`>` or `>=`).
    Lower,
    /// Rows below the bound (`<` or `<=`).
    Upper,
}

/// The disjoint slices of the rows starting with `prefix` on `side` of
/// `bound` (see the module doc).
fn pieces(
    prefix: &[Bytes],
    bound: &Bound,
    side: Side,
    cmp: &Arc<ClusteringComparator>,
) -> Vec<Slice> {
    let (values, inclusive) = bound;
    let mut out = Vec::with_capacity(values.len() + 1);
    let mut fixed = prefix.to_vec();
    for value in values {
        let descending = cmp
            .columns
            .get(fixed.len())
            .is_some_and(|(_, descending)| *descending);
        let mut at = fixed.clone();
        at.push(value.clone());
        // Rows whose column is above the value come after it in ASC order
        // and before it in DESC order; rows below it, the other way round.
        let after_value = (side == Side::Lower) != descending;
        out.push(if after_value {
            Slice {
                start: ClusteringKey::after(at, cmp),
                end: ClusteringKey::after(fixed.clone(), cmp),
            }
        } else {
            Slice {
                start: ClusteringKey::before(fixed.clone(), cmp),
                end: ClusteringKey::before(at, cmp),
            }
        });
        fixed.push(value.clone());
    }
    if *inclusive {
        out.push(Slice::prefix(fixed, cmp));
    }
    out
}

/// The rows in both slices, if any.
fn intersect(a: &Slice, b: &Slice) -> Option<Slice> {
    let start = (&a.start).max(&b.start).clone();
    let end = (&a.end).min(&b.end).clone();
    (start < end).then_some(Slice { start, end })
}

#[cfg(test)]
#[path = "clustering_slices_tests.rs"]
mod tests;
