//! Membership over real messaging on 127.0.0.1: every node is its own
//! `Messaging` and `Gossiper` on an ephemeral port, as separate
//! processes would be. The gossip interval is 100 ms and the conviction
//! threshold 5 (about 1.2 s of silence), so a test takes seconds; every
//! wait is for a condition, under a generous deadline, never a timing.

mod support;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::broadcast;
use varve_cluster::env::{Clock, Env, SystemClock};
use varve_cluster::membership::{
    generation, Change, DownReason, GossipKey, Gossiper, Membership, MembershipConfig, Status,
    Transition,
};
use varve_cluster::net::{
    FailureReason, HostId, Messaging, MessagingConfig, RejectReason, RequestError, Verb,
};

use support::{loopback, CLUSTER};

const INTERVAL: Duration = Duration::from_millis(100);
const PHI: f64 = 5.0;
/// Long enough for a loaded two-core machine; a healthy run takes a
/// small fraction of it.
const DEADLINE: Duration = Duration::from_secs(30);

/// A directory for one node's generation file, removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new(test: &str, host: u8) -> Dir {
        let dir = std::env::temp_dir().join(format!(
            "varve-membership-{test}-{host}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        Dir(dir)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

struct Node {
    host: HostId,
    messaging: Messaging,
    gossip: Gossiper,
}

impl Node {
    fn addr(&self) -> SocketAddr {
        self.messaging.local_addr()
    }

    /// Whether this node sees `other` UP.
    fn sees_up(&self, other: &Node) -> bool {
        self.gossip.live().is_up(other.host)
    }

    async fn stop(self) {
        self.gossip.shutdown().await;
        self.messaging.shutdown().await;
    }
}

struct Spec<'a> {
    cluster: &'a str,
    host: u8,
    listen: SocketAddr,
    seeds: Vec<SocketAddr>,
    dc: &'a str,
    rack: &'a str,
    dir: &'a Path,
}

impl<'a> Spec<'a> {
    fn new(host: u8, seeds: Vec<SocketAddr>, dir: &'a Dir) -> Spec<'a> {
        Spec {
            cluster: CLUSTER,
            host,
            listen: loopback(),
            seeds,
            dc: "dc1",
            rack: "rack1",
            dir: &dir.0,
        }
    }
}

async fn start(spec: Spec<'_>) -> Node {
    let env = Env::tokio(u64::from(spec.host));
    let generation = generation::next_generation(spec.dir, &*env.clock).expect("generation");
    let host = HostId([spec.host; 16]);
    let mut messaging_config = MessagingConfig::new(spec.cluster, host, spec.listen);
    messaging_config.generation = generation;
    let messaging = Messaging::start(messaging_config, env.clone())
        .await
        .expect("messaging starts");
    let mut config = MembershipConfig::new(spec.seeds);
    config.gossip_interval = INTERVAL;
    config.phi_convict_threshold = PHI;
    config.dc = spec.dc.to_string();
    config.rack = spec.rack.to_string();
    config
        .values
        .insert(GossipKey::RELEASE_VERSION, "5.0.4".to_string());
    let gossip = Gossiper::start(config, &messaging, env)
        .await
        .expect("gossip starts");
    Node {
        host,
        messaging,
        gossip,
    }
}

/// Waits until `check` holds; fails the test with `what` at the deadline.
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

/// Whether `rx` has seen `host` go `change`; reads what is queued.
fn saw(rx: &mut broadcast::Receiver<Transition>, host: HostId, change: Change) -> bool {
    let mut found = false;
    while let Ok(t) = rx.try_recv() {
        if t.host_id == host && t.change == change {
            found = true;
        }
    }
    found
}

/// Three nodes, `dc1`/`rack1`, `dc1`/`rack2`, `dc2`/`rack1`, the first the
/// seed of the others, all UP to each other.
async fn three(test: &str, dirs: &[Dir; 3]) -> [Node; 3] {
    let a = start(Spec::new(1, vec![], &dirs[0])).await;
    let b = start(Spec {
        rack: "rack2",
        ..Spec::new(2, vec![a.addr()], &dirs[1])
    })
    .await;
    let c = start(Spec {
        dc: "dc2",
        ..Spec::new(3, vec![a.addr()], &dirs[2])
    })
    .await;
    let nodes = [a, b, c];
    wait_for(&format!("{test}: every node sees the other two UP"), || {
        nodes
            .iter()
            .all(|n| nodes.iter().all(|m| n.host == m.host || n.sees_up(m)))
    })
    .await;
    nodes
}

fn dirs(test: &str) -> [Dir; 3] {
    [Dir::new(test, 1), Dir::new(test, 2), Dir::new(test, 3)]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_nodes_with_one_seed_converge() {
    let dirs = dirs("converge");
    let [a, b, c] = three("converge", &dirs).await;
    // What each sees of the others is what they gossip.
    let seen = b.gossip.live();
    let of_a = seen.get(a.host).expect("a is UP at b");
    assert_eq!((of_a.dc.as_str(), of_a.rack.as_str()), ("dc1", "rack1"));
    assert_eq!(of_a.address, a.addr());
    assert_eq!(of_a.generation, a.gossip.generation());
    assert_eq!(of_a.get(GossipKey::RELEASE_VERSION), Some("5.0.4"));
    assert_eq!(
        of_a.get(GossipKey::HOST_ID),
        Some(a.host.to_string().as_str())
    );
    let seen = a.gossip.live();
    let of_b = seen.get(b.host).expect("b is UP at a");
    assert_eq!((of_b.dc.as_str(), of_b.rack.as_str()), ("dc1", "rack2"));
    let of_c = seen.get(c.host).expect("c is UP at a");
    assert_eq!((of_c.dc.as_str(), of_c.rack.as_str()), ("dc2", "rack1"));
    assert_eq!(seen.len(), 2, "a node is not in its own live set");

    // gossipinfo: every node, this one included, with its status.
    let info = c.gossip.peers();
    assert_eq!(info.len(), 3);
    assert!(info
        .iter()
        .all(|p| p.up && p.status() == Some(Status::Normal)));
    assert_eq!(info.iter().filter(|p| p.is_local).count(), 1);
    assert!(c.gossip.peer(c.host).is_some_and(|p| p.is_local));

    // A value announced later reaches the others, and their watch fires.
    let mut changes = c.gossip.changes();
    changes.mark_unchanged();
    a.gossip
        .announce(
            GossipKey::SCHEMA_VERSION,
            "59adb24e-f3cd-3e02-97f0-5b395827453f".into(),
        )
        .expect("announced");
    wait_for("the schema version reaches c", || {
        c.gossip
            .live()
            .get(a.host)
            .and_then(|p| p.get(GossipKey::SCHEMA_VERSION).map(str::to_string))
            .as_deref()
            == Some("59adb24e-f3cd-3e02-97f0-5b395827453f")
    })
    .await;
    assert!(changes.has_changed().unwrap_or(false));
    // The heartbeat is gossip's own.
    assert!(a
        .gossip
        .announce(GossipKey::HEARTBEAT, String::new())
        .is_err());

    for node in [a, b, c] {
        node.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_shut_down_gracefully_is_down_at_once() {
    let dirs = dirs("shutdown");
    let [a, b, c] = three("shutdown", &dirs).await;
    let mut at_a = a.gossip.transitions();
    let mut at_b = b.gossip.transitions();
    let c_host = c.host;
    c.stop().await;
    wait_for("a and b see c DOWN", || {
        !a.gossip.live().is_up(c_host) && !b.gossip.live().is_up(c_host)
    })
    .await;
    // By its announcement, not by the detector.
    let shutdown = Change::Down(DownReason::Shutdown);
    assert!(saw(&mut at_a, c_host, shutdown));
    assert!(saw(&mut at_b, c_host, shutdown));
    let known = a.gossip.peer(c_host).expect("still known");
    assert_eq!(known.status(), Some(Status::Shutdown));
    assert!(!known.up);
    assert!(a.gossip.live().is_up(b.host), "the others stay UP");
    // After shutdown nothing more is announced.
    assert!(a.gossip.peer(a.host).is_some());
    for node in [a, b] {
        node.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_stopped_abruptly_is_convicted_and_comes_back_with_a_higher_generation() {
    let dirs = dirs("abrupt");
    let [a, b, c] = three("abrupt", &dirs).await;
    let mut at_a = a.gossip.transitions();
    let (c_host, c_addr, first) = (c.host, c.addr(), c.gossip.generation());
    // A crash: no word to the peers.
    drop(c.gossip);
    c.messaging.shutdown().await;
    wait_for("a and b convict c", || {
        !a.gossip.live().is_up(c_host) && !b.gossip.live().is_up(c_host)
    })
    .await;
    assert!(saw(&mut at_a, c_host, Change::Down(DownReason::Convicted)));
    assert_eq!(
        a.gossip.peer(c_host).and_then(|p| p.status()),
        Some(Status::Normal),
        "it never said goodbye"
    );

    // Back on the same address, from the same directory.
    let c = start(Spec {
        dc: "dc2",
        listen: c_addr,
        ..Spec::new(3, vec![a.addr()], &dirs[2])
    })
    .await;
    let second = c.gossip.generation();
    assert!(second > first, "generation {second} after {first}");
    wait_for("a and b see c UP in its new generation", || {
        [&a, &b].iter().all(|n| {
            n.gossip
                .live()
                .get(c_host)
                .is_some_and(|p| p.generation == second)
        })
    })
    .await;
    wait_for("c sees a and b UP", || c.sees_up(&a) && c.sees_up(&b)).await;
    assert!(saw(&mut at_a, c_host, Change::Up));
    for node in [a, b, c] {
        node.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_of_another_cluster_never_becomes_a_member() {
    let dirs = dirs("other");
    let x_dir = Dir::new("other", 9);
    let x = start(Spec {
        cluster: "Other Cluster",
        ..Spec::new(9, vec![], &x_dir)
    })
    .await;
    // a has x as a seed and x has a: both directions are tried every round.
    let a = start(Spec::new(1, vec![x.addr()], &dirs[0])).await;
    let b = start(Spec::new(2, vec![a.addr()], &dirs[1])).await;
    let mut x_seeded = Spec::new(10, vec![a.addr()], &dirs[2]);
    x_seeded.cluster = "Other Cluster";
    let y = start(x_seeded).await;
    wait_for("a and b see each other UP", || {
        a.sees_up(&b) && b.sees_up(&a)
    })
    .await;
    // Twenty more rounds, then nothing may have leaked either way.
    SystemClock.sleep(INTERVAL * 20).await;
    for outsider in [&x, &y] {
        for member in [&a, &b] {
            assert!(member.gossip.peer(outsider.host).is_none());
            assert!(!member.gossip.live().is_up(outsider.host));
        }
        assert!(outsider.gossip.live().is_empty());
    }
    // x and y share a cluster name and find each other only through a.
    assert!(y.gossip.peer(x.host).is_none());
    assert_eq!(x.gossip.peers().len(), 1);
    let name = RejectReason::CLUSTER_NAME_DIFFERS;
    wait_for("a refused y and was refused by x", || {
        let counters = a.messaging.counters();
        counters.rejected(name) > 0 && counters.rejected_by_peer(name) > 0
    })
    .await;
    for node in [a, b, x, y] {
        node.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_gossip_is_dropped_and_the_node_goes_on() {
    let dirs = dirs("malformed");
    let a = start(Spec::new(1, vec![], &dirs[0])).await;
    // A member of the cluster that speaks bad gossip: messaging only.
    let bad = support::node(7).await;
    let garbage: [&[u8]; 4] = [b"", b"\x09", b"\x01\xff\xff\xff", &[3, 1, 0xaa]];
    for payload in garbage {
        bad.send_one_way(
            a.addr(),
            Verb::GOSSIP,
            Bytes::copy_from_slice(payload),
            Duration::from_secs(1),
        )
        .expect("queued");
    }
    // GOSSIP sent as a request is refused, not left to time out.
    let answer = bad
        .request(
            a.addr(),
            Verb::GOSSIP,
            Bytes::from_static(b"\x01\x00"),
            DEADLINE,
        )
        .expect("queued")
        .await;
    match answer {
        Err(RequestError::Failure(f)) => assert_eq!(f.reason, FailureReason::MALFORMED_PAYLOAD),
        other => panic!("expected a MALFORMED_PAYLOAD failure, got {other:?}"),
    }
    // The node still gossips: a newcomer becomes UP.
    let b = start(Spec::new(2, vec![a.addr()], &dirs[1])).await;
    wait_for("a and b see each other UP", || {
        a.sees_up(&b) && b.sees_up(&a)
    })
    .await;
    assert!(a.gossip.peer(HostId([7; 16])).is_none());
    bad.shutdown().await;
    for node in [a, b] {
        node.stop().await;
    }
}
