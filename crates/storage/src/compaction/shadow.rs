//! `provide_overlapping_tombstones` (CASSANDRA-7019): during a compaction, the same partition
//! read from the table's live sstables *outside* the compaction (the "shadow sources") tells
//! which of the compaction's data is already dead, so the output can leave it out.
//!
//! - [`ShadowMode::Row`]: data covered by a partition, range or row deletion of a shadow source
//!   goes.
//! - [`ShadowMode::Cell`]: also collection deletions, and every cell version or row marker that a
//!   shadow source's version of the same cell (or marker) strictly beats in reconciliation.
//!
//! Only *data* is dropped here (live or expiring cells, row markers); tombstones of the
//! compaction stay and go through the purge rule as usual. Why that matters: two compactions
//! running at once, each holding an equal tombstone the other one sees as a shadow, would both
//! drop theirs, and older data in a third sstable would come back. Data versions never form
//! such a cycle: a deletion only shadows data, and "strictly beats" is a strict order.
//!
//! Why dropping is safe: the shadowing deletion (or newer version) `w` stays on disk until the
//! purge rule removes it, which needs `w`'s timestamp to be below the smallest timestamp of
//! every other source that may hold the key. As long as an older copy of what we dropped
//! exists anywhere, that copy's timestamp blocks the purge; once `w` goes, so has every copy.

use crate::cell::{reconcile, DeletionTime};
use crate::partition::Partition;
use crate::row::Row;

/// How much of the shadow sources a compaction consults (the schema's
/// `provide_overlapping_tombstones`; nodetool garbagecollect's `-g`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ShadowMode {
    /// Shadow sources are not read (the default).
    #[default]
    None,
    /// Partition, range and row deletions of shadow sources apply.
    Row,
    /// Row deletions plus collection deletions and newer cell versions.
    Cell,
}

impl ShadowMode {
    /// `NONE`, `ROW` or `CELL`, any case.
    pub fn parse(text: &str) -> Option<ShadowMode> {
        match text.to_ascii_uppercase().as_str() {
            "NONE" => Some(ShadowMode::None),
            "ROW" => Some(ShadowMode::Row),
            "CELL" => Some(ShadowMode::Cell),
            _ => None,
        }
    }
}

/// `p` without the data that `shadow` (the merged shadow sources of the same partition) makes
/// dead under `mode`. Tombstones of `p` are kept.
pub fn drop_shadowed(p: &Partition, shadow: &Partition, mode: ShadowMode) -> Partition {
    if mode == ShadowMode::None {
        return p.clone();
    }
    let mut out = Partition {
        deletion: p.deletion,
        range_tombstones: p.range_tombstones.clone(),
        ..Partition::default()
    };
    out.static_row = p.static_row.as_ref().and_then(|r| {
        let outer = shadow.deletion;
        filter_row(r, shadow.static_row.as_ref(), outer, mode)
    });
    for (key, row) in &p.rows {
        let mut outer = shadow.deletion;
        for rt in &shadow.range_tombstones {
            if rt.slice.contains(key) {
                outer = outer.max(rt.deletion);
            }
        }
        if let Some(r) = filter_row(row, shadow.rows.get(key), outer, mode) {
            out.rows.insert(key.clone(), r);
        }
    }
    out
}

/// The row without what `outer` (the shadow's partition and range deletions covering it) and
/// the shadow's version of the row make dead.
fn filter_row(
    row: &Row,
    shadow: Option<&Row>,
    outer: DeletionTime,
    mode: ShadowMode,
) -> Option<Row> {
    let mut dead = outer;
    if let Some(d) = shadow.and_then(|s| s.deletion) {
        dead = dead.max(d);
    }
    let cell_mode = mode == ShadowMode::Cell;
    let mut out = row.clone();
    out.liveness = row.liveness.filter(|l| {
        if dead.deletes(l.timestamp) {
            return false;
        }
        let beaten = cell_mode
            && shadow
                .and_then(|s| s.liveness)
                .is_some_and(|sl| sl.supersedes(l));
        !beaten
    });
    out.cells.retain(|(col, path), cell| {
        if cell.is_tombstone() {
            return true;
        }
        if dead.deletes(cell.timestamp) {
            return false;
        }
        if !cell_mode {
            return true;
        }
        let Some(s) = shadow else { return true };
        if s.complex_deletions
            .get(col)
            .is_some_and(|d| d.deletes(cell.timestamp))
        {
            return false;
        }
        match s.cells.get(&(*col, path.clone())) {
            // Strictly beaten: the shadow's version wins and differs.
            Some(other) => other == cell || reconcile(cell.clone(), other.clone()) == *cell,
            None => true,
        }
    });
    (!out.is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::{Cell, LivenessInfo};
    use crate::clustering::{ClusteringComparator, ClusteringKey, Slice};
    use crate::partition::RangeTombstone;
    use bytes::Bytes;
    use varve_types::CqlType;

    fn cmp() -> std::sync::Arc<ClusteringComparator> {
        ClusteringComparator::new(vec![(CqlType::Int, false)])
    }

    fn ck(c: i32) -> ClusteringKey {
        ClusteringKey::row(vec![Bytes::copy_from_slice(&c.to_be_bytes())], &cmp())
    }

    fn row_of(cells: &[(u32, Cell)]) -> Row {
        let mut r = Row::default();
        for (col, c) in cells {
            r.cells.insert((*col, None), c.clone());
        }
        r
    }

    fn part(rows: Vec<(i32, Row)>) -> Partition {
        let mut p = Partition::default();
        for (c, r) in rows {
            p.rows.insert(ck(c), r);
        }
        p
    }

    fn live(ts: i64, v: &'static [u8]) -> Cell {
        Cell::live(ts, Bytes::from_static(v))
    }

    #[test]
    fn none_keeps_everything() {
        let p = part(vec![(1, row_of(&[(0, live(5, b"a"))]))]);
        let shadow = Partition {
            deletion: DeletionTime::new(10, 100),
            ..Partition::default()
        };
        assert_eq!(drop_shadowed(&p, &shadow, ShadowMode::None), p);
    }

    #[test]
    fn row_mode_applies_partition_range_and_row_deletions() {
        let p = part(vec![
            (1, row_of(&[(0, live(5, b"a"))])),
            (2, row_of(&[(0, live(5, b"b"))])),
            (3, row_of(&[(0, live(5, b"c")), (1, live(9, b"new"))])),
            (4, row_of(&[(0, live(5, b"d"))])),
        ]);
        let mut shadow = Partition::default();
        shadow.range_tombstones.push(RangeTombstone {
            slice: Slice {
                start: ClusteringKey::before(
                    vec![Bytes::copy_from_slice(&1i32.to_be_bytes())],
                    &cmp(),
                ),
                end: ClusteringKey::after(
                    vec![Bytes::copy_from_slice(&1i32.to_be_bytes())],
                    &cmp(),
                ),
            },
            deletion: DeletionTime::new(5, 100),
        });
        shadow.rows.insert(
            ck(3),
            Row {
                deletion: Some(DeletionTime::new(6, 100)),
                ..Row::default()
            },
        );
        shadow.rows.insert(ck(4), row_of(&[(0, live(7, b"newer"))]));
        let out = drop_shadowed(&p, &shadow, ShadowMode::Row);
        assert!(
            !out.rows.contains_key(&ck(1)),
            "range deletion at the same timestamp"
        );
        assert!(out.rows.contains_key(&ck(2)));
        assert_eq!(
            out.rows[&ck(3)].cells.len(),
            1,
            "the newer cell survives the row deletion"
        );
        assert!(out.rows.contains_key(&ck(4)), "ROW ignores newer cells");
        let whole = Partition {
            deletion: DeletionTime::new(5, 100),
            ..Partition::default()
        };
        assert!(drop_shadowed(&p, &whole, ShadowMode::Row).rows.len() == 1);
    }

    #[test]
    fn cell_mode_drops_strictly_beaten_versions_only() {
        let mut r = row_of(&[
            (0, live(5, b"a")),
            (1, live(5, b"same")),
            (2, live(5, b"b")),
        ]);
        r.liveness = Some(LivenessInfo::new(5, 0, 100));
        let p = part(vec![(1, r)]);
        let mut s = row_of(&[
            (0, live(6, b"x")),
            (1, live(5, b"same")),
            (2, live(5, b"a")),
        ]);
        s.liveness = Some(LivenessInfo::new(6, 0, 100));
        let shadow = part(vec![(1, s)]);
        let out = drop_shadowed(&p, &shadow, ShadowMode::Cell);
        let row = &out.rows[&ck(1)];
        assert!(row.liveness.is_none());
        assert!(
            !row.cells.contains_key(&(0, None)),
            "newer version elsewhere"
        );
        assert!(
            row.cells.contains_key(&(1, None)),
            "identical versions are both kept"
        );
        assert!(
            row.cells.contains_key(&(2, None)),
            "ours wins the tie on value"
        );
        let rows_only = drop_shadowed(&p, &shadow, ShadowMode::Row);
        assert_eq!(rows_only, p);
    }

    #[test]
    fn tombstones_are_never_dropped_by_shadows() {
        let mut r = row_of(&[(0, Cell::tombstone(5, 100))]);
        r.deletion = Some(DeletionTime::new(4, 100));
        let mut p = part(vec![(1, r)]);
        p.deletion = DeletionTime::new(3, 100);
        let shadow = Partition {
            deletion: DeletionTime::new(50, 100),
            ..Partition::default()
        };
        assert_eq!(drop_shadowed(&p, &shadow, ShadowMode::Cell), p);
    }
}
