//! Lightweight transactions in the simulation (docs/design/paxos.md,
//! section 8): every node runs the Paxos acceptor over `system.paxos` in
//! its engine and coordinates conditional statements; clients on every
//! node read a few registers at SERIAL and compare-and-set them from what
//! they read (or insert them IF NOT EXISTS), while the nemesis partitions,
//! delays, crashes and restarts nodes. Each operation's call and return
//! go into the history; the linearizability checker judges it, key by key.
//! In a run over two data centres each data centre also has a register
//! of its own that only its clients use, at LOCAL_SERIAL (commits at
//! LOCAL_QUORUM): linearizable among them, with only their data centre's
//! replicas in each quorum.
//! An operation whose outcome the client could not know (a timeout, an
//! unknown result, a node stopped under it) may have taken effect at any
//! point after its call, or never.
//!
//! A register is one partition with [`CELLS`] cells: columns 1 and 2 of
//! one row, so both are under the partition's one Paxos instance. A
//! compare-and-set picks one cell, conditions on it alone and writes it
//! alone, leaving the other as it is; a SERIAL read reads the whole
//! partition. Two cells are what make a replica's data more than a
//! function of its latest commit: a commit on one cell that missed a
//! replica, then a commit on the other that reached it, leave that
//! replica with the others' latest commit and a stale first cell. Only
//! the data digest of the two-round path
//! (docs/design/paxos-two-rounds.md) stops a decision on that stale cell;
//! with a single cell every commit rewrote the whole register, and a
//! build that skipped the digest passed every seed.
//! The checker judges each cell as a register of its own (key
//! `key * CELLS + cell`): a compare-and-set is an operation on its cell,
//! and a read is a read of every cell at once.

use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use varve_storage::sstable::SstableParams;
use varve_storage::{Engine, TableDescriptor};
use varve_types::consistency::Consistency;
use varve_types::data::{Cell, ClusteringComparator, Partition, Slice};
use varve_types::data_error::DataError;
use varve_types::CqlType;

use super::data::{NodeData, TABLE};
use super::history::Event;
use crate::coordinator::{Cas, CasPath, Coordinator, DecideFn, RebuildFn};
use crate::env::{Clock, SeededRng};
use crate::paxos::{PaxosReplica, PaxosStore};

/// `system.paxos`'s id in a simulated engine.
pub const PAXOS_TABLE: u128 = 0x9a_05;
/// Registers the clients share (few: contention is the point).
pub const LWT_KEYS: usize = 3;
/// Cells per register (columns 1 to `CELLS` of its one row).
pub const CELLS: usize = 2;
/// LOCAL_SERIAL registers per data centre, after the shared ones.
pub const LOCAL_SERIAL_KEYS_PER_DC: usize = 1;
/// Client loops per node.
pub const CLIENTS_PER_NODE: usize = 2;
/// Client loops per node in a movement run (`sim/movement.rs`), where
/// clients write too: fewer, so a run stays short.
pub const MOVEMENT_CLIENTS_PER_NODE: usize = 1;
/// The most a client waits between two operations.
pub const THINK_MAX_MS: u64 = 40;
/// The same in a movement run: its clients write too, and its runs must
/// stay short.
pub const MOVEMENT_THINK_MAX_MS: u64 = 400;

/// What a client asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LwtOp {
    /// A SERIAL read of the register, every cell.
    Read,
    /// `IF cell = expected` (`None`: the cell absent), then `new` in that
    /// cell; the register's other cell is left as it is.
    Cas {
        cell: usize,
        expected: Option<i64>,
        new: i64,
    },
}

/// What it got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LwtOutcome {
    /// Each cell's value, by cell.
    Read([Option<i64>; CELLS]),
    Cas(bool),
    /// Surely without effect (Unavailable: nothing was sent).
    Failed(String),
    /// Maybe with effect, maybe not.
    Unknown(String),
}

/// A history line of the LWT workload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LwtEvent {
    Invoke {
        client: u64,
        key: usize,
        op: LwtOp,
    },
    Done {
        client: u64,
        outcome: LwtOutcome,
        /// Whether the key's home replica ran it for this node.
        forwarded: bool,
        /// Whether the key's home refused it, and this node ran it.
        home_refused: bool,
        /// Which rounds decided it (docs/design/paxos-two-rounds.md).
        path: CasPath,
    },
}

fn paxos_descriptor() -> TableDescriptor {
    TableDescriptor {
        id: PAXOS_TABLE,
        keyspace: "system".into(),
        name: "paxos".into(),
        comparator: ClusteringComparator::new(vec![(CqlType::Uuid, false)]),
        params: SstableParams::default(),
        durable_writes: true,
        gc_grace_seconds: 864_000,
        compaction: super::data::no_compaction(),
    }
}

/// Creates `system.paxos` in a node's engine.
pub fn create_paxos_table(engine: &Engine) {
    if let Err(e) = engine.create_table(paxos_descriptor()) {
        panic!("the simulated system.paxos: {e}");
    }
}

/// The acceptor of a node, over its engine.
pub fn acceptor(engine: Arc<Engine>) -> Arc<PaxosReplica> {
    let clock = Arc::new(|| {
        let now = turmoil::since_epoch().unwrap_or_default();
        i32::try_from(now.as_secs()).unwrap_or(i32::MAX)
    });
    PaxosReplica::new_inline(PaxosStore::with_clock(engine, PAXOS_TABLE, clock))
}

/// The column of a register's cell `cell` (0-based) in its row.
fn column(cell: usize) -> u32 {
    u32::try_from(cell + 1).unwrap_or(u32::MAX)
}

/// A cell's value in a partition (row 1, column `cell + 1`: 8 bytes).
fn value_in(p: &Partition, cell: usize) -> Option<i64> {
    let row = p.rows.get(&super::data::row_key())?;
    let value = row.cells.get(&(column(cell), None))?;
    let bytes: [u8; 8] = value.value.as_ref().try_into().ok()?;
    Some(i64::from_be_bytes(bytes))
}

/// Every cell's value in a partition.
fn values_in(p: &Partition) -> [Option<i64>; CELLS] {
    std::array::from_fn(|cell| value_in(p, cell))
}

/// The update that writes `value` in `cell` and nothing else.
fn setting(cell: usize, value: i64, ts: i64) -> Partition {
    let mut p = Partition::default();
    let mut row = varve_types::data::Row::default();
    row.cells.insert(
        (column(cell), None),
        Cell::live(ts, Bytes::copy_from_slice(&value.to_be_bytes())),
    );
    p.rows.insert(super::data::row_key(), row);
    p
}

/// The decision of `IF cell = expected` then `new` in that cell.
fn decider(cell: usize, expected: Option<i64>, new: i64) -> DecideFn {
    Arc::new(
        move |current: &Partition, ts: i64| -> Result<(bool, Option<Partition>), DataError> {
            match value_in(current, cell) == expected {
                true => Ok((true, Some(setting(cell, new, ts)))),
                false => Ok((false, None)),
            }
        },
    )
}

/// A compare-and-set as the bytes a forward carries: the cell (one
/// byte), `expected` (a flag byte, then 8 bytes when present) and `new`
/// (8 bytes).
pub(super) fn portable(cell: usize, expected: Option<i64>, new: i64) -> Bytes {
    let mut out = Vec::with_capacity(18);
    out.push(u8::try_from(cell).unwrap_or(u8::MAX));
    match expected {
        None => out.push(0),
        Some(e) => {
            out.push(1);
            out.extend_from_slice(&e.to_be_bytes());
        }
    }
    out.extend_from_slice(&new.to_be_bytes());
    Bytes::from(out)
}

/// A compare-and-set from [`portable`]'s bytes: the cell, `expected` and
/// `new`, or why the bytes are not one (a cell out of range, an unknown
/// flag, or a length other than the flag's).
pub(super) fn from_portable(bytes: &[u8]) -> Result<(usize, Option<i64>, i64), String> {
    let int = |b: &[u8]| -> Option<i64> { b.try_into().map(i64::from_be_bytes).ok() };
    let parsed = match bytes {
        [cell, 0, new @ ..] => int(new).map(|new| (*cell, None, new)),
        [cell, 1, rest @ ..] if rest.len() == 16 => {
            let (expected, new) = rest.split_at(8);
            int(expected)
                .zip(int(new))
                .map(|(expected, new)| (*cell, Some(expected), new))
        }
        _ => None,
    };
    let Some((cell, expected, new)) = parsed else {
        return Err(format!("a compare-and-set of {} bytes", bytes.len()));
    };
    let cell = usize::from(cell);
    if cell >= CELLS {
        return Err(format!("a compare-and-set of cell {cell}"));
    }
    Ok((cell, expected, new))
}

/// How a node rebuilds the compare-and-sets other nodes forward to it.
pub fn rebuild() -> RebuildFn {
    Arc::new(|table, bytes: &Bytes| {
        if table != TABLE {
            return Err("not the register table".into());
        }
        let (cell, expected, new) = from_portable(bytes)?;
        Ok(decider(cell, expected, new))
    })
}

/// A home that declines every forwarded statement, as one that cannot
/// rebuild it (`SimConfig::refusing_homes`).
pub fn declining() -> RebuildFn {
    Arc::new(|_table, _bytes: &Bytes| Err("declined by this node".to_string()))
}

/// Runs this node's client loops (`Shared::lwt_clients`) until the
/// workload's end (a movement run's: a moment before its final phase).
pub async fn clients(data: Rc<NodeData>, coordinator: Arc<Coordinator>, clock: Arc<dyn Clock>) {
    let mut loops = tokio::task::JoinSet::new();
    let per_node = data.shared.lwt_clients;
    for c in 0..per_node {
        let client = (data.index * per_node + c) as u64;
        let rng = SeededRng::new(data.shared.seed ^ (client << 32) ^ data.shared.starts());
        loops.spawn_local(client_loop(
            data.clone(),
            coordinator.clone(),
            clock.clone(),
            client,
            rng,
        ));
    }
    while loops.join_next().await.is_some() {}
}

async fn client_loop(
    data: Rc<NodeData>,
    coordinator: Arc<Coordinator>,
    clock: Arc<dyn Clock>,
    client: u64,
    rng: SeededRng,
) {
    let mut last_read: Option<(usize, [Option<i64>; CELLS])> = None;
    while running(&data) {
        let think = Duration::from_millis(rng.below_or_at(data.shared.lwt_think_ms_max));
        clock.sleep(think).await;
        if !coordinates(&data, &coordinator) {
            continue;
        }
        let (k, op) = match last_read.take() {
            // Compare-and-set one cell from what this client just read.
            Some((k, seen)) if rng.below_or_at(3) > 0 => {
                let cell = rng.below_or_at(CELLS as u64 - 1) as usize;
                let op = LwtOp::Cas {
                    cell,
                    expected: seen[cell],
                    new: data.shared.next_value(),
                };
                (k, op)
            }
            _ => (pick_key(&data, &rng), LwtOp::Read),
        };
        let outcome = run(&data, &coordinator, client, k, op).await;
        if let (LwtOp::Read, LwtOutcome::Read(v)) = (op, &outcome) {
            last_read = Some((k, *v));
        }
    }
}

/// The data centres of a run's nodes when there are two of them: the
/// run then has LOCAL_SERIAL registers.
pub(super) fn local_serial_dcs(dcs: &[String]) -> Option<Vec<String>> {
    dcs.iter().any(|dc| *dc != dcs[0]).then(|| dcs.to_vec())
}

/// A register for the next read: one of the shared ones, or (in a run over
/// two data centres) this node's data centre's own.
fn pick_key(data: &NodeData, rng: &SeededRng) -> usize {
    let Some(dcs) = &data.shared.local_serial_dcs else {
        return rng.below_or_at(LWT_KEYS as u64 - 1) as usize;
    };
    let k = rng.below_or_at(LWT_KEYS as u64) as usize;
    if k < LWT_KEYS {
        return k;
    }
    let dc_slot = usize::from(dcs[data.index] != dcs[0]);
    LWT_KEYS + dc_slot * LOCAL_SERIAL_KEYS_PER_DC
}

/// Whether this node's clients go on: until the workload's end, or in a
/// movement run until a moment before its final phase.
fn running(data: &NodeData) -> bool {
    match &data.shared.movement {
        Some(m) => m.lwt_running(),
        None => turmoil::sim_elapsed().unwrap_or_default() < data.shared.workload_end,
    }
}

/// Whether this node takes an operation now: once its ring holds every
/// node, or in a movement run while the metadata lists it serving.
fn coordinates(data: &NodeData, coordinator: &Coordinator) -> bool {
    match &data.shared.movement {
        Some(m) => m.serves(data.index),
        None => coordinator.node_count() >= data.shared.nodes,
    }
}

/// Runs one operation and records its call and return.
pub(super) async fn run(
    data: &NodeData,
    coordinator: &Coordinator,
    client: u64,
    k: usize,
    op: LwtOp,
) -> LwtOutcome {
    let recorder = &data.shared.recorder;
    recorder.record_now(Event::Lwt(LwtEvent::Invoke { client, key: k, op }));
    let the_key = data.shared.lwt_key(k);
    let (serial, commit) = match k < LWT_KEYS {
        true => (Consistency::Serial, Consistency::Quorum),
        false => (Consistency::LocalSerial, Consistency::LocalQuorum),
    };
    let slices = [Slice::all(&super::data::comparator())];
    let found = coordinator
        .cas(Cas {
            table: TABLE,
            key: &the_key,
            slices: &slices,
            replication: &data.shared.replication,
            serial,
            commit,
            now_seconds: super::data::NOW_SECONDS,
            reversed: false,
            row_limit: usize::MAX,
            decide: match op {
                LwtOp::Read => None,
                LwtOp::Cas {
                    cell,
                    expected,
                    new,
                } => Some(decider(cell, expected, new)),
            },
            portable: match op {
                LwtOp::Read => None,
                LwtOp::Cas {
                    cell,
                    expected,
                    new,
                } => Some(portable(cell, expected, new)),
            },
        })
        .await;
    let forwarded = found.as_ref().is_ok_and(|r| r.forwarded);
    let home_refused = found.as_ref().is_ok_and(|r| r.home_refused);
    let path = found.as_ref().map_or(CasPath::Full, |r| r.path);
    let outcome = match (op, found) {
        (LwtOp::Read, Ok(r)) => LwtOutcome::Read(values_in(&r.current)),
        (LwtOp::Cas { .. }, Ok(r)) => LwtOutcome::Cas(r.applied),
        (_, Err(DataError::Unavailable(u))) => LwtOutcome::Failed(u.to_string()),
        (_, Err(e)) => LwtOutcome::Unknown(e.to_string()),
    };
    recorder.record_now(Event::Lwt(LwtEvent::Done {
        client,
        outcome: outcome.clone(),
        forwarded,
        home_refused,
        path,
    }));
    outcome
}

/// One operation of the history: its key, client, call and return times
/// (no return: its outcome is unknown), what it asked and what it got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    pub key: usize,
    pub client: u64,
    pub call: Duration,
    pub ret: Option<Duration>,
    pub op: LwtOp,
    pub outcome: LwtOutcome,
}

/// The LWT operations of a history, each call with its return (a client
/// runs one operation at a time; one whose node stopped never returns).
pub fn recorded(history: &super::history::History) -> Vec<Recorded> {
    let mut open: std::collections::BTreeMap<u64, Recorded> = std::collections::BTreeMap::new();
    let mut done = Vec::new();
    for e in &history.entries {
        let Event::Lwt(event) = &e.event else {
            continue;
        };
        match event {
            LwtEvent::Invoke { client, key, op } => {
                let call = Recorded {
                    key: *key,
                    client: *client,
                    call: e.at,
                    ret: None,
                    op: *op,
                    outcome: LwtOutcome::Unknown("no answer".into()),
                };
                if let Some(previous) = open.insert(*client, call) {
                    done.push(previous);
                }
            }
            LwtEvent::Done {
                client, outcome, ..
            } => {
                if let Some(mut op) = open.remove(client) {
                    if !matches!(outcome, LwtOutcome::Unknown(_)) {
                        op.ret = Some(e.at);
                    }
                    op.outcome = outcome.clone();
                    done.push(op);
                }
            }
        }
    }
    done.extend(open.into_values());
    done
}

/// Whether the history's LWT operations are linearizable, cell by cell
/// (`sim/linearizability.rs`); the violation's report if not.
pub fn check_history(history: &super::history::History) -> Result<(), String> {
    let operations: Vec<_> = recorded(history).iter().flat_map(per_cell).collect();
    super::linearizability::check(&operations).map_err(|v| {
        let (k, cell) = (v.key / CELLS as u64, v.key % CELLS as u64);
        format!("register k{k}, cell {cell}, as the checker's {v}")
    })
}

/// An operation as the checker's operations on single-cell registers
/// (key `key * CELLS + cell`): a compare-and-set on its cell, a read on
/// every cell, each with that cell's value.
fn per_cell(r: &Recorded) -> Vec<super::linearizability::Operation> {
    use super::linearizability::{Op, OpResult, Operation};
    let nanos = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    let on = |cell: usize, op: Op| Operation {
        key: (r.key * CELLS + cell) as u64,
        client: r.client,
        call: nanos(r.call),
        ret: r.ret.map_or(u64::MAX, nanos),
        op,
        result: match &r.outcome {
            LwtOutcome::Read(values) => OpResult::Value(values[cell]),
            LwtOutcome::Cas(applied) => OpResult::Applied(*applied),
            LwtOutcome::Failed(_) => OpResult::Failed,
            LwtOutcome::Unknown(_) => OpResult::Unknown,
        },
    };
    match r.op {
        LwtOp::Read => (0..CELLS).map(|cell| on(cell, Op::Read)).collect(),
        LwtOp::Cas {
            cell,
            expected,
            new,
        } => vec![on(cell, Op::Cas { expected, new })],
    }
}
