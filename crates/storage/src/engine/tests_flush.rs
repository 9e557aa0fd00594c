//! Engine-level tests of what a memtable flush tells the rest of the
//! engine: the compaction strategy hears of every flushed sstable
//! ([`crate::compaction::Strategy::on_flush`]), which UCS sizes its levels from;
//! and of what flushes and compactions ask of the file system (whether
//! their sstables are written through the page cache or around it).

use crate::cell::Cell;
use crate::clustering::ClusteringComparator;
use crate::commitlog::{CommitLogConfig, SyncMode};
use crate::compaction::{CommonOptions, CompactionConfig, StrategyOptions, UnifiedOptions};
use crate::engine::{Clock, PartitionKey, Storage, StorageOptions, TableDescriptor, TableId};
use crate::fs::{Fs, PageCache, ReadFile, ReadKind, SstableWrites, WriteFile};
use crate::fs_sim::SimFs;
use crate::partition::Partition;
use crate::row::Row;
use bytes::Bytes;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

const TABLE: TableId = 5;
const MIB: u64 = 1 << 20;

/// A node on the simulated file system with one UCS table whose
/// background compaction is off (the sstables stay as flushed).
fn open_ucs() -> Storage {
    open_ucs_on(Arc::new(SimFs::new()), SstableWrites::default())
}

/// The UCS table of [`open_ucs`].
fn ucs_table() -> TableDescriptor {
    TableDescriptor {
        id: TABLE,
        keyspace: "ks".into(),
        name: "t".into(),
        comparator: ClusteringComparator::new(Vec::new()),
        params: Default::default(),
        durable_writes: true,
        gc_grace_seconds: 864_000,
        compaction: CompactionConfig {
            strategy: StrategyOptions::Unified(UnifiedOptions::default()),
            common: CommonOptions {
                enabled: false,
                ..CommonOptions::default()
            },
        },
    }
}

fn open_ucs_on(fs: Arc<dyn Fs>, sstable_writes: SstableWrites) -> Storage {
    let desc = ucs_table();
    let options = StorageOptions {
        data_dir: "/data".into(),
        commitlog_dir: "/commitlog".into(),
        commitlog: CommitLogConfig {
            sync: SyncMode::Batch,
            ..CommitLogConfig::default()
        },
        memtable_space_bytes: 1 << 30,
        commitlog_total_space_bytes: 1 << 30,
        compaction_throughput_mib_per_sec: 0,
        concurrent_compactors: 1,
        sstable_writes,
        fs,
        clock: Clock::system(),
    };
    Storage::open(options, vec![desc]).expect("open")
}

/// Writes `partitions` partitions of one `value_bytes` cell of
/// incompressible bytes (so the sstable is about as large as the data).
fn write(s: &Storage, first: u32, partitions: u32, value_bytes: usize) {
    let mut x = u64::from(first) | 1;
    for k in first..first + partitions {
        let value: Vec<u8> = (0..value_bytes)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (x >> 56) as u8
            })
            .collect();
        let mut row = Row::default();
        row.cells
            .insert((0, None), Cell::live(1, Bytes::from(value)));
        let p = Partition {
            static_row: Some(row),
            ..Partition::default()
        };
        let key = PartitionKey::new(Bytes::from(format!("k{k}")));
        s.apply(TABLE, &key, p).expect("apply");
    }
}

fn learned(s: &Storage) -> Option<u64> {
    let table = s.table(TABLE).expect("table");
    let strategy = table.strategy.lock();
    strategy.learned_flush_size_bytes()
}

fn space_used(s: &Storage) -> u64 {
    s.table_stats(TABLE).expect("stats").space_used_bytes
}

#[test]
fn a_flush_tells_the_strategy_its_size() {
    let s = open_ucs();
    assert_eq!(learned(&s), Some(0), "nothing flushed, nothing learned");

    // A small flush: UCS rounds it up to one whole MiB.
    write(&s, 0, 10, 100);
    s.flush(TABLE).expect("flush");
    let small = space_used(&s);
    assert!(small > 0 && small < MIB, "{small}");
    assert_eq!(learned(&s), Some(MIB));

    // A flush over 50% larger replaces what was learned, rounded up.
    write(&s, 100, 40, 64 << 10);
    s.flush(TABLE).expect("flush");
    let large = space_used(&s) - small;
    assert!(large > 2 * MIB, "{large}");
    assert_eq!(learned(&s), Some(large.div_ceil(MIB) * MIB));
}

fn chances(s: &Storage) -> Vec<f64> {
    let table = s.table(TABLE).expect("table");
    let state = table.state.read();
    state
        .sstables
        .iter()
        .map(|t| t.crc_check_chance())
        .collect()
}

/// ALTER TABLE ... WITH crc_check_chance reaches the sstables already open,
/// not only the ones flushed afterwards.
#[test]
fn a_new_crc_check_chance_applies_to_open_sstables() {
    let s = open_ucs();
    for first in [0, 100] {
        write(&s, first, 10, 100);
        s.flush(TABLE).expect("flush");
    }
    assert_eq!(chances(&s), vec![1.0, 1.0], "the default");
    let mut desc = ucs_table();
    desc.params.crc_check_chance = 0.25;
    s.update_table(desc).expect("alter");
    assert_eq!(chances(&s), vec![0.25, 0.25], "open sstables");
    write(&s, 200, 10, 100);
    s.flush(TABLE).expect("flush");
    assert_eq!(chances(&s), vec![0.25; 3], "and the next flush");
}

/// The simulated file system, recording the page cache hint of each file
/// created for sequential writing.
#[derive(Default)]
struct HintLog {
    fs: SimFs,
    hints: Mutex<Vec<(PathBuf, PageCache)>>,
    /// Readers asked for a direct reader (the simulated files have none,
    /// so the scan then reads as usual).
    direct_asks: Arc<AtomicUsize>,
}

/// A simulated file that counts the direct readers asked of it.
struct AskLog {
    file: Box<dyn ReadFile>,
    asks: Arc<AtomicUsize>,
}

impl ReadFile for AskLog {
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.file.read_exact_at(offset, buf)
    }
    fn len(&self) -> u64 {
        self.file.len()
    }
    fn mapped(&self, kind: ReadKind) -> Option<&[u8]> {
        self.file.mapped(kind)
    }
    fn direct_reader(&self) -> Option<crate::fs_direct_read::DirectReader> {
        self.asks.fetch_add(1, Ordering::Relaxed);
        None
    }
}

impl Fs for HintLog {
    fn create(&self, path: &Path) -> io::Result<Box<dyn WriteFile>> {
        self.fs.create(path)
    }
    fn create_sequential(&self, path: &Path, cache: PageCache) -> io::Result<Box<dyn WriteFile>> {
        self.hints.lock().unwrap().push((path.to_path_buf(), cache));
        self.fs.create_sequential(path, cache)
    }
    fn open_read(&self, path: &Path) -> io::Result<Box<dyn ReadFile>> {
        Ok(Box::new(AskLog {
            file: self.fs.open_read(path)?,
            asks: self.direct_asks.clone(),
        }))
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

/// Flushes and compactions write around the page cache unless the node's
/// options say otherwise, each on its own; a compaction that writes around
/// it also reads its inputs around it (one direct reader per input), and
/// reads for queries never do.
#[test]
fn flushes_and_compactions_write_as_the_options_say() {
    let direct = SstableWrites::default();
    assert_eq!(direct.flush, PageCache::Bypass, "the default flush");
    assert_eq!(
        direct.compaction,
        PageCache::Bypass,
        "the default compaction"
    );
    let flush_cached = SstableWrites {
        flush: PageCache::Keep,
        ..direct
    };
    let compaction_cached = SstableWrites {
        compaction: PageCache::Keep,
        ..direct
    };
    for writes in [direct, flush_cached, compaction_cached] {
        let log = Arc::new(HintLog::default());
        let s = open_ucs_on(log.clone(), writes);
        for first in [0, 100] {
            write(&s, first, 10, 100);
            s.flush(TABLE).expect("flush");
        }
        let hints = |log: &HintLog| -> Vec<PageCache> {
            let hints = log.hints.lock().unwrap();
            hints.iter().map(|(_, h)| *h).collect()
        };
        assert_eq!(
            hints(&log),
            vec![writes.flush; 2],
            "two flushes, {writes:?}"
        );
        let key = PartitionKey::new(Bytes::from_static(b"k5"));
        let all = [crate::clustering::Slice::all(&ClusteringComparator::new(
            Vec::new(),
        ))];
        let found = s.read_partition(TABLE, &key, &all).expect("read");
        assert!(found.is_some(), "the read went to the sstables");
        assert_eq!(log.direct_asks.load(Ordering::Relaxed), 0, "not for reads");
        s.major_compact(TABLE, 0).expect("compact");
        assert_eq!(
            hints(&log),
            vec![writes.flush, writes.flush, writes.compaction],
            "then one compaction output, {writes:?}"
        );
        let asks = match writes.compaction {
            PageCache::Bypass => 2,
            PageCache::Keep => 0,
        };
        assert_eq!(
            log.direct_asks.load(Ordering::Relaxed),
            asks,
            "direct readers of the compaction's two inputs, {writes:?}"
        );
    }
}

/// Every file under `dir`, two levels down (keyspace, then table).
fn files_under(fs: &SimFs, dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for ks in fs.list(dir).unwrap_or_default() {
        for table in fs.list(&ks).unwrap_or_default() {
            files.extend(fs.list(&table).unwrap_or_default());
        }
    }
    files
}

/// Stopping compactions (the node shutting down) ends a running one at
/// once instead of letting it finish: it fails with `Interrupted`, its
/// output is deleted, its inputs stay live with every row, and no
/// compaction runs after. The compaction is throttled to 1 MiB/s over
/// 4 MiB, so it cannot have finished when the stop arrives.
#[test]
fn stopping_compactions_interrupts_a_running_one_and_keeps_its_inputs() {
    let fs = Arc::new(SimFs::new());
    let s = open_ucs_on(fs.clone(), SstableWrites::default());
    for first in [0, 1000] {
        write(&s, first, 64, 32 << 10);
        s.flush(TABLE).expect("flush");
    }
    let inputs = s.table_generations(TABLE).expect("generations");
    assert_eq!(inputs.len(), 2);
    s.set_compaction_throughput(1);
    std::thread::scope(|scope| {
        let compaction = scope.spawn(|| s.major_compact(TABLE, 0));
        while s.compaction_stats().running.is_empty() {
            assert!(!compaction.is_finished(), "finished before it was seen");
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        s.stop_compactions();
        match compaction.join().expect("compaction thread") {
            Err(crate::Error::Io { source, .. }) => {
                assert_eq!(source.kind(), io::ErrorKind::Interrupted, "{source}");
            }
            other => panic!("not interrupted: {other:?}"),
        }
    });
    assert_eq!(s.table_generations(TABLE).expect("generations"), inputs);
    let files = files_under(&fs, Path::new("/data"));
    assert!(
        files.iter().all(|f| !f.to_string_lossy().ends_with(".tmp")),
        "an output is left: {files:?}"
    );
    let all = [crate::clustering::Slice::all(&ClusteringComparator::new(
        Vec::new(),
    ))];
    for k in (0..64).chain(1000..1064) {
        let key = PartitionKey::new(Bytes::from(format!("k{k}")));
        let found = s.read_partition(TABLE, &key, &all).expect("read");
        assert!(found.is_some(), "k{k} lost");
    }
    assert!(
        s.major_compact(TABLE, 0).is_err(),
        "a compaction after the stop"
    );
    assert_eq!(s.table_generations(TABLE).expect("generations"), inputs);
}

#[test]
fn strategy_compactions_may_keep_up_with_flushes_whatever_the_adaptive_share() {
    let s = open_ucs();
    s.set_compaction_throughput(1);
    s.set_compaction_rate_factor(0.0);
    let floor = crate::compaction::throttle::MIN_COMPACTION_RATE_FACTOR * MIB as f64;
    let rate = || s.compaction_rate_bytes(true).expect("a throttled rate");
    let operator_rate = || s.compaction_rate_bytes(false).expect("a throttled rate");
    assert_eq!(rate(), floor, "nothing flushed: the least share");

    write(&s, 0, 32, 64 << 10);
    s.flush(TABLE).expect("flush");
    let flushed = space_used(&s) as f64;
    let window = crate::compaction::throttle::FLUSH_RATE_WINDOW.as_secs_f64();
    let keep_up = crate::compaction::throttle::KEEP_UP_FACTOR * (flushed / window);
    assert!(keep_up > floor && keep_up < MIB as f64, "{keep_up}");
    assert_eq!(rate(), keep_up, "four times the last minute's flushes");
    assert_eq!(
        operator_rate(),
        floor,
        "a garbagecollect or a major compaction only gets the share"
    );
}

/// Two nodes in one process (as the cluster simulation runs them) keep
/// their own key cache budgets: one with none caches nothing while the
/// other caches what it reads, and each reports only its own usage.
#[test]
fn two_engines_in_one_process_keep_their_own_caches() {
    let a = open_ucs();
    let b = open_ucs();
    a.set_key_cache_size(0);
    for s in [&a, &b] {
        write(s, 0, 20, 100);
        s.flush(TABLE).expect("flush");
    }
    let all = [crate::clustering::Slice::all(&ClusteringComparator::new(
        Vec::new(),
    ))];
    for s in [&a, &b] {
        for k in 0..20 {
            let key = PartitionKey::new(Bytes::from(format!("k{k}")));
            assert!(s.read_partition(TABLE, &key, &all).expect("read").is_some());
        }
    }
    let entry = crate::sstable::key_cache::KEY_CACHE_ENTRY_BYTES;
    assert_eq!(a.key_cache_usage(), (0, 0), "a's budget is zero");
    assert_eq!(
        b.key_cache_usage(),
        (20 * entry, crate::sstable::DEFAULT_KEY_CACHE_BYTES),
        "b cached every key it read, in a budget of its own"
    );
    let a_chunk_cache = a.block_cache_stats().capacity_bytes;
    b.set_file_cache_size(a_chunk_cache + (1 << 20));
    assert_eq!(a.block_cache_stats().capacity_bytes, a_chunk_cache);
}
