//! [`Coordinator`]: the node's side of a client's read or write when the
//! data lives on several replicas. It holds what every request needs (the
//! storage engine for the local replica, messaging for the others, the
//! membership for who is UP, the ring) and the timeouts; the operations
//! themselves are in `write.rs`, `read.rs` and `scan.rs`.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use arc_swap::ArcSwap;
use varve_storage::Engine;
use varve_types::consistency::{Consistency, LiveReplicas, Unavailable};

use super::latency::TableLatencies;
use super::metrics::CoordinatorMetrics;
use super::replication::Replication;
use super::topology::{Host, Topology};
use crate::batchlog::BatchlogStore;
use crate::env::Clock;
use crate::hints::HintStore;
use crate::membership::{LiveSet, Membership};
use crate::net::HostId;
use crate::net::Messaging;
use crate::ring::NodeId;

/// `write_request_timeout`: how long a write waits for its replicas.
pub const WRITE_REQUEST_TIMEOUT: Duration = Duration::from_secs(2);
/// `read_request_timeout`.
pub const READ_REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// `range_request_timeout`.
pub const RANGE_REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// `truncate_request_timeout`.
pub const TRUNCATE_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// The coordinator's timeouts (cassandra.yaml's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    pub write: Duration,
    pub read: Duration,
    pub range: Duration,
    pub truncate: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            write: WRITE_REQUEST_TIMEOUT,
            read: READ_REQUEST_TIMEOUT,
            range: RANGE_REQUEST_TIMEOUT,
            truncate: TRUNCATE_REQUEST_TIMEOUT,
        }
    }
}

/// A node's coordinator.
pub struct Coordinator {
    pub(super) engine: Arc<Engine>,
    pub(super) messaging: Messaging,
    pub(super) membership: Arc<dyn Membership>,
    pub(super) clock: Arc<dyn Clock>,
    topology: ArcSwap<Topology>,
    pub(super) local_dc: String,
    pub(super) timeouts: Timeouts,
    /// Replica read latencies per table (speculative retry).
    pub(super) latencies: TableLatencies,
    pub(super) metrics: CoordinatorMetrics,
    /// Where missed writes are kept (none: hints are off).
    pub(super) hints: OnceLock<Arc<HintStore>>,
    /// The batches this node keeps (none: logged batches go without a
    /// batchlog).
    pub(super) batchlog: OnceLock<Arc<BatchlogStore>>,
    /// A table's replication, for writes that come without one (batch
    /// replays).
    pub(super) replication_lookup: OnceLock<ReplicationLookup>,
    pub(super) batch_counter: AtomicU32,
    /// This node's Paxos acceptor and its coordinator's ballots (none:
    /// conditional statements are not coordinated here).
    pub(super) paxos: OnceLock<super::paxos::PaxosParts>,
    pub(super) local_host: HostId,
    /// Whether the ring comes from the metadata log.
    ring_from_metadata: std::sync::atomic::AtomicBool,
    /// Serialises the two ways the ring is set.
    ring_update: parking_lot::Mutex<()>,
}

/// Finds a table's replication by its id (the schema is the server's).
pub type ReplicationLookup = Box<dyn Fn(u128) -> Option<Replication> + Send + Sync>;

/// What the coordinator counted so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CoordinatorCounts {
    /// Reads and writes of one partition coordinated by a replica of it.
    pub replica_requests: u64,
    /// ... and by a node that holds no replica of it.
    pub not_replica_requests: u64,
    pub speculative_retries: u64,
    pub digest_mismatches: u64,
    pub read_repairs: u64,
    pub short_read_rounds: u64,
}

/// The replicas of one token for one request, with who is UP: the
/// natural ones first, then (a write while a node joins) the pending ones.
pub(super) struct Plan {
    pub topology: Arc<Topology>,
    pub replicas: Vec<NodeId>,
    pub up: Vec<bool>,
    /// How many of `replicas` are natural; the rest are pending.
    pub natural: usize,
}

impl Plan {
    pub fn host(&self, i: usize) -> &Host {
        self.topology.host(self.replicas[i])
    }

    pub fn address(&self, i: usize) -> SocketAddr {
        self.host(i).address
    }

    pub fn is_local(&self, i: usize) -> bool {
        self.host(i).is_local
    }

    /// The data centre of each replica, in order.
    pub fn dcs(&self) -> Vec<&str> {
        (0..self.replicas.len())
            .map(|i| self.host(i).location.dc.as_str())
            .collect()
    }

    /// The replica on this node, if it is one.
    pub fn local(&self) -> Option<usize> {
        (0..self.replicas.len()).find(|&i| self.is_local(i))
    }
}

impl Coordinator {
    /// A coordinator over `engine` and `messaging`; the ring starts as
    /// `topology` and follows membership from [`Coordinator::refresh`].
    /// Its counters are its own ([`Coordinator::with_metrics`] puts them in
    /// the node's registry).
    pub fn new(
        engine: Arc<Engine>,
        messaging: Messaging,
        membership: Arc<dyn Membership>,
        clock: Arc<dyn Clock>,
        topology: Topology,
        local_dc: String,
        timeouts: Timeouts,
    ) -> Arc<Coordinator> {
        Coordinator::with_metrics(
            engine,
            messaging,
            membership,
            clock,
            topology,
            local_dc,
            timeouts,
            CoordinatorMetrics::detached(),
        )
    }

    /// [`Coordinator::new`] counting into `metrics`.
    #[allow(clippy::too_many_arguments)]
    pub fn with_metrics(
        engine: Arc<Engine>,
        messaging: Messaging,
        membership: Arc<dyn Membership>,
        clock: Arc<dyn Clock>,
        topology: Topology,
        local_dc: String,
        timeouts: Timeouts,
        metrics: CoordinatorMetrics,
    ) -> Arc<Coordinator> {
        let local_host = membership.local_host();
        Arc::new(Coordinator {
            engine,
            messaging,
            membership,
            clock,
            topology: ArcSwap::from_pointee(topology),
            local_dc,
            timeouts,
            latencies: TableLatencies::default(),
            metrics,
            hints: OnceLock::new(),
            batchlog: OnceLock::new(),
            replication_lookup: OnceLock::new(),
            batch_counter: AtomicU32::new(0),
            paxos: OnceLock::new(),
            local_host,
            ring_from_metadata: std::sync::atomic::AtomicBool::new(false),
            ring_update: parking_lot::Mutex::new(()),
        })
    }

    /// From now on, logged batches go through `store` and its peers'.
    pub fn set_batchlog(&self, store: Arc<BatchlogStore>) {
        let _ = self.batchlog.set(store);
    }

    /// How a table id finds its replication (batch replays).
    pub fn set_replication_lookup(&self, lookup: ReplicationLookup) {
        let _ = self.replication_lookup.set(lookup);
    }

    /// From now on, writes that replicas miss are kept in `store`.
    pub fn set_hints(&self, store: Arc<HintStore>) {
        let _ = self.hints.set(store);
    }

    /// What the coordinator counted so far.
    pub fn counts(&self) -> CoordinatorCounts {
        let m = &self.metrics;
        CoordinatorCounts {
            replica_requests: m.replica_requests.get(),
            not_replica_requests: m.not_replica_requests.get(),
            speculative_retries: m.speculative_retries.get(),
            digest_mismatches: m.digest_mismatches.get(),
            read_repairs: m.read_repairs.get(),
            short_read_rounds: m.short_read_rounds.get(),
        }
    }

    /// Takes the ring from the cluster's metadata (from now on gossip's
    /// tokens no longer change it).
    pub fn set_topology(&self, topology: Topology) {
        if topology.hosts().iter().any(|h| h.is_local) {
            let _one = self.ring_update.lock();
            self.ring_from_metadata.store(true, Ordering::Relaxed);
            self.topology.store(Arc::new(topology));
        }
    }

    /// Rebuilds the ring from what gossip knows now, unless the metadata
    /// gives it.
    pub fn refresh(&self) {
        if self.ring_from_metadata.load(Ordering::Relaxed) {
            return;
        }
        let peers = self.membership.peers();
        let topology = Topology::from_peers(&peers);
        // Checked again under the lock: a ring the metadata set meanwhile
        // is never replaced by gossip's.
        let _one = self.ring_update.lock();
        let from_metadata = self.ring_from_metadata.load(Ordering::Relaxed);
        if !from_metadata && topology.hosts().iter().any(|h| h.is_local) {
            self.topology.store(Arc::new(topology));
        }
    }

    /// Keeps the ring in step with membership until the membership stops.
    pub fn follow_membership(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        let me = Arc::clone(self);
        let mut changes = self.membership.changes();
        tokio::spawn(async move {
            me.refresh();
            while changes.changed().await.is_ok() {
                me.refresh();
            }
        })
    }

    /// The ring now.
    pub fn topology(&self) -> Arc<Topology> {
        self.topology.load_full()
    }

    /// How long a write waits for its replicas (`write_request_timeout`).
    pub fn write_timeout(&self) -> Duration {
        self.timeouts.write
    }

    /// Whether `host` is UP now (this node always is).
    pub fn is_up(&self, host: &Host) -> bool {
        is_up(host, &self.membership.live())
    }

    /// The generation `host` is UP in now; `None` while it is DOWN.
    pub fn up_generation(&self, host: HostId) -> Option<i64> {
        self.membership.live().get(host).map(|p| p.generation)
    }

    /// The messaging, engine and clock this coordinator uses (streaming
    /// shares them).
    pub fn parts(&self) -> (Messaging, Arc<Engine>, Arc<dyn Clock>) {
        (
            self.messaging.clone(),
            Arc::clone(&self.engine),
            Arc::clone(&self.clock),
        )
    }

    /// The nodes of the ring.
    pub fn node_count(&self) -> usize {
        self.topology.load().hosts().len()
    }

    /// Counts a request by whether this node is a replica of its key.
    pub(super) fn count_placement(&self, plan: &Plan) {
        match plan.local() {
            Some(_) => self.metrics.replica_requests.inc(),
            None => self.metrics.not_replica_requests.inc(),
        }
    }

    /// The natural replicas of `token` and which of them are UP (this node
    /// always is): where reads go.
    pub(super) fn plan(&self, token: i64, replication: &Replication) -> Plan {
        let topology = self.topology.load_full();
        let replicas = topology.replicas(token, replication);
        self.plan_of(topology, replicas)
    }

    /// The natural and pending replicas of `token`: where writes go.
    pub(super) fn write_plan(&self, token: i64, replication: &Replication) -> Plan {
        let topology = self.topology.load_full();
        let mut replicas = topology.replicas(token, replication);
        let natural = replicas.len();
        replicas.extend(topology.pending(token, replication));
        Plan {
            natural,
            ..self.plan_of(topology, replicas)
        }
    }

    fn plan_of(&self, topology: Arc<Topology>, replicas: Vec<NodeId>) -> Plan {
        let live = self.membership.live();
        let up = replicas
            .iter()
            .map(|&n| is_up(topology.host(n), &live))
            .collect();
        Plan {
            natural: replicas.len(),
            topology,
            replicas,
            up,
        }
    }

    /// Unavailable when the UP replicas of `token` cannot meet
    /// `consistency` for a write now (a batch checks all its partitions
    /// first), pending replicas included.
    pub fn check_live(
        &self,
        token: i64,
        replication: &Replication,
        consistency: Consistency,
    ) -> Result<(), Unavailable> {
        let plan = self.write_plan(token, replication);
        self.assure_live(&plan, replication, consistency)
    }

    /// Unavailable when the UP replicas cannot meet `consistency`.
    pub(super) fn assure_live(
        &self,
        plan: &Plan,
        replication: &Replication,
        consistency: Consistency,
    ) -> Result<(), Unavailable> {
        let mut per_dc: Vec<(&str, u32)> = Vec::new();
        let mut pending: Vec<(&str, u32)> = Vec::new();
        for (i, up) in plan.up.iter().enumerate() {
            let dc = plan.host(i).location.dc.as_str();
            count_in(&mut per_dc, dc, u32::from(*up));
            if i >= plan.natural {
                count_in(&mut pending, dc, 1);
            }
        }
        let factors = replication.factors();
        // Serial levels are named as Paxos names its quorum.
        let consistency = match consistency {
            Consistency::Serial => Consistency::Quorum,
            Consistency::LocalSerial => Consistency::LocalQuorum,
            other => other,
        };
        consistency.assure_live_with_pending(
            &factors,
            &self.local_dc,
            &LiveReplicas { per_dc: &per_dc },
            &LiveReplicas { per_dc: &pending },
        )?;
        // ANY is tried even with no replica up, for the hint it stores;
        // with hints off it needs one replica, and says so.
        let hints_on = self.hints.get().is_some_and(|h| h.config().enabled);
        if consistency == Consistency::Any && !hints_on && !plan.up.iter().any(|u| *u) {
            return Err(Unavailable {
                consistency,
                required: 1,
                alive: 0,
                dc: None,
            });
        }
        Ok(())
    }
}

/// Adds `n` to `dc`'s count.
fn count_in<'a>(counts: &mut Vec<(&'a str, u32)>, dc: &'a str, n: u32) {
    match counts.iter_mut().find(|(d, _)| *d == dc) {
        Some((_, c)) => *c += n,
        None => counts.push((dc, n)),
    }
}

fn is_up(host: &Host, live: &LiveSet) -> bool {
    host.is_local || live.is_up(host.host_id)
}
