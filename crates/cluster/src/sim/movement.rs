//! A node joining, leaving, replacing a dead one, or a dead one removed,
//! in a cluster that holds data, under clients and the nemesis
//! (docs/design/topology.md, sections 1 to 5; plan step 3).
//!
//! The run of a seed goes through the metadata's epochs of one movement
//! ([`MovementKind`]), each computed from the one before by the
//! metadata's own `apply` with the commands the server proposes
//! (`crates/varve/src/bootstrap.rs`, `decommission.rs`, `removenode.rs`):
//!
//! - **bootstrap**: the joiner is listed `Joining`, streams
//!   (`streaming::bootstrap`), then `Normal`;
//! - **decommission**: the leaver hands its vote over (when it has one),
//!   becomes `Leaving`, pushes its ranges (`streaming::decommission`),
//!   proposes `Leave`, and its process stops;
//! - **replace**: a node is crashed for good; a new node with its exact
//!   tokens is listed `Joining` (which makes the dead one `Leaving` in the
//!   same entry), streams from the survivors (`replacing` set), then
//!   `Normal` (which removes the dead one);
//! - **removenode**: a node is crashed for good; once another node (the
//!   *runner*) sees it DOWN, the dead node's vote goes, it is made
//!   `Leaving`, its ranges are restored from the survivors
//!   (`streaming::removenode::restore`, STREAM_REQUEST to each gainer),
//!   then `Leave`.
//!
//! Each node applies each epoch after a lag of its own (0 to 2 s, as a
//! node applies the log when it gets there): its coordinator gets the ring
//! of that epoch, its messaging stamps the epoch. The node that moves (the
//! *mover*) runs its step as the server does once it has applied the
//! epoch that started the movement, again after a pause whenever an
//! attempt fails, and from the start after a restart; its success commits
//! the movement's last epoch.
//!
//! Clients write and delete a few keys at QUORUM, ALL and ONE throughout
//! (the keys in four groups, [`KeyGroup`]: written until a moment before
//! the movement, until shortly after its streaming began, until it ends,
//! and to the end), and, in a run with LWT, compare-and-set and read a few
//! other keys at SERIAL (`sim/lwt.rs`). A node coordinates only while the
//! epoch it applied lists it `Normal` or `Leaving`.
//!
//! Once everything is healed and every node has applied the last epoch,
//! the *final phase* (`sim/movement_final.rs`): each node of the final
//! ring records what its engine holds, then (in a run with repair) every
//! one repairs its primary ranges and records it again, then reads every
//! key at QUORUM and at ALL, and at SERIAL the LWT keys. The checks are in
//! [`super::movement_checker`]; the seed's choices in
//! [`super::bootstrap_workload`] and [`super::movement_workload`].

use std::cell::{Cell, RefCell};
use std::fmt;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinSet;

use super::bootstrap_workload::{final_reads, writes, KeyGroup, BOOTSTRAP_KEYS};
use super::data::{self, Layout, NodeData, Shared};
use super::harness::SimConfig;
use super::history::{Event, NodeIndex, Recorder};
use super::movement_event::describe;
pub use super::movement_event::MovementEvent;
use super::movement_workload::{epochs, Roles};
use super::nemesis::{between, ms};
use super::workload::{OpKind, Workload};
use crate::coordinator::{Coordinator, Replication, Topology};
use crate::env::SeededRng;
use crate::metadata::{ClusterMetadata, NodeRecord, NodeState};
use crate::net::HostId;
use crate::ring::Location;

/// The longest a node takes to apply an epoch.
pub const APPLY_LAG_MS_MAX: u64 = 2_000;

/// How often a node looks whether an epoch is due, or the final phase.
pub(super) const POLL: Duration = Duration::from_millis(50);

/// How long before the earliest final phase the writes end.
const WRITES_STOP_BEFORE_FINAL: Duration = Duration::from_secs(3);

/// How long LWT clients go on once every node applied the last epoch.
pub const LWT_AFTER_MOVEMENT: Duration = Duration::from_secs(6);

/// How long before the final phase LWT clients stop, so that none is in
/// flight when the engines are recorded.
const LWT_STOP_BEFORE_FINAL: Duration = Duration::from_secs(3);

/// What moves in a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum MovementKind {
    Bootstrap,
    Decommission,
    Replace,
    Removenode,
}

impl fmt::Display for MovementKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MovementKind::Bootstrap => "bootstrap",
            MovementKind::Decommission => "decommission",
            MovementKind::Replace => "replace",
            MovementKind::Removenode => "removenode",
        })
    }
}

/// What the nodes of a movement run share: the metadata's epochs and
/// when each node applies them, the mover's progress, the final phase.
pub struct Movement {
    pub roles: Roles,
    /// The metadata at each epoch of the run, in order: before the
    /// movement, then each entry the movement commits.
    epochs: Vec<ClusterMetadata>,
    /// The index in `epochs` of the entry that starts the movement (the
    /// first whose ring moves); those before it and after the first are
    /// committed with it.
    started: usize,
    /// When each of `epochs` was committed (the first: from the start).
    committed: RefCell<Vec<Option<Duration>>>,
    /// Each node's lag in applying each epoch.
    lags: Vec<Vec<Duration>>,
    pub host_ids: Vec<HostId>,
    pub replication: Replication,
    /// When the movement starts (the joiner or replacement listed; the
    /// leaver or runner may begin).
    pub starts_at: Duration,
    /// Each key's group.
    groups: Vec<KeyGroup>,
    /// Bytes per second the mover's streams take (0: no limit).
    pub throughput: u64,
    /// The flushes of sstables of one partition (`bootstrap_storage`).
    pub(super) narrow: super::bootstrap_storage::NarrowFlushes,
    /// Whether clients run LWT beside the writes, and the nodes repair in
    /// the final phase.
    pub lwt: bool,
    pub repair: bool,
    /// When the mover's first attempt began.
    streaming_since: Cell<Option<Duration>>,
    /// The epoch index each node applied last (its log, kept across
    /// restarts).
    applied: RefCell<Vec<usize>>,
    /// The earliest start of the final phase: the quiet phase settled.
    final_at: Duration,
    final_recorded: Cell<bool>,
    /// Nodes whose process must stop for good (the harness stops them).
    stops: RefCell<Vec<NodeIndex>>,
    /// The final ring's nodes that finished their repair, and when the
    /// final reads begin once all have.
    pub(super) repairs_done: Cell<usize>,
    pub(super) reads_at: Cell<Option<Duration>>,
    /// The final ring's nodes whose final reads are over, and when the
    /// last one's were.
    finished_reading: Cell<usize>,
    reads_done_at: Cell<Option<Duration>>,
    recorder: Recorder,
}

impl Movement {
    /// The index of the last epoch (the movement done).
    pub fn last(&self) -> usize {
        self.epochs.len() - 1
    }

    /// The index of the epoch that started the movement.
    pub fn started(&self) -> usize {
        self.started
    }

    /// The metadata at epoch index `i`.
    pub fn metadata(&self, i: usize) -> &ClusterMetadata {
        &self.epochs[i]
    }

    /// The ring of epoch index `i` as the node `local` sees it.
    fn topology(&self, i: usize, local: HostId) -> Topology {
        Topology::from_records(self.epochs[i].nodes.values(), local)
    }

    /// The newest epoch index `node` applies by `now`: entries apply in
    /// order, each once it is committed and the node's lag has passed.
    fn due(&self, node: NodeIndex, now: Duration) -> usize {
        let committed = self.committed.borrow();
        let mut due = 0;
        for (i, at) in committed.iter().enumerate().skip(1) {
            match at {
                Some(at) if now >= *at + self.lags[node][i] => due = i,
                _ => break,
            }
        }
        due
    }

    /// Applies to `node` the epoch due to it if it is newer than `here`
    /// (what this start of it applied, if anything); the epoch index it
    /// is at.
    fn catch_up(&self, node: NodeIndex, coordinator: &Coordinator, here: Option<usize>) -> usize {
        let due = self.due(node, elapsed());
        if let Some(here) = here.filter(|&h| due <= h) {
            return here;
        }
        let (messaging, _, _) = coordinator.parts();
        coordinator.set_topology(self.topology(due, self.host_ids[node]));
        messaging.set_epoch(self.epochs[due].epoch);
        let mut applied = self.applied.borrow_mut();
        applied[node] = applied[node].max(due);
        let epoch = self.epochs[due].epoch;
        drop(applied);
        self.record(MovementEvent::Applied { node, epoch });
        due
    }

    /// The epoch index `node` applied last.
    pub fn applied(&self, node: NodeIndex) -> usize {
        self.applied.borrow()[node]
    }

    /// Commits every epoch from the first after the one before the
    /// movement up to `to` (an index), now.
    pub(super) fn commit(&self, to: usize) {
        let now = elapsed();
        for i in 1..=to {
            if self.committed.borrow()[i].is_some() {
                continue;
            }
            self.committed.borrow_mut()[i] = Some(now);
            let what = describe(&self.epochs[i - 1], &self.epochs[i], &self.host_ids);
            self.record(MovementEvent::Committed {
                epoch: self.epochs[i].epoch,
                what,
            });
        }
    }

    /// Whether the epoch that starts the movement is committed.
    pub fn is_started(&self) -> bool {
        self.committed.borrow()[self.started].is_some()
    }

    /// When the last epoch was committed (the movement done).
    pub fn finished_at(&self) -> Option<Duration> {
        self.committed.borrow()[self.last()]
    }

    pub(super) fn began_streaming(&self) {
        if self.streaming_since.get().is_none() {
            self.streaming_since.set(Some(elapsed()));
        }
    }

    /// Whether `node` coordinates client operations now: the epoch it
    /// applied lists it `Normal` or `Leaving`, and it has not left.
    pub fn serves(&self, node: NodeIndex) -> bool {
        let state = self.epochs[self.applied(node)]
            .nodes
            .get(&self.host_ids[node])
            .map(|r| r.state);
        let left = self.stops.borrow().contains(&node);
        matches!(state, Some(NodeState::Normal | NodeState::Leaving)) && !left
    }

    /// Whether clients still write `key` now.
    fn writes(&self, key: usize) -> bool {
        match self.groups[key] {
            KeyGroup::Until(at) => elapsed() < at,
            KeyGroup::AfterStreaming(after) => self
                .streaming_since
                .get()
                .is_none_or(|since| elapsed() < since + after),
            KeyGroup::UntilJoined => self.finished_at().is_none(),
            KeyGroup::Always => true,
        }
    }

    /// Whether LWT clients still run now: until a moment before the final
    /// phase.
    pub fn lwt_running(&self) -> bool {
        self.final_start()
            .is_none_or(|start| elapsed() + LWT_STOP_BEFORE_FINAL < start)
    }

    /// When the final phase starts, once the movement is done: every node
    /// has applied the last epoch a second before (and, with LWT, clients
    /// ran on the final ring a while), and the quiet phase settled.
    pub fn final_start(&self) -> Option<Duration> {
        let done = self.finished_at()?;
        let mut everywhere = done + ms(APPLY_LAG_MS_MAX) + Duration::from_secs(1);
        if self.lwt {
            everywhere += LWT_AFTER_MOVEMENT;
        }
        Some(everywhere.max(self.final_at))
    }

    /// The nodes of the final ring, by index.
    pub fn final_nodes(&self) -> Vec<NodeIndex> {
        let last = &self.epochs[self.last()];
        (0..self.host_ids.len())
            .filter(|&n| last.nodes.contains_key(&self.host_ids[n]))
            .collect()
    }

    /// Asks the harness to stop `node`'s process for good.
    pub(super) fn stop_for_good(&self, node: NodeIndex) {
        self.stops.borrow_mut().push(node);
    }

    /// The nodes to stop for good, in the order asked (the harness
    /// stops each once).
    pub fn stops(&self) -> Vec<NodeIndex> {
        self.stops.borrow().clone()
    }

    /// Counts a node of the final ring whose final reads are over.
    pub(super) fn finished_reading(&self) {
        let done = self.finished_reading.get() + 1;
        self.finished_reading.set(done);
        if done == self.final_nodes().len() {
            self.reads_done_at.set(Some(elapsed()));
        }
    }

    /// When every node of the final ring had finished its final reads:
    /// nothing is left to observe, and the run may end.
    pub fn reads_done_at(&self) -> Option<Duration> {
        self.reads_done_at.get()
    }

    pub(super) fn final_recorded(&self) -> bool {
        self.final_recorded.replace(true)
    }

    pub(super) fn record(&self, event: MovementEvent) {
        self.recorder.record_now(Event::Movement(event));
    }
}

pub(super) fn elapsed() -> Duration {
    turmoil::sim_elapsed().unwrap_or_default()
}

/// The data side of a movement run: the layout of [`BOOTSTRAP_KEYS`]
/// keys (and, with LWT, its registers) on the final ring, the clients'
/// writes and final reads, the epochs, lags and throughput, one engine
/// per node. `ids` are the nodes' host ids and addresses.
pub fn cluster(
    rng: &SeededRng,
    config: &SimConfig,
    location: &Location,
    recorder: Recorder,
    ids: (&[HostId], &[SocketAddr]),
) -> (Vec<Rc<NodeData>>, Layout) {
    let Some(roles) = config.movement.clone() else {
        panic!("a movement run without a movement");
    };
    let keys = BOOTSTRAP_KEYS + if config.lwt { super::lwt::LWT_KEYS } else { 0 };
    let (layout, tokens) =
        super::movement_workload::layout(rng, config.nodes, location, &roles, keys);
    let final_at = config.nemesis_end() + config.settle;
    let writes_end = final_at - WRITES_STOP_BEFORE_FINAL;
    let one = roles.kind.allows_one();
    let mut ops = writes(rng, config.nodes, Duration::from_secs(3), writes_end, one);
    let finals: Vec<NodeIndex> = (0..config.nodes)
        .filter(|n| Some(*n) != roles.departing)
        .collect();
    ops.extend(final_reads(&finals));
    let records = records(ids, &layout.dcs, &tokens, &location.rack);
    let epochs = epochs(&roles, &records);
    let started = (0..epochs.len())
        .find(|&i| epochs[i].nodes.values().any(|r| r.state.is_moving()))
        .unwrap_or(1);
    let starts_at = roles.starts_at;
    let groups = (0..BOOTSTRAP_KEYS)
        .map(|k| KeyGroup::draw(rng, k, starts_at))
        .collect();
    let lags = lags(rng, config.nodes, epochs.len());
    let mut committed = vec![None; epochs.len()];
    committed[0] = Some(Duration::ZERO);
    // A few hundred bytes a second makes the stream of the ~1 KiB the
    // keys take last several seconds, under the faults.
    let throughput = match rng.below_or_at(3) {
        0 => 0,
        _ => between(rng, 30, 300),
    };
    let movement = Movement {
        roles: roles.clone(),
        epochs,
        started,
        committed: RefCell::new(committed),
        lags,
        host_ids: ids.0.to_vec(),
        replication: layout.replication.clone(),
        starts_at,
        groups,
        throughput,
        narrow: super::bootstrap_storage::NarrowFlushes::new(throughput, config.nodes),
        lwt: config.lwt,
        repair: config.repair,
        streaming_since: Cell::new(None),
        applied: RefCell::new(vec![0; config.nodes]),
        final_at,
        final_recorded: Cell::new(false),
        stops: RefCell::new(Vec::new()),
        repairs_done: Cell::new(0),
        reads_at: Cell::new(None),
        finished_reading: Cell::new(0),
        reads_done_at: Cell::new(None),
        recorder: recorder.clone(),
    };
    let shared = shared(config, Workload { ops }, recorder, &layout, movement);
    let nodes = tokens
        .iter()
        .enumerate()
        .map(|(i, t)| Rc::new(NodeData::new(i, t.clone(), shared.clone())))
        .collect();
    (nodes, layout)
}

/// Every node's record, `Normal`.
fn records(
    (host_ids, addresses): (&[HostId], &[SocketAddr]),
    dcs: &[String],
    tokens: &[Vec<i64>],
    rack: &str,
) -> Vec<NodeRecord> {
    (0..host_ids.len())
        .map(|i| NodeRecord {
            host_id: host_ids[i],
            storage_addr: addresses[i],
            rpc_addr: None,
            dc: dcs[i].clone(),
            rack: rack.to_string(),
            tokens: tokens[i].clone(),
            state: NodeState::Normal,
        })
        .collect()
}

/// Each node's lag in applying each of `epochs` epochs (none for the
/// first, which every node has from the start).
fn lags(rng: &SeededRng, nodes: usize, epochs: usize) -> Vec<Vec<Duration>> {
    let lag = || ms(rng.below_or_at(APPLY_LAG_MS_MAX));
    (0..nodes)
        .map(|_| {
            let mut each = vec![Duration::ZERO];
            each.extend((1..epochs).map(|_| lag()));
            each
        })
        .collect()
}

/// What the nodes of a movement run share.
fn shared(
    config: &SimConfig,
    workload: Workload,
    recorder: Recorder,
    layout: &Layout,
    movement: Movement,
) -> Rc<Shared> {
    Rc::new(Shared {
        workload,
        counter: Cell::new(0),
        recorder,
        nodes: config.nodes,
        replication: layout.replication.clone(),
        seed: config.seed,
        lwt: config.lwt,
        workload_end: movement.final_at - WRITES_STOP_BEFORE_FINAL,
        values: Cell::new(0),
        starts: Cell::new(0),
        lwt_key_base: BOOTSTRAP_KEYS,
        lwt_clients: super::lwt::MOVEMENT_CLIENTS_PER_NODE,
        lwt_think_ms_max: super::lwt::MOVEMENT_THINK_MAX_MS,
        local_serial_dcs: None,
        refusing_homes: false,
        two_rounds: true,
        movement: Some(Rc::new(movement)),
    })
}

/// One start of a node of a movement run: it catches up with the
/// metadata at once, then follows it, runs its client writes (and LWT
/// clients), the mover's step, and the final phase.
pub(super) async fn node(m: Rc<Movement>, data: Rc<NodeData>, coordinator: Arc<Coordinator>) {
    let me = data.index;
    let here = m.catch_up(me, &coordinator, None);
    let mut tasks = JoinSet::new();
    tasks.spawn_local(follow_metadata(m.clone(), me, coordinator.clone(), here));
    if me == m.roles.mover {
        tasks.spawn_local(super::movement_steps::run(
            m.clone(),
            data.clone(),
            coordinator.clone(),
        ));
    }
    if me != m.roles.mover && m.narrow.on() {
        tasks.spawn_local(super::bootstrap_storage::narrow_flush(
            m.clone(),
            data.clone(),
            coordinator.clone(),
        ));
    }
    tasks.spawn_local(client_writes(m.clone(), data.clone(), coordinator.clone()));
    if m.lwt {
        let (_, _, clock) = coordinator.parts();
        tasks.spawn_local(super::lwt::clients(
            data.clone(),
            coordinator.clone(),
            clock,
        ));
    }
    tasks.spawn_local(super::movement_final::final_phase(m, data, coordinator));
    while tasks.join_next().await.is_some() {}
}

/// Applies each epoch when it is due to this node.
async fn follow_metadata(
    m: Rc<Movement>,
    me: NodeIndex,
    coordinator: Arc<Coordinator>,
    mut here: usize,
) {
    let (_, _, clock) = coordinator.parts();
    while here < m.last() {
        clock.sleep(POLL).await;
        here = m.catch_up(me, &coordinator, Some(here));
    }
}

/// This node's writes due from now on, each in its own task, while
/// their key's group is written and this node coordinates.
async fn client_writes(m: Rc<Movement>, data: Rc<NodeData>, coordinator: Arc<Coordinator>) {
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
        if !m.serves(data.index) || !m.writes(ops[id].key) {
            continue;
        }
        running.spawn_local(data::run_op(data.clone(), coordinator.clone(), id));
    }
    while running.join_next().await.is_some() {}
}
