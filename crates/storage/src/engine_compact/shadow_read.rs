//! A compaction's reads of its shadow sources (the live sstables outside
//! it, see [`crate::compaction::shadow`]): only the sstables that may
//! shadow anything, and of a partition only what the compaction's rows
//! need, so that a partition with a point index or a row index is read
//! block by block instead of whole.

use super::views::may_hold;
use crate::clustering::{ClusteringKey, Slice};
use crate::compaction::shadow::ShadowMode;
use crate::engine::PartitionKey;
use crate::error::Result;
use crate::partition::Partition;
use crate::sstable::{Sstable, StoredPartition};
use std::sync::Arc;

/// Whether `s` may shadow anything at `mode`. At ROW granularity only
/// deletions do, so an sstable without a tombstone of any kind is not read
/// (Cassandra's `mayHaveTombstones`): an sstable loaded without deletes
/// cost a garbagecollect one random read per partition of every sstable it
/// rewrote, for nothing.
pub(super) fn may_shadow(s: &Sstable, mode: ShadowMode) -> bool {
    match mode {
        ShadowMode::None => false,
        ShadowMode::Row => s.stats().tombstone_count > 0,
        ShadowMode::Cell => true,
    }
}

/// One slice per row of `p`, exactly its clustering: what a shadow check
/// of `p` reads (it looks only at the shadow's deletion, static row, and
/// rows and range tombstones at `p`'s rows).
pub(super) fn row_slices(p: &Partition) -> Vec<Slice> {
    p.rows
        .keys()
        .map(|k| Slice {
            start: ClusteringKey::before(k.values.clone(), k.comparator()),
            end: ClusteringKey::after(k.values.clone(), k.comparator()),
        })
        .collect()
}

/// What `s` holds of `key` within `slices`, with the partition's deletion
/// and static row; `None` when it does not hold the key.
pub(super) fn stored_within(
    s: &Sstable,
    key: &PartitionKey,
    slices: &[Slice],
) -> Result<Option<Partition>> {
    Ok(match s.open_partition_for(key, slices)? {
        None => None,
        Some(StoredPartition::Whole(p)) => Some(p.slice(slices)),
        Some(StoredPartition::Indexed(ip)) => Some(ip.read_stored(slices)?),
    })
}

/// What the sstables outside a compaction hold of `key` within `slices`
/// (for a large partition's shadow check, window by window).
pub(super) fn shadow_in(
    others: &[Arc<Sstable>],
    mode: ShadowMode,
    key: &PartitionKey,
    slices: &[Slice],
) -> Result<Option<Partition>> {
    let mut merged: Option<Partition> = None;
    for s in others {
        if !may_shadow(s, mode) || !may_hold(s, key) {
            continue;
        }
        let Some(p) = stored_within(s, key, slices)? else {
            continue;
        };
        match &mut merged {
            Some(m) => m.merge(p),
            None => merged = Some(p),
        }
    }
    Ok(merged)
}
