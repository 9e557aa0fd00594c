//! The mover's step of a movement run (`sim/movement.rs`), as the server
//! runs it, through the production streaming code:
//!
//! - a joiner or a replacement (`crates/varve/src/bootstrap.rs`): once it
//!   applied the epoch that lists it `Joining`, `streaming::bootstrap`
//!   (with `replacing`: the `Leaving` node with its tokens), then the
//!   metadata lists it `Normal`;
//! - a leaver (`decommission.rs`): it proposes its vote away and itself
//!   `Leaving`, then once it applied that, `streaming::decommission`, then
//!   `Leave`, and its process stops [`STOP_DELAY`] later;
//! - a removal's runner (`removenode.rs`): once it sees the dead node
//!   DOWN (the server refuses to remove a live one), it proposes the dead
//!   node's vote away and it `Leaving`, then once it applied that,
//!   `streaming::removenode::restore`, then `Leave`.
//!
//! An attempt that fails is made again after [`RETRY`], and a restarted
//! mover starts over (each step is safe to repeat), as an operator runs
//! the command again. Every node answers STREAM_REQUEST, as the server
//! does ([`serve_fetches`]).

use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use super::data::{NodeData, TABLE};
use super::lwt::PAXOS_TABLE;
use super::movement::{elapsed, Movement, MovementEvent, MovementKind, POLL};
use crate::coordinator::Coordinator;
use crate::env::Clock;
use crate::metadata::NodeState;
use crate::net::{HostId, Messaging};
use crate::streaming::{self, BootstrapReport, Puller, StreamTable};

/// The pause between two attempts (the server's `BOOTSTRAP_RETRY`).
pub const RETRY: Duration = Duration::from_secs(5);

/// How long a decommissioned node serves once it left (the server's).
pub const STOP_DELAY: Duration = Duration::from_millis(300);

/// What moves with a node's ranges (the server's `tables_to_move`): the
/// table, and with LWT `system.paxos` under the same replication.
pub fn tables(m: &Movement) -> Vec<StreamTable> {
    let mut tables = vec![StreamTable {
        table: TABLE,
        name: "ks.t".to_string(),
        replication: m.replication.clone(),
    }];
    if m.lwt {
        tables.push(StreamTable {
            table: PAXOS_TABLE,
            name: "system.paxos".to_string(),
            replication: m.replication.clone(),
        });
    }
    tables
}

/// A puller of this node at the run's throughput, merging streamed Paxos
/// state into its acceptor (as the server's `Decommission::puller`).
fn puller(m: &Movement, data: &NodeData, messaging: Messaging, clock: Arc<dyn Clock>) -> Puller {
    let puller = Puller::new(data.engine.clone(), messaging, clock, m.throughput);
    match &data.paxos {
        Some(paxos) => puller.with_paxos(paxos.clone()),
        None => puller,
    }
}

/// Answers STREAM_REQUEST on this start's messaging (a removal's gainers
/// pull what they are asked to).
pub(super) fn serve_fetches(
    m: &Movement,
    data: &NodeData,
    messaging: &Messaging,
    clock: Arc<dyn Clock>,
) {
    let puller = puller(m, data, messaging.clone(), clock);
    streaming::removenode::serve_fetches(messaging, Arc::new(puller));
}

/// The mover's step on this start of it, until the movement is done; a
/// leaver's process then stops.
pub(super) async fn run(m: Rc<Movement>, data: Rc<NodeData>, coordinator: Arc<Coordinator>) {
    let (_, _, clock) = coordinator.parts();
    if begin(&m, &coordinator, &*clock).await {
        while m.applied(m.roles.mover) < m.started() {
            clock.sleep(POLL).await;
        }
        attempts(&m, &data, &coordinator, &*clock).await;
    }
    let leaver = m.roles.mover;
    if m.roles.kind == MovementKind::Decommission && !m.stops().contains(&leaver) {
        clock.sleep(STOP_DELAY).await;
        m.record(MovementEvent::Left { node: leaver });
        m.stop_for_good(leaver);
    }
}

/// Attempts until one succeeds, which commits the last epoch.
async fn attempts(m: &Movement, data: &NodeData, coordinator: &Coordinator, clock: &dyn Clock) {
    while m.finished_at().is_none() {
        m.record(MovementEvent::Streaming);
        m.began_streaming();
        match attempt(m, data, coordinator).await {
            Ok(report) => {
                m.record(MovementEvent::Streamed {
                    ranges: report.ranges,
                    partitions: report.moved.partitions,
                    bytes: report.moved.bytes,
                    files: report.moved.files,
                });
                m.commit(m.last());
            }
            Err(why) => {
                m.record(MovementEvent::Failed(why));
                clock.sleep(RETRY).await;
            }
        }
    }
}

/// Waits for the movement to start: a join's and a replacement's entry
/// is committed at its time; a leaver proposes its own at that time, and
/// a removal's runner once it also sees the dead node DOWN. Whether the
/// movement is not done yet.
async fn begin(m: &Movement, coordinator: &Coordinator, clock: &dyn Clock) -> bool {
    loop {
        if m.finished_at().is_some() {
            return false;
        }
        if m.is_started() {
            return true;
        }
        let due = elapsed() >= m.starts_at;
        match m.roles.kind {
            MovementKind::Bootstrap | MovementKind::Replace if due => m.commit(m.started()),
            MovementKind::Decommission if due => m.commit(m.started()),
            MovementKind::Removenode if due && !removed_is_up(m, coordinator) => {
                m.commit(m.started())
            }
            _ => clock.sleep(POLL).await,
        }
    }
}

/// Whether this node sees the node to remove UP.
fn removed_is_up(m: &Movement, coordinator: &Coordinator) -> bool {
    let Some(gone) = m.roles.departing else {
        return false;
    };
    let topology = coordinator.topology();
    let host = topology
        .hosts()
        .iter()
        .find(|h| h.host_id == m.host_ids[gone]);
    host.is_some_and(|h| coordinator.is_up(h))
}

/// One attempt of the mover's streaming, through the production code.
async fn attempt(
    m: &Movement,
    data: &NodeData,
    coordinator: &Coordinator,
) -> Result<BootstrapReport, String> {
    let (messaging, _, clock) = coordinator.parts();
    let puller = puller(m, data, messaging, clock);
    let tables = tables(m);
    let epoch = m.metadata(m.started()).epoch;
    match m.roles.kind {
        MovementKind::Bootstrap | MovementKind::Replace => {
            let replacing = replacing(m, m.host_ids[m.roles.mover]);
            streaming::bootstrap(coordinator, &puller, &tables, epoch, replacing).await
        }
        MovementKind::Decommission => {
            streaming::decommission(coordinator, &puller, &tables, epoch).await
        }
        MovementKind::Removenode => {
            let Some(gone) = m.roles.departing else {
                return Err("a removal without a node to remove".into());
            };
            let removed = m.host_ids[gone];
            streaming::removenode::restore(coordinator, &puller, &tables, removed, epoch).await
        }
    }
}

/// The node `own` replaces, as the server finds it: the `Leaving` node
/// listed with its tokens at the epoch that started the movement.
fn replacing(m: &Movement, own: HostId) -> Option<HostId> {
    let listed = &m.metadata(m.started()).nodes;
    let tokens = &listed.get(&own)?.tokens;
    listed
        .values()
        .find(|n| n.host_id != own && &n.tokens == tokens && n.state == NodeState::Leaving)
        .map(|n| n.host_id)
}
