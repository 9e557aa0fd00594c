//! What the Paxos payloads' tests share: a table of one `int` clustering
//! column (id 7), a key of it, and a one-row partition.

use std::sync::Arc;

use bytes::Bytes;
use varve_types::data::{Cell, ClusteringComparator, ClusteringKey, Partition, PartitionKey, Row};
use varve_types::CqlType;

use crate::verbs::codec::Comparators;

/// The id of the only table [`OneTable`] knows.
pub const TABLE: u128 = 7;

/// Knows table [`TABLE`] only.
pub struct OneTable(pub Arc<ClusteringComparator>);

impl Comparators for OneTable {
    fn comparator(&self, table: u128) -> Option<Arc<ClusteringComparator>> {
        (table == TABLE).then(|| Arc::clone(&self.0))
    }
}

/// The table's comparator: one `int` clustering column.
pub fn cmp() -> Arc<ClusteringComparator> {
    ClusteringComparator::new(vec![(CqlType::Int, false)])
}

pub fn tables() -> OneTable {
    OneTable(cmp())
}

pub fn key() -> PartitionKey {
    PartitionKey::new(Bytes::from_static(b"\0\0\0\x05"))
}

/// Row 1 with column 1 set to `v` at `ts`.
pub fn row(v: i32, ts: i64) -> Partition {
    let mut p = Partition::default();
    let mut row = Row::default();
    row.cells.insert(
        (1, None),
        Cell::live(ts, Bytes::copy_from_slice(&v.to_be_bytes())),
    );
    p.rows.insert(
        ClusteringKey::row(vec![Bytes::copy_from_slice(&1i32.to_be_bytes())], &cmp()),
        row,
    );
    p
}
