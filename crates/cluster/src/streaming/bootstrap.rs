//! A joining node fetches every range it gains, table by table
//! (docs/design/topology.md, section 3), and reports what it moved. The
//! caller proposes the node `Normal` once this returns `Ok`; on an error
//! it tries again later (every step is safe to repeat).

use std::collections::BTreeSet;
use std::time::Duration;

use bytes::Bytes;

use super::group::{stream_group, Direction};
use super::plan::{by_node, paxos_sources, ranges_to_fetch, RangeSource};
use super::pull::{PullStats, Puller};
use crate::coordinator::{Coordinator, Replication};
use crate::net::{HostId, Verb};
use crate::verbs::stream_file::MAX_STREAM_FILE_RANGES;

/// How long the node waits for every UP node to apply its `Joining`
/// entry before it streams (the attempt fails after that, and is made
/// again).
pub const RING_AGREEMENT_TIMEOUT: Duration = Duration::from_secs(30);

/// How long one node has to answer an ECHO.
const ECHO_TIMEOUT: Duration = Duration::from_secs(1);

/// A table to stream, with its keyspace's replication.
#[derive(Debug, Clone)]
pub struct StreamTable {
    pub table: u128,
    /// `keyspace.table`, for the log.
    pub name: String,
    pub replication: Replication,
}

/// What a bootstrap moved.
#[derive(Debug, Clone, Default)]
pub struct BootstrapReport {
    pub tables: usize,
    pub ranges: usize,
    pub moved: PullStats,
}

/// Fetches, for each of `tables`, the ranges this node gains in the
/// coordinator's current ring; `replacing` names the dead node this one
/// replaces, whose ranges come from the surviving replicas.
pub async fn bootstrap(
    coordinator: &Coordinator,
    puller: &Puller,
    tables: &[StreamTable],
    epoch: u64,
    replacing: Option<HostId>,
) -> Result<BootstrapReport, String> {
    wait_for_epoch(coordinator, puller, epoch).await?;
    let topology = coordinator.topology();
    let mut report = BootstrapReport::default();
    let mut plans: Vec<(&StreamTable, Vec<RangeSource>)> = Vec::new();
    let is_up = |h: &crate::coordinator::Host| coordinator.is_up(h);
    for t in tables {
        let ranges = match Some(t.table) == puller.paxos_table() {
            true => paxos_sources(&topology, &t.replication, replacing, is_up),
            false => ranges_to_fetch(&topology, &t.replication, replacing, is_up),
        }
        .map_err(|e| format!("{}: {e}", t.name))?;
        plans.push((t, ranges));
    }
    let total: usize = plans.iter().map(|(_, r)| r.len()).sum();
    tracing::info!(
        "bootstrap: {total} ranges of {} tables to stream",
        plans.len()
    );
    let mut seen: BTreeSet<(u128, i64, i64, HostId)> = BTreeSet::new();
    for (t, ranges) in plans {
        let began = puller.clock.now();
        let shown = puller.begin("bootstrap", &t.name, ranges.len());
        let fresh: Vec<RangeSource> = ranges
            .iter()
            .filter(|r| seen.insert((t.table, r.start, r.end, r.source)))
            .cloned()
            .collect();
        // Every source at once: each sends at its own outbound limit
        // (`stream_throughput_outbound`), as Cassandra's do.
        let groups = by_node(&fresh, MAX_STREAM_FILE_RANGES);
        let pulls = groups
            .iter()
            .map(|group| stream_group(puller, t, group, shown.as_ref(), Direction::Pull));
        let mut moved = PullStats::default();
        for one in futures::future::join_all(pulls).await {
            moved += one?;
        }
        report.ranges += groups.iter().map(Vec::len).sum::<usize>();
        tracing::info!(
            "bootstrap: {} streamed: {} ranges, {} partitions, {} bytes ({} whole sstables) \
             in {:.1} s",
            t.name,
            ranges.len(),
            moved.partitions,
            moved.bytes,
            moved.files,
            (puller.clock.now() - began).as_secs_f64()
        );
        report.tables += 1;
        report.moved += moved;
    }
    Ok(report)
}

/// Waits until every UP node of the ring has applied `epoch` (the entry
/// that made this node `Joining`), so that each coordinator sends this
/// node the writes of its ranges before any range is streamed: a write
/// that reached neither the stream nor this node would be lost here. The
/// epoch comes on the header of each node's ECHO answer.
pub(super) async fn wait_for_epoch(
    coordinator: &Coordinator,
    puller: &Puller,
    epoch: u64,
) -> Result<(), String> {
    let (messaging, clock) = (&puller.messaging, &puller.clock);
    let began = clock.now();
    loop {
        let mut behind = Vec::new();
        let topology = coordinator.topology();
        // Every listed node is asked, not only those gossip says are UP:
        // a node just restarted sees none UP yet. A record at this node's
        // own address is the dead node it replaces there: this node would
        // answer for it, and gossip may call it UP.
        let own = topology
            .hosts()
            .iter()
            .find(|h| h.is_local)
            .map(|h| h.address);
        let others = topology
            .hosts()
            .iter()
            .filter(|h| !h.is_local && Some(h.address) != own);
        for host in others {
            let answer =
                match messaging.request(host.address, Verb::ECHO, Bytes::new(), ECHO_TIMEOUT) {
                    Ok(pending) => pending.await.ok(),
                    Err(_) => None,
                };
            let lagging = match answer {
                Some(a) => a.header.epoch < epoch,
                // Silent and DOWN: it coordinates nothing now.
                None => coordinator.is_up(host),
            };
            if lagging {
                behind.push(host.address.to_string());
            }
        }
        if behind.is_empty() {
            // A write a coordinator planned at the old epoch may still be
            // on its way to the node that loses a range: it is over
            // (acknowledged or timed out) one write timeout from now.
            clock.sleep(coordinator.write_timeout()).await;
            return Ok(());
        }
        if clock.now() - began > RING_AGREEMENT_TIMEOUT {
            return Err(format!(
                "{} did not apply epoch {epoch} (this node joining) within {} s",
                behind.join(", "),
                RING_AGREEMENT_TIMEOUT.as_secs()
            ));
        }
        clock.sleep(Duration::from_millis(100)).await;
    }
}
