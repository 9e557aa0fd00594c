//! The memtable's memory estimate (what `memtable_heap_space` budgets)
//! against what the allocator really hands out, counted by a wrapping
//! global allocator: rows of the cassandra-stress shape (one row of five
//! 34-byte cells per partition), wide partitions, and collections.

use bytes::Bytes;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::sync::Arc;
use varve_storage::memtable::{estimate_bytes, Memtable};
use varve_storage::{Cell, ClusteringComparator, ClusteringKey, Partition, PartitionKey, Row};
use varve_types::CqlType;

/// Live heap bytes, each allocation rounded to the 16-byte size classes a
/// real allocator uses for small objects.
static LIVE: AtomicIsize = AtomicIsize::new(0);

struct Counting;

fn rounded(layout: Layout) -> isize {
    layout.size().next_multiple_of(16) as isize
}

// SAFETY: every call is forwarded unchanged to the system allocator.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(rounded(layout), Ordering::Relaxed);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(rounded(layout), Ordering::Relaxed);
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(
            new_size.next_multiple_of(16) as isize - rounded(layout),
            Ordering::Relaxed,
        );
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Rows written per measurement.
const UPDATES: usize = 20_000;

/// The counter is global: one measurement at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Fills a memtable with `n` updates from `make`; returns (bytes allocated
/// meanwhile and still live, the memtable's estimate).
fn measure(n: usize, make: impl Fn(usize) -> (PartitionKey, Partition)) -> (isize, usize) {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let memtable = Memtable::new();
    let before = LIVE.load(Ordering::Relaxed);
    for i in 0..n {
        let (key, update) = make(i);
        let size = estimate_bytes(&update);
        memtable.apply(&key, update, size);
    }
    let counted = LIVE.load(Ordering::Relaxed) - before;
    let estimated = memtable.bytes();
    drop(memtable);
    (counted, estimated)
}

fn value(i: usize, len: usize) -> Bytes {
    Bytes::from((0..len).map(|j| (i + j) as u8).collect::<Vec<u8>>())
}

/// A distinct 10-byte key per `i` (the cassandra-stress key length).
fn key(i: usize) -> PartitionKey {
    let mut k = vec![0u8; 2];
    k.extend_from_slice(&(i as u64).to_be_bytes());
    PartitionKey::new(Bytes::from(k))
}

fn assert_close(what: &str, (counted, estimated): (isize, usize)) {
    let ratio = estimated as f64 / counted as f64;
    let per_update = counted / UPDATES as isize;
    eprintln!(
        "{what}: estimated {estimated}, allocated {counted} ({per_update} bytes per row), \
         ratio {ratio:.2}"
    );
    assert!(
        (0.8..=1.3).contains(&ratio),
        "{what}: estimated {estimated} bytes, allocated {counted} (ratio {ratio:.2})"
    );
}

#[test]
fn stress_rows_are_budgeted_at_what_they_allocate() {
    let cmp = ClusteringComparator::new(Vec::new());
    assert_close(
        "one row of five 34-byte cells per partition",
        measure(UPDATES, |i| {
            let mut row = Row::default();
            for c in 0..5u32 {
                row.cells
                    .insert((c, None), Cell::live(1, value(i + c as usize, 34)));
            }
            let mut p = Partition::default();
            p.rows.insert(ClusteringKey::row(Vec::new(), &cmp), row);
            (key(i), p)
        }),
    );
}

#[test]
fn wide_partitions_are_budgeted_at_what_they_allocate() {
    let cmp: Arc<ClusteringComparator> = ClusteringComparator::new(vec![(CqlType::BigInt, false)]);
    assert_close(
        "rows of one 100-byte cell, 50 per partition",
        measure(UPDATES, |i| {
            let mut row = Row::default();
            row.cells.insert((0, None), Cell::live(1, value(i, 100)));
            let mut p = Partition::default();
            let ck = Bytes::from((i as i64).to_be_bytes().to_vec());
            p.rows.insert(ClusteringKey::row(vec![ck], &cmp), row);
            (key(i / 50), p)
        }),
    );
}

#[test]
fn wide_partitions_written_out_of_order_are_budgeted_at_what_they_allocate() {
    let cmp: Arc<ClusteringComparator> = ClusteringComparator::new(vec![(CqlType::BigInt, false)]);
    assert_close(
        "rows of one 100-byte cell, 50 per partition, out of clustering order",
        measure(UPDATES, |i| {
            let mut row = Row::default();
            row.cells.insert((0, None), Cell::live(1, value(i, 100)));
            let mut p = Partition::default();
            // 37 is prime to 50: a permutation of each partition's rows,
            // so its rows map turns into a tree past ROW_MAP_VEC_MAX.
            let ck = Bytes::from(((((i % 50) * 37) % 50) as i64).to_be_bytes().to_vec());
            p.rows.insert(ClusteringKey::row(vec![ck], &cmp), row);
            (key(i / 50), p)
        }),
    );
}
