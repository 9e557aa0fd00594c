//! The data side of a simulated node: a storage engine with one table,
//! the replica handlers of the data verbs, and a coordinator, as
//! `crates/varve/src/cluster_node.rs` wires them in the server; and the
//! client that runs this node's share of the workload through its
//! coordinator, recording each operation in the history.
//!
//! The engine belongs to the node, not to one start of it: a restart
//! finds what the node had stored, as a real node finds its commitlog
//! (durable before a write is acknowledged). It is in memory, but in a
//! movement run (`sim/movement.rs`) it keeps sstables on a simulated file
//! system of the node's own (`varve_storage::fs_sim`), so that streams
//! may send them whole. The ring comes from gossip: every node announces
//! its tokens.
//!
//! A node takes client operations only once its ring holds every node,
//! as a real node serves clients only once it has joined: a node just
//! restarted knows only itself until gossip tells it of the others, and
//! would place keys on the wrong replicas.

use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::task::{JoinHandle, JoinSet};
use varve_storage::compaction::{CommonOptions, CompactionConfig};
use varve_storage::sstable::SstableParams;
use varve_storage::{Engine, Storage, TableDescriptor};
use varve_types::data::{
    Cell as DataCell, ClusteringComparator, ClusteringKey, DeletionTime, Partition, PartitionKey,
    Row, Slice,
};
use varve_types::data_error::{DataError, WriteType};
use varve_types::CqlType;

use super::history::{Event, NodeIndex, Recorder};
use super::workload::{value_of, workload, OpEvent, OpKind, Outcome, Workload, KEYS, RF};
use crate::coordinator::{Coordinator, Host, Read, Replication, Timeouts, Topology, Write};
use crate::env::Clock;
use crate::membership::Gossiper;
use crate::net::Messaging;
use crate::ring::{placement, Location, TokenRing};
use crate::streaming::FileSource;
use crate::verbs::Replica;

/// The one table's id.
pub const TABLE: u128 = 0x51_da7a;

/// The `now` reads resolve at (no cell expires).
pub(super) const NOW_SECONDS: i32 = 1_700_000_000;

/// The coordinator's timeouts: short, so a fault's timeouts are over
/// well within the run.
pub fn timeouts() -> Timeouts {
    Timeouts {
        write: Duration::from_secs(1),
        read: Duration::from_secs(1),
        range: Duration::from_secs(1),
        ..Timeouts::default()
    }
}

pub(super) fn comparator() -> Arc<ClusteringComparator> {
    ClusteringComparator::new(vec![(CqlType::Int, false)])
}

fn descriptor() -> TableDescriptor {
    TableDescriptor {
        id: TABLE,
        keyspace: "ks".into(),
        name: "t".into(),
        comparator: comparator(),
        params: SstableParams::default(),
        durable_writes: true,
        gc_grace_seconds: 864_000,
        compaction: no_compaction(),
    }
}

/// Compaction off (the simulated engines keep what they flush as it is).
pub(super) fn no_compaction() -> CompactionConfig {
    CompactionConfig {
        common: CommonOptions {
            enabled: false,
            ..CommonOptions::default()
        },
        ..CompactionConfig::default()
    }
}

/// Key `i` of the workload.
pub fn key(i: usize) -> PartitionKey {
    PartitionKey::new(Bytes::from(format!("k{i}")))
}

/// The one row every write goes to (row 1): the written keys' one cell
/// is its column 1, an LWT register's two cells its columns 1 and 2
/// (`sim/lwt.rs`).
pub(super) fn row_key() -> ClusteringKey {
    ClusteringKey::row(
        vec![Bytes::copy_from_slice(&1i32.to_be_bytes())],
        &comparator(),
    )
}

fn update(ts: i64) -> Partition {
    let mut p = Partition::default();
    let mut row = Row::default();
    row.cells
        .insert((1, None), DataCell::live(ts, Bytes::from(value_of(ts))));
    p.rows.insert(row_key(), row);
    p
}

fn deletion(ts: i64) -> Partition {
    let mut p = Partition::default();
    let row = Row {
        deletion: Some(DeletionTime::new(ts, NOW_SECONDS)),
        ..Row::default()
    };
    p.rows.insert(row_key(), row);
    p
}

pub(super) fn cell_of(p: &Partition) -> Option<(i64, String)> {
    let cell = p.rows.get(&row_key())?.cells.get(&(1, None))?;
    Some((
        cell.timestamp,
        String::from_utf8_lossy(&cell.value).into_owned(),
    ))
}

/// What the nodes of one data run share: the plan, the timestamp
/// counter, the history.
pub struct Shared {
    pub workload: Workload,
    /// The last timestamp given to a write.
    pub counter: Cell<i64>,
    pub recorder: Recorder,
    pub nodes: usize,
    /// The keyspace's replication.
    pub replication: Replication,
    pub seed: u64,
    /// Clients run lightweight transactions (`sim/lwt.rs`) instead of the
    /// planned workload.
    pub lwt: bool,
    /// When LWT clients stop.
    pub workload_end: Duration,
    /// The last value an LWT client wrote (each writes a new one).
    pub values: Cell<i64>,
    /// Node starts so far (each start's clients draw anew).
    pub starts: Cell<u64>,
    /// The first key of the LWT registers (their key `k` is the data
    /// key `lwt_key_base + k`: in a movement run, after the written keys).
    pub lwt_key_base: usize,
    /// LWT client loops per node, and the most each waits between two
    /// operations.
    pub lwt_clients: usize,
    pub lwt_think_ms_max: u64,
    /// In an LWT run over two data centres (no movement): each node's data
    /// centre, and with it a LOCAL_SERIAL register per data centre
    /// (`sim/lwt.rs`).
    pub local_serial_dcs: Option<Vec<String>>,
    /// Node 0 does not know PAXOS_FORWARD and node 1 declines every
    /// forward (`SimConfig::refusing_homes`).
    pub refusing_homes: bool,
    /// Whether coordinators take the two-round path
    /// (`SimConfig::two_rounds`).
    pub two_rounds: bool,
    /// In a run where a node joins, leaves or is replaced or removed
    /// (`sim/movement.rs`): the metadata's epochs, the mover's steps, and
    /// clients of their own.
    pub movement: Option<Rc<super::movement::Movement>>,
}

impl Shared {
    /// A value no client wrote before.
    pub fn next_value(&self) -> i64 {
        let v = self.values.get() + 1;
        self.values.set(v);
        v
    }

    pub fn starts(&self) -> u64 {
        self.starts.get()
    }

    /// The partition key of LWT register `k`.
    pub fn lwt_key(&self, k: usize) -> PartitionKey {
        key(self.lwt_key_base + k)
    }
}

/// One node's data side, kept across its restarts.
pub struct NodeData {
    pub index: NodeIndex,
    pub tokens: Vec<i64>,
    pub(super) engine: Arc<Engine>,
    _storage: Storage,
    pub(super) shared: Rc<Shared>,
    /// The Paxos acceptor of an LWT run.
    pub(super) paxos: Option<Arc<crate::paxos::PaxosReplica>>,
}

/// The tasks one start of a node runs for its data; stopped when dropped.
pub struct Tasks {
    ring: JoinHandle<()>,
    client: JoinHandle<()>,
}

impl Drop for Tasks {
    fn drop(&mut self) {
        self.client.abort();
        self.ring.abort();
    }
}

impl NodeData {
    pub fn new(index: NodeIndex, tokens: Vec<i64>, shared: Rc<Shared>) -> NodeData {
        let storage = match shared.movement.is_some() {
            true => super::bootstrap_storage::storage_on_sim_fs(descriptor()),
            false => Storage::new(),
        };
        let engine = storage.engine();
        if let Err(e) = engine.create_table(descriptor()) {
            panic!("the simulated table: {e}");
        }
        let paxos = shared.lwt.then(|| {
            super::lwt::create_paxos_table(&engine);
            super::lwt::acceptor(engine.clone())
        });
        NodeData {
            index,
            tokens,
            engine,
            _storage: storage,
            shared,
            paxos,
        }
    }

    /// The replica handlers and the source of whole sstables, on each
    /// start's messaging (in a movement run, the repair verbs too, as the
    /// server registers them).
    pub fn register(&self, messaging: &Messaging, clock: Arc<dyn Clock>) {
        let mut replica = Replica::new(self.engine.clone(), false);
        Arc::new(FileSource::new(self.engine.clone(), clock.clone())).register(messaging);
        if let Some(paxos) = &self.paxos {
            paxos.register(messaging);
            replica = replica.with_paxos(paxos.clone());
        }
        replica.register(messaging);
        if self.shared.movement.is_some() {
            crate::repair::validate::serve(messaging, self.engine.clone(), self.paxos.clone());
            crate::repair::incremental::serve(messaging, self.engine.clone(), clock);
        }
    }

    /// The coordinator of this start (its ring following gossip) and the
    /// client running this node's operations from now on.
    pub fn start(
        self: &Rc<Self>,
        messaging: &Messaging,
        gossip: &Arc<Gossiper>,
        clock: Arc<dyn Clock>,
        here: Host,
    ) -> Tasks {
        let dc = here.location.dc.clone();
        let coordinator = Coordinator::new(
            self.engine.clone(),
            messaging.clone(),
            gossip.clone(),
            clock.clone(),
            Topology::single(here, self.tokens.clone()),
            dc,
            timeouts(),
        );
        let ring = coordinator.follow_membership();
        self.shared.starts.set(self.shared.starts.get() + 1);
        if let Some(paxos) = &self.paxos {
            coordinator.set_paxos(paxos.clone());
            coordinator.set_paxos_two_rounds(self.shared.two_rounds);
            // A contended register's compare-and-sets go to its home.
            let replication = self.shared.replication.clone();
            coordinator.set_replication_lookup(Box::new(move |table| {
                (table == TABLE).then(|| replication.clone())
            }));
            match (self.shared.refusing_homes, self.index) {
                // A node of an earlier build: the verb is unknown here.
                (true, 0) => {}
                (true, 1) => coordinator.serve_forwarded(super::lwt::declining()),
                _ => coordinator.serve_forwarded(super::lwt::rebuild()),
            }
        }
        let client = match (&self.shared.movement, self.shared.lwt) {
            (Some(m), _) => {
                super::movement_steps::serve_fetches(m, self, messaging, clock);
                tokio::task::spawn_local(super::movement::node(
                    m.clone(),
                    self.clone(),
                    coordinator,
                ))
            }
            (None, true) => {
                tokio::task::spawn_local(super::lwt::clients(self.clone(), coordinator, clock))
            }
            (None, false) => tokio::task::spawn_local(client(self.clone(), coordinator, clock)),
        };
        Tasks { ring, client }
    }
}

fn elapsed() -> Duration {
    turmoil::sim_elapsed().unwrap_or_default()
}

/// Runs this node's operations due from now on, each at its time and
/// each in its own task (they overlap, as clients' requests do).
async fn client(data: Rc<NodeData>, coordinator: Arc<Coordinator>, clock: Arc<dyn Clock>) {
    let now = elapsed();
    let mine: Vec<usize> = (0..data.shared.workload.ops.len())
        .filter(|&id| {
            let op = &data.shared.workload.ops[id];
            op.node == data.index && op.at >= now
        })
        .collect();
    let mut running = JoinSet::new();
    for id in mine {
        let at = data.shared.workload.ops[id].at;
        clock.sleep(at.saturating_sub(elapsed())).await;
        while running.try_join_next().is_some() {}
        if coordinator.node_count() < data.shared.nodes {
            continue;
        }
        running.spawn_local(run_op(data.clone(), coordinator.clone(), id));
    }
    while running.join_next().await.is_some() {}
}

/// Runs operation `id` and records it.
pub(super) async fn run_op(data: Rc<NodeData>, coordinator: Arc<Coordinator>, id: usize) {
    let shared = &data.shared;
    let op = shared.workload.ops[id].clone();
    let write_ts = matches!(op.kind, OpKind::Write | OpKind::Delete).then(|| {
        let ts = shared.counter.get() + 1;
        shared.counter.set(ts);
        ts
    });
    shared.recorder.record_now(Event::Op(OpEvent::Invoke {
        id,
        op: op.clone(),
        write_ts,
    }));
    let replication = &shared.replication;
    let k = key(op.key);
    let outcome = match (op.kind, write_ts) {
        (OpKind::Write | OpKind::Delete, Some(ts)) => coordinator
            .write(Write {
                table: TABLE,
                key: k,
                update: match op.kind {
                    OpKind::Delete => deletion(ts),
                    _ => update(ts),
                },
                replication,
                consistency: op.level,
                write_type: WriteType::Simple,
            })
            .await
            .map(|()| Outcome::Written),
        (
            OpKind::Read {
                blocking_repair, ..
            },
            _,
        ) if op.scan => {
            super::scan::scan_for(&coordinator, replication, &op, id, blocking_repair).await
        }
        (
            OpKind::Read {
                speculation,
                blocking_repair,
            },
            _,
        ) => {
            let slices = [Slice::all(&comparator())];
            coordinator
                .read(Read {
                    table: TABLE,
                    key: &k,
                    slices: &slices,
                    reversed: false,
                    now_seconds: NOW_SECONDS,
                    row_limit: usize::MAX,
                    replication,
                    consistency: op.level,
                    speculation,
                    blocking_repair,
                })
                .await
                .map(|found| Outcome::Read(found.partition.as_ref().and_then(cell_of)))
        }
        (OpKind::Write | OpKind::Delete, None) => unreachable!("a write has its timestamp"),
    };
    let outcome = outcome.unwrap_or_else(|e| match e {
        DataError::Unavailable(u) => Outcome::Unavailable {
            required: u.required,
            alive: u.alive,
        },
        DataError::WriteTimeout(t) => Outcome::WriteTimeout {
            received: t.received,
            block_for: t.block_for,
        },
        DataError::ReadTimeout(t) => Outcome::ReadTimeout {
            received: t.received,
            block_for: t.block_for,
            data_present: t.data_present,
        },
        other => Outcome::Failed(other.to_string()),
    });
    shared
        .recorder
        .record_now(Event::Op(OpEvent::Done { id, outcome }));
}

/// Where the data of a run lives, for the checker: each node's tokens
/// and data centre, the keyspace's replication, and each key's replicas
/// (by node index).
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    pub tokens: Vec<Vec<i64>>,
    pub dcs: Vec<String>,
    pub replication: Replication,
    /// Each key's replicas (in a movement run, on the final ring).
    pub replicas: Vec<Vec<NodeIndex>>,
    /// Each key's replicas before the movement (in a run without one,
    /// the same as `replicas`).
    pub before: Vec<Vec<NodeIndex>>,
}

impl Layout {
    /// The replicas of `key` whose answers count at `level` through a
    /// coordinator in `dc` (local levels: that data centre's), and how
    /// many answers the level waits for.
    pub fn counting(
        &self,
        key: usize,
        level: varve_types::consistency::Consistency,
        dc: &str,
    ) -> (Vec<NodeIndex>, u32) {
        let replicas = self.replicas[key]
            .iter()
            .copied()
            .filter(|&r| !level.is_datacenter_local() || self.dcs[r] == dc)
            .collect();
        (replicas, level.block_for(&self.replication.factors(), dc))
    }
}

/// Tokens per node.
const TOKENS_PER_NODE: usize = 4;

/// The data side of every node of a run of `config`: tokens drawn from
/// `rng` ([`layout`]), the workload, one engine per node. The nodes and
/// the layout.
pub fn cluster(
    rng: &crate::env::SeededRng,
    config: &super::harness::SimConfig,
    location: &Location,
    recorder: Recorder,
) -> (Vec<Rc<NodeData>>, Layout) {
    let layout = layout(rng, config.nodes, location, KEYS);
    let last_at = config.nemesis_end() + config.settle;
    let mut planned = workload(
        rng,
        config.nodes,
        Duration::from_secs(5),
        last_at - Duration::from_secs(3),
        last_at,
    );
    if config.scans {
        super::scan::plan_scans(&mut planned);
    }
    let shared = Rc::new(Shared {
        workload: planned,
        counter: Cell::new(0),
        recorder,
        nodes: config.nodes,
        replication: layout.replication.clone(),
        seed: config.seed,
        lwt: config.lwt,
        workload_end: last_at - Duration::from_secs(3),
        values: Cell::new(0),
        starts: Cell::new(0),
        lwt_key_base: 0,
        lwt_clients: super::lwt::CLIENTS_PER_NODE,
        lwt_think_ms_max: super::lwt::THINK_MAX_MS,
        local_serial_dcs: super::lwt::local_serial_dcs(&layout.dcs),
        refusing_homes: config.refusing_homes,
        two_rounds: config.two_rounds,
        movement: None,
    });
    let nodes = layout
        .tokens
        .iter()
        .enumerate()
        .map(|(i, t)| Rc::new(NodeData::new(i, t.clone(), shared.clone())))
        .collect();
    (nodes, layout)
}

/// Where `keys` keys live on `nodes` nodes with tokens drawn from `rng`:
/// in one run of two, the nodes alternate between two data centres and
/// the keyspace has up to two replicas in each (NetworkTopologyStrategy),
/// else it is RF 3 SimpleStrategy in one.
pub(super) fn layout(
    rng: &crate::env::SeededRng,
    nodes: usize,
    location: &Location,
    keys: usize,
) -> Layout {
    let placement = Placement::draw(rng, nodes, location);
    let all: Vec<NodeIndex> = (0..nodes).collect();
    let replication = placement.replication_over(&all);
    let replicas = placement.replicas_over(&replication, &all, &location.rack, keys);
    Layout {
        tokens: placement.tokens,
        dcs: placement.dcs,
        replication,
        before: replicas.clone(),
        replicas,
    }
}

/// The data centres and tokens of a run's nodes, drawn from its seed.
pub(super) struct Placement {
    pub two_dcs: bool,
    pub dcs: Vec<String>,
    pub tokens: Vec<Vec<i64>>,
}

impl Placement {
    /// In one run of two, the nodes alternate between two data centres;
    /// each node has [`TOKENS_PER_NODE`] tokens no other has.
    pub fn draw(rng: &crate::env::SeededRng, nodes: usize, location: &Location) -> Placement {
        let two_dcs = rng.below_or_at(1) == 1;
        let dcs: Vec<String> = (0..nodes)
            .map(|i| match two_dcs {
                true => format!("dc{}", 1 + i % 2),
                false => location.dc.clone(),
            })
            .collect();
        let mut taken = std::collections::BTreeSet::new();
        let tokens: Vec<Vec<i64>> = (0..nodes)
            .map(|_| {
                let mut mine = Vec::new();
                while mine.len() < TOKENS_PER_NODE {
                    let t = rng.next_u64() as i64;
                    if t != i64::MIN && taken.insert(t) {
                        mine.push(t);
                    }
                }
                mine.sort_unstable();
                mine
            })
            .collect();
        Placement {
            two_dcs,
            dcs,
            tokens,
        }
    }

    /// The keyspace's replication on the nodes `members`: up to two
    /// replicas in each data centre, or RF 3 in one.
    pub fn replication_over(&self, members: &[NodeIndex]) -> Replication {
        if !self.two_dcs {
            return Replication::Simple(RF);
        }
        let factors = ["dc1", "dc2"]
            .iter()
            .map(|dc| {
                let here = members.iter().filter(|&&n| self.dcs[n] == *dc).count();
                (dc.to_string(), u32::try_from(here.min(2)).unwrap_or(2))
            })
            .collect();
        Replication::PerDc(factors)
    }

    /// The replicas of each of `keys` keys on the ring of `members`.
    pub fn replicas_over(
        &self,
        replication: &Replication,
        members: &[NodeIndex],
        rack: &str,
        keys: usize,
    ) -> Vec<Vec<NodeIndex>> {
        let ring = TokenRing::new(
            members
                .iter()
                .map(|&n| {
                    let at = Location {
                        dc: self.dcs[n].clone(),
                        rack: rack.to_string(),
                    };
                    (at, self.tokens[n].clone())
                })
                .collect(),
        )
        .unwrap_or_else(|e| panic!("the simulated ring: {e:?}"));
        (0..keys)
            .map(|k| {
                let token = key(k).token;
                let on_ring = match replication {
                    Replication::PerDc(factors) => {
                        let factors: Vec<(&str, usize)> = factors
                            .iter()
                            .map(|(dc, rf)| (dc.as_str(), *rf as usize))
                            .collect();
                        placement::network_topology(&ring, token, &factors)
                    }
                    _ => placement::simple(&ring, token, RF as usize),
                };
                on_ring.into_iter().map(|i| members[i]).collect()
            })
            .collect()
    }
}

/// The tokens as gossip carries them.
pub fn tokens_value(tokens: &[i64]) -> String {
    let each: Vec<String> = tokens.iter().map(i64::to_string).collect();
    each.join(",")
}

impl super::harness::SimConfig {
    /// The standard run of `seed` with data: as [`SimConfig::new`], but
    /// every node stores data and serves the workload, without the other
    /// cluster's node, with 40 s of nemesis, and with every node running
    /// at the end (the final reads at ALL need all replicas); the quiet
    /// phase lasts `settle` and then the rounds of final reads.
    ///
    /// [`SimConfig::new`]: super::harness::SimConfig::new
    pub fn with_data(seed: u64) -> super::harness::SimConfig {
        let mut config = super::harness::SimConfig::new(seed);
        config.data = true;
        config.intruder = false;
        config.last_stop = super::nemesis::LastStop::None;
        config.nemesis = Duration::from_secs(40);
        config.quiet = config.settle
            + super::workload::FINAL_ROUND_GAP * super::workload::FINAL_ROUNDS
            + Duration::from_secs(2);
        config
    }
}
