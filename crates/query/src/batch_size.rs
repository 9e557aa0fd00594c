//! The batch size thresholds, as Cassandra applies them (cassandra.yaml's
//! `batch_size_warn_threshold`, 5 KiB, and `batch_size_fail_threshold`,
//! 50 KiB): a batch whose updates span more than one partition and whose
//! data passes the first gets a client warning naming its tables; past the
//! second it is refused, InvalidRequest "Batch too large", before anything
//! is written. A batch of one partition is never checked (Cassandra warns
//! only for batches that span several mutations).
//!
//! The size is the data the updates carry, counted as Cassandra counts a
//! partition update's data: values and clustering bytes, and the fixed
//! parts of timestamps, TTLs and deletions. Close to Cassandra's figure, not
//! byte for byte (the warning's numbers may differ a little).

use std::collections::BTreeSet;

use varve_types::data::{Partition, Row};

use crate::error::{QueryError, Result};
use crate::write::Planned;

/// `batch_size_warn_threshold`: past this many bytes, a client warning.
pub const BATCH_SIZE_WARN_THRESHOLD: u64 = 5 * 1024;
/// `batch_size_fail_threshold`: past this many bytes, the batch is refused.
pub const BATCH_SIZE_FAIL_THRESHOLD: u64 = 50 * 1024;

/// A timestamp, as Cassandra counts it.
const TIMESTAMP_BYTES: u64 = 8;
/// A TTL and its expiry second.
const EXPIRY_BYTES: u64 = 8;
/// A deletion: its timestamp and its second.
const DELETION_BYTES: u64 = 12;

/// Checks the planned updates of a batch: a warning in `warnings`, or the
/// error that refuses the batch.
pub fn check(plans: &[Planned], warnings: &mut Vec<String>) -> Result<()> {
    let mut partitions = BTreeSet::new();
    let mut tables = BTreeSet::new();
    let mut size = 0u64;
    for plan in plans {
        for (key, update) in &plan.updates {
            partitions.insert((plan.table.keyspace.as_str(), key.key.clone()));
            tables.insert(format!("{}.{}", plan.table.keyspace, plan.table.name));
            size += data_size(update);
        }
    }
    if partitions.len() <= 1 || size <= BATCH_SIZE_WARN_THRESHOLD {
        return Ok(());
    }
    if size > BATCH_SIZE_FAIL_THRESHOLD {
        return Err(QueryError::Invalid("Batch too large".into()));
    }
    let names: Vec<String> = tables.into_iter().collect();
    warnings.push(format!(
        "Batch for [{}] is of size {size}, exceeding specified threshold of {BATCH_SIZE_WARN_THRESHOLD} by {}.",
        names.join(", "),
        size - BATCH_SIZE_WARN_THRESHOLD
    ));
    Ok(())
}

/// The data one partition update carries.
pub fn data_size(p: &Partition) -> u64 {
    let mut size = if p.deletion.is_live() {
        0
    } else {
        DELETION_BYTES
    };
    if let Some(row) = &p.static_row {
        size += row_size(row);
    }
    for (key, row) in &p.rows {
        size += key.values.iter().map(|v| v.len() as u64).sum::<u64>() + row_size(row);
    }
    for rt in &p.range_tombstones {
        let bounds = rt.slice.start.values.iter().chain(&rt.slice.end.values);
        size += bounds.map(|v| v.len() as u64).sum::<u64>() + 2 * DELETION_BYTES;
    }
    size
}

fn row_size(row: &Row) -> u64 {
    let mut size = 0;
    if let Some(l) = &row.liveness {
        size += TIMESTAMP_BYTES + if l.ttl > 0 { EXPIRY_BYTES } else { 0 };
    }
    if row.deletion.is_some() {
        size += DELETION_BYTES;
    }
    for cell in row.cells.values() {
        size += cell.value.len() as u64 + TIMESTAMP_BYTES;
        if cell.ttl > 0 {
            size += EXPIRY_BYTES;
        }
    }
    size + DELETION_BYTES * row.complex_deletions.len() as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use varve_types::data::{Cell, ClusteringComparator, ClusteringKey};
    use varve_types::CqlType;

    /// A partition of one row whose one cell holds `len` bytes: its data
    /// is `len` + 4 (the clustering int) + 8 (the cell's timestamp).
    fn update(len: usize) -> Partition {
        let cmp = ClusteringComparator::new(vec![(CqlType::Int, false)]);
        let mut row = Row::default();
        row.cells
            .insert((1, None), Cell::live(1, Bytes::from(vec![b'a'; len])));
        let mut p = Partition::default();
        p.rows.insert(
            ClusteringKey::row(vec![Bytes::from_static(&[0, 0, 0, 1])], &cmp),
            row,
        );
        p
    }

    #[test]
    fn a_row_counts_its_values_clustering_and_timestamps() {
        assert_eq!(data_size(&update(100)), 100 + 4 + 8);
    }
}
