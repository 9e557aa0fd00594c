//! The final phase of a movement run (`sim/movement.rs`), once every
//! node applied the last epoch and the quiet phase settled: each node of
//! the final ring records what its own engine holds of each key
//! ([`MovementEvent::Holds`]); in a run with repair, each repairs its
//! primary ranges (`repair::repair_table`, as `nodetool repair -pr`) and,
//! once all have, records its engine again; then every node reads every
//! written key at QUORUM (without read repair, so the replicas stay as
//! they were) and at ALL, and each LWT register at SERIAL.

use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinSet;
use varve_types::data::{Partition, Slice};

use super::bootstrap_workload::BOOTSTRAP_KEYS;
use super::data::{self, key, NodeData, TABLE};
use super::lwt::{self, LwtOp, LWT_KEYS};
use super::movement::{elapsed, Movement, MovementEvent, POLL};
use super::movement_steps::tables;
use super::workload::OpKind;
use crate::coordinator::Coordinator;
use crate::repair::{local_ranges, repair_table, RepairKind};
use crate::streaming::Puller;

/// How many times a node runs its repair, and the pause after one that
/// failed (a replica not UP yet: connections a partition left stalled
/// recover some seconds into the quiet phase).
const REPAIR_ATTEMPTS: u32 = 8;
const REPAIR_RETRY: Duration = Duration::from_secs(2);

/// The LWT client id of node `n`'s final SERIAL reads.
pub const FINAL_SERIAL_CLIENT: u64 = 10_000;

/// How long after the final reads' start the SERIAL reads begin, and
/// the gap between two of one node.
const SERIAL_READS_AFTER: Duration = Duration::from_millis(250);
const SERIAL_READ_GAP: Duration = Duration::from_millis(100);

/// The keys whose engines are recorded: the written ones, then (with
/// LWT) the registers.
pub fn recorded_keys(m: &Movement) -> usize {
    BOOTSTRAP_KEYS + if m.lwt { LWT_KEYS } else { 0 }
}

/// Waits for the final phase, records what this node's engine holds,
/// repairs (in a run with repair), then runs this node's final reads.
pub(super) async fn final_phase(
    m: Rc<Movement>,
    data: Rc<NodeData>,
    coordinator: Arc<Coordinator>,
) {
    let (_, engine, clock) = coordinator.parts();
    let start = loop {
        match m.final_start() {
            Some(start) => break start,
            None => clock.sleep(POLL).await,
        }
    };
    let Some(wait) = start.checked_sub(elapsed()) else {
        // This start of the node came after the final phase began.
        return;
    };
    clock.sleep(wait).await;
    if !m.final_recorded() {
        m.record(MovementEvent::FinalPhase);
    }
    if !m.final_nodes().contains(&data.index) {
        return;
    }
    let keys = recorded_keys(&m);
    m.record(MovementEvent::Holds {
        node: data.index,
        repaired: false,
        newest: (0..keys).map(|k| newest_in(&engine, k)).collect(),
    });
    let reads_at = match m.repair {
        true => {
            repair(&m, &data, &coordinator).await;
            m.record(MovementEvent::Holds {
                node: data.index,
                repaired: true,
                newest: (0..keys).map(|k| newest_in(&engine, k)).collect(),
            });
            *m.reads_at.get().get_or_insert(elapsed())
        }
        false => start,
    };
    m.reads_at.set(Some(reads_at));
    let mut running = JoinSet::new();
    if m.lwt {
        running.spawn_local(serial_reads(data.clone(), coordinator.clone(), reads_at));
    }
    let ops = &data.shared.workload.ops;
    for id in (0..ops.len())
        .filter(|&id| ops[id].node == data.index && matches!(ops[id].kind, OpKind::Read { .. }))
    {
        clock
            .sleep((reads_at + ops[id].at).saturating_sub(elapsed()))
            .await;
        running.spawn_local(data::run_op(data.clone(), coordinator.clone(), id));
    }
    while running.join_next().await.is_some() {}
    m.finished_reading();
}

/// Node `node`'s repair: incremental on even nodes (a session of its
/// own, which other nodes' sessions overlap), full on odd ones.
fn repair_kind(node: usize, wall_micros: i64) -> RepairKind {
    match node % 2 {
        0 => RepairKind::Incremental {
            session: node as u128 + 1,
            started_at_ms: wall_micros / 1000,
        },
        _ => RepairKind::Full,
    }
}

/// Repairs this node's primary ranges of the table (again after a pause
/// when a replica is not UP yet, as an operator runs it again), then
/// waits until every node of the final ring has repaired.
async fn repair(m: &Movement, data: &NodeData, coordinator: &Coordinator) {
    let (messaging, engine, clock) = coordinator.parts();
    let puller = Puller::new(engine, messaging, clock.clone(), 0);
    let table = &tables(m)[0];
    let node = data.index;
    for _ in 0..REPAIR_ATTEMPTS {
        let ranges = local_ranges(coordinator, table, true);
        let kind = repair_kind(node, clock.wall_micros());
        match repair_table(coordinator, &puller, table, &ranges, kind).await {
            Ok(r) => {
                m.record(MovementEvent::Repaired {
                    node,
                    ranges: r.ranges,
                    out_of_sync: r.ranges_out_of_sync,
                });
                break;
            }
            Err(why) => {
                m.record(MovementEvent::RepairFailed { node, why });
                clock.sleep(REPAIR_RETRY).await;
            }
        }
    }
    m.repairs_done.set(m.repairs_done.get() + 1);
    while m.repairs_done.get() < m.final_nodes().len() {
        clock.sleep(POLL).await;
    }
}

/// This node's SERIAL read of each register, one after the other.
async fn serial_reads(data: Rc<NodeData>, coordinator: Arc<Coordinator>, reads_at: Duration) {
    let (_, _, clock) = coordinator.parts();
    let client = FINAL_SERIAL_CLIENT + data.index as u64;
    clock
        .sleep((reads_at + SERIAL_READS_AFTER).saturating_sub(elapsed()))
        .await;
    for k in 0..LWT_KEYS {
        lwt::run(&data, &coordinator, client, k, LwtOp::Read).await;
        clock.sleep(SERIAL_READ_GAP).await;
    }
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
