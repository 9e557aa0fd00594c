//! The in-memory write buffer of one table: partitions in token order,
//! merged on write, with a running estimate of the memory they take.
//!
//! The partitions are spread over ordered maps ("buckets") by the top bits
//! of their token, each with its own lock. Tokens are Murmur3 hashes, so
//! the buckets fill evenly, and walking them in order walks the partitions
//! in token order. A memtable that replaces a flushed one gets about one
//! bucket per [`PARTITIONS_PER_BUCKET`] partitions the old one held (a
//! power of two, at most [`MEMTABLE_BUCKETS_MAX`]); the first memtable of
//! a table has one. Against one tree of every partition, a lookup then
//! walks a tree of two levels instead of six or seven, whose nodes are
//! mostly not in cache: that walk was a write's largest single cost in the
//! stress benchmark. Writers to different buckets do not wait for each
//! other either. The buckets are made on the first write, so an unwritten
//! memtable costs nothing, and they take at most two bytes per partition
//! the previous memtable held.

use crate::clustering::Slice;
use crate::engine::{PartitionKey, TokenBound};
use crate::partition::Partition;
use crate::row_map::RowMap;
use bytes::Bytes;
use parking_lot::RwLock;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// Partitions a bucket is sized for: a root and two leaves of a tree.
pub const PARTITIONS_PER_BUCKET: usize = 16;

/// Most buckets a memtable takes (2 MiB of bucket headers).
pub const MEMTABLE_BUCKETS_MAX: usize = 1 << 16;

/// Bytes counted for a new partition on top of its rows: its slot in the
/// memtable's tree (one slot of a node that holds about eight).
const PARTITION_OVERHEAD_BYTES: usize = 96
    + (std::mem::size_of::<Pos>() + std::mem::size_of::<Partition>()) * BTREE_NODE_SLOTS
        / BTREE_ENTRIES_PER_NODE;

/// Partitions are keyed by their key, which sorts by token, then bytes.
type Pos = PartitionKey;

type Bucket = RwLock<BTreeMap<Pos, Partition>>;

pub struct Memtable {
    buckets: OnceLock<Box<[Bucket]>>,
    /// log2 of the number of buckets.
    bucket_bits: u32,
    partitions: AtomicUsize,
    bytes: AtomicUsize,
    /// Operations applied ([`operation_count`]), nodetool's "Memtable cell
    /// count".
    operations: AtomicUsize,
}

impl Default for Memtable {
    fn default() -> Self {
        Memtable::with_buckets(1)
    }
}

/// The bucket of `token` among `1 << bits`: its top bits, with the sign
/// flipped so that bucket order is token order.
fn bucket_of(token: i64, bits: u32) -> usize {
    (token as u64 ^ (1 << 63))
        .checked_shr(64 - bits)
        .unwrap_or(0) as usize
}

/// Buckets for a memtable expected to hold `partitions` partitions.
pub fn buckets_for(partitions: usize) -> usize {
    (partitions / PARTITIONS_PER_BUCKET)
        .next_power_of_two()
        .min(MEMTABLE_BUCKETS_MAX)
}

impl Memtable {
    /// A memtable of one bucket.
    pub fn new() -> Self {
        Memtable::default()
    }

    /// A memtable to follow `previous`, with buckets for as many
    /// partitions as it held.
    pub fn sized_after(previous: &Memtable) -> Self {
        Memtable::with_buckets(buckets_for(previous.partition_count()))
    }

    /// A memtable of `n` buckets (a power of two, at most
    /// [`MEMTABLE_BUCKETS_MAX`]).
    pub fn with_buckets(n: usize) -> Self {
        assert!(n.is_power_of_two() && n <= MEMTABLE_BUCKETS_MAX);
        Memtable {
            buckets: OnceLock::new(),
            bucket_bits: n.trailing_zeros(),
            partitions: AtomicUsize::new(0),
            bytes: AtomicUsize::new(0),
            operations: AtomicUsize::new(0),
        }
    }

    /// How many buckets the memtable has (made or not).
    pub fn bucket_count(&self) -> usize {
        1 << self.bucket_bits
    }

    fn bucket_index(&self, token: i64) -> usize {
        bucket_of(token, self.bucket_bits)
    }

    fn buckets(&self) -> &[Bucket] {
        self.buckets.get_or_init(|| {
            (0..self.bucket_count())
                .map(|_| RwLock::new(BTreeMap::new()))
                .collect()
        })
    }

    /// The buckets, or none before the first write.
    fn written(&self) -> &[Bucket] {
        self.buckets.get().map_or(&[], |b| &b[..])
    }

    fn bucket(&self, token: i64) -> Option<&Bucket> {
        self.written().get(self.bucket_index(token))
    }

    /// The first bucket a range starting at `b` can touch.
    fn first_bucket(&self, b: &Bound<Pos>) -> usize {
        match b {
            Bound::Unbounded => 0,
            Bound::Included(p) | Bound::Excluded(p) => self.bucket_index(p.token),
        }
    }

    /// The last bucket a range ending at `b` can touch.
    fn last_bucket(&self, b: &Bound<Pos>) -> usize {
        match b {
            Bound::Unbounded => self.bucket_count() - 1,
            Bound::Included(p) | Bound::Excluded(p) => self.bucket_index(p.token),
        }
    }

    /// Merges `update` (whose encoded size is `update_bytes`).
    pub fn apply(&self, key: &PartitionKey, update: Partition, update_bytes: usize) {
        self.operations
            .fetch_add(operation_count(&update), Ordering::Relaxed);
        let mut map = self.buckets()[self.bucket_index(key.token)].write();
        let mut added = update_bytes;
        match map.get_mut(key) {
            Some(existing) => existing.merge(update),
            None => {
                // Its rows take what their map holds now, not the
                // amortised share `estimate_bytes` counted.
                added = (added
                    + PARTITION_OVERHEAD_BYTES
                    + heap_bytes(key.key.len())
                    + row_map_bytes(&update.rows))
                .saturating_sub(row_entries_amortized_bytes(update.rows.len()));
                map.insert(key.clone(), update);
                self.partitions.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.bytes.fetch_add(added, Ordering::Relaxed);
    }

    /// Estimated memory used.
    pub fn bytes(&self) -> usize {
        self.bytes.load(Ordering::Relaxed)
    }

    pub fn is_empty(&self) -> bool {
        self.partition_count() == 0
    }

    pub fn partition_count(&self) -> usize {
        self.partitions.load(Ordering::Relaxed)
    }

    /// Operations applied since the memtable was created.
    pub fn operation_count(&self) -> usize {
        self.operations.load(Ordering::Relaxed)
    }

    /// The partition restricted to `slices` (tombstones included).
    pub fn read(&self, key: &PartitionKey, slices: &[Slice]) -> Option<Partition> {
        self.bucket(key.token)?
            .read()
            .get(key)
            .map(|p| p.slice(slices))
    }

    /// Up to `limit` keys between the bounds, in token order.
    pub fn keys(&self, start: &TokenBound, end: &TokenBound, limit: usize) -> Vec<PartitionKey> {
        let (Some(lo), Some(hi)) = (start_bound(start), end_bound(end)) else {
            return Vec::new();
        };
        if !range_is_valid(&lo, &hi) || self.written().is_empty() {
            return Vec::new();
        }
        let mut out = Vec::new();
        for bucket in &self.written()[self.first_bucket(&lo)..=self.last_bucket(&hi)] {
            let want = limit - out.len();
            if want == 0 {
                break;
            }
            let map = bucket.read();
            out.extend(
                map.range((lo.clone(), hi.clone()))
                    .take(want)
                    .map(|(k, _)| k.clone()),
            );
        }
        out
    }

    /// Calls `f` on every partition in token order without copying them
    /// (a flush of a memtable no longer written to; readers still share it).
    pub fn try_for_each<E>(
        &self,
        mut f: impl FnMut(&PartitionKey, &Partition) -> Result<(), E>,
    ) -> Result<(), E> {
        for bucket in self.written() {
            for (key, p) in bucket.read().iter() {
                f(key, p)?;
            }
        }
        Ok(())
    }

    /// Every partition in token order, cloned out.
    pub fn snapshot(&self) -> Vec<(PartitionKey, Partition)> {
        let mut out = Vec::with_capacity(self.partition_count());
        for bucket in self.written() {
            out.extend(
                bucket
                    .read()
                    .iter()
                    .map(|(key, p)| (key.clone(), p.clone())),
            );
        }
        out
    }

    /// Whether the memtable holds a partition for `key`.
    pub fn contains(&self, key: &PartitionKey) -> bool {
        self.bucket(key.token)
            .is_some_and(|b| b.read().contains_key(key))
    }
}

/// The lowest position within a token: the empty key is never stored.
fn first_of(token: i64) -> Pos {
    PartitionKey {
        token,
        key: Bytes::new(),
    }
}

pub(crate) fn start_bound(b: &TokenBound) -> Option<Bound<Pos>> {
    Some(match b {
        TokenBound::Unbounded => Bound::Unbounded,
        TokenBound::TokenInclusive(t) => Bound::Included(first_of(*t)),
        TokenBound::TokenExclusive(t) => match t.checked_add(1) {
            Some(next) => Bound::Included(first_of(next)),
            None => return None,
        },
        TokenBound::AfterKey(k) => Bound::Excluded(k.clone()),
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
        TokenBound::AfterKey(k) => Bound::Excluded(k.clone()),
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
    let pos = key;
    let after_start = match start_bound(start) {
        None => false,
        Some(Bound::Unbounded) => true,
        Some(Bound::Included(lo)) => *pos >= lo,
        Some(Bound::Excluded(lo)) => *pos > lo,
    };
    let before_end = match end_bound(end) {
        None => false,
        Some(Bound::Unbounded) => true,
        Some(Bound::Included(hi)) => *pos <= hi,
        Some(Bound::Excluded(hi)) => *pos < hi,
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

/// What one update counts toward "Memtable cell count", as Cassandra
/// counts a partition update's operations: its rows, its static row, its
/// range tombstones and its partition deletion (not its cells).
pub fn operation_count(update: &Partition) -> usize {
    update.rows.len()
        + usize::from(update.static_row.is_some())
        + update.range_tombstones.len()
        + usize::from(!update.deletion.is_live())
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

#[cfg(test)]
mod tests;
