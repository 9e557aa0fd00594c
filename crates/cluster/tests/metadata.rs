//! The metadata log over real messaging on 127.0.0.1: every node is its
//! own `Messaging` and `MetadataService` on an ephemeral port with its
//! own directory, as separate processes would be. Raft's heartbeat is
//! 100 ms and its election timeout 0.5 to 1 s, so each test takes a few
//! seconds; every wait is for a condition under a generous deadline.

mod support;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use parking_lot::Mutex;
use varve_cluster::env::{Clock, Env, SystemClock};
use varve_cluster::metadata::{
    ClusterMetadata, Command, MetadataConfig, MetadataError, MetadataHooks, MetadataListener,
    MetadataLog, MetadataService, NodeRecord, NodeState, SchemaVersion, TokenAllocator,
};
use varve_cluster::net::{HostId, Messaging, MessagingConfig};

use support::{loopback, CLUSTER};

/// Long enough for a loaded two-core machine.
const DEADLINE: Duration = Duration::from_secs(30);

/// A directory for one test's nodes, removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new(test: &str) -> Dir {
        let dir =
            std::env::temp_dir().join(format!("varve-metadata-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        Dir(dir)
    }

    fn node(&self, host: u8) -> PathBuf {
        self.0.join(format!("node{host}"))
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Every metadata a node's listener heard, in order.
type Heard = Arc<Mutex<Vec<Arc<ClusterMetadata>>>>;

struct Node {
    host: HostId,
    messaging: Messaging,
    log: MetadataService,
    heard: Heard,
}

impl Node {
    fn addr(&self) -> SocketAddr {
        self.messaging.local_addr()
    }

    async fn stop(self) {
        self.log.shutdown().await;
        self.messaging.shutdown().await;
    }
}

fn test_config(seeds: Vec<SocketAddr>) -> MetadataConfig {
    let mut config = MetadataConfig::new(CLUSTER, seeds);
    config.heartbeat_interval = Duration::from_millis(100);
    config.election_timeout_min = Duration::from_millis(500);
    config.election_timeout_max = Duration::from_millis(1000);
    config.retry_interval = Duration::from_millis(100);
    config
}

/// Starts node `host` listening on `listen`; `seeds` of `None` makes it
/// its own only seed.
async fn start(
    host: u8,
    listen: SocketAddr,
    seeds: Option<Vec<SocketAddr>>,
    dir: &Path,
    configure: impl FnOnce(&mut MetadataConfig),
) -> Node {
    start_with(host, listen, seeds, dir, configure, || None).await
}

/// [`start`] with a token allocator.
async fn start_with(
    host: u8,
    listen: SocketAddr,
    seeds: Option<Vec<SocketAddr>>,
    dir: &Path,
    configure: impl FnOnce(&mut MetadataConfig),
    allocator: impl FnOnce() -> Option<Arc<dyn TokenAllocator>>,
) -> Node {
    let env = Env::tokio(u64::from(host));
    let host_id = HostId([host; 16]);
    let messaging = Messaging::start(MessagingConfig::new(CLUSTER, host_id, listen), env.clone())
        .await
        .expect("messaging starts");
    let addr = messaging.local_addr();
    let mut config = test_config(seeds.unwrap_or_else(|| vec![addr]));
    configure(&mut config);
    let allocator = allocator();
    let own = NodeRecord {
        host_id,
        storage_addr: addr,
        rpc_addr: None,
        dc: "dc1".to_string(),
        rack: "rack1".to_string(),
        tokens: vec![i64::from(host) * 100],
        state: NodeState::Normal,
    };
    let heard: Heard = Arc::default();
    let sink = heard.clone();
    let listener = move |m: &Arc<ClusterMetadata>| sink.lock().push(m.clone());
    let listener: Arc<dyn MetadataListener> = Arc::new(listener);
    let hooks = MetadataHooks {
        listener: Some(listener),
        allocator,
    };
    let log = MetadataService::start(config, env, &messaging, dir, own, hooks)
        .await
        .expect("metadata log starts");
    Node {
        host: host_id,
        messaging,
        log,
        heard,
    }
}

/// Waits until `check` holds, polling every 20 ms, at most DEADLINE.
async fn until(what: &str, mut check: impl FnMut() -> bool) {
    let clock = SystemClock;
    let start = clock.now();
    while !check() {
        assert!(
            clock.now() - start < DEADLINE,
            "timed out waiting for {what}"
        );
        clock.sleep(Duration::from_millis(20)).await;
    }
}

/// Three nodes, node 1 the only seed, all members and in step.
async fn three(dir: &Dir, configure: fn(&mut MetadataConfig)) -> Vec<Node> {
    let first = start(1, loopback(), None, &dir.node(1), configure).await;
    let seeds = vec![first.addr()];
    let second = start(2, loopback(), Some(seeds.clone()), &dir.node(2), configure).await;
    let third = start(3, loopback(), Some(seeds), &dir.node(3), configure).await;
    let nodes = vec![first, second, third];
    until("three members with three voters, in step", || {
        let m = nodes[0].log.current();
        nodes.iter().all(|n| {
            let c = n.log.current();
            c.nodes.len() == 3 && c.voters.len() == 3 && c.epoch == m.epoch
        })
    })
    .await;
    nodes
}

/// Proposes a schema change on `node`, retrying a stale epoch.
async fn change_schema(node: &Node, schema: &'static [u8]) -> u64 {
    loop {
        let command = Command::SchemaChange {
            schema: Bytes::from_static(schema),
            expected_epoch: node.log.current().epoch,
        };
        match node.log.propose(command).await {
            Ok(epoch) => return epoch,
            Err(MetadataError::Stale { .. }) => continue,
            Err(e) => panic!("schema change failed: {e}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_node_forms_a_cluster_alone() {
    let dir = Dir::new("alone");
    let node = start(1, loopback(), None, &dir.node(1), |_| {}).await;
    node.log.wait_member(DEADLINE).await.expect("member");
    let m = node.log.current();
    assert!(m.has_cluster());
    assert_eq!(m.cluster_name, CLUSTER);
    assert_eq!(m.nodes.keys().copied().collect::<Vec<_>>(), vec![node.host]);
    until("the node to vote", || {
        node.log.current().voters.contains(&node.host)
    })
    .await;
    assert_eq!(node.log.leader(), Some(node.addr()));
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_nodes_form_one_cluster_and_apply_in_the_same_order() {
    let dir = Dir::new("three");
    let nodes = three(&dir, |_| {}).await;
    let first = nodes[0].log.current();
    for node in &nodes {
        let m = node.log.current();
        assert_eq!(m.cluster_id, first.cluster_id);
        assert_eq!(m.nodes, first.nodes);
        let record = &m.nodes[&node.host];
        assert_eq!(record.storage_addr, node.addr());
        assert_eq!(record.tokens, vec![i64::from(node.host.0[0]) * 100]);
    }

    // Schema changes proposed on a follower apply everywhere, in order.
    let leader = nodes[0].log.leader().expect("a leader");
    let follower = nodes
        .iter()
        .find(|n| n.addr() != leader)
        .expect("a follower");
    change_schema(follower, b"schema one").await;
    let epoch = change_schema(follower, b"schema two").await;
    for node in &nodes {
        node.log.wait_applied(epoch).await.expect("applied");
        assert_eq!(
            node.log.current().schema_version,
            SchemaVersion::of(b"schema two")
        );
    }
    let versions = |node: &Node| {
        let mut seen: Vec<SchemaVersion> =
            node.heard.lock().iter().map(|m| m.schema_version).collect();
        seen.dedup();
        seen
    };
    let expected = vec![
        SchemaVersion::of(b""),
        SchemaVersion::of(b"schema one"),
        SchemaVersion::of(b"schema two"),
    ];
    for node in &nodes {
        assert_eq!(versions(node), expected);
    }

    // Two proposals expecting the same epoch: one applies, one is stale.
    let expected_epoch = nodes[0].log.current().epoch;
    let command = |schema: &'static [u8]| Command::SchemaChange {
        schema: Bytes::from_static(schema),
        expected_epoch,
    };
    let (a, b) = tokio::join!(
        nodes[1].log.propose(command(b"from two")),
        nodes[2].log.propose(command(b"from three"))
    );
    let stale = |r: &Result<u64, MetadataError>| matches!(r, Err(MetadataError::Stale { .. }));
    assert!(
        (a.is_ok() && stale(&b)) || (stale(&a) && b.is_ok()),
        "{a:?} {b:?}"
    );
    let Err(MetadataError::Stale { current_epoch }) = (if a.is_ok() { &b } else { &a }) else {
        unreachable!()
    };
    // The loser has applied the epoch it was told of.
    let loser = if a.is_ok() { &nodes[2] } else { &nodes[1] };
    assert!(loser.log.current().epoch >= *current_epoch);
    for node in nodes {
        node.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_node_keeps_its_metadata_and_catches_up() {
    let dir = Dir::new("restart");
    let mut nodes = three(&dir, |_| {}).await;
    let third = nodes.pop().expect("three nodes");
    let (addr, before) = (third.addr(), third.log.current());
    third.stop().await;

    change_schema(&nodes[0], b"while away").await;
    let epoch = change_schema(&nodes[1], b"while still away").await;

    let seeds = Some(vec![nodes[0].addr()]);
    let third = start(3, addr, seeds, &dir.node(3), |_| {}).await;
    // Recovered from its own files, before hearing from anyone.
    assert!(third.log.is_member());
    assert!(third.log.current().epoch >= before.epoch.min(1));
    third.log.wait_applied(epoch).await.expect("caught up");
    assert_eq!(
        third.log.current().schema_version,
        SchemaVersion::of(b"while still away")
    );
    assert_eq!(third.log.current().nodes, before.nodes);
    nodes.push(third);
    for node in nodes {
        node.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_far_behind_gets_a_snapshot_and_restarts_from_its_own() {
    let dir = Dir::new("snapshot");
    let mut nodes = three(&dir, |c| c.snapshot_every_entries = 3).await;
    let third = nodes.pop().expect("three nodes");
    let addr = third.addr();
    third.stop().await;

    let schemas: [&'static [u8]; 8] = [b"1", b"2", b"3", b"4", b"5", b"6", b"7", b"8"];
    let mut epoch = 0;
    for schema in schemas {
        epoch = change_schema(&nodes[0], schema).await;
    }
    let seeds = Some(vec![nodes[0].addr()]);
    let third = start(3, addr, seeds.clone(), &dir.node(3), |c| {
        c.snapshot_every_entries = 3
    })
    .await;
    third.log.wait_applied(epoch).await.expect("caught up");
    assert_eq!(third.log.current().schema_version, SchemaVersion::of(b"8"));
    // The log before the snapshot is gone from the leader: the third
    // node can only have caught up through a snapshot.
    assert!(dir.node(3).join("snapshot").exists());
    third.stop().await;

    let third = start(3, addr, seeds, &dir.node(3), |c| {
        c.snapshot_every_entries = 3
    })
    .await;
    assert!(third.log.is_member());
    until("the restarted node to replay its log", || {
        third.log.current().schema_version == SchemaVersion::of(b"8")
    })
    .await;
    nodes.push(third);
    for node in nodes {
        node.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_quorum_a_proposal_fails_after_the_timeout() {
    let dir = Dir::new("quorum");
    let mut nodes = three(&dir, |c| c.request_timeout = Duration::from_secs(2)).await;
    let survivor = nodes.remove(0);
    for node in nodes {
        node.stop().await;
    }
    let command = Command::SchemaChange {
        schema: Bytes::from_static(b"nobody hears"),
        expected_epoch: survivor.log.current().epoch,
    };
    let clock = SystemClock;
    let start = clock.now();
    let err = survivor.log.propose(command).await.expect_err("no quorum");
    assert!(clock.now() - start >= Duration::from_secs(2));
    assert_eq!(
        err,
        MetadataError::NoQuorum {
            reachable: Some(1),
            voters: 3
        }
    );
    assert_eq!(
        err.to_string(),
        "cluster metadata has no quorum (1 of 3 voters reachable)"
    );
    survivor.stop().await;
}

/// Each node takes the token after the largest listed, computed on the
/// metadata it has applied; a node with host id 4 is refused.
fn next_token(metadata: &ClusterMetadata, own: &NodeRecord) -> Result<Vec<i64>, String> {
    if own.host_id == HostId([4; 16]) {
        return Err("no room for node 4".to_string());
    }
    let largest = metadata.nodes.values().flat_map(|n| n.tokens.iter()).max();
    Ok(vec![largest.map_or(0, |t| t + 1)])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn joins_take_their_tokens_from_the_allocator_in_turn() {
    let dir = Dir::new("allocator");
    let allocator = || Some(Arc::new(next_token) as Arc<dyn TokenAllocator>);
    let first = start_with(1, loopback(), None, &dir.node(1), |_| {}, allocator).await;
    let seeds = Some(vec![first.addr()]);
    // Two nodes join at once: the epoch check makes them take turns.
    let (dir2, dir3) = (dir.node(2), dir.node(3));
    let (second, third) = tokio::join!(
        start_with(2, loopback(), seeds.clone(), &dir2, |_| {}, allocator),
        start_with(3, loopback(), seeds.clone(), &dir3, |_| {}, allocator),
    );
    let nodes = vec![first, second, third];
    until("three members", || {
        nodes.iter().all(|n| n.log.current().nodes.len() == 3)
    })
    .await;
    let m = nodes[0].log.current();
    let mut tokens: Vec<i64> = m.nodes.values().flat_map(|n| n.tokens.clone()).collect();
    tokens.sort_unstable();
    assert_eq!(tokens, vec![0, 1, 2]);

    // A node the allocator refuses stays out.
    let refused = start_with(4, loopback(), seeds, &dir.node(4), |_| {}, allocator).await;
    let err = refused.log.wait_member(Duration::from_secs(3)).await;
    assert!(err.is_err());
    assert_eq!(nodes[0].log.current().nodes.len(), 3);
    refused.stop().await;
    for node in nodes {
        node.stop().await;
    }
}

/// Node 3's tokens, joining: with node 3's address, its replacement.
struct ReplaceNode3;

impl TokenAllocator for ReplaceNode3 {
    fn allocate(&self, _: &ClusterMetadata, _: &NodeRecord) -> Result<Vec<i64>, String> {
        Ok(vec![300])
    }

    fn state(&self, _: &ClusterMetadata) -> NodeState {
        NodeState::Joining
    }
}

/// A dead voter's machine comes back empty under a new host id: the
/// leader's appends and a candidate's votes for the dead voter now reach
/// the new node at the same address. It must refuse them (NOT_ADDRESSEE):
/// its empty log answering for the dead voter's made openraft's leader
/// stop ("follower log reversion is not allowed"), and the log with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_node_on_a_dead_voter_s_address_does_not_answer_in_its_name() {
    let dir = Dir::new("same-address");
    let mut nodes = three(&dir, |_| {}).await;
    change_schema(&nodes[0], b"before").await;
    let dead = nodes.pop().expect("three nodes");
    let addr = dead.addr();
    dead.stop().await;
    let seeds = Some(vec![nodes[0].addr()]);
    let allocator = || Some(Arc::new(ReplaceNode3) as Arc<dyn TokenAllocator>);
    let new = start_with(4, addr, seeds, &dir.node(4), |_| {}, allocator).await;
    new.log
        .wait_member(DEADLINE)
        .await
        .expect("the new node is a member");
    assert_eq!(new.log.current().nodes[&new.host].state, NodeState::Joining);
    // Several heartbeats to the dead voter's address later, the log still
    // commits and the new node follows it.
    let mut epoch = 0;
    for schema in [&b"one"[..], b"two", b"three", b"four"] {
        epoch = change_schema(&nodes[0], schema).await;
        SystemClock.sleep(Duration::from_millis(300)).await;
    }
    new.log
        .wait_applied(epoch)
        .await
        .expect("the new node caught up");
    assert_eq!(new.log.current().schema_version, SchemaVersion::of(b"four"));
    // It ends its replacement: Normal, and node 3 gone.
    let mut normal = new.log.current().nodes[&new.host].clone();
    normal.state = NodeState::Normal;
    let expected_epoch = new.log.current().epoch;
    let command = Command::Join {
        node: normal,
        expected_epoch,
    };
    new.log
        .propose(command)
        .await
        .expect("the replacement becomes Normal");
    let m = new.log.current();
    assert_eq!(m.nodes[&new.host].storage_addr, addr);
    assert!(!m.nodes.contains_key(&HostId([3; 16])), "{:?}", m.nodes);
    nodes.push(new);
    for node in nodes {
        node.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_that_is_not_the_messaging_s_is_refused() {
    let dir = Dir::new("record");
    let env = Env::tokio(9);
    let host_id = HostId([9; 16]);
    let config = MessagingConfig::new(CLUSTER, host_id, loopback());
    let messaging = Messaging::start(config, env.clone())
        .await
        .expect("messaging");
    let own = NodeRecord {
        host_id: HostId([8; 16]),
        storage_addr: messaging.local_addr(),
        rpc_addr: None,
        dc: "dc1".to_string(),
        rack: "rack1".to_string(),
        tokens: vec![],
        state: NodeState::Normal,
    };
    let config = test_config(vec![messaging.local_addr()]);
    let hooks = MetadataHooks::default();
    let started = MetadataService::start(config, env, &messaging, &dir.node(9), own, hooks).await;
    let err = started.expect_err("another host id");
    assert!(err.to_string().contains("is not its messaging's"), "{err}");
    messaging.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupt_log_tail_is_cut_at_restart() {
    let dir = Dir::new("tail");
    let node = start(1, loopback(), None, &dir.node(1), |_| {}).await;
    node.log.wait_member(DEADLINE).await.expect("member");
    let epoch = change_schema(&node, b"kept").await;
    let addr = node.addr();
    node.stop().await;

    // A record header promising more bytes than follow: a torn write.
    let log = dir.node(1).join("log");
    let mut bytes = std::fs::read(&log).expect("log");
    let whole = bytes.len();
    bytes.extend_from_slice(&[0, 0, 0, 40, 1, 2, 3, 4, 0, 0, 0, 0, 0, 0, 0, 99, 7]);
    std::fs::write(&log, &bytes).expect("write");

    let node = start(1, addr, None, &dir.node(1), |_| {}).await;
    assert!(node.log.is_member());
    node.log.wait_applied(epoch).await.expect("replayed");
    assert_eq!(
        node.log.current().schema_version,
        SchemaVersion::of(b"kept")
    );
    assert!(std::fs::metadata(&log).expect("log").len() >= whole as u64);
    let next = change_schema(&node, b"after the cut").await;
    assert!(next > epoch);
    node.stop().await;
}

/// Where each record of a metadata `log` file starts
/// (docs/format/metadata-log.md, section 1.1: a `13 + n` byte header,
/// then records of 16 bytes of framing and a `len` byte payload).
fn record_starts(log: &[u8]) -> Vec<usize> {
    let be_u32 = |at: usize| u32::from_be_bytes(log[at..at + 4].try_into().expect("4 bytes"));
    let mut at = 13 + be_u32(5) as usize;
    let mut starts = Vec::new();
    while at + 16 <= log.len() {
        starts.push(at);
        at += 16 + be_u32(at) as usize;
    }
    starts
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_whose_log_went_back_is_caught_up_and_the_leader_goes_on() {
    let dir = Dir::new("revert");
    let mut nodes = three(&dir, |_| {}).await;
    change_schema(&nodes[0], b"first").await;
    let epoch = change_schema(&nodes[0], b"second").await;
    for node in &nodes {
        node.log
            .wait_applied(epoch)
            .await
            .expect("applied everywhere");
    }
    let leader = nodes[0].log.leader().expect("a leader");
    let at = nodes
        .iter()
        .position(|n| n.addr() != leader)
        .expect("a follower");
    let follower = nodes.remove(at);
    let (host, addr) = (follower.host.0[0], follower.addr());
    follower.stop().await;

    // The follower loses its last entry, one the leader counted as
    // replicated there (a disk that lied about a sync): its log goes back.
    let path = dir.node(host).join("log");
    let bytes = std::fs::read(&path).expect("log");
    let last = *record_starts(&bytes).last().expect("records");
    std::fs::write(&path, &bytes[..last]).expect("cut");
    let _ = std::fs::remove_file(dir.node(host).join("committed"));

    let follower = start(host, addr, Some(vec![leader]), &dir.node(host), |_| {}).await;
    // The leader goes on (openraft's leader would stop at a follower's
    // log reversion without `loosen-follower-log-revert`) and catches
    // the follower up.
    let leading = nodes
        .iter()
        .find(|n| n.addr() == leader)
        .expect("the leader");
    let next = change_schema(leading, b"after the loss").await;
    follower.log.wait_applied(next).await.expect("caught up");
    assert_eq!(
        follower.log.current().schema_version,
        SchemaVersion::of(b"after the loss")
    );
    nodes.push(follower);
    for node in nodes {
        node.stop().await;
    }
}
