//! Tests of the chunk cache: hits and misses, the budget, eviction order,
//! closed files, and a model test under random operations.

use super::evict::SMALL_QUEUE_PERCENT;
use super::*;
use proptest::prelude::*;
use std::collections::HashMap;

fn block(len: usize, fill: u8) -> Bytes {
    Bytes::from(vec![fill; len])
}

#[test]
fn a_block_comes_back_until_evicted_and_counts_hits_and_misses() {
    let cache = Arc::new(BlockCache::new(1 << 20));
    let table = BlockTable::new(&cache, 4);
    assert!(table.get(2).is_none());
    table.insert(2, Bytes::from_static(b"abc"));
    assert_eq!(table.get(2).as_deref(), Some(&Bytes::from_static(b"abc")));
    let s = cache.stats();
    assert_eq!((s.hits, s.misses, s.entries), (1, 1, 1));
    assert_eq!(s.bytes, 3 + ENTRY_OVERHEAD_BYTES);
    assert_eq!(s.hit_rate(), 0.5);
}

#[test]
fn tables_do_not_share_slots() {
    let cache = Arc::new(BlockCache::new(1 << 20));
    let (a, b) = (BlockTable::new(&cache, 2), BlockTable::new(&cache, 2));
    a.insert(0, Bytes::from_static(b"a"));
    assert!(b.get(0).is_none(), "another file's block");
    assert_eq!(a.get(0).as_deref(), Some(&Bytes::from_static(b"a")));
}

#[test]
fn a_slot_past_the_table_is_never_kept() {
    let cache = Arc::new(BlockCache::new(1 << 20));
    let table = BlockTable::new(&cache, 2);
    table.insert(2, Bytes::from_static(b"x"));
    assert!(table.get(2).is_none());
    assert_eq!(cache.stats().entries, 0);
}

#[test]
fn capacity_zero_keeps_nothing() {
    let cache = Arc::new(BlockCache::new(0));
    let table = BlockTable::new(&cache, 2);
    assert!(!cache.enabled());
    table.insert(1, Bytes::from_static(b"a"));
    assert!(table.get(1).is_none());
    assert_eq!(cache.stats().entries, 0);
    assert_eq!(cache.stats().misses, 0, "a disabled cache counts nothing");
}

#[test]
fn blocks_at_the_size_limit_are_kept_and_larger_ones_are_not() {
    let cache = Arc::new(BlockCache::new(64 << 20));
    let table = BlockTable::new(&cache, 2);
    let at = block(MAX_CACHED_BLOCK_BYTES, 1);
    let over = block(MAX_CACHED_BLOCK_BYTES + 1, 2);
    table.insert(0, at.clone());
    table.insert(1, over);
    assert_eq!(table.get(0).as_deref(), Some(&at));
    assert!(table.get(1).is_none());
}

#[test]
fn a_block_of_the_whole_budget_fits_and_one_byte_more_does_not() {
    let cache = Arc::new(BlockCache::new(1000 + ENTRY_OVERHEAD_BYTES));
    let table = BlockTable::new(&cache, 2);
    table.insert(0, block(1001, 1));
    assert!(table.get(0).is_none());
    table.insert(1, block(1000, 1));
    assert_eq!(table.get(1).map(|b| b.len()), Some(1000));
}

#[test]
fn shrinking_the_capacity_evicts_to_fit() {
    let cache = Arc::new(BlockCache::new(8 << 20));
    let table = BlockTable::new(&cache, 400);
    for i in 0..400 {
        table.insert(i, block(16384, 0));
    }
    cache.set_capacity(1 << 20);
    assert!(cache.stats().bytes <= 1 << 20, "{:?}", cache.stats());
    cache.set_capacity(0);
    assert_eq!(cache.stats().entries, 0);
    assert_eq!(cache.stats().bytes, 0);
    assert!(!cache.enabled());
}

#[test]
fn a_block_read_again_outlives_blocks_read_once() {
    // Room for four blocks: 0 is read after it came in, 1-3 are not.
    let cache = Arc::new(BlockCache::new(4 * (100 + ENTRY_OVERHEAD_BYTES)));
    let table = BlockTable::new(&cache, 16);
    for i in 0..4 {
        table.insert(i, block(100, i as u8));
    }
    assert!(table.get(0).is_some());
    // A scan of new blocks: each pushes out the oldest block not read
    // since it came in, never block 0.
    for i in 4..7 {
        table.insert(i, block(100, i as u8));
        assert!(table.get(0).is_some(), "the hot block was evicted at {i}");
    }
    assert!(table.get(1).is_none(), "the oldest cold block is gone");
    assert_eq!(cache.stats().entries, 4);
}

#[test]
fn a_closed_file_gives_its_bytes_back_and_its_places_are_swept() {
    let cache = Arc::new(BlockCache::new(1 << 30));
    let keep = BlockTable::new(&cache, 1);
    keep.insert(0, block(10, 1));
    for _ in 0..8 {
        let table = BlockTable::new(&cache, QUEUE_SLACK);
        for i in 0..QUEUE_SLACK {
            table.insert(i, block(10, 2));
        }
        drop(table);
        assert_eq!(cache.stats().entries, 1);
        assert_eq!(cache.stats().bytes, 10 + ENTRY_OVERHEAD_BYTES);
    }
    // Nothing was evicted (the budget is large), yet the queue did not
    // keep the 8 closed files' places: at the last insert it held at most
    // twice the live entries (1 + QUEUE_SLACK) plus its slack.
    let bound = 2 * (1 + QUEUE_SLACK) + QUEUE_SLACK + 1;
    assert!(
        cache.queue_len() <= bound,
        "{} > {bound}",
        cache.queue_len()
    );
    assert!(keep.get(0).is_some());
}

#[test]
fn clearing_a_table_drops_its_blocks_and_they_can_come_back() {
    let cache = Arc::new(BlockCache::new(1 << 20));
    let table = BlockTable::new(&cache, 4);
    table.insert(1, block(5, 1));
    table.clear();
    assert!(table.get(1).is_none());
    assert_eq!(cache.stats().bytes, 0);
    table.insert(1, block(5, 2));
    assert_eq!(table.get(1).map(|b| b[0]), Some(2));
    assert_eq!(cache.queue_len(), 1, "one place per slot");
}

#[test]
fn readers_and_writers_on_many_threads_see_only_what_was_stored() {
    let cache = Arc::new(BlockCache::new(64 * (256 + ENTRY_OVERHEAD_BYTES)));
    let table = Arc::new(BlockTable::new(&cache, 256));
    let threads: Vec<_> = (0..4u8)
        .map(|t| {
            let table = table.clone();
            std::thread::spawn(move || {
                for n in 0..20_000usize {
                    let i = (n * 7 + t as usize * 13) % 256;
                    match table.get(i) {
                        Some(b) => assert!(b.iter().all(|x| *x == i as u8), "slot {i}"),
                        None => table.insert(i, block(256, i as u8)),
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let s = cache.stats();
    assert!(s.bytes <= s.capacity_bytes, "{s:?}");
    assert_eq!(s.bytes, s.entries * (256 + ENTRY_OVERHEAD_BYTES));
    assert_eq!(s.hits + s.misses, 4 * 20_000);
}

/// An operation of the model test.
#[derive(Debug, Clone)]
enum Op {
    Insert {
        table: usize,
        slot: usize,
        len: usize,
    },
    Get {
        table: usize,
        slot: usize,
    },
    Resize(u64),
    Reopen(usize),
    Clear(usize),
}

fn op() -> impl Strategy<Value = Op> {
    let len = prop_oneof![1usize..64, 4096usize..20_000, Just(16384usize)];
    prop_oneof![
        6 => (0usize..4, 0usize..64, len)
            .prop_map(|(table, slot, len)| Op::Insert { table, slot, len }),
        6 => (0usize..4, 0usize..64).prop_map(|(table, slot)| Op::Get { table, slot }),
        1 => (0u64..(2 << 20)).prop_map(Op::Resize),
        1 => (0usize..4).prop_map(Op::Reopen),
        1 => (0usize..4).prop_map(Op::Clear),
    ]
}

/// The block stored in a slot: its bytes name the table's generation and
/// the slot, so a wrong block served is caught.
fn block_for(generation: usize, slot: usize, len: usize) -> Bytes {
    let mut v = vec![(generation * 31 + slot) as u8; len];
    v[0] = generation as u8;
    Bytes::from(v)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// Under random inserts, gets, resizes, closed files and cleared
    /// tables: the cache never weighs more than its budget, never serves a
    /// block it was not given for that slot of that file, and its weight
    /// and entry count agree with the blocks its tables hold.
    #[test]
    fn the_cache_stays_within_its_budget(ops in proptest::collection::vec(op(), 1..400)) {
        let cache = Arc::new(BlockCache::new(1 << 20));
        let mut generation = 0usize;
        let mut tables: Vec<(usize, BlockTable)> =
            (0..4).map(|_| { generation += 1; (generation, BlockTable::new(&cache, 64)) }).collect();
        let mut given: HashMap<(usize, usize), Bytes> = HashMap::new();
        for op in ops {
            match op {
                Op::Insert { table, slot, len } => {
                    let (g, t) = &tables[table];
                    if t.get(slot).is_none() {
                        let b = block_for(*g, slot, len);
                        t.insert(slot, b.clone());
                        given.insert((*g, slot), b);
                    }
                }
                Op::Get { table, slot } => {
                    let (g, t) = &tables[table];
                    if let Some(b) = t.get(slot) {
                        prop_assert_eq!(Some(&*b), given.get(&(*g, slot)), "a block served for the wrong slot");
                    }
                }
                Op::Resize(c) => cache.set_capacity(c),
                Op::Reopen(table) => {
                    generation += 1;
                    tables[table] = (generation, BlockTable::new(&cache, 64));
                }
                Op::Clear(table) => tables[table].1.clear(),
            }
            let s = cache.stats();
            prop_assert!(s.bytes <= s.capacity_bytes, "{:?}", s);
            let held: Vec<u64> = tables
                .iter()
                .flat_map(|(_, t)| t.0.slots.iter())
                .filter_map(|slot| slot.block.read().as_ref().map(|b| weight_of(b)))
                .collect();
            prop_assert_eq!(held.iter().sum::<u64>(), s.bytes);
            prop_assert_eq!(held.len() as u64, s.entries);
        }
    }
}

#[test]
fn a_block_read_again_after_leaving_the_small_queue_goes_to_the_main_one() {
    // Room for ten blocks; the small queue's share is less than one.
    let cache = Arc::new(BlockCache::new(10 * (100 + ENTRY_OVERHEAD_BYTES)));
    let table = BlockTable::new(&cache, 100);
    let scan = |from: usize| {
        for i in from..from + 20 {
            table.insert(i, block(100, 1));
        }
    };
    // Block 0 is read again (while it is cached) and reaches the main
    // queue; block 1 is read again only after it left: its ghost sends it
    // to the main queue too.
    table.insert(0, block(100, 0));
    table.insert(1, block(100, 1));
    assert!(table.get(0).is_some());
    // The cache fills at block 17; block 18 pushes 0 to the main queue and
    // 1 out; five more evictions follow.
    for i in 10..24 {
        table.insert(i, block(100, 1));
    }
    assert!(table.get(1).is_none(), "block 1 left unread");
    table.insert(1, block(100, 1));
    // A long scan of blocks read once passes through the small queue and
    // leaves both in place.
    scan(40);
    scan(70);
    assert!(table.get(0).is_some(), "the block read twice was evicted");
    assert!(
        table.get(1).is_some(),
        "the block reread after its eviction was evicted"
    );
    assert!(table.get(41).is_none(), "a block of the scan stayed");
    let s = cache.stats();
    assert!(s.bytes <= s.capacity_bytes, "{s:?}");
}

#[test]
fn a_block_reinserted_long_after_its_eviction_starts_over_in_the_small_queue() {
    let cache = Arc::new(BlockCache::new(10 * (100 + ENTRY_OVERHEAD_BYTES)));
    let table = BlockTable::new(&cache, 300);
    table.insert(0, block(100, 0));
    // Evicted unread, then 200 other blocks evicted unread: more than the
    // main queue's places, so its ghost is forgotten.
    for i in 1..=200 {
        table.insert(i, block(100, 1));
    }
    table.insert(0, block(100, 0));
    for i in 201..=220 {
        table.insert(i, block(100, 1));
    }
    assert!(
        table.get(0).is_none(),
        "an old ghost still sent it to the main queue"
    );
}

#[test]
fn slot_tables_are_reported_while_their_files_are_open() {
    let cache = Arc::new(BlockCache::new(1 << 20));
    let a = BlockTable::new(&cache, 1000);
    let b = BlockTable::new(&cache, 10);
    let per_slot = std::mem::size_of::<Slot>() as u64;
    assert_eq!(
        per_slot, 24,
        "README \"Sizing memory\" counts 24 bytes a slot"
    );
    assert_eq!(cache.stats().slot_bytes, 1010 * per_slot);
    a.insert(3, block(10, 1));
    drop(a);
    assert_eq!(cache.stats().slot_bytes, 10 * per_slot);
    assert_eq!(cache.stats().bytes, 0);
    drop(b);
    assert_eq!(cache.stats().slot_bytes, 0);
}

/// Leaves `dead` places of a closed file in the queue, then inserts one
/// block of another file: the queue's length after that insert.
fn queue_after_dead_places(dead: usize) -> usize {
    let cache = Arc::new(BlockCache::new(1 << 30));
    let closed = BlockTable::new(&cache, dead);
    for i in 0..dead {
        closed.insert(i, block(1, 0));
    }
    drop(closed);
    let open = BlockTable::new(&cache, 1);
    open.insert(0, block(1, 0));
    cache.queue_len()
}

#[test]
fn the_queue_is_swept_once_its_dead_places_pass_the_live_ones_by_the_slack() {
    // After the insert one block is live: the sweep runs when the places
    // pass twice that plus the slack, i.e. when dead places pass 1 + slack.
    assert_eq!(
        queue_after_dead_places(QUEUE_SLACK + 1),
        QUEUE_SLACK + 2,
        "N: kept"
    );
    assert_eq!(queue_after_dead_places(QUEUE_SLACK + 2), 1, "N + 1: swept");
}

/// A cache of 100 blocks (the small queue's share is 10 of them), full of
/// blocks of which the first `read` were read again; then one more block
/// comes in. Which of blocks 0 and `read` are still cached.
fn after_one_insert(read: usize) -> (bool, bool) {
    let w = 100 + ENTRY_OVERHEAD_BYTES;
    let cache = Arc::new(BlockCache::new(100 * w));
    assert_eq!(
        100 * w / 100 * SMALL_QUEUE_PERCENT,
        10 * w,
        "the share is 10 blocks"
    );
    let table = BlockTable::new(&cache, 101);
    for i in 0..100 {
        table.insert(i, block(100, 0));
    }
    for i in 0..read {
        assert!(table.get(i).is_some());
    }
    table.insert(100, block(100, 0));
    let kept = |i: usize| table.get(i).is_some();
    (kept(0), kept(read))
}

#[test]
fn the_small_queue_gives_way_to_the_main_one_at_its_share() {
    // 90 read: they move to the main queue, leaving the small one at its
    // share (10 blocks), so the main queue's front (block 0) makes room.
    assert_eq!(after_one_insert(90), (false, true), "N: at the share");
    // 89 read: the small queue still holds 11 when block 89, unread,
    // reaches its front, and that block leaves.
    assert_eq!(after_one_insert(89), (true, false), "N + 1: over the share");
}
