//! Cells of dropped columns, hidden on read.
//!
//! Storage keeps the cells it was given under their column's id; a DROP
//! leaves them where they are. A read shows none of a column that no
//! longer exists, and of a column added again under its old name (which
//! takes its old id back, docs/format/schema-file.md) only the cells
//! written after the drop: Cassandra hides a cell whose timestamp is at or
//! before the dropped column's `dropped_time`. A row left with neither a
//! row marker nor a cell is not shown at all, as in Cassandra, where such
//! a row never reaches the result.

use std::borrow::Cow;
use varve_schema::column::ColumnKind;
use varve_schema::table::Table;
use varve_storage::{Partition, Row};

/// What reads of one table hide.
#[derive(Debug, Clone)]
pub struct DroppedCells {
    /// The ids of the table's static and regular columns, sorted.
    live: Vec<u32>,
    /// Columns added again: their id and when they were dropped (micros).
    readded: Vec<(u32, i64)>,
}

impl DroppedCells {
    /// `None` when no column of `table` was ever dropped: nothing to hide.
    pub fn of(table: &Table) -> Option<DroppedCells> {
        if table.dropped.is_empty() {
            return None;
        }
        let mut live: Vec<u32> = table
            .columns
            .iter()
            .filter(|c| matches!(c.kind, ColumnKind::Static | ColumnKind::Regular))
            .map(|c| c.id)
            .collect();
        live.sort_unstable();
        let readded = table
            .dropped
            .iter()
            .filter_map(|(name, d)| {
                let col = table.column(name)?;
                (d.id == Some(col.id)).then_some((col.id, d.dropped_at_micros))
            })
            .collect();
        Some(DroppedCells { live, readded })
    }

    /// Whether a cell of column `id` written at `timestamp` is hidden.
    pub fn hides(&self, id: u32, timestamp: i64) -> bool {
        if self.live.binary_search(&id).is_err() {
            return true;
        }
        self.readded
            .iter()
            .any(|&(c, dropped_at)| c == id && timestamp <= dropped_at)
    }

    fn hides_any(&self, row: &Row) -> bool {
        row.cells
            .iter()
            .any(|((id, _), cell)| self.hides(*id, cell.timestamp))
    }

    /// `row` as a read shows it: borrowed when nothing of it is hidden,
    /// `None` when nothing of it is left.
    pub fn row<'a>(&self, row: &'a Row) -> Option<Cow<'a, Row>> {
        if !self.hides_any(row) {
            return Some(Cow::Borrowed(row));
        }
        let mut shown = row.clone();
        self.strip(&mut shown);
        (!is_empty(&shown)).then_some(Cow::Owned(shown))
    }

    /// Removes what `p`'s static row must not show (the row itself when
    /// nothing of it is left).
    pub fn static_row(&self, p: &mut Partition) {
        if let Some(s) = &mut p.static_row {
            self.strip(s);
            if is_empty(s) {
                p.static_row = None;
            }
        }
    }

    /// Removes what `p` must not show, rows left empty included.
    pub fn partition(&self, p: &mut Partition) {
        self.static_row(p);
        p.rows.retain(|_, row| {
            if !self.hides_any(row) {
                return true;
            }
            self.strip(row);
            !is_empty(row)
        });
    }

    fn strip(&self, row: &mut Row) {
        row.cells
            .retain(|(id, _), cell| !self.hides(*id, cell.timestamp));
        row.complex_deletions
            .retain(|id, _| self.live.binary_search(id).is_ok());
    }
}

/// A row with no marker and no cell: nothing a read shows.
fn is_empty(row: &Row) -> bool {
    row.liveness.is_none() && row.cells.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use varve_schema::table::TableSpec;
    use varve_storage::Cell;
    use varve_types::CqlType;

    fn table() -> Table {
        Table::create(TableSpec {
            keyspace: "ks".into(),
            name: "t".into(),
            id: 1,
            columns: vec![
                ("k".into(), CqlType::Int, false),
                ("c".into(), CqlType::Int, false),
                ("v".into(), CqlType::Text, false),
                ("w".into(), CqlType::Int, false),
            ],
            partition_key: vec!["k".into()],
            clustering: vec![("c".into(), false)],
            options: Default::default(),
        })
        .unwrap()
    }

    fn row_with(cells: &[(u32, i64)]) -> Row {
        let mut row = Row::default();
        for &(id, ts) in cells {
            row.cells
                .insert((id, None), Cell::live(ts, Bytes::from_static(b"x")));
        }
        row
    }

    #[test]
    fn a_table_that_never_lost_a_column_hides_nothing() {
        assert!(DroppedCells::of(&table()).is_none());
    }

    #[test]
    fn a_dropped_column_hides_every_cell_and_a_row_left_empty() {
        let mut t = table();
        let v = t.column("v").unwrap().id;
        let w = t.column("w").unwrap().id;
        t.drop_column("v", 200).unwrap();
        let d = DroppedCells::of(&t).unwrap();
        assert!(d.hides(v, 1_000));
        assert!(!d.hides(w, 1));
        assert!(d.row(&row_with(&[(v, 100)])).is_none());
        let both = row_with(&[(v, 100), (w, 100)]);
        let kept = d.row(&both).unwrap();
        assert_eq!(kept.cells.len(), 1);
        assert!(matches!(
            d.row(&row_with(&[(w, 1)])),
            Some(Cow::Borrowed(_))
        ));
    }

    #[test]
    fn a_column_added_again_shows_only_cells_after_its_drop() {
        let mut t = table();
        let v = t.column("v").unwrap().id;
        t.drop_column("v", 200).unwrap();
        t.add_column("v", CqlType::Text, false).unwrap();
        assert_eq!(t.column("v").unwrap().id, v, "the old id is taken back");
        let d = DroppedCells::of(&t).unwrap();
        assert!(d.hides(v, 199));
        assert!(
            d.hides(v, 200),
            "a cell at the drop's own timestamp is dropped"
        );
        assert!(!d.hides(v, 201));
    }

    #[test]
    fn a_row_marker_keeps_a_row_whose_cells_are_all_hidden() {
        let mut t = table();
        let v = t.column("v").unwrap().id;
        t.drop_column("v", 200).unwrap();
        let mut row = row_with(&[(v, 100)]);
        row.liveness = Some(varve_storage::LivenessInfo::new(100, 0, 0));
        let shown = DroppedCells::of(&t).unwrap().row(&row).unwrap();
        assert!(shown.cells.is_empty());
    }
}
