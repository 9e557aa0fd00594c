//! Three coordinators in one process over real messaging and gossip on
//! 127.0.0.1, each with its own in-memory engine and replica handlers, as
//! three processes would be; and the data the coordinator tests write.

#![allow(dead_code)]
// Each test binary uses its own part of what is re-exported here.
#![allow(unused_imports)]

pub use std::sync::Arc;
pub use std::time::Duration;

pub use bytes::Bytes;
pub use varve_cluster::coordinator::{
    Coordinator, Host, KeyScan, Read, Replication, Speculation, Timeouts, Topology, Write,
};
pub use varve_cluster::env::{Clock, Env, SystemClock};
pub use varve_cluster::membership::{GossipKey, Gossiper, Membership, MembershipConfig};
pub use varve_cluster::net::{HostId, Messaging, MessagingConfig, Verb};
pub use varve_cluster::ring::Location;
pub use varve_cluster::verbs::Replica;
pub use varve_storage::compaction::{CommonOptions, CompactionConfig};
pub use varve_storage::sstable::SstableParams;
pub use varve_storage::{Engine, Storage, TableDescriptor};
pub use varve_types::consistency::Consistency;
pub use varve_types::data::{
    Cell, ClusteringComparator, ClusteringKey, DeletionTime, Partition, PartitionKey, Row, Slice,
    TokenBound,
};
pub use varve_types::data_error::{DataError, WriteType};
pub use varve_types::CqlType;

use super::{loopback, CLUSTER};

pub const TABLE: u128 = 0x7ab1e;
pub const DEADLINE: Duration = Duration::from_secs(30);
pub const NOW: i32 = 1_000_000;

pub fn cmp() -> Arc<ClusteringComparator> {
    ClusteringComparator::new(vec![(CqlType::Int, false)])
}

pub fn desc() -> TableDescriptor {
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

pub fn key(k: &str) -> PartitionKey {
    PartitionKey::new(Bytes::copy_from_slice(k.as_bytes()))
}

/// A row at clustering 1 whose column 1 holds `value`, written at `ts`.
pub fn cell(ts: i64, value: &str) -> Partition {
    let mut p = Partition::default();
    let mut row = Row::default();
    row.cells.insert(
        (1, None),
        Cell::live(ts, Bytes::copy_from_slice(value.as_bytes())),
    );
    p.rows.insert(ClusteringKey::row(ck(1), &cmp()), row);
    p
}

pub fn ck(c: i32) -> Vec<Bytes> {
    vec![Bytes::copy_from_slice(&c.to_be_bytes())]
}

/// A node: messaging, gossip, an engine with the table, the coordinator.
pub struct Node {
    pub host: HostId,
    pub messaging: Messaging,
    pub gossip: Arc<Gossiper>,
    pub engine: Arc<Engine>,
    pub coordinator: Arc<Coordinator>,
    pub _storage: Storage,
}

impl Node {
    pub async fn stop(self) {
        self.gossip.shutdown().await;
        self.messaging.shutdown().await;
    }

    /// What this node's own engine holds at clustering 1, column 1.
    pub fn stored(&self, k: &str) -> Option<String> {
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

pub fn value_of(p: &Partition) -> Option<String> {
    let row = p.rows.get(&ClusteringKey::row(ck(1), &cmp()))?;
    let c = row.cells.get(&(1, None))?;
    Some(String::from_utf8_lossy(&c.value).into_owned())
}

pub struct Spec {
    pub host: u8,
    pub tokens: Vec<i64>,
    pub seeds: Vec<std::net::SocketAddr>,
    /// Whether its engine has the table.
    pub has_table: bool,
    /// Whether it answers MUTATION (false: never, as a frozen node).
    pub answers_writes: bool,
    /// Whether it answers READ.
    pub answers_reads: bool,
}

pub async fn start(spec: Spec) -> Node {
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

pub fn spec(host: u8, token: i64) -> Spec {
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
pub async fn three(adjust: impl FnOnce(Spec) -> Spec) -> [Node; 3] {
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

pub async fn wait_for(what: &str, mut check: impl FnMut() -> bool) {
    let start = SystemClock.now();
    while !check() {
        assert!(
            SystemClock.now() - start < DEADLINE,
            "not within {DEADLINE:?}: {what}"
        );
        SystemClock.sleep(Duration::from_millis(20)).await;
    }
}

pub fn write<'a>(k: &str, update: Partition, r: &'a Replication, cl: Consistency) -> Write<'a> {
    Write {
        table: TABLE,
        key: key(k),
        update,
        replication: r,
        consistency: cl,
        write_type: WriteType::Simple,
    }
}

pub async fn read_value(
    n: &Node,
    k: &str,
    r: &Replication,
    cl: Consistency,
) -> Result<Option<String>, DataError> {
    read_with(n, k, r, cl, Speculation::Never, true).await
}

pub async fn read_with(
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

/// Row `c` with column 1 = `v`, written at `ts`.
pub fn row_at(c: i32, ts: i64, v: &str) -> (ClusteringKey, Row) {
    let mut row = Row::default();
    row.cells.insert(
        (1, None),
        Cell::live(ts, Bytes::copy_from_slice(v.as_bytes())),
    );
    (ClusteringKey::row(ck(c), &cmp()), row)
}

/// A deletion of row `c` at `ts`.
pub fn row_deleted(c: i32, ts: i64) -> (ClusteringKey, Row) {
    let row = Row {
        deletion: Some(DeletionTime::new(ts, NOW - 10)),
        ..Row::default()
    };
    (ClusteringKey::row(ck(c), &cmp()), row)
}

/// The rows `c` from `from` to `to` (both included).
pub fn rows_between(from: i32, to: i32) -> Slice {
    Slice {
        start: ClusteringKey::before(ck(from), &cmp()),
        end: ClusteringKey::after(ck(to), &cmp()),
    }
}

/// (clustering, column 1) of each live row, in clustering order.
pub fn listed(p: Option<&Partition>) -> Vec<(i32, String)> {
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
pub async fn rows_read(
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
pub fn expected(
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

/// A small deterministic generator (xorshift), so a failure names its seed.
pub struct Dice(pub u64);

impl Dice {
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Per replica: live rows, row deletions and a range deletion here and
/// there, over clusterings 0-39, with timestamps that make them shadow
/// each other across replicas.
pub fn divergent(seed: u64) -> [Partition; 3] {
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
