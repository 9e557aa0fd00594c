//! The node's chunk cache (cassandra.yaml `file_cache_size`): decompressed
//! data chunks and index spans of open sstables, within a byte budget.
//!
//! A block is checked (CRC) when it enters the cache and served from it
//! without another check, as in Cassandra's chunk cache.
//!
//! Each open file has a [`BlockTable`]: one slot per chunk (or per index
//! span of its summary), found by the chunk's number with no hashing. A hit
//! takes the slot's read lock (a line no other core touches unless it reads
//! the same block) and counts itself on this thread's stripe of the hit
//! counter; no lock, map or counter shared by all reads. The node-wide
//! [`BlockCache`] keeps the budget and evicts after S3-FIFO (see `evict`):
//! new blocks pass through a small queue, and only those read again reach
//! the main one, so a scan of blocks read once does not push out what is
//! hot. Inserts and evictions take one lock; hits take none. See
//! docs/design/read-path-io.md, "The chunk cache".

use crate::striped::StripedCounter;
use bytes::Bytes;
use evict::Queues;
use parking_lot::Mutex;
use parking_lot::{MappedRwLockReadGuard, RwLock, RwLockReadGuard};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

/// Cassandra's default `file_cache_size`.
pub const DEFAULT_FILE_CACHE_BYTES: u64 = 512 << 20;

/// What an entry costs beyond its bytes: the `Arc` around the block, the
/// `Bytes` header and its shared allocation's control block, and its place
/// in the eviction queue (rounded up to allocator size classes).
pub const ENTRY_OVERHEAD_BYTES: u64 = 128;

/// The largest block the cache takes; larger reads (a huge index span) are
/// served without it.
pub const MAX_CACHED_BLOCK_BYTES: usize = 16 << 20;

/// Dead places the eviction queues may carry (blocks of closed files, slots
/// emptied) beyond twice the live entries before they are swept.
pub const QUEUE_SLACK: usize = 1024;

/// Counters of the cache, for `nodetool info` and metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BlockCacheStats {
    pub entries: u64,
    /// Bytes the entries weigh (their lengths plus overheads).
    pub bytes: u64,
    pub capacity_bytes: u64,
    pub hits: u64,
    pub misses: u64,
    /// Memory of the open files' slot tables (one slot per chunk and per
    /// index span, cached or not): outside the budget, it grows with the
    /// data on disk.
    pub slot_bytes: u64,
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

/// The chunk cache: the budget, the counters and the eviction queues shared
/// by every file's [`BlockTable`]. `capacity` 0 turns it off: every lookup
/// misses and nothing is kept.
pub struct BlockCache {
    capacity: AtomicU64,
    /// Weight of the blocks held; changed under `queue`'s lock, or by a
    /// table that is dropped (whose blocks no one else can reach).
    used: AtomicU64,
    entries: AtomicU64,
    /// Memory of the slot tables of open files.
    slot_bytes: AtomicU64,
    hits: StripedCounter,
    misses: StripedCounter,
    queue: Mutex<Queues>,
}

/// One chunk's (or span's) slot.
#[derive(Default)]
struct Slot {
    block: RwLock<Option<Arc<Bytes>>>,
    /// Read since it last reached the front of its queue.
    referenced: AtomicBool,
    /// A place for this slot is in a queue (set and cleared under the
    /// queues' lock).
    queued: AtomicBool,
    /// When its block was last evicted from the small queue unread (see
    /// `evict`; 0: never, or forgotten).
    ghost: AtomicU32,
}

struct Slots {
    cache: Arc<BlockCache>,
    slots: Box<[Slot]>,
}

/// The cached blocks of one file: slot `i` holds block `i` (a chunk's
/// number, or an index span's). Dropping the table gives its bytes back to
/// the budget.
pub struct BlockTable(Arc<Slots>);

/// A block served from the cache, borrowed for one lookup (a read lock on
/// its slot: an eviction of that slot waits for it).
pub struct CachedBlock<'a>(MappedRwLockReadGuard<'a, Bytes>);

impl std::fmt::Debug for CachedBlock<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self, f)
    }
}

impl std::ops::Deref for CachedBlock<'_> {
    type Target = Bytes;

    fn deref(&self) -> &Bytes {
        &self.0
    }
}

fn weight_of(block: &Bytes) -> u64 {
    block.len() as u64 + ENTRY_OVERHEAD_BYTES
}

impl BlockCache {
    /// A cache of `capacity` bytes.
    pub fn new(capacity: u64) -> Self {
        BlockCache {
            capacity: AtomicU64::new(capacity),
            used: AtomicU64::new(0),
            entries: AtomicU64::new(0),
            slot_bytes: AtomicU64::new(0),
            hits: StripedCounter::default(),
            misses: StripedCounter::default(),
            queue: Mutex::new(Queues::default()),
        }
    }

    /// Whether the cache keeps anything.
    pub fn enabled(&self) -> bool {
        self.capacity.load(Ordering::Relaxed) > 0
    }

    /// Changes the budget; blocks are evicted at once to fit it. 0 turns
    /// the cache off and empties it.
    pub fn set_capacity(&self, capacity: u64) {
        let mut queue = self.queue.lock();
        self.capacity.store(capacity, Ordering::Relaxed);
        self.evict_to(&mut queue, capacity);
    }

    pub fn stats(&self) -> BlockCacheStats {
        BlockCacheStats {
            entries: self.entries.load(Ordering::Relaxed),
            bytes: self.used.load(Ordering::Relaxed),
            capacity_bytes: self.capacity.load(Ordering::Relaxed),
            hits: self.hits.get(),
            misses: self.misses.get(),
            slot_bytes: self.slot_bytes.load(Ordering::Relaxed),
        }
    }

    /// Places in the eviction queues (live or not), for tests.
    #[cfg(test)]
    fn queue_len(&self) -> usize {
        self.queue.lock().len()
    }

    /// Empties a slot, giving its weight back.
    fn release(&self, slot: &Slot) {
        if let Some(block) = slot.block.write().take() {
            self.used.fetch_sub(weight_of(&block), Ordering::Relaxed);
            self.entries.fetch_sub(1, Ordering::Relaxed);
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

impl BlockTable {
    /// A table of `len` slots in `cache`.
    pub fn new(cache: &Arc<BlockCache>, len: usize) -> Self {
        let slots: Box<[Slot]> = (0..len.min(u32::MAX as usize))
            .map(|_| Slot::default())
            .collect();
        cache
            .slot_bytes
            .fetch_add(slots_bytes(&slots), Ordering::Relaxed);
        BlockTable(Arc::new(Slots {
            cache: cache.clone(),
            slots,
        }))
    }

    /// Whether the node's cache keeps anything.
    pub fn enabled(&self) -> bool {
        self.0.cache.enabled()
    }

    /// Block `i`, when cached (counted as a hit or a miss): borrowed
    /// while the returned guard lives, with no reference count taken
    /// (clone the `Bytes` to keep it longer).
    #[inline]
    pub fn get(&self, i: usize) -> Option<CachedBlock<'_>> {
        let cache = &self.0.cache;
        if !cache.enabled() {
            return None;
        }
        let slot = self.0.slots.get(i)?;
        let Ok(guard) = RwLockReadGuard::try_map(slot.block.read(), |b| b.as_deref()) else {
            cache.misses.inc();
            return None;
        };
        // Written only when it changes, so that a hot block's line stays
        // shared between cores.
        if !slot.referenced.load(Ordering::Relaxed) {
            slot.referenced.store(true, Ordering::Relaxed);
        }
        cache.hits.inc();
        Some(CachedBlock(guard))
    }

    /// Keeps block `i` (already checked by the caller), evicting others as
    /// the budget requires. A block over [`MAX_CACHED_BLOCK_BYTES`] or the
    /// whole budget is not kept, nor one whose slot is already filled.
    pub fn insert(&self, i: usize, block: Bytes) {
        let cache = &self.0.cache;
        let Some(slot) = self.0.slots.get(i) else {
            return;
        };
        let weight = weight_of(&block);
        if block.len() > MAX_CACHED_BLOCK_BYTES {
            return;
        }
        let mut queues = cache.queue.lock();
        let capacity = cache.capacity.load(Ordering::Relaxed);
        if weight > capacity || slot.block.read().is_some() {
            return;
        }
        cache.evict_to(&mut queues, capacity - weight);
        slot.referenced.store(false, Ordering::Relaxed);
        *slot.block.write() = Some(Arc::new(block));
        cache.used.fetch_add(weight, Ordering::Relaxed);
        cache.entries.fetch_add(1, Ordering::Relaxed);
        if !slot.queued.swap(true, Ordering::Relaxed) {
            let window = cache.entries.load(Ordering::Relaxed);
            queues.admit(slot, (Arc::downgrade(&self.0), i as u32), weight, window);
        }
        cache.sweep_if_sparse(&mut queues);
    }

    /// Drops every block of this table (they were cached under a weaker
    /// check than reads now ask for).
    pub fn clear(&self) {
        let _queue = self.0.cache.queue.lock();
        for slot in self.0.slots.iter() {
            self.0.cache.release(slot);
        }
    }
}

impl Drop for Slots {
    fn drop(&mut self) {
        // No other reference to the slots exists: the queue's are weak and
        // no longer upgrade, so this needs no lock.
        for slot in self.slots.iter() {
            self.cache.release(slot);
        }
        self.cache
            .slot_bytes
            .fetch_sub(slots_bytes(&self.slots), Ordering::Relaxed);
    }
}

fn slots_bytes(slots: &[Slot]) -> u64 {
    std::mem::size_of_val(slots) as u64
}

mod evict;
#[cfg(test)]
mod tests;
