//! The in-memory write buffer of one table: partitions in token order,
//! merged on write, with a running estimate of the memory they take.

use crate::clustering::Slice;
use crate::engine::{PartitionKey, TokenBound};
use crate::partition::Partition;
use bytes::Bytes;
use parking_lot::RwLock;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Bytes counted for a partition on top of its encoded updates (keys,
/// tree nodes): a rough but stable estimate for the memory budget.
const PARTITION_OVERHEAD_BYTES: usize = 96;

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
                added += PARTITION_OVERHEAD_BYTES + key.key.len();
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

/// Bytes a partition update adds to a memtable, estimated from its cells
/// and keys (for the memory budget; not exact, but proportional).
pub fn estimate_bytes(p: &Partition) -> usize {
    const CELL_OVERHEAD: usize = 48;
    const ROW_OVERHEAD: usize = 64;
    let row_bytes = |r: &crate::row::Row| -> usize {
        ROW_OVERHEAD
            + r.cells
                .iter()
                .map(|((_, path), c)| {
                    CELL_OVERHEAD + c.value.len() + path.as_ref().map_or(0, |p| p.len())
                })
                .sum::<usize>()
    };
    let mut n = 32;
    if let Some(s) = &p.static_row {
        n += row_bytes(s);
    }
    for (k, r) in &p.rows {
        n += row_bytes(r) + k.values.iter().map(|v| v.len() + 8).sum::<usize>();
    }
    n + p.range_tombstones.len() * 96
}
