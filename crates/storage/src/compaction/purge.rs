//! What a compaction keeps of a merged partition: data shadowed by a
//! deletion in the partition goes; tombstones and expired values go once
//! they are purgeable (REFERENCE.md, "Purging tombstones"): their local
//! deletion time is before `gc_before` AND their timestamp is below
//! `max_purgeable` (the smallest timestamp any other source holding the
//! partition may have), so nothing they shadow elsewhere can come back.
//! An expired value that cannot be purged yet is kept as it is.

use crate::cell::{Cell, DeletionTime};
use crate::partition::Partition;
use crate::row::Row;
use std::collections::BTreeMap;

/// The purge horizon of one compaction of one partition.
#[derive(Debug, Clone, Copy)]
pub struct PurgeRule {
    pub now_seconds: i32,
    /// now - gc_grace_seconds
    pub gc_before: i32,
    /// Data at or above this timestamp may be shadowed by what we purge
    /// elsewhere: only tombstones strictly below it may go.
    pub max_purgeable: i64,
}

impl PurgeRule {
    fn purgeable(&self, d: &DeletionTime) -> bool {
        d.local_deletion_time < self.gc_before && d.marked_for_delete_at < self.max_purgeable
    }
}

/// The compacted form of a merged partition (possibly empty).
pub fn compact_partition(p: &Partition, rule: &PurgeRule) -> Partition {
    let pd = p.deletion;
    let mut out = Partition {
        deletion: if pd.is_live() || rule.purgeable(&pd) {
            DeletionTime::LIVE
        } else {
            pd
        },
        ..Partition::default()
    };
    for rt in &p.range_tombstones {
        let shadowed = !pd.is_live() && rt.deletion.marked_for_delete_at <= pd.marked_for_delete_at;
        if !shadowed && !rule.purgeable(&rt.deletion) {
            out.range_tombstones.push(rt.clone());
        }
    }
    out.static_row = p.static_row.as_ref().and_then(|r| compact_row(r, pd, rule));
    for (key, row) in &p.rows {
        let mut outer = pd;
        for rt in &p.range_tombstones {
            if rt.slice.contains(key) {
                outer = outer.max(rt.deletion);
            }
        }
        if let Some(r) = compact_row(row, outer, rule) {
            out.rows.insert(key.clone(), r);
        }
    }
    out
}

fn compact_row(row: &Row, outer: DeletionTime, rule: &PurgeRule) -> Option<Row> {
    let mut effective = outer;
    let mut deletion = None;
    if let Some(d) = row.deletion {
        effective = effective.max(d);
        let shadowed = !outer.is_live() && d.marked_for_delete_at <= outer.marked_for_delete_at;
        if !shadowed && !rule.purgeable(&d) {
            deletion = Some(d);
        }
    }
    let liveness = row.liveness.filter(|l| {
        if effective.deletes(l.timestamp) {
            return false;
        }
        let expired = !l.is_live(rule.now_seconds);
        !(expired && rule.purgeable(&DeletionTime::new(l.timestamp, l.local_expiration_time)))
    });
    let mut complex_deletions = BTreeMap::new();
    for (col, d) in &row.complex_deletions {
        let shadowed =
            !effective.is_live() && d.marked_for_delete_at <= effective.marked_for_delete_at;
        if !shadowed && !rule.purgeable(d) {
            complex_deletions.insert(*col, *d);
        }
    }
    let mut cells = crate::cell_map::CellMap::with_capacity(row.cells.len());
    for ((col, path), cell) in &row.cells {
        if effective.deletes(cell.timestamp) {
            continue;
        }
        if let Some(d) = row.complex_deletions.get(col) {
            if d.deletes(cell.timestamp) {
                continue;
            }
        }
        if let Some(kept) = compact_cell(cell, rule) {
            cells.insert((*col, path.clone()), kept);
        }
    }
    let out = Row {
        liveness,
        deletion,
        cells,
        complex_deletions,
    };
    (!out.is_empty()).then_some(out)
}

fn compact_cell(cell: &Cell, rule: &PurgeRule) -> Option<Cell> {
    if cell.is_tombstone() {
        let d = DeletionTime::new(cell.timestamp, cell.local_deletion_time);
        return (!rule.purgeable(&d)).then(|| cell.clone());
    }
    if cell.is_expiring() && !cell.is_live(rule.now_seconds) {
        let d = DeletionTime::new(cell.timestamp, cell.local_deletion_time);
        if rule.purgeable(&d) {
            return None;
        }
        // Not purgeable yet: kept as it is. Cassandra rewrites it as a
        // tombstone dated expiry - ttl; with Varve's reconciliation (where a
        // tombstone, unlike an expired cell, wins a timestamp tie against a
        // live cell) that would change what a read returns when another
        // source holds a live cell of the same timestamp. Found by the model
        // test (seed 366).
        return Some(cell.clone());
    }
    Some(cell.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clustering::{ClusteringComparator, ClusteringKey};
    use bytes::Bytes;
    use varve_types::CqlType;

    fn row_with(cell: Cell) -> Partition {
        let cmp = ClusteringComparator::new(vec![(CqlType::Int, false)]);
        let mut p = Partition::default();
        let mut row = Row::default();
        row.cells.insert((0, None), cell);
        p.rows.insert(
            ClusteringKey::row(vec![Bytes::from_static(&[0, 0, 0, 1])], &cmp),
            row,
        );
        p
    }

    #[test]
    fn tombstone_purged_only_past_gc_grace_and_below_other_sources() {
        let p = row_with(Cell::tombstone(10, 100));
        let keep = |gc_before, max_purgeable| {
            !compact_partition(
                &p,
                &PurgeRule {
                    now_seconds: 1000,
                    gc_before,
                    max_purgeable,
                },
            )
            .rows
            .is_empty()
        };
        assert!(
            keep(100, i64::MAX),
            "deleted at 100 is not before gc_before 100"
        );
        assert!(!keep(101, i64::MAX));
        assert!(
            keep(101, 10),
            "an older source may hold data at timestamp 10"
        );
        assert!(!keep(101, 11));
    }

    #[test]
    fn expired_cell_stays_until_purgeable() {
        let p = row_with(Cell::expiring(10, 50, 100, Bytes::from_static(b"v")));
        let out = compact_partition(
            &p,
            &PurgeRule {
                now_seconds: 200,
                gc_before: 0,
                max_purgeable: i64::MAX,
            },
        );
        assert_eq!(out, p);
        let gone = compact_partition(
            &p,
            &PurgeRule {
                now_seconds: 200,
                gc_before: 151,
                max_purgeable: i64::MAX,
            },
        );
        assert!(gone.rows.is_empty());
        let kept = compact_partition(
            &p,
            &PurgeRule {
                now_seconds: 200,
                gc_before: 151,
                max_purgeable: 10,
            },
        );
        assert_eq!(
            kept, p,
            "another source may hold a live cell of the same timestamp"
        );
    }

    #[test]
    fn shadowed_data_goes_and_the_deletion_stays() {
        let mut p = row_with(Cell::live(5, Bytes::from_static(b"old")));
        p.deletion = DeletionTime::new(6, 100);
        let out = compact_partition(
            &p,
            &PurgeRule {
                now_seconds: 200,
                gc_before: 0,
                max_purgeable: i64::MAX,
            },
        );
        assert!(out.rows.is_empty());
        assert_eq!(out.deletion, DeletionTime::new(6, 100));
    }
}
