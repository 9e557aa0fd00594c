//! A row: its primary-key liveness, its deletion, its cells, and the
//! deletions of its non-frozen collections.

use crate::data::cell::{reconcile, DeletionTime, LivenessInfo};
use crate::data::cell_map::CellMap;
use bytes::Bytes;
use std::collections::BTreeMap;

/// A cell's address inside a row: the column id, and for an element of a
/// non-frozen collection, the element's key (list: a timeuuid; set: the
/// element; map: the key). Paths sort bytewise here; the query layer puts
/// collection elements in their type's order.
pub type CellPath = (u32, Option<Bytes>);

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Row {
    /// The row marker written by INSERT; `None` when there is none.
    pub liveness: Option<LivenessInfo>,
    /// A row tombstone; `DeletionTime::LIVE` when none.
    pub deletion: Option<DeletionTime>,
    pub cells: CellMap,
    /// Per collection column: a deletion of the whole collection (written
    /// when a collection is overwritten or deleted).
    pub complex_deletions: BTreeMap<u32, DeletionTime>,
}

/// What resolving found besides the live data: how many tombstones and
/// expired values were read (for the tombstone thresholds).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadStats {
    pub tombstones: u64,
}

impl Row {
    pub fn is_empty(&self) -> bool {
        self.liveness.is_none()
            && self.deletion.is_none()
            && self.cells.is_empty()
            && self.complex_deletions.is_empty()
    }

    /// Merges `other` into `self` with Cassandra's reconciliation.
    /// Moves every timestamp of the row by `delta` micros (see
    /// [`crate::data::Partition::shift_timestamps`]).
    pub fn shift_timestamps(&mut self, delta: i64) {
        if let Some(l) = &mut self.liveness {
            l.timestamp = l.timestamp.saturating_add(delta);
        }
        if let Some(d) = &mut self.deletion {
            crate::data::partition::shift_deletion(d, delta);
        }
        for d in self.complex_deletions.values_mut() {
            crate::data::partition::shift_deletion(d, delta);
        }
        self.cells.retain(|_, c| {
            c.timestamp = c.timestamp.saturating_add(delta);
            true
        });
    }

    pub fn merge(&mut self, other: Row) {
        self.liveness = match (self.liveness, other.liveness) {
            (Some(a), Some(b)) => Some(if b.supersedes(&a) { b } else { a }),
            (a, b) => a.or(b),
        };
        self.deletion = match (self.deletion, other.deletion) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        for (column, deletion) in other.complex_deletions {
            let slot = self
                .complex_deletions
                .entry(column)
                .or_insert(DeletionTime::LIVE);
            *slot = slot.max(deletion);
        }
        self.cells.merge_with(other.cells, reconcile);
    }

    /// The largest timestamp of anything in the row.
    pub fn max_timestamp(&self) -> i64 {
        let mut max = i64::MIN;
        if let Some(l) = &self.liveness {
            max = max.max(l.timestamp);
        }
        if let Some(d) = &self.deletion {
            max = max.max(d.marked_for_delete_at);
        }
        for c in self.cells.values() {
            max = max.max(c.timestamp);
        }
        for d in self.complex_deletions.values() {
            max = max.max(d.marked_for_delete_at);
        }
        max
    }

    /// The live part of the row at `now_seconds` under the enclosing
    /// deletion `outer` (partition or range tombstone): shadowed and
    /// expired data removed. `None` when nothing live is left.
    pub fn resolve(
        &self,
        outer: DeletionTime,
        now_seconds: i32,
        stats: &mut ReadStats,
    ) -> Option<Row> {
        let mut deletion = outer;
        if let Some(d) = self.deletion {
            stats.tombstones += 1;
            deletion = deletion.max(d);
        }
        let liveness = self.liveness.filter(|l| {
            let live = !deletion.deletes(l.timestamp) && l.is_live(now_seconds);
            if !live && !deletion.deletes(l.timestamp) {
                stats.tombstones += 1;
            }
            live
        });
        let mut cells = CellMap::with_capacity(self.cells.len());
        for ((column, path), cell) in &self.cells {
            if deletion.deletes(cell.timestamp) {
                continue;
            }
            if let Some(d) = self.complex_deletions.get(column) {
                if d.deletes(cell.timestamp) {
                    continue;
                }
            }
            if !cell.is_live(now_seconds) {
                stats.tombstones += 1;
                continue;
            }
            cells.insert((*column, path.clone()), cell.clone());
        }
        if liveness.is_none() && cells.is_empty() {
            return None;
        }
        Some(Row {
            liveness,
            deletion: None,
            cells,
            complex_deletions: BTreeMap::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::cell::Cell;

    fn cell(ts: i64, v: &'static [u8]) -> Cell {
        Cell::live(ts, Bytes::from_static(v))
    }

    #[test]
    fn row_deletion_shadows_older_cells_only() {
        let mut row = Row::default();
        row.cells.insert((1, None), cell(5, b"old"));
        row.cells.insert((2, None), cell(20, b"new"));
        row.deletion = Some(DeletionTime::new(10, 0));
        let mut stats = ReadStats::default();
        let live = row.resolve(DeletionTime::LIVE, 0, &mut stats).unwrap();
        assert_eq!(live.cells.len(), 1);
        assert!(live.cells.contains_key(&(2, None)));
        assert_eq!(stats.tombstones, 1);
    }

    #[test]
    fn complex_deletion_clears_older_elements() {
        let mut row = Row::default();
        row.cells
            .insert((3, Some(Bytes::from_static(b"a"))), cell(5, b""));
        row.cells
            .insert((3, Some(Bytes::from_static(b"b"))), cell(9, b""));
        row.complex_deletions.insert(3, DeletionTime::new(8, 0));
        let live = row
            .resolve(DeletionTime::LIVE, 0, &mut ReadStats::default())
            .unwrap();
        assert_eq!(live.cells.len(), 1);
    }

    #[test]
    fn merge_is_order_independent() {
        let mut a = Row::default();
        a.cells.insert((1, None), cell(1, b"x"));
        let mut b = Row::default();
        b.cells.insert((1, None), cell(2, b"y"));
        b.deletion = Some(DeletionTime::new(1, 7));
        let mut ab = a.clone();
        ab.merge(b.clone());
        let mut ba = b;
        ba.merge(a);
        assert_eq!(ab, ba);
    }

    #[test]
    fn expired_marker_and_cells_leave_no_row() {
        let mut row = Row {
            liveness: Some(LivenessInfo::new(1, 10, 100)),
            ..Row::default()
        };
        row.cells.insert(
            (1, None),
            Cell::expiring(1, 10, 100, Bytes::from_static(b"v")),
        );
        assert!(row
            .resolve(DeletionTime::LIVE, 105, &mut ReadStats::default())
            .is_some());
        assert!(row
            .resolve(DeletionTime::LIVE, 110, &mut ReadStats::default())
            .is_none());
    }
}
