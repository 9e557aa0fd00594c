//! When memtables reach the disk, and what a flush leaves running: a
//! keyspace with `durable_writes = false` bypasses the commitlog; memory
//! over the node's budget flushes the largest memtable; a commitlog over
//! its space flushes every table so its segments can go; and writes and
//! reads carry on while a flush is stuck writing its sstable.

mod common;

use bytes::Bytes;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};
use varve_storage::fs::{Fs, PageCache, ReadFile, WriteFile};
use varve_storage::fs_sim::SimFs;
use varve_storage::*;

const DURABLE: TableId = 1;
const NOT_DURABLE: TableId = 2;
/// How long a test waits for the background flusher before it fails
/// (it normally takes milliseconds; this only bounds a broken run).
const BACKGROUND_DEADLINE: Duration = Duration::from_secs(30);
/// The memtable budget of the hard-limit tests: small, so the limit is
/// reached with little data.
const BUDGET: usize = 64 * 1024;

fn table(id: TableId, durable_writes: bool) -> TableDescriptor {
    TableDescriptor {
        keyspace: format!("ks{id}"),
        durable_writes,
        ..common::table(id, ClusteringComparator::new(Vec::new()))
    }
}

/// A partition of one static cell holding `value`, written at `timestamp`.
fn update(value: Bytes, timestamp: i64) -> Partition {
    let mut row = Row::default();
    row.cells.insert((0, None), Cell::live(timestamp, value));
    Partition {
        static_row: Some(row),
        ..Partition::default()
    }
}

fn key(k: u32) -> PartitionKey {
    PartitionKey::new(Bytes::from(format!("key{k}")))
}

/// Writes keys `keys` of `id`, each with a value of `bytes` bytes, at
/// timestamp 1.
fn write(s: &Storage, id: TableId, keys: std::ops::Range<u32>, bytes: usize) {
    write_at(s, id, keys, bytes, 1);
}

fn write_at(s: &Storage, id: TableId, keys: std::ops::Range<u32>, bytes: usize, timestamp: i64) {
    for k in keys {
        let value = Bytes::from(vec![(k % 251) as u8; bytes]);
        s.apply(id, &key(k), update(value, timestamp))
            .expect("apply");
    }
}

/// The value stored under `k` in `id`, if any.
fn read(s: &Storage, id: TableId, k: u32) -> Option<Bytes> {
    let all = [Slice::all(&ClusteringComparator::new(Vec::new()))];
    s.read_live(id, &key(k), &all, false, 0, 1)
        .expect("read")
        .and_then(|(p, _, _)| p.static_row)
        .and_then(|r| r.cells.values().next().map(|c| c.value.clone()))
}

fn count(s: &Storage, id: TableId, keys: std::ops::Range<u32>) -> usize {
    keys.filter(|&k| read(s, id, k).is_some()).count()
}

/// Bytes in the commitlog's files, as the process sees them.
fn commitlog_bytes(fs: &SimFs) -> u64 {
    let dir = Path::new("/commitlog");
    fs.list(dir)
        .expect("list the commitlog")
        .iter()
        .filter_map(|p| fs.lengths(p).map(|(now, _)| now))
        .sum()
}

/// Waits (up to [`BACKGROUND_DEADLINE`]) until `done` holds.
fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < BACKGROUND_DEADLINE,
            "still waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Writes to a keyspace with `durable_writes = false` add nothing to the
/// commitlog, so a power loss takes those not yet flushed (as in
/// Cassandra) while the durable table keeps every acknowledged write; a
/// drain flushes both.
#[test]
fn a_keyspace_without_durable_writes_skips_the_commitlog() {
    let fs = Arc::new(SimFs::new());
    let tables = || vec![table(DURABLE, true), table(NOT_DURABLE, false)];
    let open = |fs: &Arc<SimFs>| {
        Storage::open(common::options_on(fs.clone(), Clock::system()), tables()).expect("open")
    };
    let s = open(&fs);
    let before = commitlog_bytes(&fs);
    write(&s, NOT_DURABLE, 0..100, 200);
    assert_eq!(commitlog_bytes(&fs), before, "non-durable writes logged");
    write(&s, DURABLE, 0..100, 200);
    assert!(
        commitlog_bytes(&fs) >= before + 100 * 200,
        "durable writes are logged: {} -> {}",
        before,
        commitlog_bytes(&fs)
    );
    assert_eq!(count(&s, NOT_DURABLE, 0..100), 100, "served from memory");

    // Power loss before any flush: batch mode synced every durable write.
    let fs = Arc::new(fs.power_loss());
    drop(s);
    let s = open(&fs);
    assert_eq!(count(&s, DURABLE, 0..100), 100, "durable writes replayed");
    assert_eq!(
        count(&s, NOT_DURABLE, 0..100),
        0,
        "nothing to replay them from"
    );

    // A drain flushes the non-durable table too, so a restart keeps it.
    write(&s, NOT_DURABLE, 0..100, 200);
    s.drain().expect("drain");
    drop(s);
    let fs = Arc::new(fs.power_loss());
    let s = open(&fs);
    assert_eq!(count(&s, NOT_DURABLE, 0..100), 100, "flushed by the drain");
    assert_eq!(count(&s, DURABLE, 0..100), 100);
}

/// Past the node's memtable budget the background flusher writes the
/// largest memtable, not every one.
#[test]
fn memory_over_the_budget_flushes_the_largest_memtable() {
    let mut options = common::options(Clock::system());
    options.memtable_space_bytes = 256 * 1024;
    let s = Storage::open(
        options,
        vec![table(DURABLE, true), table(NOT_DURABLE, true)],
    )
    .expect("open");
    write(&s, NOT_DURABLE, 0..10, 1_000);
    write(&s, DURABLE, 0..100, 4_000);
    wait_for("a flush of the large table", || {
        !s.table_generations(DURABLE).expect("gens").is_empty()
    });
    assert!(
        s.table_generations(NOT_DURABLE).expect("gens").is_empty(),
        "the small memtable stays in memory"
    );
    assert_eq!(count(&s, DURABLE, 0..100), 100);
    assert_eq!(count(&s, NOT_DURABLE, 0..10), 10);
}

/// A commitlog over `commitlog_total_space` has every table flushed, even
/// one whose memtable is small, and its segments released.
#[test]
fn a_full_commitlog_flushes_every_table_and_releases_segments() {
    const SPACE: u64 = 256 * 1024;
    let fs = Arc::new(SimFs::new());
    let mut options = common::options_on(fs.clone(), Clock::system());
    options.commitlog.segment_size_bytes = 32 * 1024;
    options.commitlog_total_space_bytes = SPACE;
    let s = Storage::open(
        options,
        vec![table(DURABLE, true), table(NOT_DURABLE, true)],
    )
    .expect("open");
    write(&s, NOT_DURABLE, 0..5, 100);
    assert!(s.table_generations(NOT_DURABLE).expect("gens").is_empty());
    let mut k = 0;
    while commitlog_bytes(&fs) <= SPACE {
        write(&s, DURABLE, k..k + 10, 2_000);
        k += 10;
    }
    wait_for("both tables flushed", || {
        !s.table_generations(DURABLE).expect("gens").is_empty()
            && !s.table_generations(NOT_DURABLE).expect("gens").is_empty()
    });
    wait_for("the commitlog back under its space", || {
        commitlog_bytes(&fs) <= SPACE
    });
    assert_eq!(count(&s, DURABLE, 0..k), k as usize);
    assert_eq!(count(&s, NOT_DURABLE, 0..5), 5);
}

/// A switch that holds every sstable write until it is opened.
#[derive(Default)]
struct Gate {
    open: Mutex<bool>,
    opened: Condvar,
    /// Set once a write has been held.
    holding: AtomicBool,
}

impl Gate {
    fn pass(&self) {
        let mut open = self.open.lock().unwrap();
        while !*open {
            self.holding.store(true, Ordering::SeqCst);
            open = self.opened.wait(open).unwrap();
        }
    }
    fn release(&self) {
        *self.open.lock().unwrap() = true;
        self.opened.notify_all();
    }
}

/// The simulated file system, except that sstable writes wait at a gate.
struct GatedFs {
    fs: SimFs,
    gate: Arc<Gate>,
}

struct GatedFile {
    file: Box<dyn WriteFile>,
    gate: Arc<Gate>,
}

impl WriteFile for GatedFile {
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.gate.pass();
        self.file.write_all(buf)
    }
    fn sync(&mut self) -> io::Result<()> {
        self.gate.pass();
        self.file.sync()
    }
    fn len(&self) -> u64 {
        self.file.len()
    }
}

impl Fs for GatedFs {
    fn create(&self, path: &Path) -> io::Result<Box<dyn WriteFile>> {
        self.fs.create(path)
    }
    fn create_sequential(&self, path: &Path, cache: PageCache) -> io::Result<Box<dyn WriteFile>> {
        let file = self.fs.create_sequential(path, cache)?;
        if path.to_string_lossy().ends_with(".sst.tmp") {
            return Ok(Box::new(GatedFile {
                file,
                gate: self.gate.clone(),
            }));
        }
        Ok(file)
    }
    fn open_read(&self, path: &Path) -> io::Result<Box<dyn ReadFile>> {
        self.fs.open_read(path)
    }
    fn read_all(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.fs.read_all(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.fs.rename(from, to)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        self.fs.remove(path)
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        self.fs.list(dir)
    }
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.fs.create_dir_all(dir)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.fs.sync_dir(dir)
    }
    fn exists(&self, path: &Path) -> bool {
        self.fs.exists(path)
    }
}

/// While a flush is stuck writing its sstable, new writes are accepted
/// and acknowledged, and reads see both the memtable being flushed and
/// the new one; once the write goes through, the flush completes and
/// everything is still there.
#[test]
fn writes_and_reads_go_on_while_a_flush_is_stuck() {
    let (s, gate, flusher) = node_with_a_stuck_flush(1 << 30, 50, 300);
    write(&s, DURABLE, 50..100, 300);
    write_at(&s, DURABLE, 0..10, 7, 2); // overwrites of keys being flushed
    assert_eq!(count(&s, DURABLE, 0..100), 100, "both memtables are read");
    assert_eq!(
        read(&s, DURABLE, 3).map(|v| v.len()),
        Some(7),
        "newest wins"
    );
    assert!(
        s.table_generations(DURABLE).expect("gens").is_empty(),
        "the flush is still held"
    );
    assert!(!flusher.is_finished(), "the flush is still held");

    gate.release();
    flusher.join().expect("flush thread").expect("flush");
    assert_eq!(s.table_generations(DURABLE).expect("gens").len(), 1);
    assert_eq!(count(&s, DURABLE, 0..100), 100);
    assert_eq!(read(&s, DURABLE, 3).map(|v| v.len()), Some(7));
    assert_eq!(read(&s, DURABLE, 30).map(|v| v.len()), Some(300));
}

/// A node with a memtable budget of `budget` bytes whose first flush (of
/// keys `0..rows`, values of `bytes` bytes) is stuck at the gate, holding the
/// table's flush: later writes pile up in the new memtable, and nothing
/// can flush them until the gate opens. Returns the node, the gate and the
/// stuck flush.
fn node_with_a_stuck_flush(
    budget: usize,
    rows: u32,
    bytes: usize,
) -> (
    Arc<Storage>,
    Arc<Gate>,
    std::thread::JoinHandle<varve_storage::Result<()>>,
) {
    let gate = Arc::new(Gate::default());
    let mut options = common::options(Clock::system());
    options.fs = Arc::new(GatedFs {
        fs: SimFs::new(),
        gate: gate.clone(),
    });
    options.memtable_space_bytes = budget;
    let s = Arc::new(Storage::open(options, vec![table(DURABLE, true)]).expect("open"));
    write(&s, DURABLE, 0..rows, bytes);
    let flush = {
        let s = s.clone();
        std::thread::spawn(move || s.flush(DURABLE))
    };
    wait_for("the flush to reach its sstable write", || {
        gate.holding.load(Ordering::SeqCst)
    });
    (s, gate, flush)
}

/// Writes keys from `first` until the memtables are over the hard limit;
/// returns the next free key.
fn fill_past_the_hard_limit(s: &Storage, first: u32) -> u32 {
    let limit = s.memtable_hard_limit().expect("a durable node has a limit");
    let mut k = first;
    while s.memtable_bytes() <= limit {
        write(s, DURABLE, k..k + 1, 4_000);
        k += 1;
    }
    k
}

/// Past `MEMTABLE_HARD_LIMIT_FACTOR` times the budget a write waits for
/// flushes instead of growing the memtables: it is not applied while it
/// waits, and goes through once the flushes free memory.
#[test]
fn a_write_past_the_hard_limit_waits_for_a_flush() {
    let (s, gate, flush) = node_with_a_stuck_flush(BUDGET, 10, 100);
    let next = fill_past_the_hard_limit(&s, 100);
    let writer = {
        let s = s.clone();
        std::thread::spawn(move || {
            s.apply(DURABLE, &key(next), update(Bytes::from_static(b"late"), 1))
        })
    };
    wait_for("the write to wait", || s.writers_waiting_for_memory() == 1);
    assert_eq!(read(&s, DURABLE, next), None, "applied while waiting");
    assert!(!writer.is_finished());

    gate.release();
    flush.join().expect("flush thread").expect("flush");
    writer
        .join()
        .expect("writer thread")
        .expect("the write goes through");
    assert_eq!(read(&s, DURABLE, next).as_deref(), Some(&b"late"[..]));
    assert!(s.memtable_bytes() <= s.memtable_hard_limit().unwrap());
    assert_eq!(count(&s, DURABLE, 100..next), (next - 100) as usize);
}

/// A write that waits `MEMTABLE_FULL_WAIT` without memory coming back
/// fails with `MemtablesFull` naming the limit, and is not applied.
#[test]
fn a_write_that_waits_too_long_fails_unapplied() {
    let (s, gate, flush) = node_with_a_stuck_flush(BUDGET, 10, 100);
    let next = fill_past_the_hard_limit(&s, 100);
    let result = s.apply(DURABLE, &key(next), update(Bytes::from_static(b"late"), 1));
    match result {
        Err(Error::MemtablesFull {
            bytes,
            limit,
            factor,
            waited_ms,
        }) => {
            assert!(bytes > limit, "{bytes} {limit}");
            assert_eq!(
                factor,
                varve_storage::engine_memory::MEMTABLE_HARD_LIMIT_FACTOR
            );
            assert_eq!(limit, factor * BUDGET);
            let wait = varve_storage::engine_memory::MEMTABLE_FULL_WAIT;
            assert!(waited_ms >= wait.as_millis() as u64, "{waited_ms}");
        }
        other => panic!("not MemtablesFull: {other:?}"),
    }
    assert_eq!(
        read(&s, DURABLE, next),
        None,
        "a failed write is not applied"
    );
    assert_eq!(s.writers_waiting_for_memory(), 0);
    gate.release();
    flush.join().expect("flush thread").expect("flush");
}
