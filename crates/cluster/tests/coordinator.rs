//! The coordinator over real messaging and gossip on 127.0.0.1: three
//! nodes in one process, each with its own in-memory storage engine,
//! replica handlers and coordinator, as three processes would be. Every
//! wait is for a condition under a generous deadline, never a timing.

mod support;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use varve_cluster::coordinator::{
    Coordinator, Host, KeyScan, Read, Replication, Speculation, Timeouts, Topology, Write,
};
use varve_cluster::env::{Clock, Env, SystemClock};
use varve_cluster::membership::{GossipKey, Gossiper, Membership, MembershipConfig};
use varve_cluster::net::{HostId, Messaging, MessagingConfig, Verb};
use varve_cluster::ring::Location;
use varve_cluster::verbs::Replica;
use varve_storage::compaction::{CommonOptions, CompactionConfig};
use varve_storage::sstable::SstableParams;
use varve_storage::{Engine, Storage, TableDescriptor};
use varve_types::consistency::Consistency;
use varve_types::data::{
    Cell, ClusteringComparator, ClusteringKey, DeletionTime, Partition, PartitionKey, Row, Slice,
    TokenBound,
};
use varve_types::data_error::{DataError, WriteType};
use varve_types::CqlType;

use support::{loopback, CLUSTER};

const TABLE: u128 = 0x7ab1e;
const DEADLINE: Duration = Duration::from_secs(30);
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

fn key(k: &str) -> PartitionKey {
    PartitionKey::new(Bytes::copy_from_slice(k.as_bytes()))
}

/// A row at clustering 1 whose column 1 holds `value`, written at `ts`.
fn cell(ts: i64, value: &str) -> Partition {
    let mut p = Partition::default();
    let mut row = Row::default();
    row.cells.insert(
        (1, None),
        Cell::live(ts, Bytes::copy_from_slice(value.as_bytes())),
    );
    p.rows.insert(ClusteringKey::row(ck(1), &cmp()), row);
    p
}

fn ck(c: i32) -> Vec<Bytes> {
    vec![Bytes::copy_from_slice(&c.to_be_bytes())]
}

/// A node: messaging, gossip, an engine with the table, the coordinator.
struct Node {
    host: HostId,
    messaging: Messaging,
    gossip: Arc<Gossiper>,
    engine: Arc<Engine>,
    coordinator: Arc<Coordinator>,
    _storage: Storage,
}

impl Node {
    async fn stop(self) {
        self.gossip.shutdown().await;
        self.messaging.shutdown().await;
    }

    /// What this node's own engine holds at clustering 1, column 1.
    fn stored(&self, k: &str) -> Option<String> {
        let found = self
            .engine
            .read_live(
                TABLE,
                &key(k),
                &[Slice::all(&cmp())],
                false,
                NOW,
                usize::MAX,
            )
            .unwrap()?;
        value_of(&found.0)
    }
}

fn value_of(p: &Partition) -> Option<String> {
    let row = p.rows.get(&ClusteringKey::row(ck(1), &cmp()))?;
    let c = row.cells.get(&(1, None))?;
    Some(String::from_utf8_lossy(&c.value).into_owned())
}

struct Spec {
    host: u8,
    tokens: Vec<i64>,
    seeds: Vec<std::net::SocketAddr>,
    /// Whether its engine has the table.
    has_table: bool,
    /// Whether it answers MUTATION (false: never, as a frozen node).
    answers_writes: bool,
    /// Whether it answers READ.
    answers_reads: bool,
}

async fn start(spec: Spec) -> Node {
    let env = Env::tokio(u64::from(spec.host));
    let host = HostId([spec.host; 16]);
    let mut mc = MessagingConfig::new(CLUSTER, host, loopback());
    mc.generation = 1;
    let messaging = Messaging::start(mc, env.clone()).await.expect("messaging");
    let storage = Storage::new();
    let engine = storage.engine();
    if spec.has_table {
        engine.create_table(desc()).unwrap();
    }
    Replica::new(engine.clone(), false).register(&messaging);
    if !spec.answers_writes {
        messaging.register(Verb::MUTATION, |_req| async { None });
    }
    if !spec.answers_reads {
        messaging.register(Verb::READ, |_req| async { None });
    }
    let mut config = MembershipConfig::new(spec.seeds);
    config.gossip_interval = Duration::from_millis(100);
    config.phi_convict_threshold = 5.0;
    config.dc = "dc1".into();
    config.rack = "rack1".into();
    let tokens: Vec<String> = spec.tokens.iter().map(i64::to_string).collect();
    config.values.insert(GossipKey::TOKENS, tokens.join(","));
    let clock = Arc::clone(&env.clock);
    let gossip = Arc::new(
        Gossiper::start(config, &messaging, env)
            .await
            .expect("gossip"),
    );
    let here = Host {
        host_id: host,
        address: messaging.local_addr(),
        location: Location {
            dc: "dc1".into(),
            rack: "rack1".into(),
        },
        is_local: true,
    };
    let timeouts = Timeouts {
        write: Duration::from_millis(500),
        read: Duration::from_millis(500),
        ..Timeouts::default()
    };
    let coordinator = Coordinator::new(
        engine.clone(),
        messaging.clone(),
        gossip.clone(),
        clock,
        Topology::single(here, spec.tokens),
        "dc1".into(),
        timeouts,
    );
    coordinator.follow_membership();
    Node {
        host,
        messaging,
        gossip,
        engine,
        coordinator,
        _storage: storage,
    }
}

fn spec(host: u8, token: i64) -> Spec {
    Spec {
        host,
        tokens: vec![token],
        seeds: vec![],
        has_table: true,
        answers_writes: true,
        answers_reads: true,
    }
}

/// Three nodes owning tokens -2^62, 0, 2^62, all UP with a full ring on
/// each; `adjust` changes the third one's spec.
async fn three(adjust: impl FnOnce(Spec) -> Spec) -> [Node; 3] {
    let a = start(spec(1, -(1 << 62))).await;
    let seed = vec![a.messaging.local_addr()];
    let b = start(Spec {
        seeds: seed.clone(),
        ..spec(2, 0)
    })
    .await;
    let c = start(adjust(Spec {
        seeds: seed,
        ..spec(3, 1 << 62)
    }))
    .await;
    let nodes = [a, b, c];
    wait_for("every node sees a ring of three, all UP", || {
        nodes
            .iter()
            .all(|n| n.coordinator.node_count() == 3 && n.gossip.live().len() == 2)
    })
    .await;
    nodes
}

async fn wait_for(what: &str, mut check: impl FnMut() -> bool) {
    let start = SystemClock.now();
    while !check() {
        assert!(
            SystemClock.now() - start < DEADLINE,
            "not within {DEADLINE:?}: {what}"
        );
        SystemClock.sleep(Duration::from_millis(20)).await;
    }
}

fn write<'a>(k: &str, update: Partition, r: &'a Replication, cl: Consistency) -> Write<'a> {
    Write {
        table: TABLE,
        key: key(k),
        update,
        replication: r,
        consistency: cl,
        write_type: WriteType::Simple,
    }
}

async fn read_value(
    n: &Node,
    k: &str,
    r: &Replication,
    cl: Consistency,
) -> Result<Option<String>, DataError> {
    read_with(n, k, r, cl, Speculation::Never, true).await
}

async fn read_with(
    n: &Node,
    k: &str,
    r: &Replication,
    cl: Consistency,
    speculation: Speculation,
    blocking_repair: bool,
) -> Result<Option<String>, DataError> {
    let k = key(k);
    let slices = [Slice::all(&cmp())];
    let found = n
        .coordinator
        .read(Read {
            table: TABLE,
            key: &k,
            slices: &slices,
            reversed: false,
            now_seconds: NOW,
            row_limit: usize::MAX,
            replication: r,
            consistency: cl,
            speculation,
            blocking_repair,
        })
        .await?;
    Ok(found.partition.as_ref().and_then(value_of))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quorum_write_reaches_every_replica_and_reads_merge_the_newest() {
    let nodes = three(|s| s).await;
    let rf3 = Replication::Simple(3);
    nodes[0]
        .coordinator
        .write(write("k", cell(10, "first"), &rf3, Consistency::Quorum))
        .await
        .expect("quorum write");
    wait_for("all three replicas hold the write", || {
        nodes
            .iter()
            .all(|n| n.stored("k").as_deref() == Some("first"))
    })
    .await;
    // A newer value on the third replica only: ALL reads it from anywhere.
    nodes[2]
        .engine
        .apply(TABLE, &key("k"), cell(20, "newer"))
        .unwrap();
    for n in &nodes {
        let v = read_value(n, "k", &rf3, Consistency::All).await.unwrap();
        assert_eq!(v.as_deref(), Some("newer"));
    }
    // A row deletion on the second replica shadows the live cells on the
    // others once merged.
    let mut deletion = Partition::default();
    deletion.rows.insert(
        ClusteringKey::row(ck(1), &cmp()),
        Row {
            deletion: Some(DeletionTime::new(30, NOW)),
            ..Row::default()
        },
    );
    nodes[1].engine.apply(TABLE, &key("k"), deletion).unwrap();
    let v = read_value(&nodes[0], "k", &rf3, Consistency::All)
        .await
        .unwrap();
    assert_eq!(v, None, "the deletion on one replica wins over older data");
    for n in nodes {
        n.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rf1_writes_land_on_the_owner_and_key_scans_find_them_from_any_node() {
    let nodes = three(|s| s).await;
    let rf1 = Replication::Simple(1);
    let keys: Vec<String> = (0..30).map(|i| format!("key{i}")).collect();
    for k in &keys {
        nodes[0]
            .coordinator
            .write(write(k, cell(1, k), &rf1, Consistency::One))
            .await
            .expect("write at ONE");
    }
    for k in &keys {
        let holders = nodes.iter().filter(|n| n.stored(k).is_some()).count();
        assert_eq!(holders, 1, "{k} is on its one replica only");
        let v = read_value(&nodes[2], k, &rf1, Consistency::One)
            .await
            .unwrap();
        assert_eq!(v.as_deref(), Some(k.as_str()), "{k} read from another node");
    }
    let scan = |limit| KeyScan {
        table: TABLE,
        start: &TokenBound::Unbounded,
        end: &TokenBound::Unbounded,
        limit,
        replication: &rf1,
        consistency: Consistency::One,
    };
    let all = nodes[1].coordinator.scan_keys(scan(1000)).await.unwrap();
    let mut expected: Vec<PartitionKey> = keys.iter().map(|k| key(k)).collect();
    expected.sort();
    assert_eq!(all, expected, "every key, in token order, once");
    let first = nodes[1].coordinator.scan_keys(scan(7)).await.unwrap();
    assert_eq!(first, expected[..7]);
    nodes[2]
        .coordinator
        .truncate(TABLE)
        .await
        .expect("truncate");
    assert!(nodes
        .iter()
        .all(|n| keys.iter().all(|k| n.stored(k).is_none())));
    for n in nodes {
        n.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_that_never_answers_makes_all_time_out_but_not_quorum() {
    let nodes = three(|s| Spec {
        answers_writes: false,
        ..s
    })
    .await;
    let rf3 = Replication::Simple(3);
    let c = &nodes[0].coordinator;
    c.write(write("k", cell(1, "v"), &rf3, Consistency::Quorum))
        .await
        .expect("two of three answer");
    let err = c
        .write(write("k", cell(2, "v"), &rf3, Consistency::All))
        .await
        .unwrap_err();
    let DataError::WriteTimeout(t) = err else {
        panic!("expected a write timeout, got {err:?}");
    };
    assert_eq!((t.received, t.block_for), (2, 3));
    assert_eq!(t.consistency, Consistency::All);
    assert_eq!(t.write_type, WriteType::Simple);
    for n in nodes {
        n.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_without_the_table_fails_the_write_at_all() {
    let nodes = three(|s| Spec {
        has_table: false,
        ..s
    })
    .await;
    let rf3 = Replication::Simple(3);
    let err = nodes[0]
        .coordinator
        .write(write("k", cell(1, "v"), &rf3, Consistency::All))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, DataError::WriteFailure(m) if m.contains("unknown table")),
        "{err:?}"
    );
    for n in nodes {
        n.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_two_replicas_down_quorum_is_unavailable_and_one_goes_on() {
    let [a, b, c] = three(|s| s).await;
    let (b_host, c_host) = (b.host, c.host);
    b.stop().await;
    c.stop().await;
    wait_for("the first node sees both others DOWN", || {
        let live = a.gossip.live();
        !live.is_up(b_host) && !live.is_up(c_host)
    })
    .await;
    let rf3 = Replication::Simple(3);
    let err = a
        .coordinator
        .write(write("k", cell(1, "v"), &rf3, Consistency::Quorum))
        .await
        .unwrap_err();
    let DataError::Unavailable(u) = err else {
        panic!("expected Unavailable, got {err:?}");
    };
    assert_eq!((u.required, u.alive), (2, 1));
    let err = read_value(&a, "k", &rf3, Consistency::Quorum)
        .await
        .unwrap_err();
    assert!(matches!(err, DataError::Unavailable(_)), "{err:?}");
    a.coordinator
        .write(write("k", cell(1, "v"), &rf3, Consistency::One))
        .await
        .expect("ONE with one replica up");
    let v = read_value(&a, "k", &rf3, Consistency::One).await.unwrap();
    assert_eq!(v.as_deref(), Some("v"));
    a.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_digest_mismatch_reads_full_data_and_repairs_the_stale_replica() {
    let nodes = three(|s| s).await;
    let rf3 = Replication::Simple(3);
    for n in &nodes {
        n.engine.apply(TABLE, &key("k"), cell(10, "old")).unwrap();
    }
    // The two other replicas have a newer value the first lacks.
    for n in &nodes[1..] {
        n.engine.apply(TABLE, &key("k"), cell(20, "new")).unwrap();
    }
    let c = &nodes[0].coordinator;
    // Without read repair: the newest value, and the stale copy stays.
    let v = read_with(
        &nodes[0],
        "k",
        &rf3,
        Consistency::Quorum,
        Speculation::Never,
        false,
    )
    .await
    .unwrap();
    assert_eq!(v.as_deref(), Some("new"));
    assert_eq!(nodes[0].stored("k").as_deref(), Some("old"));
    assert_eq!(
        (c.counts().digest_mismatches, c.counts().read_repairs),
        (1, 0)
    );
    // BLOCKING: repaired before the answer.
    let v = read_value(&nodes[0], "k", &rf3, Consistency::Quorum)
        .await
        .unwrap();
    assert_eq!(v.as_deref(), Some("new"));
    assert_eq!(
        nodes[0].stored("k").as_deref(),
        Some("new"),
        "repaired before the answer"
    );
    assert_eq!(
        (c.counts().digest_mismatches, c.counts().read_repairs),
        (2, 1)
    );
    // Agreeing replicas: digests match, nothing more.
    read_value(&nodes[0], "k", &rf3, Consistency::Quorum)
        .await
        .unwrap();
    assert_eq!(c.counts().digest_mismatches, 2);
    for n in nodes {
        n.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_replica_times_a_read_out_unless_the_table_speculates() {
    let nodes = three(|s| Spec {
        answers_reads: false,
        ..s
    })
    .await;
    let rf3 = Replication::Simple(3);
    // A key owned by the third node: from the first node, the replicas in
    // order of preference are itself, the silent third, then the second.
    let k = (0..1000)
        .map(|i| format!("key{i}"))
        .find(|k| (1..=(1i64 << 62)).contains(&key(k).token))
        .expect("a key in the third node's range");
    nodes[0]
        .coordinator
        .write(write(&k, cell(1, "v"), &rf3, Consistency::All))
        .await
        .expect("every replica takes writes");
    let err = read_with(
        &nodes[0],
        &k,
        &rf3,
        Consistency::Quorum,
        Speculation::Never,
        true,
    )
    .await
    .unwrap_err();
    let DataError::ReadTimeout(t) = err else {
        panic!("expected a read timeout, got {err:?}");
    };
    assert_eq!((t.received, t.block_for, t.data_present), (1, 2, true));
    let fixed = Speculation::Fixed(Duration::from_millis(50));
    let v = read_with(&nodes[0], &k, &rf3, Consistency::Quorum, fixed, true)
        .await
        .unwrap();
    assert_eq!(v.as_deref(), Some("v"));
    assert_eq!(nodes[0].coordinator.counts().speculative_retries, 1);
    for n in nodes {
        n.stop().await;
    }
}

/// Row `c` with column 1 = `v`, written at `ts`.
fn row_at(c: i32, ts: i64, v: &str) -> (ClusteringKey, Row) {
    let mut row = Row::default();
    row.cells.insert(
        (1, None),
        Cell::live(ts, Bytes::copy_from_slice(v.as_bytes())),
    );
    (ClusteringKey::row(ck(c), &cmp()), row)
}

/// A deletion of row `c` at `ts`.
fn row_deleted(c: i32, ts: i64) -> (ClusteringKey, Row) {
    let row = Row {
        deletion: Some(DeletionTime::new(ts, NOW - 10)),
        ..Row::default()
    };
    (ClusteringKey::row(ck(c), &cmp()), row)
}

/// The rows `c` from `from` to `to` (both included).
fn rows_between(from: i32, to: i32) -> Slice {
    Slice {
        start: ClusteringKey::before(ck(from), &cmp()),
        end: ClusteringKey::after(ck(to), &cmp()),
    }
}

/// (clustering, column 1) of each live row, in clustering order.
fn listed(p: Option<&Partition>) -> Vec<(i32, String)> {
    let Some(p) = p else { return Vec::new() };
    p.rows
        .iter()
        .map(|(k, r)| {
            let c = i32::from_be_bytes(k.values[0][..4].try_into().unwrap());
            let v = r
                .cells
                .get(&(1, None))
                .map(|c| c.value.clone())
                .unwrap_or_default();
            (c, String::from_utf8_lossy(&v).into_owned())
        })
        .collect()
}

/// What `n` reads of `k` over `slices` at ALL, no read repair.
async fn rows_read(
    n: &Node,
    k: &PartitionKey,
    slices: &[Slice],
    reversed: bool,
    row_limit: usize,
) -> Vec<(i32, String)> {
    let rf3 = Replication::Simple(3);
    let found = n
        .coordinator
        .read(Read {
            table: TABLE,
            key: k,
            slices,
            reversed,
            now_seconds: NOW,
            row_limit,
            replication: &rf3,
            consistency: Consistency::All,
            speculation: Speculation::Never,
            blocking_repair: false,
        })
        .await
        .expect("read at ALL");
    listed(found.partition.as_ref())
}

/// What the three replicas' data add up to, read as one node would.
fn expected(
    held: &[Partition],
    slices: &[Slice],
    reversed: bool,
    limit: usize,
) -> Vec<(i32, String)> {
    let mut all = Partition::default();
    for p in held {
        all.merge(p.clone());
    }
    let (live, _, _) = all.resolve_slices(slices, reversed, NOW, limit);
    listed(Some(&live))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_one_replica_lacks_are_read_on_past_its_row_limit() {
    let nodes = three(|s| s).await;
    let k = key("wide");
    // Node 1 has rows 0-9; node 2 deleted rows 0-4 later; node 3 nothing.
    let mut one = Partition::default();
    for c in 0..10 {
        let (ck, row) = row_at(c, 10, &format!("v{c}"));
        one.rows.insert(ck, row);
    }
    let mut two = Partition::default();
    for c in 0..5 {
        let (ck, row) = row_deleted(c, 20);
        two.rows.insert(ck, row);
    }
    nodes[0].engine.apply(TABLE, &k, one).unwrap();
    nodes[1].engine.apply(TABLE, &k, two).unwrap();
    let all = [Slice::all(&cmp())];
    let got = rows_read(&nodes[2], &k, &all, false, 3).await;
    assert_eq!(got, [(5, "v5".into()), (6, "v6".into()), (7, "v7".into())]);
    assert!(nodes[2].coordinator.counts().short_read_rounds > 0);
    let got = rows_read(&nodes[2], &k, &all, true, 3).await;
    assert_eq!(got, [(7, "v7".into()), (8, "v8".into()), (9, "v9".into())]);
    for n in nodes {
        n.stop().await;
    }
}

/// A small deterministic generator (xorshift), so a failure names its seed.
struct Dice(u64);

impl Dice {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Per replica: live rows, row deletions and a range deletion here and
/// there, over clusterings 0-39, with timestamps that make them shadow
/// each other across replicas.
fn divergent(seed: u64) -> [Partition; 3] {
    let mut dice = Dice(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    std::array::from_fn(|replica| {
        let mut p = Partition::default();
        for c in 0..40 {
            let ts = 1 + dice.below(50) as i64;
            match dice.below(6) {
                0 | 1 => {
                    let (ck, row) = row_at(c, ts, &format!("r{replica}-{ts}"));
                    p.rows.insert(ck, row);
                }
                2 => {
                    let (ck, row) = row_deleted(c, ts);
                    p.rows.insert(ck, row);
                }
                _ => {}
            }
        }
        if dice.below(2) == 0 {
            let from = dice.below(35) as i32;
            p.range_tombstones.push(varve_types::data::RangeTombstone {
                slice: rows_between(from, from + 1 + dice.below(5) as i32),
                deletion: DeletionTime::new(1 + dice.below(50) as i64, NOW - 10),
            });
        }
        p
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_with_a_row_limit_over_divergent_replicas_answer_as_their_merge() {
    let nodes = three(|s| s).await;
    let slice_sets = [
        vec![Slice::all(&cmp())],
        vec![rows_between(3, 11), rows_between(20, 33)],
    ];
    for seed in 0..8u64 {
        let k = key(&format!("p{seed}"));
        let held = divergent(seed);
        for (n, p) in nodes.iter().zip(&held) {
            n.engine.apply(TABLE, &k, p.clone()).unwrap();
        }
        for slices in &slice_sets {
            for limit in [1, 2, 3, 7, 40, usize::MAX] {
                for reversed in [false, true] {
                    let coordinator = &nodes[(seed % 3) as usize];
                    let got = rows_read(coordinator, &k, slices, reversed, limit).await;
                    let want = expected(&held, slices, reversed, limit);
                    assert_eq!(
                        got, want,
                        "seed {seed}, limit {limit}, reversed {reversed}, slices {slices:?}"
                    );
                }
            }
        }
    }
    for n in nodes {
        n.stop().await;
    }
}
