//! A major-compaction throughput measurement on the real file system,
//! ignored by default. It writes `VARVE_BENCH_MB` (default 256) MB of
//! ~4 KiB rows (10-byte key, five random 818-byte blobs, like the latte
//! `stress.rn` rows of issue 4, uncompressed) as `VARVE_BENCH_SSTABLES`
//! (default 8) flushed sstables, once; then, `VARVE_BENCH_ROUNDS` (default
//! 3) times, it hard-links that input into a fresh table for each write
//! path variant in turn (interleaved, so background load hits them alike)
//! and times one major compaction. A variant is a [`SeqWriteOptions`]
//! (`VARVE_BENCH_VARIANTS=buffer:write_behind,...`, bytes; default `0:0`,
//! one write(2) per chunk and no write-behind, against the defaults). Printed per run: wall time, MB/s of
//! input and output, user and system CPU seconds (the whole process, from
//! /proc/self/stat) and CPU seconds per GB written, the figure of merit on
//! a busy machine. Run with
//! `cargo test -p varve-storage --lib compaction_bench -- --ignored --nocapture`
//! With `VARVE_BENCH_DIR` set, the input is kept there and reused by the
//! next run (to profile the compaction alone); by default it goes to the
//! system temp dir and is removed.

use crate::cell::Cell;
use crate::clustering::{ClusteringComparator, ClusteringKey};
use crate::commitlog::CommitLogConfig;
use crate::compaction::{CommonOptions, CompactionConfig};
use crate::engine::{PartitionKey, Storage, StorageOptions, TableDescriptor, TableId};
use crate::fs::{Fs, PageCache, ReadFile, RealFs, WriteFile};
use crate::fs_seq::{SeqFile, SeqWriteOptions};
use crate::partition::Partition;
use crate::row::Row;
use crate::sstable::{Compression, SstableParams};
use crate::Clock;
use bytes::Bytes;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

const TABLE: TableId = 4;
const COLUMNS: u32 = 5;
const COLUMN_BYTES: usize = 818;
const ROW_BYTES: u64 = 10 + COLUMNS as u64 * COLUMN_BYTES as u64;

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn desc() -> TableDescriptor {
    TableDescriptor {
        id: TABLE,
        keyspace: "keyspace1".into(),
        name: "standard1".into(),
        comparator: ClusteringComparator::new(vec![]),
        params: SstableParams {
            compression: Compression::None,
            ..SstableParams::default()
        },
        // No commitlog: the input is flushed sstables only.
        durable_writes: false,
        gc_grace_seconds: 864_000,
        compaction: CompactionConfig {
            common: CommonOptions {
                enabled: false,
                ..CommonOptions::default()
            },
            ..CompactionConfig::default()
        },
    }
}

fn open(dir: &Path, fs: Arc<dyn Fs>) -> Storage {
    let options = StorageOptions {
        data_dir: dir.join("data"),
        commitlog_dir: dir.join("commitlog"),
        commitlog: CommitLogConfig::default(),
        memtable_space_bytes: 4 << 30,
        commitlog_total_space_bytes: 4 << 30,
        compaction_throughput_mib_per_sec: 0,
        concurrent_compactors: 1,
        sstable_writes: Default::default(),
        fs,
        clock: Clock::system(),
    };
    Storage::open(options, vec![desc()]).unwrap()
}

/// Writes the input sstables into `dir` (random keys, so every input
/// spans the whole ring and the merge interleaves them).
fn build_input(dir: &Path, total_bytes: u64, sstables: u64) {
    let storage = open(dir, Arc::new(RealFs::default()));
    let cmp = desc().comparator;
    let mut rng = StdRng::seed_from_u64(4);
    let rows_per_sstable = total_bytes / ROW_BYTES / sstables;
    for _ in 0..sstables {
        for _ in 0..rows_per_sstable {
            let mut key = [0u8; 10];
            rng.fill(&mut key[..]);
            let mut row = Row::default();
            for c in 0..COLUMNS {
                let mut v = vec![0u8; COLUMN_BYTES];
                rng.fill(&mut v[..]);
                row.cells
                    .insert((c, None), Cell::live(1_700_000_000_000_000, Bytes::from(v)));
            }
            let mut p = Partition::default();
            p.rows.insert(ClusteringKey::row(vec![], &cmp), row);
            storage
                .apply(TABLE, &PartitionKey::new(Bytes::copy_from_slice(&key)), p)
                .unwrap();
        }
        storage.flush(TABLE).unwrap();
    }
}

/// A copy of `from` whose sstables are hard links (compaction only ever
/// creates, renames and removes them) and whose other files are copied.
fn link_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let path = e.unwrap().path();
        let target = to.join(path.file_name().unwrap());
        if path.is_dir() {
            link_tree(&path, &target);
        } else if path.extension().is_some_and(|x| x == "sst") {
            std::fs::hard_link(&path, &target).unwrap();
        } else {
            std::fs::copy(&path, &target).unwrap();
        }
    }
}

/// User and system CPU seconds of this process so far.
fn cpu_seconds() -> (f64, f64) {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which may hold spaces): utime is the
    // 14th field of the line, stime the 15th; both in 1/100 s.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<f64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0.0))
        .collect();
    let tick = 100.0;
    (
        f.get(11).copied().unwrap_or(0.0) / tick,
        f.get(12).copied().unwrap_or(0.0) / tick,
    )
}

/// The real file system, writing sstables with the given options and
/// counting the time spent in `sync`.
struct BenchFs {
    options: SeqWriteOptions,
    sync_ns: Arc<AtomicU64>,
}

struct TimedSync(SeqFile, Arc<AtomicU64>);

impl WriteFile for TimedSync {
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.0.write_all(buf)
    }
    fn sync(&mut self) -> io::Result<()> {
        let t = Instant::now();
        let r = self.0.sync();
        self.1
            .fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
        r
    }
    fn len(&self) -> u64 {
        self.0.len()
    }
}

impl Fs for BenchFs {
    fn create(&self, path: &Path) -> io::Result<Box<dyn WriteFile>> {
        RealFs::default().create(path)
    }
    fn create_sequential(&self, path: &Path, _cache: PageCache) -> io::Result<Box<dyn WriteFile>> {
        let f = SeqFile::create(path, self.options)?;
        Ok(Box::new(TimedSync(f, self.sync_ns.clone())))
    }
    fn open_read(&self, path: &Path) -> io::Result<Box<dyn ReadFile>> {
        RealFs::default().open_read(path)
    }
    fn read_all(&self, path: &Path) -> io::Result<Vec<u8>> {
        RealFs::default().read_all(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        RealFs::default().rename(from, to)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        RealFs::default().remove(path)
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        RealFs::default().list(dir)
    }
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        RealFs::default().create_dir_all(dir)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        RealFs::default().sync_dir(dir)
    }
    fn exists(&self, path: &Path) -> bool {
        RealFs::default().exists(path)
    }
}

/// The variants compared: `VARVE_BENCH_VARIANTS`, a comma-separated list
/// of `buffer_bytes:write_behind_bytes` (default: the old path, one write
/// per chunk and no write-behind, against the defaults).
fn variants() -> Vec<SeqWriteOptions> {
    let spec = std::env::var("VARVE_BENCH_VARIANTS").unwrap_or_default();
    let mut out: Vec<SeqWriteOptions> = spec
        .split(',')
        .filter_map(|v| {
            let (b, w) = v.split_once(':')?;
            Some(SeqWriteOptions {
                buffer_bytes: b.trim().parse().ok()?,
                write_behind_bytes: w.trim().parse().ok()?,
            })
        })
        .collect();
    if out.is_empty() {
        out = vec![
            SeqWriteOptions {
                buffer_bytes: 0,
                write_behind_bytes: 0,
            },
            SeqWriteOptions::default(),
        ];
    }
    out
}

#[derive(Default)]
struct Totals {
    runs: u32,
    wall_s: f64,
    user_s: f64,
    sys_s: f64,
    read: u64,
    written: u64,
}

#[test]
#[ignore]
fn compaction_bench() {
    let mb = env_u64("VARVE_BENCH_MB", 256);
    let sstables = env_u64("VARVE_BENCH_SSTABLES", 8).max(2);
    let rounds = env_u64("VARVE_BENCH_ROUNDS", 3);
    let keep = std::env::var("VARVE_BENCH_DIR").ok().map(PathBuf::from);
    let base = keep.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("varve-compaction-bench-{}", std::process::id()))
    });
    let golden = base.join(format!("input-{mb}-{sstables}"));
    let started = Instant::now();
    if keep.is_none() || !golden.exists() {
        build_input(&golden, mb << 20, sstables);
    }
    println!(
        "input: {mb} MB in {sstables} sstables, written in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let variants: Vec<(String, Arc<AtomicU64>, Arc<dyn Fs>)> = variants()
        .into_iter()
        .map(|options| {
            let name = format!("{}:{}", options.buffer_bytes, options.write_behind_bytes);
            let sync_ns = Arc::new(AtomicU64::new(0));
            let fs = BenchFs {
                options,
                sync_ns: sync_ns.clone(),
            };
            (name, sync_ns, Arc::new(fs) as Arc<dyn Fs>)
        })
        .collect();
    let mut totals: Vec<Totals> = variants.iter().map(|_| Totals::default()).collect();
    for round in 0..rounds {
        for (i, (name, sync_ns, fs)) in variants.iter().enumerate() {
            let dir = base.join(format!("run-{round}-{i}"));
            link_tree(&golden, &dir);
            let storage = open(&dir, fs.clone());
            let (u0, s0) = cpu_seconds();
            let sync0 = sync_ns.load(Ordering::Relaxed);
            let t0 = Instant::now();
            let r = storage.major_compact(TABLE, 0).unwrap();
            let wall = t0.elapsed().as_secs_f64();
            let (u1, s1) = cpu_seconds();
            drop(storage);
            let (user, sys) = (u1 - u0, s1 - s0);
            let sync_s = (sync_ns.load(Ordering::Relaxed) - sync0) as f64 / 1e9;
            let out_mb = r.bytes_written as f64 / 1e6;
            println!(
                "round {round} {name:>16}: {wall:.2} s (sync {sync_s:.2} s), in {:.0} MB/s, \
                 out {:.0} MB/s, user {user:.2} s, sys {sys:.2} s, {:.2} CPU s/GB",
                r.bytes_read as f64 / 1e6 / wall,
                out_mb / wall,
                (user + sys) / (out_mb / 1e3),
            );
            let t = &mut totals[i];
            t.runs += 1;
            t.wall_s += wall;
            t.user_s += user;
            t.sys_s += sys;
            t.read += r.bytes_read;
            t.written += r.bytes_written;
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }
    for ((name, _, _), t) in variants.iter().zip(&totals) {
        let gb = t.written as f64 / 1e9;
        println!(
            "{name:>16}: {} runs, out {:.0} MB/s, user {:.2} + sys {:.2} = {:.2} CPU s/GB",
            t.runs,
            t.written as f64 / 1e6 / t.wall_s,
            t.user_s / gb,
            t.sys_s / gb,
            (t.user_s + t.sys_s) / gb,
        );
    }
    if keep.is_none() {
        std::fs::remove_dir_all(&base).unwrap();
    }
}
