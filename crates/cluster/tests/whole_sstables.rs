//! Whole-sstable streaming over real messaging on 127.0.0.1, between
//! durable engines (on the real file system, so file work goes through
//! the blocking pool as in a node; on the simulated one where a test
//! fills the disk): the sstables that lie inside the range come whole,
//! the rest in pages that leave them out, and every key arrives once. A
//! chunk or a file that arrives damaged is asked again, and one that is
//! always damaged is left to the pages; a full disk fails the stream,
//! not the node; a compaction of the source during the send takes
//! nothing away; a push (decommission) offers its whole sstables; a page
//! that does not decode is asked again up to `STREAM_PAGE_ATTEMPTS`
//! times (tested at N and N + 1).

mod support;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use varve_cluster::env::{Clock, Env};
use varve_cluster::net::{HostId, Messaging, MessagingConfig, Request, Verb};
use varve_cluster::streaming::offer::serve_offers;
use varve_cluster::streaming::{FileSource, PullStats, Puller, RangeSource, Streams};
use varve_cluster::verbs::stream_file::{self, FileResponse};
use varve_cluster::verbs::Replica;
use varve_storage::commitlog::CommitLogConfig;
use varve_storage::compaction::{CommonOptions, CompactionConfig};
use varve_storage::fs::{Fs, RealFs};
use varve_storage::fs_sim::SimFs;
use varve_storage::sstable::SstableParams;
use varve_storage::{Engine, Storage, StorageOptions, TableDescriptor};
use varve_types::data::Slice;
use varve_types::data::{Cell, ClusteringComparator, ClusteringKey, Partition, PartitionKey, Row};
use varve_types::CqlType;

use support::{loopback, CLUSTER};

const TABLE: u128 = 0x3a1e;
const NOW: i32 = 1_000_000;

fn cmp() -> Arc<ClusteringComparator> {
    ClusteringComparator::new(vec![(CqlType::Int, false)])
}

fn desc() -> TableDescriptor {
    TableDescriptor {
        id: TABLE,
        keyspace: "ks".into(),
        name: "t".into(),
        comparator: cmp(),
        params: SstableParams::default(),
        durable_writes: true,
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

fn key(k: &str) -> PartitionKey {
    PartitionKey::new(Bytes::copy_from_slice(k.as_bytes()))
}

/// One row whose one cell holds the key's name.
fn row(k: &str) -> Partition {
    let mut p = Partition::default();
    let mut r = Row::default();
    r.cells.insert(
        (1, None),
        Cell::live(7, Bytes::copy_from_slice(k.as_bytes())),
    );
    let ck = vec![Bytes::copy_from_slice(&1i32.to_be_bytes())];
    p.rows.insert(ClusteringKey::row(ck, &cmp()), r);
    p
}

/// A fresh directory, removed when dropped.
struct TestDir(PathBuf);

impl TestDir {
    fn new(name: &str) -> TestDir {
        let dir = std::env::temp_dir().join(format!(
            "varve-whole-sstables-{name}-{}-{}",
            std::process::id(),
            varve_types::time::now_micros()
        ));
        std::fs::create_dir_all(&dir).expect("a test directory");
        TestDir(dir)
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A node: messaging, a durable engine with the table, the replica
/// handlers and the source of whole sstables.
struct Node {
    host: HostId,
    messaging: Messaging,
    engine: Arc<Engine>,
    files: Arc<FileSource>,
    streams: Arc<Streams>,
    clock: Arc<dyn Clock>,
    _storage: Storage,
}

impl Node {
    /// `fs` at `root`; unless `serve_files`, STREAM_FILE is left for the
    /// test to answer.
    async fn start(host: u8, fs: Arc<dyn Fs>, root: PathBuf, serve_files: bool) -> Node {
        let env = Env::tokio(u64::from(host));
        let id = HostId([host; 16]);
        let messaging =
            Messaging::start(MessagingConfig::new(CLUSTER, id, loopback()), env.clone())
                .await
                .expect("messaging");
        let options = StorageOptions {
            data_dir: root.join("data"),
            commitlog_dir: root.join("commitlog"),
            commitlog: CommitLogConfig::default(),
            memtable_space_bytes: 1 << 30,
            commitlog_total_space_bytes: 1 << 30,
            compaction_throughput_mib_per_sec: 0,
            concurrent_compactors: 1,
            sstable_writes: Default::default(),
            fs,
            clock: varve_storage::Clock::from_fn(|| NOW),
        };
        let storage = Storage::open(options, vec![desc()]).expect("an engine");
        let engine = storage.engine();
        let streams = Arc::new(Streams::detached());
        Replica::new(engine.clone(), false)
            .with_streams(Arc::clone(&streams))
            .register(&messaging);
        let files = Arc::new(
            FileSource::new(engine.clone(), Arc::clone(&env.clock))
                .with_streams(Arc::clone(&streams)),
        );
        if serve_files {
            files.register(&messaging);
        }
        Node {
            host: id,
            messaging,
            engine,
            files,
            streams,
            clock: Arc::clone(&env.clock),
            _storage: storage,
        }
    }

    async fn on_disk(host: u8, dir: &TestDir) -> Node {
        Node::start(
            host,
            Arc::new(RealFs::default()),
            dir.0.join(host.to_string()),
            true,
        )
        .await
    }

    fn puller(&self) -> Puller {
        Puller::new(
            self.engine.clone(),
            self.messaging.clone(),
            Arc::clone(&self.clock),
            0,
        )
        .with_streams(Arc::clone(&self.streams))
        .with_file_source(Arc::clone(&self.files))
    }

    /// The range `(start, end]` of this node, as a puller names it.
    fn range(&self, (start, end): (i64, i64)) -> RangeSource {
        RangeSource {
            start,
            end,
            source: self.host,
            address: self.messaging.local_addr(),
        }
    }

    fn write(&self, names: &[String], flush: bool) {
        for k in names {
            self.engine.apply(TABLE, &key(k), row(k)).expect("a write");
        }
        if flush {
            self.engine.flush(TABLE).expect("a flush");
        }
    }

    /// Whether the engine holds `k` with its own value.
    fn holds(&self, k: &str) -> bool {
        let read = self
            .engine
            .read_live(TABLE, &key(k), &[Slice::all(&cmp())], false, NOW, 10)
            .expect("a read");
        read.is_some_and(|(p, _, _)| {
            p.rows
                .values()
                .next()
                .and_then(|r| r.cells.values().next())
                .map(|c| c.value.clone())
                == Some(Bytes::copy_from_slice(k.as_bytes()))
        })
    }

    async fn stop(self) {
        self.messaging.shutdown().await;
    }
}

fn names(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}")).collect()
}

/// What a source holds: the range, its keys inside and outside.
struct Seeded {
    range: (i64, i64),
    inside: Vec<String>,
    outside: Vec<String>,
}

/// The source's data: ten sstables of one key each, one of twenty keys,
/// and five keys in its memtable; the range holds the lower half of the
/// one-key sstables' tokens.
fn seed_source(a: &Node) -> Seeded {
    let singles = names("single", 10);
    for k in &singles {
        a.write(std::slice::from_ref(k), true);
    }
    a.write(&names("wide", 20), true);
    a.write(&names("memtable", 5), false);
    let mut tokens: Vec<i64> = singles.iter().map(|k| key(k).token).collect();
    tokens.sort_unstable();
    let range = (tokens[0] - 1, tokens[4]);
    let (inside, outside) = singles
        .iter()
        .chain(&names("wide", 20))
        .chain(&names("memtable", 5))
        .cloned()
        .partition(|k| {
            let t = key(k).token;
            range.0 < t && t <= range.1
        });
    Seeded {
        range,
        inside,
        outside,
    }
}

/// The source's sstables that lie inside `range` now.
fn inside(a: &Node, range: (i64, i64)) -> Vec<u64> {
    a.engine
        .sstable_spans(TABLE)
        .expect("spans")
        .iter()
        .filter(|s| s.inside(range.0, range.1))
        .map(|s| s.generation)
        .collect()
}

/// `b` holds every key of the range and none outside; `files` came
/// whole, and every key came once (the pages left those files out).
fn check_moved(b: &Node, stats: &PullStats, seeded: &Seeded, files: usize) {
    check_held(b, seeded);
    assert_eq!(stats.files, files as u64, "{stats:?}");
    assert_eq!(
        stats.partitions,
        seeded.inside.len() as u64,
        "every key came once: the pages left the whole sstables out ({stats:?})"
    );
}

fn check_held(b: &Node, seeded: &Seeded) {
    for k in &seeded.inside {
        assert!(b.holds(k), "{k} did not arrive");
    }
    for k in &seeded.outside {
        assert!(!b.holds(k), "{k} is outside the range");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sstables_inside_the_range_come_whole_and_the_rest_in_pages() {
    let dir = TestDir::new("pull");
    let (a, b) = (Node::on_disk(1, &dir).await, Node::on_disk(2, &dir).await);
    let seeded = seed_source(&a);
    let range = seeded.range;
    let stats = b
        .puller()
        .pull(TABLE, &a.range(range))
        .await
        .expect("the pull");
    let whole = inside(&a, range);
    assert!(
        whole.len() >= 5,
        "the five one-key sstables at least: {whole:?}"
    );
    check_moved(&b, &stats, &seeded, whole.len());
    assert_eq!(b.streams.files_in.get(), whole.len() as u64);
    assert_eq!(a.streams.files_out.get(), whole.len() as u64);
    assert!(b.streams.bytes_in.get() >= stats.bytes);
    assert_eq!(a.files.open_sessions(), 0, "the session was released");
    // The files are live sstables of the receiver: a restart keeps them.
    assert_eq!(b.engine.sstable_spans(TABLE).unwrap().len(), whole.len());
    a.stop().await;
    b.stop().await;
}

/// Answers STREAM_FILE through `source`, damaging the chunks `damage`
/// picks (by the count of chunks answered so far): with `keep_crc`, the
/// chunk's CRC is that of the damaged bytes (only the whole-file check
/// can tell).
fn serve_damaged(
    node: &Node,
    damage: impl Fn(usize) -> bool + Send + Sync + 'static,
    keep_crc: bool,
) -> Arc<AtomicUsize> {
    let answered = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&answered);
    let source = Arc::clone(&node.files);
    let damage = Arc::new(damage);
    node.messaging
        .register(Verb::STREAM_FILE, move |req: Request| {
            let (source, count, damage) =
                (Arc::clone(&source), Arc::clone(&count), Arc::clone(&damage));
            async move {
                let answer = source.answer(req.payload).await;
                let Ok(bytes) = &answer else {
                    return Some(answer);
                };
                let Ok(FileResponse::Chunk { bytes, crc }) = stream_file::decode_response(bytes)
                else {
                    return Some(answer);
                };
                if !damage(count.fetch_add(1, Ordering::Relaxed)) {
                    return Some(answer);
                }
                let mut bad = bytes.to_vec();
                bad[0] ^= 0x40;
                let crc = if keep_crc { crc32fast::hash(&bad) } else { crc };
                let rsp = FileResponse::Chunk {
                    bytes: Bytes::from(bad),
                    crc,
                };
                Some(Ok(stream_file::encode_response(&rsp)))
            }
        });
    answered
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn damaged_chunks_and_files_are_asked_again_or_left_to_the_pages() {
    let dir = TestDir::new("damaged");
    // The first chunk fails its CRC: asked again, every file comes.
    let a = Node::start(1, Arc::new(RealFs::default()), dir.0.join("1"), false).await;
    let b = Node::on_disk(2, &dir).await;
    let seeded = seed_source(&a);
    let range = seeded.range;
    serve_damaged(&a, |n| n == 0, false);
    let stats = b
        .puller()
        .pull(TABLE, &a.range(range))
        .await
        .expect("the pull");
    check_moved(&b, &stats, &seeded, inside(&a, range).len());

    // The first chunk damaged under a good CRC: the whole file fails its
    // check, is fetched again and comes.
    let c = Node::on_disk(3, &dir).await;
    serve_damaged(&a, |n| n == 0, true);
    let stats = c
        .puller()
        .pull(TABLE, &a.range(range))
        .await
        .expect("the pull");
    check_moved(&c, &stats, &seeded, inside(&a, range).len());

    // Every chunk damaged: no file is installed, the pages bring it all.
    let d = Node::on_disk(4, &dir).await;
    serve_damaged(&a, |_| true, true);
    let stats = d
        .puller()
        .pull(TABLE, &a.range(range))
        .await
        .expect("the pull");
    check_moved(&d, &stats, &seeded, 0);
    assert!(d.engine.sstable_spans(TABLE).unwrap().is_empty());
    for n in [a, b, c, d] {
        n.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_fails_the_stream_not_the_node() {
    let dir = TestDir::new("full");
    let a = Node::on_disk(1, &dir).await;
    let fs = Arc::new(SimFs::new());
    let b = Node::start(2, fs.clone(), PathBuf::from("/b"), true).await;
    let seeded = seed_source(&a);
    let range = seeded.range;
    fs.set_disk_full(true);
    let err = b.puller().pull(TABLE, &a.range(range)).await.unwrap_err();
    assert!(
        err.contains("No space left") || err.contains("os error 28"),
        "{err}"
    );
    assert!(b.engine.sstable_spans(TABLE).unwrap().is_empty());
    let leftovers: Vec<PathBuf> = fs
        .list(&PathBuf::from(format!("/b/data/ks/t-{TABLE:032x}")))
        .unwrap()
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "tmp" || e == "sst"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    // The node goes on: once the disk has room, the stream works.
    fs.set_disk_full(false);
    let stats = b
        .puller()
        .pull(TABLE, &a.range(range))
        .await
        .expect("the pull");
    check_moved(&b, &stats, &seeded, inside(&a, range).len());
    a.stop().await;
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compaction_of_the_source_during_the_send_takes_nothing_away() {
    let dir = TestDir::new("compaction");
    let a = Node::start(1, Arc::new(RealFs::default()), dir.0.join("1"), false).await;
    let b = Node::on_disk(2, &dir).await;
    let seeded = seed_source(&a);
    let range = seeded.range;
    a.engine.flush(TABLE).unwrap();
    let whole = inside(&a, range);
    // Before its first chunk, the source compacts every sstable into one.
    let engine = a.engine.clone();
    let compacted = Arc::new(AtomicUsize::new(0));
    let done = Arc::clone(&compacted);
    serve_damaged(
        &a,
        move |n| {
            if n == 0 {
                let e = engine.clone();
                std::thread::spawn(move || e.major_compact(TABLE, NOW))
                    .join()
                    .expect("the compaction thread")
                    .expect("the compaction");
                done.fetch_add(1, Ordering::Relaxed);
            }
            false
        },
        false,
    );
    let stats = b
        .puller()
        .pull(TABLE, &a.range(range))
        .await
        .expect("the pull");
    assert_eq!(compacted.load(Ordering::Relaxed), 1);
    assert_eq!(a.engine.sstable_spans(TABLE).unwrap().len(), 1, "compacted");
    // The compacted sstable is not among those left out: what its inputs
    // sent whole comes again in pages, which changes nothing.
    check_held(&b, &seeded);
    assert_eq!(stats.files, whole.len() as u64);
    assert!(stats.partitions >= seeded.inside.len() as u64);
    a.stop().await;
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_offers_its_whole_sstables_and_pushes_the_rest() {
    let dir = TestDir::new("push");
    let (a, b) = (Node::on_disk(1, &dir).await, Node::on_disk(2, &dir).await);
    serve_offers(&b.messaging, Arc::new(b.puller()));
    let seeded = seed_source(&a);
    let range = seeded.range;
    // Pushed to b: the range names the receiver.
    let to = RangeSource {
        source: b.host,
        address: b.messaging.local_addr(),
        ..a.range(range)
    };
    let stats = a.puller().push(TABLE, &to).await.expect("the push");
    let whole = inside(&a, range);
    check_moved(&b, &stats, &seeded, whole.len());
    assert_eq!(b.streams.files_in.get(), whole.len() as u64);
    assert_eq!(a.files.open_sessions(), 0);
    let keys: BTreeSet<String> = seeded.inside.iter().cloned().collect();
    assert!(!keys.is_empty());
    a.stop().await;
    b.stop().await;
}

/// Answers STREAM_PULL from `node`'s engine, but with bytes that do not
/// decode for the first `garbled` pages asked.
fn serve_garbled_pages(node: &Node, garbled: usize) {
    let engine = node.engine.clone();
    let asked = Arc::new(AtomicUsize::new(0));
    node.messaging
        .register(Verb::STREAM_PULL, move |req: Request| {
            let (engine, asked) = (engine.clone(), Arc::clone(&asked));
            async move {
                if asked.fetch_add(1, Ordering::Relaxed) < garbled {
                    return Some(Ok(Bytes::from_static(b"not a page")));
                }
                let pull = varve_cluster::verbs::stream::decode_request(&req.payload)
                    .expect("a pull request");
                let page = varve_cluster::verbs::stream::read_page(&engine, &pull).expect("a page");
                Some(Ok(page.bytes))
            }
        });
}

/// A page that does not decode is asked again, up to
/// `STREAM_PAGE_ATTEMPTS` times: garbled that many times less one, the
/// range comes whole; garbled that many times, the pull fails saying so
/// and stores nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_garbled_page_is_asked_again_up_to_the_attempts_limit() {
    use varve_cluster::streaming::pull::STREAM_PAGE_ATTEMPTS;
    let dir = TestDir::new("garbled");
    let attempts = STREAM_PAGE_ATTEMPTS as usize;
    let a = Node::on_disk(1, &dir).await;
    let keys = names("k", 30);
    a.write(&keys, false);
    let whole_ring = a.range((0, 0));

    serve_garbled_pages(&a, attempts - 1);
    let b = Node::on_disk(2, &dir).await;
    let stats = b
        .puller()
        .pull_pages(TABLE, &whole_ring, &[])
        .await
        .expect("the pull within the attempts");
    assert_eq!(stats.partitions, keys.len() as u64);
    assert!(keys.iter().all(|k| b.holds(k)));

    serve_garbled_pages(&a, attempts);
    let c = Node::on_disk(3, &dir).await;
    let failed = c
        .puller()
        .pull_pages(TABLE, &whole_ring, &[])
        .await
        .expect_err("garbled as many times as it is asked");
    assert!(
        failed.contains(&format!("failed {attempts} times")),
        "{failed}"
    );
    assert!(
        !keys.iter().any(|k| c.holds(k)),
        "a garbled page was stored"
    );
    for n in [a, b, c] {
        n.stop().await;
    }
}
