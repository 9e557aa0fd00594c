//! The key cache: where recently read partitions start in each sstable, so
//! that a repeated point read skips the index block (Cassandra's key cache).
//!
//! An entry maps a partition's token to its place (stream position and
//! length); the key itself is not kept. The token is already a hash, so it
//! is its own hash in the map, and an entry holds no allocation. Two keys
//! with one token share an entry: the reader checks the key of what it
//! reads there and asks the index when it is another partition.
//!
//! Each sstable keeps its own map, but all of them draw on one byte budget
//! per node, a [`KeyCacheBudget`] the engine owns (cassandra.yaml's
//! `key_cache_size`, 100 MiB by default, Cassandra's default for a heap of
//! 2 GiB or more; see [`crate::sstable::NodeCaches`]). An
//! entry costs [`KEY_CACHE_ENTRY_BYTES`]. When the budget is spent, the
//! sstable that needs room drops all of its own entries and starts over;
//! if other sstables hold the whole budget, the key is simply not cached.
//! Dropping whole maps is cruder than Cassandra's LRU, but costs nothing
//! per hit, and a hot sstable refills its map from the reads that follow.

use crate::striped::StripedCounter;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The budget's default: Cassandra's `key_cache_size` default of
/// min(5% of the heap, 100 MiB) for any heap of 2 GiB or more.
pub const DEFAULT_KEY_CACHE_BYTES: u64 = 100 << 20;

/// What an entry costs: its token, position and length in a map slot, with
/// the map's spare room.
pub const KEY_CACHE_ENTRY_BYTES: u64 = 32;

/// Bytes of key cache the node may use, shared by all sstables.
pub struct KeyCacheBudget {
    capacity: AtomicU64,
    used: AtomicU64,
}

impl KeyCacheBudget {
    pub const fn new(capacity: u64) -> Self {
        KeyCacheBudget {
            capacity: AtomicU64::new(capacity),
            used: AtomicU64::new(0),
        }
    }

    /// Changes the capacity (0 turns the cache off); entries already held
    /// stay until their sstables need room.
    pub fn set_capacity(&self, bytes: u64) {
        self.capacity.store(bytes, Ordering::Relaxed);
    }

    pub fn capacity(&self) -> u64 {
        self.capacity.load(Ordering::Relaxed)
    }

    /// Bytes held by all caches now.
    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    /// Takes `cost` bytes if they fit.
    fn try_take(&self, cost: u64) -> bool {
        let capacity = self.capacity();
        self.used
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
                used.checked_add(cost).filter(|total| *total <= capacity)
            })
            .is_ok()
    }

    fn release(&self, bytes: u64) {
        self.used.fetch_sub(bytes, Ordering::Relaxed);
    }
}

/// One sstable's key cache.
pub struct KeyCache {
    budget: Arc<KeyCacheBudget>,
    inner: Mutex<Entries>,
    hits: StripedCounter,
}

#[derive(Default)]
struct Entries {
    map: HashMap<i64, (u64, u64), BuildHasherDefault<TokenHasher>>,
    /// Bytes taken from the budget for `map`.
    bytes: u64,
}

/// Hashes a token to itself (tokens are Murmur3 hashes already).
#[derive(Default)]
struct TokenHasher(u64);

impl Hasher for TokenHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `write_i64` is used; any other input is still mixed in.
        for b in bytes {
            self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn write_i64(&mut self, token: i64) {
        self.0 = token as u64;
    }
}

impl KeyCache {
    pub fn new(budget: Arc<KeyCacheBudget>) -> Self {
        KeyCache {
            budget,
            inner: Mutex::new(Entries::default()),
            hits: StripedCounter::default(),
        }
    }

    /// Where the partition of `token` last read starts, and its length.
    pub fn get(&self, token: i64) -> Option<(u64, u64)> {
        self.inner.lock().map.get(&token).copied()
    }

    /// Counts a read the cache served (the caller has checked the key).
    pub fn hit(&self) {
        self.hits.inc();
    }

    /// Remembers where the partition of `token` is (replacing another
    /// key's place for the same token), making room as the module doc says.
    pub fn insert(&self, token: i64, at: (u64, u64)) {
        let mut inner = self.inner.lock();
        if let Some(place) = inner.map.get_mut(&token) {
            *place = at;
            return;
        }
        let cost = KEY_CACHE_ENTRY_BYTES;
        if !self.budget.try_take(cost) {
            self.budget.release(inner.bytes);
            inner.map.clear();
            inner.bytes = 0;
            if !self.budget.try_take(cost) {
                return;
            }
        }
        inner.map.insert(token, at);
        inner.bytes += cost;
    }

    /// Keys held now.
    pub fn len(&self) -> usize {
        self.inner.lock().map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Reads served from the cache.
    pub fn hits(&self) -> u64 {
        self.hits.get()
    }
}

impl Drop for KeyCache {
    fn drop(&mut self) {
        self.budget.release(self.inner.get_mut().bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A budget of its own for each test.
    fn budget(entries: u64) -> Arc<KeyCacheBudget> {
        Arc::new(KeyCacheBudget::new(entries * KEY_CACHE_ENTRY_BYTES))
    }

    #[test]
    fn a_cache_holds_its_budget_and_starts_over_one_entry_past_it() {
        let budget = budget(3);
        let cache = KeyCache::new(budget.clone());
        for t in 0..3 {
            cache.insert(t, (t as u64, 1));
        }
        assert_eq!(cache.len(), 3, "N entries: all held");
        assert_eq!(budget.used(), budget.capacity());
        assert_eq!(cache.get(0), Some((0, 1)));
        cache.insert(0, (9, 9));
        assert_eq!(cache.get(0), Some((9, 9)), "a token's place is replaced");
        assert_eq!(budget.used(), budget.capacity(), "at no cost");
        cache.insert(3, (3, 1));
        assert_eq!(
            cache.len(),
            1,
            "N + 1: the cache starts over with the new token"
        );
        assert_eq!(cache.get(3), Some((3, 1)));
        assert_eq!(cache.get(1), None);
        assert_eq!(budget.used(), KEY_CACHE_ENTRY_BYTES);
        assert_eq!(cache.hits(), 0);
        cache.hit();
        assert_eq!(cache.hits(), 1);
    }

    #[test]
    fn caches_share_the_budget_and_give_it_back_when_dropped() {
        let budget = budget(2);
        let a = KeyCache::new(budget.clone());
        let b = KeyCache::new(budget.clone());
        a.insert(0, (0, 1));
        a.insert(1, (1, 1));
        b.insert(2, (2, 1));
        assert_eq!(
            (a.len(), b.len()),
            (2, 0),
            "a holds the whole budget: b caches nothing"
        );
        assert_eq!(b.get(2), None);
        a.insert(3, (3, 1));
        assert_eq!(a.len(), 1, "a full budget: a drops its own entries");
        b.insert(2, (2, 1));
        assert_eq!((a.len(), b.len()), (1, 1));
        drop(a);
        assert_eq!(budget.used(), KEY_CACHE_ENTRY_BYTES, "a's bytes are back");
        b.insert(4, (4, 1));
        assert_eq!(b.len(), 2);
    }

    #[test]
    fn a_zero_budget_caches_nothing() {
        let budget = budget(0);
        let cache = KeyCache::new(budget.clone());
        cache.insert(0, (0, 1));
        assert!(cache.is_empty());
        assert_eq!(budget.used(), 0);
    }

    /// Extreme tokens are distinct entries (the hasher is the identity).
    #[test]
    fn extreme_tokens_are_kept_apart() {
        let cache = KeyCache::new(budget(4));
        for (i, t) in [i64::MIN, -1, 0, i64::MAX].into_iter().enumerate() {
            cache.insert(t, (i as u64, 1));
        }
        for (i, t) in [i64::MIN, -1, 0, i64::MAX].into_iter().enumerate() {
            assert_eq!(cache.get(t), Some((i as u64, 1)));
        }
    }
}
