//! A partition: its deletion, its static row, its rows in clustering order
//! and its range tombstones. Used both as stored data and as an update.

use crate::data::cell::DeletionTime;
use crate::data::clustering::{ClusteringKey, Slice};
use crate::data::row::{ReadStats, Row};
use crate::data::row_map::RowMap;

/// A deletion of every row between two bounds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeTombstone {
    pub slice: Slice,
    pub deletion: DeletionTime,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Partition {
    pub deletion: DeletionTime,
    pub static_row: Option<Row>,
    pub rows: RowMap,
    pub range_tombstones: Vec<RangeTombstone>,
}

impl Default for Partition {
    fn default() -> Self {
        Partition {
            deletion: DeletionTime::LIVE,
            static_row: None,
            rows: RowMap::new(),
            range_tombstones: Vec::new(),
        }
    }
}

impl Partition {
    pub fn is_empty(&self) -> bool {
        self.deletion.is_live()
            && self.static_row.is_none()
            && self.rows.is_empty()
            && self.range_tombstones.is_empty()
    }

    /// Merges `other` into `self` with Cassandra's reconciliation.
    pub fn merge(&mut self, other: Partition) {
        self.deletion = self.deletion.max(other.deletion);
        if let Some(s) = other.static_row {
            match &mut self.static_row {
                Some(mine) => mine.merge(s),
                None => self.static_row = Some(s),
            }
        }
        self.rows.merge(other.rows);
        for rt in other.range_tombstones {
            merge_range_tombstone(&mut self.range_tombstones, rt);
        }
    }

    /// Moves every timestamp of the update (cells, row markers, row,
    /// collection, range and partition deletions) by `delta` micros, so
    /// that an update planned at one timestamp carries another while its
    /// timestamps keep their order (a collection overwrite's tombstone one
    /// micro before its cells). A conditional write takes its ballot's
    /// timestamp this way (docs/design/paxos.md, section 2).
    pub fn shift_timestamps(&mut self, delta: i64) {
        shift_deletion(&mut self.deletion, delta);
        if let Some(row) = &mut self.static_row {
            row.shift_timestamps(delta);
        }
        for row in self.rows.values_mut() {
            row.shift_timestamps(delta);
        }
        for rt in &mut self.range_tombstones {
            shift_deletion(&mut rt.deletion, delta);
        }
    }

    /// The part of the partition the slices select: the static row, the
    /// partition deletion, rows inside any slice and the range tombstones
    /// that overlap one. Slices must be sorted and disjoint.
    pub fn slice(&self, slices: &[Slice]) -> Partition {
        let mut out = Partition {
            deletion: self.deletion,
            static_row: self.static_row.clone(),
            ..Partition::default()
        };
        for s in slices {
            if s.is_empty() {
                continue;
            }
            for (k, r) in self.rows.range(s.start.clone()..s.end.clone()) {
                out.rows.insert(k.clone(), r.clone());
            }
        }
        out.range_tombstones = self
            .range_tombstones
            .iter()
            .filter(|rt| {
                slices
                    .iter()
                    .any(|s| rt.slice.start < s.end && s.start < rt.slice.end)
            })
            .cloned()
            .collect();
        out
    }

    /// The live data at `now_seconds`: every row and cell that no deletion
    /// shadows and that has not expired. Tombstones read are counted.
    pub fn resolve(&self, now_seconds: i32) -> (Partition, ReadStats) {
        let mut stats = ReadStats::default();
        if !self.deletion.is_live() {
            stats.tombstones += 1;
        }
        stats.tombstones += self.range_tombstones.len() as u64;
        let static_row = self
            .static_row
            .as_ref()
            .and_then(|r| r.resolve(self.deletion, now_seconds, &mut stats));
        let mut rows = RowMap::new();
        for (key, row) in &self.rows {
            let mut outer = self.deletion;
            for rt in &self.range_tombstones {
                if rt.slice.contains(key) {
                    outer = outer.max(rt.deletion);
                }
            }
            if let Some(live) = row.resolve(outer, now_seconds, &mut stats) {
                rows.insert(key.clone(), live);
            }
        }
        (
            Partition {
                deletion: DeletionTime::LIVE,
                static_row,
                rows,
                range_tombstones: Vec::new(),
            },
            stats,
        )
    }

    /// The live rows of `slices` at `now_seconds`, in clustering order (or
    /// reversed), stopping after `max_rows` live rows; the static row comes
    /// along. Returns whether every row of the slices was visited. Only the
    /// rows walked are resolved, so a page of a huge partition costs a page.
    pub fn resolve_slices(
        &self,
        slices: &[Slice],
        reversed: bool,
        now_seconds: i32,
        max_rows: usize,
    ) -> (Partition, ReadStats, bool) {
        let mut stats = ReadStats::default();
        if !self.deletion.is_live() {
            stats.tombstones += 1;
        }
        let static_row = self
            .static_row
            .as_ref()
            .and_then(|r| r.resolve(self.deletion, now_seconds, &mut stats));
        // Walked in the query's order; a reversed walk is flipped at the
        // end so the map is built by appends.
        let mut picked: Vec<(ClusteringKey, Row)> = Vec::new();
        let mut complete = true;
        let order: Box<dyn Iterator<Item = &Slice>> = if reversed {
            Box::new(slices.iter().rev())
        } else {
            Box::new(slices.iter())
        };
        let tombstones: Vec<&RangeTombstone> = self
            .range_tombstones
            .iter()
            .filter(|rt| {
                slices
                    .iter()
                    .any(|s| rt.slice.start < s.end && s.start < rt.slice.end)
            })
            .collect();
        stats.tombstones += tombstones.len() as u64;
        'slices: for s in order {
            if s.is_empty() {
                continue;
            }
            let range = self.rows.range(s.start.clone()..s.end.clone());
            let walk: Box<dyn Iterator<Item = (&ClusteringKey, &Row)>> = if reversed {
                Box::new(range.rev())
            } else {
                Box::new(range)
            };
            for (key, row) in walk {
                if picked.len() >= max_rows {
                    complete = false;
                    break 'slices;
                }
                let mut outer = self.deletion;
                for rt in &tombstones {
                    if rt.slice.contains(key) {
                        outer = outer.max(rt.deletion);
                    }
                }
                if let Some(live) = row.resolve(outer, now_seconds, &mut stats) {
                    picked.push((key.clone(), live));
                }
            }
        }
        if reversed {
            picked.reverse();
        }
        let rows: RowMap = picked.into_iter().collect();
        let live = Partition {
            deletion: DeletionTime::LIVE,
            static_row,
            rows,
            range_tombstones: Vec::new(),
        };
        (live, stats, complete)
    }

    /// The same partition without its static row.
    pub fn without_static(mut self) -> Partition {
        self.static_row = None;
        self
    }

    /// Cuts the range tombstones to `[start, end)`, dropping those outside.
    pub fn clip_range_tombstones(&mut self, start: &ClusteringKey, end: &ClusteringKey) {
        self.range_tombstones.retain_mut(|rt| {
            if rt.slice.start < *start {
                rt.slice.start = start.clone();
            }
            if rt.slice.end > *end {
                rt.slice.end = end.clone();
            }
            rt.slice.start < rt.slice.end
        });
    }

    /// The smallest timestamp of anything in the partition (i64::MAX when
    /// it holds nothing).
    pub fn min_timestamp(&self) -> i64 {
        let mut min = i64::MAX;
        if !self.deletion.is_live() {
            min = min.min(self.deletion.marked_for_delete_at);
        }
        let row_min = |r: &Row| -> i64 {
            let mut m = i64::MAX;
            if let Some(l) = &r.liveness {
                m = m.min(l.timestamp);
            }
            if let Some(d) = &r.deletion {
                m = m.min(d.marked_for_delete_at);
            }
            for c in r.cells.values() {
                m = m.min(c.timestamp);
            }
            for d in r.complex_deletions.values() {
                m = m.min(d.marked_for_delete_at);
            }
            m
        };
        if let Some(s) = &self.static_row {
            min = min.min(row_min(s));
        }
        for r in self.rows.values() {
            min = min.min(row_min(r));
        }
        for rt in &self.range_tombstones {
            min = min.min(rt.deletion.marked_for_delete_at);
        }
        min
    }

    /// The largest timestamp of anything in the partition.
    pub fn max_timestamp(&self) -> i64 {
        let mut max = self.deletion.marked_for_delete_at;
        if let Some(s) = &self.static_row {
            max = max.max(s.max_timestamp());
        }
        for r in self.rows.values() {
            max = max.max(r.max_timestamp());
        }
        for rt in &self.range_tombstones {
            max = max.max(rt.deletion.marked_for_delete_at);
        }
        max
    }
}

/// Adds `rt` to `list`, dropping exact duplicates and tombstones the same
/// range already covers with a stronger deletion.
fn merge_range_tombstone(list: &mut Vec<RangeTombstone>, rt: RangeTombstone) {
    for existing in list.iter_mut() {
        if existing.slice == rt.slice {
            existing.deletion = existing.deletion.max(rt.deletion);
            return;
        }
    }
    list.push(rt);
}

/// `deletion` moved by `delta` micros (a live one stays live).
pub(crate) fn shift_deletion(deletion: &mut DeletionTime, delta: i64) {
    if !deletion.is_live() {
        deletion.marked_for_delete_at = deletion.marked_for_delete_at.saturating_add(delta);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::cell::Cell;
    use crate::data::clustering::ClusteringComparator;
    use crate::CqlType;
    use bytes::Bytes;

    fn int(v: i32) -> Bytes {
        Bytes::copy_from_slice(&v.to_be_bytes())
    }

    fn partition_with_rows(n: i32) -> (Partition, std::sync::Arc<ClusteringComparator>) {
        let cmp = ClusteringComparator::new(vec![(CqlType::Int, false)]);
        let mut p = Partition::default();
        for i in 0..n {
            let mut row = Row::default();
            row.cells.insert((1, None), Cell::live(10, int(i)));
            p.rows.insert(ClusteringKey::row(vec![int(i)], &cmp), row);
        }
        (p, cmp)
    }

    #[test]
    fn shifting_timestamps_moves_every_one_and_keeps_their_order() {
        let (mut p, cmp) = partition_with_rows(2);
        p.deletion = DeletionTime::new(5, 0);
        p.range_tombstones.push(RangeTombstone {
            slice: Slice::all(&cmp),
            deletion: DeletionTime::new(9, 0),
        });
        let key = p.rows.keys().next().cloned().expect("a row");
        let row = p.rows.get_mut(&key).expect("a row");
        row.liveness = Some(crate::data::cell::LivenessInfo::new(10, 0, 0));
        row.deletion = Some(DeletionTime::new(8, 0));
        row.complex_deletions.insert(2, DeletionTime::new(9, 0));
        let static_row = Row {
            cells: {
                let mut c = crate::data::CellMap::new();
                c.insert((3, None), Cell::live(10, int(7)));
                c
            },
            ..Row::default()
        };
        p.static_row = Some(static_row);
        p.shift_timestamps(1_000);
        assert_eq!(p.deletion.marked_for_delete_at, 1_005);
        assert_eq!(p.range_tombstones[0].deletion.marked_for_delete_at, 1_009);
        let row = p.rows.get(&key).expect("a row");
        assert_eq!(row.liveness.expect("marker").timestamp, 1_010);
        assert_eq!(row.deletion.expect("deleted").marked_for_delete_at, 1_008);
        assert_eq!(row.complex_deletions[&2].marked_for_delete_at, 1_009);
        assert!(p
            .rows
            .values()
            .all(|r| r.cells.values().all(|c| c.timestamp == 1_010)));
        let s = p.static_row.as_ref().expect("static");
        assert!(s.cells.values().all(|c| c.timestamp == 1_010));
        // A live deletion stays live.
        let mut fresh = Partition::default();
        fresh.shift_timestamps(1_000);
        assert!(fresh.deletion.is_live());
    }

    #[test]
    fn range_tombstone_hides_covered_rows() {
        let (mut p, cmp) = partition_with_rows(10);
        p.range_tombstones.push(RangeTombstone {
            slice: Slice {
                start: ClusteringKey::before(vec![int(3)], &cmp),
                end: ClusteringKey::after(vec![int(5)], &cmp),
            },
            deletion: DeletionTime::new(10, 0),
        });
        let (live, stats) = p.resolve(0);
        assert_eq!(live.rows.len(), 7);
        assert_eq!(stats.tombstones, 1);
    }

    #[test]
    fn partition_deletion_hides_older_rows() {
        let (mut p, _) = partition_with_rows(3);
        p.deletion = DeletionTime::new(10, 0);
        assert!(p.resolve(0).0.rows.is_empty());
        p.deletion = DeletionTime::new(9, 0);
        assert_eq!(p.resolve(0).0.rows.len(), 3);
    }

    #[test]
    fn resolve_slices_stops_after_max_rows() {
        let (mut p, cmp) = partition_with_rows(100);
        // Rows 0..10 are deleted: they are walked but not counted as live.
        p.range_tombstones.push(RangeTombstone {
            slice: Slice {
                start: ClusteringKey::before(vec![int(0)], &cmp),
                end: ClusteringKey::after(vec![int(9)], &cmp),
            },
            deletion: DeletionTime::new(10, 0),
        });
        let all = [Slice::all(&cmp)];
        let (live, _, complete) = p.resolve_slices(&all, false, 0, 5);
        let got: Vec<_> = live.rows.keys().map(|k| k.values[0].clone()).collect();
        assert_eq!(got, (10..15).map(int).collect::<Vec<_>>());
        assert!(!complete);
        let (live, _, complete) = p.resolve_slices(&all, true, 0, 3);
        let got: Vec<_> = live.rows.keys().map(|k| k.values[0].clone()).collect();
        assert_eq!(got, (97..100).map(int).collect::<Vec<_>>());
        assert!(!complete);
        let (live, _, complete) = p.resolve_slices(&all, false, 0, 1000);
        assert_eq!(live.rows.len(), 90);
        assert!(complete);
    }

    #[test]
    fn slice_selects_rows_between_bounds() {
        let (p, cmp) = partition_with_rows(10);
        let s = Slice {
            start: ClusteringKey::after(vec![int(2)], &cmp),
            end: ClusteringKey::before(vec![int(6)], &cmp),
        };
        let got: Vec<_> = p
            .slice(&[s])
            .rows
            .keys()
            .map(|k| k.values[0].clone())
            .collect();
        assert_eq!(got, vec![int(3), int(4), int(5)]);
    }

    #[test]
    fn clip_range_tombstones_cuts_to_the_window() {
        let (mut p, cmp) = partition_with_rows(0);
        let bound = |v: i32, after: bool| {
            if after {
                ClusteringKey::after(vec![int(v)], &cmp)
            } else {
                ClusteringKey::before(vec![int(v)], &cmp)
            }
        };
        let rt = |a: i32, b: i32| RangeTombstone {
            slice: Slice {
                start: bound(a, false),
                end: bound(b, true),
            },
            deletion: DeletionTime::new(10, 0),
        };
        p.range_tombstones = vec![rt(0, 9), rt(3, 4), rt(20, 30)];
        p.clip_range_tombstones(&bound(2, false), &bound(5, true));
        let got: Vec<_> = p
            .range_tombstones
            .iter()
            .map(|rt| rt.slice.clone())
            .collect();
        let expected = vec![
            Slice {
                start: bound(2, false),
                end: bound(5, true),
            },
            rt(3, 4).slice,
        ];
        assert_eq!(got, expected);
    }

    #[test]
    fn without_static_drops_only_the_static_row() {
        let (mut p, _) = partition_with_rows(2);
        p.static_row = Some(Row::default());
        let q = p.clone().without_static();
        assert!(q.static_row.is_none());
        assert_eq!(q.rows, p.rows);
    }
}
