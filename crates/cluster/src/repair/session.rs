//! One repair of one table over this node's ranges (docs/design/
//! topology.md, section 6): for each range, every replica's Merkle leaves
//! (REPAIR_VALIDATE; this node's own read directly), and for each leaf
//! where they differ, this node pulls the leaf's partitions from every
//! other replica and then pushes the merged result back to each, so that
//! all hold the same data (reconciled as reads reconcile: newest
//! timestamp wins, tombstones included).
//!
//! An incremental repair ([`RepairKind::Incremental`]) first has every
//! replica take its unrepaired data of the ranges into the session
//! (REPAIR_PREPARE), compares only that, copies each synced leaf into
//! this node's unrepaired data too ([`super::incremental::copy_local`]),
//! and ends with REPAIR_FINALIZE on every replica: repaired at the
//! session's start if every range was repaired, unrepaired again if not.

use super::incremental::{self, encode_finalize, encode_prepare, FinalizeRequest, PrepareRequest};
use super::merkle::{leaf_range, mismatched, Leaves, MERKLE_DEPTH};
use super::validate::{decode_leaves, encode_request, validate_here, ValidateRequest, FULL_REPAIR};
use crate::coordinator::{Coordinator, Host};
use crate::net::Verb;
use crate::streaming::{PullStats, Puller, RangeSource, StreamTable};

/// How long one replica may take to validate one range.
pub const VALIDATE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);

/// Replicas of some ranges, each with the ranges it holds among them.
type ReplicaRanges = Vec<(Host, Vec<(i64, i64)>)>;

/// How a repair compares replicas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RepairKind {
    /// Everything each replica holds (`nodetool repair -full`).
    Full,
    /// Only what no repair has covered yet (the default), in session
    /// `session`, which began at `started_at_ms`.
    Incremental { session: u128, started_at_ms: i64 },
}

impl RepairKind {
    fn session(self) -> u128 {
        match self {
            RepairKind::Full => FULL_REPAIR,
            RepairKind::Incremental { session, .. } => session,
        }
    }
}

/// What a table's repair did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TableRepair {
    pub ranges: usize,
    /// Ranges where some replica differed.
    pub ranges_out_of_sync: usize,
    pub leaves_out_of_sync: usize,
    pub moved: PullStats,
    /// Incremental: the sstables marked repaired, over every replica.
    pub sstables_repaired: usize,
}

/// This node's ranges of `table` (`(start, end]`), or only those it is
/// the first replica of (`primary`, as `nodetool repair -pr`).
pub fn local_ranges(
    coordinator: &Coordinator,
    table: &StreamTable,
    primary: bool,
) -> Vec<(i64, i64)> {
    let topology = coordinator.topology();
    topology
        .movements(&table.replication)
        .into_iter()
        .filter(|m| match primary {
            true => m
                .natural
                .first()
                .is_some_and(|&n| topology.host(n).is_local),
            false => m.natural.iter().any(|&n| topology.host(n).is_local),
        })
        .map(|m| (m.start, m.end))
        .collect()
}

/// Repairs `ranges` of `table` among their replicas, every one of which
/// must be UP.
pub async fn repair_table(
    coordinator: &Coordinator,
    puller: &Puller,
    table: &StreamTable,
    ranges: &[(i64, i64)],
    kind: RepairKind,
) -> Result<TableRepair, String> {
    let topology = coordinator.topology();
    if topology.is_moving() {
        return Err("a node is joining or leaving: repair waits until it is done".into());
    }
    let mut report = TableRepair::default();
    let RepairKind::Incremental {
        session,
        started_at_ms,
    } = kind
    else {
        compare_ranges(coordinator, puller, table, ranges, kind, &mut report).await?;
        return Ok(report);
    };
    let replicas = replicas_of(coordinator, table, ranges)?;
    let mut outcome = prepare_all(puller, table, session, &replicas).await;
    if outcome.is_ok() {
        outcome = compare_ranges(coordinator, puller, table, ranges, kind, &mut report).await;
    }
    let finalize = FinalizeRequest {
        session,
        table: table.table,
        repaired_at_ms: outcome.is_ok().then_some(started_at_ms),
    };
    for (host, _) in &replicas {
        let held = incremental::ask(
            puller,
            host,
            Verb::REPAIR_FINALIZE,
            encode_finalize(&finalize),
        )
        .await
        .map_err(|e| format!("{}: finalizing: {e}", table.name));
        match (held, &outcome) {
            (Ok(held), _) => report.sstables_repaired += held,
            // A replica that missed a successful session's end keeps its
            // sstables pending until it forgets the session: unrepaired,
            // compared again by the next repair.
            (Err(e), Ok(())) => outcome = Err(e),
            (Err(_), Err(_)) => {}
        }
    }
    if finalize.repaired_at_ms.is_none() {
        report.sstables_repaired = 0;
    }
    outcome.map(|()| report)
}

/// Compares (and syncs) each of `ranges`, adding to `report`.
async fn compare_ranges(
    coordinator: &Coordinator,
    puller: &Puller,
    table: &StreamTable,
    ranges: &[(i64, i64)],
    kind: RepairKind,
    report: &mut TableRepair,
) -> Result<(), String> {
    let shown = puller.begin("repair", &table.name, ranges.len());
    for &(start, end) in ranges {
        let before = report.moved.bytes;
        let done = repair_range(coordinator, puller, table, (start, end), kind, report).await;
        if let Some(s) = &shown {
            s.range_done(report.moved.bytes - before);
        }
        done?;
    }
    if let Some(streams) = &puller.streams {
        streams
            .ranges_out_of_sync
            .add(report.ranges_out_of_sync as u64);
        streams.repair_bytes.add(report.moved.bytes);
    }
    Ok(())
}

/// Every replica of `ranges` with the ranges it holds among them; an
/// error when one is DOWN.
fn replicas_of(
    coordinator: &Coordinator,
    table: &StreamTable,
    ranges: &[(i64, i64)],
) -> Result<ReplicaRanges, String> {
    let topology = coordinator.topology();
    let mut replicas: ReplicaRanges = Vec::new();
    for &(start, end) in ranges {
        for n in topology.replicas(end, &table.replication) {
            let host = topology.host(n).clone();
            if !coordinator.is_up(&host) {
                return Err(format!(
                    "{}: range ({start}, {end}] has a replica that is DOWN ({}); repair needs them all",
                    table.name, host.address
                ));
            }
            match replicas.iter_mut().find(|(h, _)| h.host_id == host.host_id) {
                Some((_, held)) => held.push((start, end)),
                None => replicas.push((host, vec![(start, end)])),
            }
        }
    }
    Ok(replicas)
}

/// Has each replica take its unrepaired data of its ranges into
/// `session`.
async fn prepare_all(
    puller: &Puller,
    table: &StreamTable,
    session: u128,
    replicas: &ReplicaRanges,
) -> Result<(), String> {
    for (host, ranges) in replicas {
        let prepare = PrepareRequest {
            session,
            table: table.table,
            ranges: ranges.clone(),
        };
        incremental::ask(puller, host, Verb::REPAIR_PREPARE, encode_prepare(&prepare))
            .await
            .map_err(|e| format!("{}: preparing: {e}", table.name))?;
    }
    Ok(())
}

/// Repairs one range of `table`, adding to `report`.
async fn repair_range(
    coordinator: &Coordinator,
    puller: &Puller,
    table: &StreamTable,
    (start, end): (i64, i64),
    kind: RepairKind,
    report: &mut TableRepair,
) -> Result<(), String> {
    let topology = coordinator.topology();
    let replicas: Vec<Host> = topology
        .replicas(end, &table.replication)
        .into_iter()
        .map(|n| topology.host(n).clone())
        .collect();
    if let Some(down) = replicas.iter().find(|h| !coordinator.is_up(h)) {
        return Err(format!(
            "{}: range ({start}, {end}] has a replica that is DOWN ({}); repair needs them all",
            table.name, down.address
        ));
    }
    let req = ValidateRequest {
        table: table.table,
        start,
        end,
        depth: MERKLE_DEPTH,
        session: kind.session(),
    };
    // Every replica validates at once, as Cassandra's do.
    let asked = replicas.iter().map(|host| leaves_of(puller, host, &req));
    let all = futures::future::join_all(asked)
        .await
        .into_iter()
        .collect::<Result<Vec<Leaves>, String>>()
        .map_err(|e| format!("{}: {e}", table.name))?;
    let leaves = mismatched(&all);
    report.ranges += 1;
    if leaves.is_empty() {
        return Ok(());
    }
    report.ranges_out_of_sync += 1;
    report.leaves_out_of_sync += leaves.len();
    let others: Vec<&Host> = replicas.iter().filter(|h| !h.is_local).collect();
    for leaf in leaves {
        if let Some(sub) = leaf_range(leaf, start, end, MERKLE_DEPTH) {
            report.moved += sync_leaf(puller, table.table, sub, &others, kind).await?;
        }
    }
    Ok(())
}

/// Pulls leaf `(lo, hi]` from each of `others`, then pushes the merged
/// leaf back to each (incremental: after copying it into this node's
/// unrepaired data too). In pages only: a leaf is a small part of a range,
/// which an sstable rarely lies inside, and whole-file streaming would
/// flush the memtables of both ends for every leaf.
async fn sync_leaf(
    puller: &Puller,
    table: u128,
    (lo, hi): (i64, i64),
    others: &[&Host],
    kind: RepairKind,
) -> Result<PullStats, String> {
    let sub = |h: &Host| RangeSource {
        start: lo,
        end: hi,
        source: h.host_id,
        address: h.address,
    };
    let mut moved = PullStats::default();
    for h in others {
        moved += puller.pull_pages(table, &sub(h), &[]).await?;
    }
    if kind != RepairKind::Full {
        incremental::copy_local(puller, table, (lo, hi)).await?;
    }
    for h in others {
        moved += puller.push_pages(table, &sub(h), &[]).await?;
    }
    Ok(moved)
}

/// `host`'s leaves of `req`'s range.
async fn leaves_of(puller: &Puller, host: &Host, req: &ValidateRequest) -> Result<Leaves, String> {
    if host.is_local {
        return validate_here(puller.engine(), puller.paxos_replica(), *req)
            .await?
            .map_err(|e| format!("validating here: {e}"));
    }
    let answer = puller
        .messaging
        .request(
            host.address,
            Verb::REPAIR_VALIDATE,
            encode_request(req),
            VALIDATE_TIMEOUT,
        )
        .map_err(|e| e.to_string())?
        .await
        .map_err(|e| format!("{} did not validate: {e}", host.address))?;
    if answer.from_host != host.host_id {
        return Err(format!("{} answered as {}", host.address, answer.from_host));
    }
    decode_leaves(&answer.payload, req.depth).map_err(|e| e.to_string())
}
