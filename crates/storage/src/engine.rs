//! The storage API the query layer uses: tables, writes, point reads and
//! token-ordered scans.

use crate::clustering::{ClusteringComparator, Slice};
use crate::error::{Error, Result};
use crate::partition::Partition;
use crate::row::ReadStats;
use bytes::Bytes;
use parking_lot::RwLock;
use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use std::sync::Arc;

/// A table's id (its schema UUID as a number).
pub type TableId = u128;

/// A partition key: its Murmur3 token and its serialized bytes. Sorts by
/// token, then bytes.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PartitionKey {
    pub token: i64,
    pub key: Bytes,
}

impl PartitionKey {
    pub fn new(key: Bytes) -> Self {
        PartitionKey {
            token: varve_types::token::murmur3_token(&key),
            key,
        }
    }
}

/// One end of a scan over the ring.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenBound {
    Unbounded,
    /// Tokens at or above (start) / at or below (end) this one.
    TokenInclusive(i64),
    /// Tokens strictly above (start) / below (end) this one.
    TokenExclusive(i64),
    /// Strictly after (start) / before (end) this key: used by paging.
    AfterKey(PartitionKey),
}

/// Counters that tablestats shows.
#[derive(Debug, Clone, Default)]
pub struct TableStats {
    pub live_sstables: usize,
    pub space_used_bytes: u64,
    pub memtable_bytes: usize,
    pub memtable_partitions: usize,
    pub sstable_partitions: u64,
    pub bloom_filter_false_positives: u64,
    pub bloom_filter_true_positives: u64,
}

/// One table's data: a memtable holding partitions in token order.
struct TableStore {
    comparator: Arc<ClusteringComparator>,
    memtable: RwLock<BTreeMap<(i64, Bytes), Partition>>,
}

/// The node's storage engine.
#[derive(Default)]
pub struct Storage {
    tables: RwLock<HashMap<TableId, Arc<TableStore>>>,
}

impl Storage {
    pub fn new() -> Self {
        Storage::default()
    }

    /// Creates the table's store (idempotent).
    pub fn create_table(&self, id: TableId, comparator: Arc<ClusteringComparator>) {
        self.tables.write().entry(id).or_insert_with(|| {
            Arc::new(TableStore {
                comparator,
                memtable: RwLock::new(BTreeMap::new()),
            })
        });
    }

    pub fn drop_table(&self, id: TableId) {
        self.tables.write().remove(&id);
    }

    /// Removes every partition of the table.
    pub fn truncate(&self, id: TableId) -> Result<()> {
        self.table(id)?.memtable.write().clear();
        Ok(())
    }

    pub fn comparator(&self, id: TableId) -> Result<Arc<ClusteringComparator>> {
        Ok(self.table(id)?.comparator.clone())
    }

    fn table(&self, id: TableId) -> Result<Arc<TableStore>> {
        self.tables
            .read()
            .get(&id)
            .cloned()
            .ok_or(Error::UnknownTable(id))
    }

    /// Merges `update` into the stored partition.
    pub fn apply(&self, id: TableId, key: &PartitionKey, update: Partition) -> Result<()> {
        let table = self.table(id)?;
        let mut memtable = table.memtable.write();
        match memtable.get_mut(&(key.token, key.key.clone())) {
            Some(existing) => existing.merge(update),
            None => {
                memtable.insert((key.token, key.key.clone()), update);
            }
        }
        Ok(())
    }

    /// The stored partition restricted to `slices` (tombstones included),
    /// or `None` when nothing is stored under the key.
    pub fn read_partition(
        &self,
        id: TableId,
        key: &PartitionKey,
        slices: &[Slice],
    ) -> Result<Option<Partition>> {
        let table = self.table(id)?;
        let memtable = table.memtable.read();
        Ok(memtable
            .get(&(key.token, key.key.clone()))
            .map(|p| p.slice(slices)))
    }

    /// The live rows of `slices` at `now_seconds` (see
    /// [`Partition::resolve_slices`]), reading at most `max_rows` live rows;
    /// `None` when nothing is stored under the key.
    pub fn read_live(
        &self,
        id: TableId,
        key: &PartitionKey,
        slices: &[Slice],
        reversed: bool,
        now_seconds: i32,
        max_rows: usize,
    ) -> Result<Option<(Partition, ReadStats, bool)>> {
        let table = self.table(id)?;
        let memtable = table.memtable.read();
        Ok(memtable
            .get(&(key.token, key.key.clone()))
            .map(|p| p.resolve_slices(slices, reversed, now_seconds, max_rows)))
    }

    /// Up to `limit` partition keys in token order between `start` and
    /// `end`.
    pub fn scan_keys(
        &self,
        id: TableId,
        start: &TokenBound,
        end: &TokenBound,
        limit: usize,
    ) -> Result<Vec<PartitionKey>> {
        let table = self.table(id)?;
        let memtable = table.memtable.read();
        let (lo, hi) = match (start_bound(start), end_bound(end)) {
            (Some(lo), Some(hi)) => (lo, hi),
            _ => return Ok(Vec::new()),
        };
        if !range_is_valid(&lo, &hi) {
            return Ok(Vec::new());
        }
        Ok(memtable
            .range((lo, hi))
            .take(limit)
            .map(|((token, key), _)| PartitionKey {
                token: *token,
                key: key.clone(),
            })
            .collect())
    }

    /// Writes memtables to sstables (no-op while data lives in memory only).
    pub fn flush(&self, id: TableId) -> Result<()> {
        self.table(id).map(|_| ())
    }

    /// Flushes every table and syncs the commitlog.
    pub fn drain(&self) -> Result<()> {
        Ok(())
    }

    /// Counters for tablestats.
    pub fn table_stats(&self, id: TableId) -> Result<TableStats> {
        let table = self.table(id)?;
        let memtable = table.memtable.read();
        Ok(TableStats {
            memtable_partitions: memtable.len(),
            ..TableStats::default()
        })
    }

    /// Number of partitions stored (estimate for statistics).
    pub fn partition_count(&self, id: TableId) -> Result<usize> {
        Ok(self.table(id)?.memtable.read().len())
    }
}

type Pos = (i64, Bytes);

/// The lowest position within a token: the empty key is never stored.
fn first_of(token: i64) -> Pos {
    (token, Bytes::new())
}

fn start_bound(b: &TokenBound) -> Option<Bound<Pos>> {
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

fn end_bound(b: &TokenBound) -> Option<Bound<Pos>> {
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
fn range_is_valid(lo: &Bound<Pos>, hi: &Bound<Pos>) -> bool {
    match (lo, hi) {
        (Bound::Included(a), Bound::Included(b)) => a <= b,
        (Bound::Included(a), Bound::Excluded(b)) | (Bound::Excluded(a), Bound::Included(b)) => {
            a < b
        }
        (Bound::Excluded(a), Bound::Excluded(b)) => a < b,
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::Cell;
    use crate::clustering::ClusteringKey;
    use crate::row::Row;
    use varve_types::CqlType;

    fn storage_with_keys(keys: &[&str]) -> (Storage, Vec<PartitionKey>) {
        let s = Storage::new();
        let cmp = ClusteringComparator::new(vec![(CqlType::Int, false)]);
        s.create_table(1, cmp.clone());
        let mut pks = Vec::new();
        for k in keys {
            let pk = PartitionKey::new(Bytes::copy_from_slice(k.as_bytes()));
            let mut p = Partition::default();
            let mut row = Row::default();
            row.cells
                .insert((1, None), Cell::live(1, Bytes::from_static(b"v")));
            p.rows.insert(
                ClusteringKey::row(vec![Bytes::from_static(&[0, 0, 0, 1])], &cmp),
                row,
            );
            s.apply(1, &pk, p).unwrap();
            pks.push(pk);
        }
        pks.sort();
        (s, pks)
    }

    #[test]
    fn scan_is_in_token_order_and_pages_after_key() {
        let (s, pks) = storage_with_keys(&["a", "b", "c", "d", "e"]);
        let all = s
            .scan_keys(1, &TokenBound::Unbounded, &TokenBound::Unbounded, 100)
            .unwrap();
        assert_eq!(all, pks);
        let rest = s
            .scan_keys(
                1,
                &TokenBound::AfterKey(pks[1].clone()),
                &TokenBound::Unbounded,
                100,
            )
            .unwrap();
        assert_eq!(rest, pks[2..].to_vec());
    }

    #[test]
    fn token_bounds_are_respected() {
        let (s, pks) = storage_with_keys(&["a", "b", "c", "d", "e"]);
        let t = pks[2].token;
        let after = s
            .scan_keys(
                1,
                &TokenBound::TokenExclusive(t),
                &TokenBound::Unbounded,
                100,
            )
            .unwrap();
        assert_eq!(after, pks[3..].to_vec());
        let upto = s
            .scan_keys(
                1,
                &TokenBound::Unbounded,
                &TokenBound::TokenInclusive(t),
                100,
            )
            .unwrap();
        assert_eq!(upto, pks[..3].to_vec());
        let none = s
            .scan_keys(
                1,
                &TokenBound::TokenExclusive(t),
                &TokenBound::TokenExclusive(t),
                100,
            )
            .unwrap();
        assert!(none.is_empty());
    }

    #[test]
    fn truncate_empties_the_table() {
        let (s, _) = storage_with_keys(&["a", "b"]);
        s.truncate(1).unwrap();
        assert_eq!(s.partition_count(1).unwrap(), 0);
    }
}
