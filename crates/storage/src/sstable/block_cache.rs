//! The node's chunk cache (cassandra.yaml `file_cache_size`): decompressed
//! data chunks and index blocks of open sstables, within a byte budget.
//!
//! A block is checked (CRC) when it enters the cache and served from it
//! without another check, as in Cassandra's chunk cache. Entries are keyed
//! by the sstable instance ([`BlockCache::new_file_id`], never reused), the
//! block's file offset and its length; a deleted sstable's entries are never
//! hit again and age out. Eviction is `quick_cache`'s: sharded, weighted by
//! bytes, and resistant to scans (a block read once does not push out one
//! read often). See docs/design/read-path-io.md.

use bytes::Bytes;
use std::sync::atomic::{AtomicU64, Ordering};

/// Cassandra's default `file_cache_size`.
pub const DEFAULT_FILE_CACHE_BYTES: u64 = 512 << 20;

/// What an entry costs beyond its bytes: the `Bytes` header and its shared
/// allocation's control block, the key, and its slot in the cache's map and
/// queues (measured with `quick_cache::sync::Cache::memory_used`, rounded up).
pub const ENTRY_OVERHEAD_BYTES: u64 = 128;

/// The largest block the cache takes; larger reads (a huge index span) are
/// served without it.
pub const MAX_CACHED_BLOCK_BYTES: usize = 16 << 20;

/// Which block of which sstable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BlockKey {
    pub file: u64,
    pub offset: u64,
    pub len: u32,
}

#[derive(Clone)]
struct ByLength;

impl quick_cache::Weighter<BlockKey, Bytes> for ByLength {
    fn weight(&self, _key: &BlockKey, value: &Bytes) -> u64 {
        value.len() as u64 + ENTRY_OVERHEAD_BYTES
    }
}

/// Counters of the cache, for `nodetool info` and metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BlockCacheStats {
    pub entries: u64,
    /// Bytes the entries weigh (their lengths plus overheads).
    pub bytes: u64,
    pub capacity_bytes: u64,
    pub hits: u64,
    pub misses: u64,
}

impl BlockCacheStats {
    /// Hits over requests (0 before the first request).
    pub fn hit_rate(&self) -> f64 {
        let requests = self.hits + self.misses;
        if requests == 0 {
            0.0
        } else {
            self.hits as f64 / requests as f64
        }
    }
}

/// The chunk cache. `capacity` 0 turns it off: every lookup misses and
/// nothing is kept.
pub struct BlockCache {
    cache: quick_cache::sync::Cache<BlockKey, Bytes, ByLength>,
    capacity: AtomicU64,
    hits: AtomicU64,
    misses: AtomicU64,
    next_file: AtomicU64,
}

impl BlockCache {
    /// A cache of `capacity` bytes.
    pub fn new(capacity: u64) -> Self {
        // quick_cache sizes its map for this many items; 16 KiB is the
        // default chunk.
        let items = (capacity / (16 << 10)).clamp(16, 1 << 22) as usize;
        BlockCache {
            cache: quick_cache::sync::Cache::with_weighter(items, capacity.max(1), ByLength),
            capacity: AtomicU64::new(capacity),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            next_file: AtomicU64::new(1),
        }
    }

    /// An id for a newly opened sstable's blocks.
    pub fn new_file_id(&self) -> u64 {
        self.next_file.fetch_add(1, Ordering::Relaxed)
    }

    /// Whether the cache keeps anything.
    pub fn enabled(&self) -> bool {
        self.capacity.load(Ordering::Relaxed) > 0
    }

    /// The block, when cached.
    pub fn get(&self, key: &BlockKey) -> Option<Bytes> {
        if !self.enabled() {
            return None;
        }
        let found = self.cache.get(key);
        let counter = if found.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    /// Keeps a block (already checked by the caller), evicting others as
    /// the budget requires. Blocks over [`MAX_CACHED_BLOCK_BYTES`], or over
    /// what one shard of the cache holds, are not kept.
    pub fn insert(&self, key: BlockKey, block: Bytes) {
        if !self.enabled() || block.len() > MAX_CACHED_BLOCK_BYTES {
            return;
        }
        self.cache.insert(key, block);
    }

    /// Changes the budget; entries are evicted at once to fit it. 0 turns
    /// the cache off and empties it.
    pub fn set_capacity(&self, capacity: u64) {
        self.capacity.store(capacity, Ordering::Relaxed);
        if capacity == 0 {
            self.cache.clear();
        }
        self.cache.set_capacity(capacity.max(1));
    }

    pub fn stats(&self) -> BlockCacheStats {
        BlockCacheStats {
            entries: self.cache.len() as u64,
            bytes: self.cache.weight(),
            capacity_bytes: self.capacity.load(Ordering::Relaxed),
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
        }
    }
}

impl Default for BlockCache {
    fn default() -> Self {
        BlockCache::new(DEFAULT_FILE_CACHE_BYTES)
    }
}

impl std::fmt::Debug for BlockCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockCache")
            .field("stats", &self.stats())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    fn key(file: u64, offset: u64, len: usize) -> BlockKey {
        BlockKey {
            file,
            offset,
            len: len as u32,
        }
    }

    #[test]
    fn a_block_comes_back_until_evicted_and_counts_hits_and_misses() {
        let cache = BlockCache::new(1 << 20);
        let k = key(cache.new_file_id(), 16, 3);
        assert_eq!(cache.get(&k), None);
        cache.insert(k, Bytes::from_static(b"abc"));
        assert_eq!(cache.get(&k).as_deref(), Some(&b"abc"[..]));
        let s = cache.stats();
        assert_eq!((s.hits, s.misses, s.entries), (1, 1, 1));
        assert_eq!(s.bytes, 3 + ENTRY_OVERHEAD_BYTES);
        assert_eq!(s.hit_rate(), 0.5);
    }

    #[test]
    fn file_ids_are_never_reused() {
        let cache = BlockCache::new(1 << 20);
        let a = cache.new_file_id();
        let b = cache.new_file_id();
        assert_ne!(a, b);
        cache.insert(key(a, 0, 1), Bytes::from_static(b"a"));
        assert_eq!(cache.get(&key(b, 0, 1)), None, "another file's block");
    }

    #[test]
    fn capacity_zero_keeps_nothing() {
        let cache = BlockCache::new(0);
        assert!(!cache.enabled());
        cache.insert(key(1, 0, 1), Bytes::from_static(b"a"));
        assert_eq!(cache.get(&key(1, 0, 1)), None);
        assert_eq!(cache.stats().entries, 0);
        assert_eq!(cache.stats().misses, 0, "a disabled cache counts nothing");
    }

    #[test]
    fn blocks_at_the_size_limit_are_kept_and_larger_ones_are_not() {
        let cache = BlockCache::new(64 << 20);
        let at = Bytes::from(vec![1u8; MAX_CACHED_BLOCK_BYTES]);
        let over = Bytes::from(vec![2u8; MAX_CACHED_BLOCK_BYTES + 1]);
        cache.insert(key(1, 0, at.len()), at.clone());
        cache.insert(key(1, 1, over.len()), over.clone());
        let kept = cache.get(&key(1, 0, at.len()));
        // A shard may be smaller than the limit, in which case quick_cache
        // refuses it too; the one over the limit is never kept.
        if cache.cache.shard_capacity() >= at.len() as u64 + ENTRY_OVERHEAD_BYTES {
            assert_eq!(kept, Some(at));
        }
        assert_eq!(cache.get(&key(1, 1, over.len())), None);
    }

    #[test]
    fn shrinking_the_capacity_evicts_to_fit() {
        let cache = BlockCache::new(8 << 20);
        for i in 0..400u64 {
            cache.insert(key(1, i * 16384, 16384), Bytes::from(vec![0u8; 16384]));
        }
        cache.set_capacity(1 << 20);
        assert!(cache.stats().bytes <= 1 << 20, "{:?}", cache.stats());
        cache.set_capacity(0);
        assert_eq!(cache.stats().entries, 0);
        assert!(!cache.enabled());
    }

    /// An operation of the model test.
    #[derive(Debug, Clone)]
    enum Op {
        Insert { file: u64, offset: u64, len: usize },
        Get { file: u64, offset: u64, len: usize },
        Resize(u64),
    }

    fn op() -> impl Strategy<Value = Op> {
        let len = prop_oneof![1usize..64, 4096usize..20_000, Just(16384usize)];
        prop_oneof![
            4 => (0u64..4, 0u64..64, len.clone())
                .prop_map(|(file, offset, len)| Op::Insert { file, offset, len }),
            4 => (0u64..4, 0u64..64, len).prop_map(|(file, offset, len)| Op::Get { file, offset, len }),
            1 => (0u64..(2 << 20)).prop_map(Op::Resize),
        ]
    }

    /// The block stored under a key: its bytes name the key, so a wrong
    /// block served for a key is caught.
    fn block_for(k: &BlockKey) -> Bytes {
        let mut v = vec![(k.file * 31 + k.offset) as u8; k.len as usize];
        v[0] = k.file as u8;
        Bytes::from(v)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Under random inserts, gets and resizes: the cache never weighs
        /// more than its budget, never serves a block it was not given for
        /// that key, and its weight agrees with its entries.
        #[test]
        fn the_cache_stays_within_its_budget(ops in proptest::collection::vec(op(), 1..400)) {
            let cache = BlockCache::new(1 << 20);
            let mut given: HashMap<BlockKey, Bytes> = HashMap::new();
            for op in ops {
                match op {
                    Op::Insert { file, offset, len } => {
                        let k = key(file, offset, len);
                        let b = block_for(&k);
                        cache.insert(k, b.clone());
                        given.insert(k, b);
                    }
                    Op::Get { file, offset, len } => {
                        let k = key(file, offset, len);
                        if let Some(b) = cache.get(&k) {
                            prop_assert_eq!(Some(&b), given.get(&k), "a block served for the wrong key");
                        }
                    }
                    Op::Resize(c) => cache.set_capacity(c),
                }
                let s = cache.stats();
                prop_assert!(s.bytes <= s.capacity_bytes.max(1), "{:?}", s);
                let weighed: u64 = cache
                    .cache
                    .iter()
                    .map(|(_, v)| v.len() as u64 + ENTRY_OVERHEAD_BYTES)
                    .sum();
                prop_assert_eq!(weighed, s.bytes);
            }
        }
    }
}
