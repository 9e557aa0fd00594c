//! The in-memory write buffer of one table: partitions in token order,
//! merged on write, with a running estimate of the memory they take.

use crate::clustering::Slice;
use crate::engine::{PartitionKey, TokenBound};
use crate::partition::Partition;
use crate::row_map::RowMap;
use bytes::Bytes;
use parking_lot::RwLock;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Bytes counted for a new partition on top of its rows: its slot in the
/// memtable's tree (one slot of a node that holds about eight).
const PARTITION_OVERHEAD_BYTES: usize = 96
    + (std::mem::size_of::<Pos>() + std::mem::size_of::<Partition>()) * BTREE_NODE_SLOTS
        / BTREE_ENTRIES_PER_NODE;

type Pos = (i64, Bytes);

#[derive(Default)]
pub struct Memtable {
    partitions: RwLock<BTreeMap<Pos, Partition>>,
    bytes: AtomicUsize,
}

impl Memtable {
    pub fn new() -> Self {
        Memtable::default()
    }

    /// Merges `update` (whose encoded size is `update_bytes`).
    pub fn apply(&self, key: &PartitionKey, update: Partition, update_bytes: usize) {
        let mut map = self.partitions.write();
        let pos = (key.token, key.key.clone());
        let mut added = update_bytes;
        match map.get_mut(&pos) {
            Some(existing) => existing.merge(update),
            None => {
                // Its rows take what their map holds now, not the
                // amortised share `estimate_bytes` counted.
                added = (added
                    + PARTITION_OVERHEAD_BYTES
                    + heap_bytes(key.key.len())
                    + row_map_bytes(&update.rows))
                .saturating_sub(row_entries_amortized_bytes(update.rows.len()));
                map.insert(pos, update);
            }
        }
        self.bytes.fetch_add(added, Ordering::Relaxed);
    }

    /// Estimated memory used.
    pub fn bytes(&self) -> usize {
        self.bytes.load(Ordering::Relaxed)
    }

    pub fn is_empty(&self) -> bool {
        self.partitions.read().is_empty()
    }

    pub fn partition_count(&self) -> usize {
        self.partitions.read().len()
    }

    /// The partition restricted to `slices` (tombstones included).
    pub fn read(&self, key: &PartitionKey, slices: &[Slice]) -> Option<Partition> {
        self.partitions
            .read()
            .get(&(key.token, key.key.clone()))
            .map(|p| p.slice(slices))
    }

    /// Up to `limit` keys between the bounds, in token order.
    pub fn keys(&self, start: &TokenBound, end: &TokenBound, limit: usize) -> Vec<PartitionKey> {
        let map = self.partitions.read();
        let (Some(lo), Some(hi)) = (start_bound(start), end_bound(end)) else {
            return Vec::new();
        };
        if !range_is_valid(&lo, &hi) {
            return Vec::new();
        }
        map.range((lo, hi))
            .take(limit)
            .map(|((token, key), _)| PartitionKey {
                token: *token,
                key: key.clone(),
            })
            .collect()
    }

    /// Calls `f` on every partition in token order without copying them
    /// (a flush of a memtable no longer written to; readers still share it).
    pub fn try_for_each<E>(
        &self,
        mut f: impl FnMut(&PartitionKey, &Partition) -> Result<(), E>,
    ) -> Result<(), E> {
        let map = self.partitions.read();
        for ((token, key), p) in map.iter() {
            f(
                &PartitionKey {
                    token: *token,
                    key: key.clone(),
                },
                p,
            )?;
        }
        Ok(())
    }

    /// Every partition in token order, cloned out.
    pub fn snapshot(&self) -> Vec<(PartitionKey, Partition)> {
        self.partitions
            .read()
            .iter()
            .map(|((token, key), p)| {
                (
                    PartitionKey {
                        token: *token,
                        key: key.clone(),
                    },
                    p.clone(),
                )
            })
            .collect()
    }

    /// The largest write timestamp in the memtable for `key`, if present.
    pub fn contains(&self, key: &PartitionKey) -> bool {
        self.partitions
            .read()
            .contains_key(&(key.token, key.key.clone()))
    }
}

/// The lowest position within a token: the empty key is never stored.
fn first_of(token: i64) -> Pos {
    (token, Bytes::new())
}

pub(crate) fn start_bound(b: &TokenBound) -> Option<Bound<Pos>> {
    Some(match b {
        TokenBound::Unbounded => Bound::Unbounded,
        TokenBound::TokenInclusive(t) => Bound::Included(first_of(*t)),
        TokenBound::TokenExclusive(t) => match t.checked_add(1) {
            Some(next) => Bound::Included(first_of(next)),
            None => return None,
        },
        TokenBound::AfterKey(k) => Bound::Excluded((k.token, k.key.clone())),
    })
}

pub(crate) fn end_bound(b: &TokenBound) -> Option<Bound<Pos>> {
    Some(match b {
        TokenBound::Unbounded => Bound::Unbounded,
        TokenBound::TokenInclusive(t) => match t.checked_add(1) {
            Some(next) => Bound::Excluded(first_of(next)),
            None => Bound::Unbounded,
        },
        TokenBound::TokenExclusive(t) => Bound::Excluded(first_of(*t)),
        TokenBound::AfterKey(k) => Bound::Excluded((k.token, k.key.clone())),
    })
}

/// BTreeMap::range panics on an inverted or empty-excluded range: check.
pub(crate) fn range_is_valid(lo: &Bound<Pos>, hi: &Bound<Pos>) -> bool {
    match (lo, hi) {
        (Bound::Included(a), Bound::Included(b)) => a <= b,
        (Bound::Included(a), Bound::Excluded(b)) | (Bound::Excluded(a), Bound::Included(b)) => {
            a < b
        }
        (Bound::Excluded(a), Bound::Excluded(b)) => a < b,
        _ => true,
    }
}

/// Whether `key` lies between the scan bounds.
pub fn key_in_range(key: &PartitionKey, start: &TokenBound, end: &TokenBound) -> bool {
    let pos = (key.token, key.key.clone());
    let after_start = match start_bound(start) {
        None => false,
        Some(Bound::Unbounded) => true,
        Some(Bound::Included(lo)) => pos >= lo,
        Some(Bound::Excluded(lo)) => pos > lo,
    };
    let before_end = match end_bound(end) {
        None => false,
        Some(Bound::Unbounded) => true,
        Some(Bound::Included(hi)) => pos <= hi,
        Some(Bound::Excluded(hi)) => pos < hi,
    };
    after_start && before_end
}

/// Slots of a std `BTreeMap` node (B = 6: 2B - 1 entries per node).
const BTREE_NODE_SLOTS: usize = 11;
/// Entries an average node holds once keys arrive in random order
/// (nodes split when full, so they run about two thirds full).
const BTREE_ENTRIES_PER_NODE: usize = 8;
/// Parent pointer, index and length of a node, plus the allocator's
/// rounding.
const BTREE_NODE_HEADER: usize = 32;
/// The allocator's size classes grow in steps of this many bytes for small
/// objects: a 34-byte value takes 48.
const ALLOC_GRANULE: usize = 16;

/// Memory a `BTreeMap` of `n` entries of `entry_bytes` each takes: whole
/// nodes of [`BTREE_NODE_SLOTS`] slots, however few are used.
fn btree_bytes(n: usize, entry_bytes: usize) -> usize {
    n.div_ceil(BTREE_ENTRIES_PER_NODE) * (BTREE_NODE_HEADER + BTREE_NODE_SLOTS * entry_bytes)
}

/// Bytes of a rows-map entry (clustering key and row).
const ROW_ENTRY_BYTES: usize = std::mem::size_of::<crate::clustering::ClusteringKey>()
    + std::mem::size_of::<crate::row::Row>();

/// The share of a partition's rows map that `n` more rows take in a map
/// that already exists. A vector grown by doubling is on average about
/// 1.39x its length (capacity/length runs from 1 to 2, 2 ln 2 on average);
/// a tree fills about 8 of its 11 slots per node, 1.375x plus the node
/// header. One rate covers both: the tree's.
fn row_entries_amortized_bytes(n: usize) -> usize {
    n * (BTREE_NODE_HEADER + BTREE_NODE_SLOTS * ROW_ENTRY_BYTES) / BTREE_ENTRIES_PER_NODE
}

/// What a rows map takes now: its vector at capacity, or whole tree
/// nodes. A partition that starts a memtable entry is counted at this
/// (a one-row partition holds a vector of exactly one entry).
fn row_map_bytes(rows: &RowMap) -> usize {
    match rows.vec_capacity() {
        Some(cap) => heap_bytes(cap * ROW_ENTRY_BYTES),
        None => btree_bytes(rows.len(), ROW_ENTRY_BYTES),
    }
}

/// Memory of a heap buffer of `len` bytes (0 for an empty one).
fn heap_bytes(len: usize) -> usize {
    len.next_multiple_of(ALLOC_GRANULE)
}

/// Memory one update takes once merged into a memtable: the values and
/// keys it carries plus the maps that hold them (its rows counted at
/// [`row_entries_amortized_bytes`], their share of the partition's existing
/// rows map; `Memtable::apply` counts a new partition's map as it is,
/// [`row_map_bytes`]). This is what the
/// node-wide memtable budget (`memtable_heap_space`) counts, so it follows
/// the real allocations (checked against a counting allocator in
/// tests/memtable_memory.rs) rather than the encoded size, which is 5x
/// smaller for small rows.
pub fn estimate_bytes(p: &Partition) -> usize {
    use std::mem::size_of;
    let row_bytes = |r: &crate::row::Row| -> usize {
        let cells = heap_bytes(
            r.cells.capacity()
                * (size_of::<crate::row::CellPath>() + size_of::<crate::cell::Cell>()),
        );
        let values: usize = r
            .cells
            .iter()
            .map(|((_, path), c)| {
                heap_bytes(c.value.len()) + path.as_ref().map_or(0, |p| heap_bytes(p.len()))
            })
            .sum();
        let complex = btree_bytes(
            r.complex_deletions.len(),
            size_of::<u32>() + size_of::<crate::cell::DeletionTime>(),
        );
        cells + values + complex
    };
    let mut n = 0;
    if let Some(s) = &p.static_row {
        n += row_bytes(s);
    }
    n += row_entries_amortized_bytes(p.rows.len());
    for (k, r) in &p.rows {
        n += row_bytes(r)
            + heap_bytes(k.values.len() * size_of::<Bytes>())
            + k.values.iter().map(|v| heap_bytes(v.len())).sum::<usize>();
    }
    n + heap_bytes(p.range_tombstones.len() * size_of::<crate::partition::RangeTombstone>())
}
