//! A node joining a cluster that holds data, under clients and the
//! nemesis (docs/design/topology.md, sections 2 and 3; plan step 3).
//!
//! The run of a seed, in three phases over 4 or 5 nodes whose last one is
//! the *joiner* (every node has random tokens, and the keyspace is RF 3
//! SimpleStrategy or, one seed in two, NetworkTopologyStrategy over two
//! data centres, as in `sim/data.rs`):
//!
//! - **A**: the metadata lists every node but the joiner, `Normal`
//!   (epoch 1). Clients write and delete a few keys at QUORUM, ALL and
//!   ONE through the other nodes, each write with a timestamp no other
//!   has. The keys come in four groups ([`KeyGroup`]), written until a
//!   moment before phase B, until shortly after the joiner began to
//!   stream, until the join succeeds, and to the end: so that the last
//!   write of some keys comes before the stream, of some just after it
//!   began (when a coordinator still writing without the joiner would
//!   lose it), of some while the joiner is pending, of some after (a
//!   newer write the joiner received would hide an older one it lost).
//! - **B**: at the seed's time the metadata commits the joiner `Joining`
//!   (epoch 2). Each node applies it after a lag of its own (0 to 2 s,
//!   as a node applies the log when it gets there): its coordinator gets
//!   the ring with the joiner pending, its messaging stamps the epoch.
//!   Once the joiner has applied it, it runs `streaming::bootstrap` with
//!   a puller at the seed's throughput, again after a pause whenever an
//!   attempt fails, and from the start after a restart, as the server
//!   does (`crates/varve/src/bootstrap.rs`).
//! - **C**: when an attempt succeeds, the metadata commits the joiner
//!   `Normal` (epoch 3), which each node again applies after its own lag;
//!   the joiner takes client writes once it has.
//!
//! The nemesis acts from 3 s, before B (so that replicas differ when the
//! joiner streams, and the source it picks matters), to well after it:
//! slow nodes, short partitions and freezes, one node down at a time
//! (crashed or shut down, its engine kept, the joiner too), all healed
//! at its end. A node that starts again applies at once every epoch due
//! to it (it has its log).
//!
//! Once everything is healed and every node has applied epoch 3, the
//! *final phase*: each node records what its own engine holds of each key
//! ([`JoinEvent::Holds`]), then reads every key at QUORUM (without read
//! repair, so the replicas stay as they were) and at ALL. The checks are
//! in [`super::bootstrap_checker`].
//!
//! The seed's choices (settings, plan, writes, final reads, key groups)
//! are in [`super::bootstrap_workload`].
//!
//! The engines keep sstables (on a simulated file system each), so the
//! join streams whole sstables where one lies inside a range it fetches
//! ([`super::bootstrap_storage`]).
//!
//! The ring comes from the metadata alone ([`Coordinator::set_topology`]):
//! the joiner's own ring follows gossip until it applies epoch 2, but it
//! coordinates nothing before epoch 3.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinSet;
use varve_types::data::{Partition, Slice};

use super::bootstrap_storage::{narrow_flush, NarrowFlushes};
use super::bootstrap_workload::{final_reads, joining_at, writes, KeyGroup, BOOTSTRAP_KEYS};
use super::data::{self, key, Layout, NodeData, Shared, TABLE};
use super::harness::SimConfig;
use super::history::{Event, NodeIndex, Recorder};
use super::nemesis::{between, ms};
use super::workload::{OpKind, Workload};
use crate::coordinator::{Coordinator, Replication, Topology};
use crate::env::SeededRng;
use crate::metadata::{NodeRecord, NodeState};
use crate::net::HostId;
use crate::ring::Location;
use crate::streaming::{self, Puller, StreamTable};

/// The metadata's epochs: the joiner absent, `Joining`, `Normal`.
pub const EPOCH_BEFORE: u64 = 1;
pub const EPOCH_JOINING: u64 = 2;
pub const EPOCH_NORMAL: u64 = 3;

/// The longest a node takes to apply an epoch.
const APPLY_LAG_MS_MAX: u64 = 2_000;

/// The pause between two bootstrap attempts (the server's
/// `BOOTSTRAP_RETRY`).
pub const BOOTSTRAP_RETRY: Duration = Duration::from_secs(5);

/// How often a node looks whether an epoch is due, or the final phase.
pub(super) const POLL: Duration = Duration::from_millis(50);

/// A step of the join, as the history has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JoinEvent {
    /// `node` applied `epoch` (its ring and its messaging's epoch).
    Applied { node: NodeIndex, epoch: u64 },
    /// The joiner began a bootstrap attempt.
    Streaming,
    /// The attempt succeeded; the metadata commits the joiner `Normal`.
    Streamed {
        ranges: usize,
        partitions: u64,
        /// Whole sstables among what came.
        files: u64,
    },
    /// `node` flushed a memtable of one partition.
    NarrowFlush { node: NodeIndex },
    /// The attempt failed; the joiner tries again after a pause.
    Failed(String),
    /// The final phase began: every node applied epoch 3, nothing runs.
    FinalPhase,
    /// The newest timestamp (cell or tombstone) `node`'s own engine holds
    /// of each key, at the start of the final phase.
    Holds {
        node: NodeIndex,
        newest: Vec<Option<i64>>,
    },
}

impl fmt::Display for JoinEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JoinEvent::Applied { node, epoch } => write!(f, "n{node} applies epoch {epoch}"),
            JoinEvent::Streaming => f.write_str("the joiner starts a bootstrap attempt"),
            JoinEvent::Streamed {
                ranges,
                partitions,
                files,
            } => write!(
                f,
                "the joiner streamed {ranges} ranges ({partitions} partitions, {files} whole \
                 sstables): it is Normal"
            ),
            JoinEvent::NarrowFlush { node } => {
                write!(f, "n{node} flushes a memtable of one partition")
            }
            JoinEvent::Failed(why) => write!(f, "the bootstrap attempt failed: {why}"),
            JoinEvent::FinalPhase => f.write_str("final phase: engines recorded, then reads"),
            JoinEvent::Holds { node, newest } => {
                write!(f, "n{node} holds")?;
                for (k, ts) in newest.iter().enumerate() {
                    match ts {
                        Some(ts) => write!(f, " k{k}@{ts}")?,
                        None => write!(f, " k{k}@-")?,
                    }
                }
                Ok(())
            }
        }
    }
}

/// What the nodes of a join run share: the metadata's epochs and when
/// each node applies them, and the joiner's progress.
pub struct Join {
    pub joiner: NodeIndex,
    /// Every node's record; the joiner's state is the epoch's.
    records: Vec<NodeRecord>,
    pub replication: Replication,
    /// When epoch 2 is committed (the start of phase B).
    pub joining_at: Duration,
    /// Each key's group.
    groups: Vec<KeyGroup>,
    /// Each node's lag in applying epoch 2, and epoch 3.
    lags: Vec<(Duration, Duration)>,
    /// Bytes per second the joiner's puller takes (0: no limit).
    pub throughput: u64,
    /// The flushes of sstables of one partition.
    pub(super) narrow: NarrowFlushes,
    /// When the joiner's first bootstrap attempt began.
    streaming_since: Cell<Option<Duration>>,
    /// When a bootstrap attempt succeeded (epoch 3 committed).
    joined_at: Cell<Option<Duration>>,
    /// The last epoch each node applied (its log, kept across restarts).
    applied: RefCell<Vec<u64>>,
    /// The earliest start of the final phase: the quiet phase settled.
    final_at: Duration,
    final_recorded: Cell<bool>,
    recorder: Recorder,
}

impl Join {
    /// The ring of `epoch` as the node `local` sees it.
    fn topology(&self, epoch: u64, local: HostId) -> Topology {
        let records: Vec<NodeRecord> = self
            .records
            .iter()
            .enumerate()
            .filter_map(|(i, r)| {
                let state = match (i == self.joiner, epoch) {
                    (false, _) => NodeState::Normal,
                    (true, EPOCH_BEFORE) => return None,
                    (true, EPOCH_JOINING) => NodeState::Joining,
                    (true, _) => NodeState::Normal,
                };
                Some(NodeRecord { state, ..r.clone() })
            })
            .collect();
        Topology::from_records(records.iter(), local)
    }

    /// The newest epoch `node` applies by `now`.
    fn due(&self, node: NodeIndex, now: Duration) -> u64 {
        let (lag_joining, lag_normal) = self.lags[node];
        match self.joined_at.get() {
            Some(at) if now >= at + lag_normal => EPOCH_NORMAL,
            _ if now >= self.joining_at + lag_joining => EPOCH_JOINING,
            _ => EPOCH_BEFORE,
        }
    }

    /// Applies to `node` the epoch due to it if it is newer than `here`
    /// (what this start of it applied); the epoch it is at.
    fn catch_up(&self, node: NodeIndex, coordinator: &Coordinator, here: u64) -> u64 {
        let due = self.due(node, elapsed());
        if due <= here {
            return here;
        }
        let (messaging, _, _) = coordinator.parts();
        coordinator.set_topology(self.topology(due, self.records[node].host_id));
        messaging.set_epoch(due);
        let mut applied = self.applied.borrow_mut();
        applied[node] = applied[node].max(due);
        self.record(JoinEvent::Applied { node, epoch: due });
        due
    }

    fn applied(&self, node: NodeIndex) -> u64 {
        self.applied.borrow()[node]
    }

    /// Whether clients still write `key` now.
    fn writes(&self, key: usize) -> bool {
        match self.groups[key] {
            KeyGroup::Until(at) => elapsed() < at,
            KeyGroup::AfterStreaming(after) => self
                .streaming_since
                .get()
                .is_none_or(|since| elapsed() < since + after),
            KeyGroup::UntilJoined => self.joined_at.get().is_none(),
            KeyGroup::Always => true,
        }
    }

    /// When the final phase starts, once the join succeeded: every node
    /// has applied epoch 3 a second before, and the quiet phase settled.
    fn final_start(&self) -> Option<Duration> {
        let joined = self.joined_at.get()?;
        let everywhere = joined + ms(APPLY_LAG_MS_MAX) + Duration::from_secs(1);
        Some(everywhere.max(self.final_at))
    }

    pub(super) fn record(&self, event: JoinEvent) {
        self.recorder.record_now(Event::Join(event));
    }
}

fn elapsed() -> Duration {
    turmoil::sim_elapsed().unwrap_or_default()
}

/// The data side of a join run: the layout of [`BOOTSTRAP_KEYS`] keys
/// on every node's tokens (the joiner's included: the final ring), the
/// clients' writes and final reads, the join's lags and throughput, one
/// engine per node. `ids` are the nodes' host ids and addresses.
pub fn cluster(
    rng: &SeededRng,
    config: &SimConfig,
    location: &Location,
    recorder: Recorder,
    ids: (&[HostId], &[SocketAddr]),
) -> (Vec<Rc<NodeData>>, Layout) {
    let layout = data::layout(rng, config.nodes, location, BOOTSTRAP_KEYS);
    let final_at = config.nemesis_end() + config.settle;
    let writes_end = final_at - Duration::from_secs(3);
    let mut ops = writes(rng, config.nodes, Duration::from_secs(3), writes_end);
    ops.extend(final_reads(config.nodes));
    let records = (0..config.nodes)
        .map(|i| NodeRecord {
            host_id: ids.0[i],
            storage_addr: ids.1[i],
            rpc_addr: None,
            dc: layout.dcs[i].clone(),
            rack: location.rack.clone(),
            tokens: layout.tokens[i].clone(),
            state: NodeState::Normal,
        })
        .collect();
    let lag = || ms(rng.below_or_at(APPLY_LAG_MS_MAX));
    let joining = joining_at(config.seed);
    // Drawn in this order: the seeds' runs depend on it.
    let groups = (0..BOOTSTRAP_KEYS)
        .map(|k| KeyGroup::draw(rng, k, joining))
        .collect();
    let lags = (0..config.nodes).map(|_| (lag(), lag())).collect();
    // A few hundred bytes a second makes the stream of the ~1 KiB
    // the keys take last several seconds, under the faults.
    let throughput = match rng.below_or_at(3) {
        0 => 0,
        _ => between(rng, 30, 300),
    };
    let join = Join {
        joiner: config.nodes - 1,
        records,
        replication: layout.replication.clone(),
        joining_at: joining,
        groups,
        lags,
        throughput,
        narrow: NarrowFlushes::new(throughput, config.nodes),
        streaming_since: Cell::new(None),
        joined_at: Cell::new(None),
        applied: RefCell::new(vec![0; config.nodes]),
        final_at,
        final_recorded: Cell::new(false),
        recorder: recorder.clone(),
    };
    let shared = Rc::new(Shared {
        workload: Workload { ops },
        counter: Cell::new(0),
        recorder,
        nodes: config.nodes,
        replication: layout.replication.clone(),
        seed: config.seed,
        lwt: false,
        workload_end: writes_end,
        values: Cell::new(0),
        starts: Cell::new(0),
        join: Some(Rc::new(join)),
    });
    let nodes = layout
        .tokens
        .iter()
        .enumerate()
        .map(|(i, t)| Rc::new(NodeData::new(i, t.clone(), shared.clone())))
        .collect();
    (nodes, layout)
}

/// One start of a node of a join run: it catches up with the metadata
/// at once, then follows it, runs its writes, the joiner's bootstrap,
/// and the final phase.
pub(super) async fn node(join: Rc<Join>, data: Rc<NodeData>, coordinator: Arc<Coordinator>) {
    let me = data.index;
    let here = join.catch_up(me, &coordinator, 0);
    let mut tasks = JoinSet::new();
    tasks.spawn_local(follow_metadata(join.clone(), me, coordinator.clone(), here));
    if me == join.joiner {
        tasks.spawn_local(bootstrap(join.clone(), coordinator.clone()));
    } else if join.narrow.on() {
        tasks.spawn_local(narrow_flush(
            join.clone(),
            data.clone(),
            coordinator.clone(),
        ));
    }
    tasks.spawn_local(client_writes(
        join.clone(),
        data.clone(),
        coordinator.clone(),
    ));
    tasks.spawn_local(final_phase(join, data, coordinator));
    while tasks.join_next().await.is_some() {}
}

/// Applies each epoch when it is due to this node.
async fn follow_metadata(
    join: Rc<Join>,
    me: NodeIndex,
    coordinator: Arc<Coordinator>,
    mut here: u64,
) {
    let (_, _, clock) = coordinator.parts();
    while here < EPOCH_NORMAL {
        clock.sleep(POLL).await;
        here = join.catch_up(me, &coordinator, here);
    }
}

/// The joiner, once `Joining`: bootstrap attempts until one succeeds.
async fn bootstrap(join: Rc<Join>, coordinator: Arc<Coordinator>) {
    let (messaging, engine, clock) = coordinator.parts();
    let tables = [StreamTable {
        table: TABLE,
        name: "ks.t".to_string(),
        replication: join.replication.clone(),
    }];
    while join.applied(join.joiner) < EPOCH_JOINING {
        clock.sleep(POLL).await;
    }
    while join.joined_at.get().is_none() {
        join.record(JoinEvent::Streaming);
        if join.streaming_since.get().is_none() {
            join.streaming_since.set(Some(elapsed()));
        }
        let puller = Puller::new(
            engine.clone(),
            messaging.clone(),
            clock.clone(),
            join.throughput,
        );
        match streaming::bootstrap(&coordinator, &puller, &tables, EPOCH_JOINING, None).await {
            Ok(report) => {
                join.joined_at.set(Some(elapsed()));
                join.record(JoinEvent::Streamed {
                    ranges: report.ranges,
                    partitions: report.moved.partitions,
                    files: report.moved.files,
                });
            }
            Err(why) => {
                join.record(JoinEvent::Failed(why));
                clock.sleep(BOOTSTRAP_RETRY).await;
            }
        }
    }
}

/// This node's writes due from now on, each in its own task, while
/// their key's group is written; the joiner's only once it has applied
/// epoch 3.
async fn client_writes(join: Rc<Join>, data: Rc<NodeData>, coordinator: Arc<Coordinator>) {
    let (_, _, clock) = coordinator.parts();
    let ops = &data.shared.workload.ops;
    let now = elapsed();
    let mine: Vec<usize> = (0..ops.len())
        .filter(|&id| {
            let op = &ops[id];
            op.node == data.index && !matches!(op.kind, OpKind::Read { .. }) && op.at >= now
        })
        .collect();
    let mut running = JoinSet::new();
    for id in mine {
        clock.sleep(ops[id].at.saturating_sub(elapsed())).await;
        while running.try_join_next().is_some() {}
        let joiner_pending = data.index == join.joiner && join.applied(data.index) < EPOCH_NORMAL;
        if joiner_pending || !join.writes(ops[id].key) {
            continue;
        }
        running.spawn_local(data::run_op(data.clone(), coordinator.clone(), id));
    }
    while running.join_next().await.is_some() {}
}

/// Waits for the final phase, records what this node's engine holds,
/// then runs this node's final reads.
async fn final_phase(join: Rc<Join>, data: Rc<NodeData>, coordinator: Arc<Coordinator>) {
    let (_, engine, clock) = coordinator.parts();
    let start = loop {
        match join.final_start() {
            Some(start) => break start,
            None => clock.sleep(POLL).await,
        }
    };
    let Some(wait) = start.checked_sub(elapsed()) else {
        // This start of the node came after the final phase began.
        return;
    };
    clock.sleep(wait).await;
    if !join.final_recorded.replace(true) {
        join.record(JoinEvent::FinalPhase);
    }
    let newest = (0..BOOTSTRAP_KEYS).map(|k| newest_in(&engine, k)).collect();
    join.record(JoinEvent::Holds {
        node: data.index,
        newest,
    });
    let ops = &data.shared.workload.ops;
    let mut running = JoinSet::new();
    for id in (0..ops.len())
        .filter(|&id| ops[id].node == data.index && matches!(ops[id].kind, OpKind::Read { .. }))
    {
        clock
            .sleep((start + ops[id].at).saturating_sub(elapsed()))
            .await;
        running.spawn_local(data::run_op(data.clone(), coordinator.clone(), id));
    }
    while running.join_next().await.is_some() {}
}

/// The newest timestamp of key `k` in `engine`: of a cell, a row
/// deletion or the partition's deletion.
fn newest_in(engine: &varve_storage::Engine, k: usize) -> Option<i64> {
    let slices = [Slice::all(&data::comparator())];
    let partition = match engine.read_partition(TABLE, &key(k), &slices) {
        Ok(p) => p?,
        Err(e) => panic!("reading k{k} from a simulated engine: {e}"),
    };
    newest(&partition)
}

fn newest(p: &Partition) -> Option<i64> {
    let deleted =
        (p.deletion.marked_for_delete_at != i64::MIN).then_some(p.deletion.marked_for_delete_at);
    let rows = p.rows.values().flat_map(|row| {
        let cells = row.cells.values().map(|c| c.timestamp);
        let marker = row.liveness.map(|l| l.timestamp);
        let deletion = row.deletion.map(|d| d.marked_for_delete_at);
        cells.chain(marker).chain(deletion)
    });
    deleted.into_iter().chain(rows).max()
}
