//! One repair of one table over this node's ranges (docs/design/
//! topology.md, section 6): for each range, every replica's Merkle leaves
//! (REPAIR_VALIDATE; this node's own read directly), and for each leaf
//! where they differ, this node pulls the leaf's partitions from every
//! other replica and then pushes the merged result back to each, so that
//! all hold the same data (reconciled as reads reconcile: newest
//! timestamp wins, tombstones included).

use super::merkle::{leaf_range, mismatched, Leaves, MERKLE_DEPTH};
use super::validate::{decode_leaves, encode_request, validate_here, ValidateRequest};
use crate::coordinator::{Coordinator, Host};
use crate::net::Verb;
use crate::streaming::{PullStats, Puller, RangeSource, StreamTable};

/// How long one replica may take to validate one range.
pub const VALIDATE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);

/// What a table's repair did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TableRepair {
    pub ranges: usize,
    /// Ranges where some replica differed.
    pub ranges_out_of_sync: usize,
    pub leaves_out_of_sync: usize,
    pub moved: PullStats,
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
) -> Result<TableRepair, String> {
    let topology = coordinator.topology();
    if topology.is_moving() {
        return Err("a node is joining or leaving: repair waits until it is done".into());
    }
    let mut report = TableRepair::default();
    let shown = puller.begin("repair", &table.name, ranges.len());
    for &(start, end) in ranges {
        let before = report.moved.bytes;
        let done = repair_range(coordinator, puller, table, (start, end), &mut report).await;
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
    Ok(report)
}

/// Repairs one range of `table`, adding to `report`.
async fn repair_range(
    coordinator: &Coordinator,
    puller: &Puller,
    table: &StreamTable,
    (start, end): (i64, i64),
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
    };
    let mut all = Vec::with_capacity(replicas.len());
    for host in &replicas {
        let leaves = leaves_of(puller, host, &req).await;
        all.push(leaves.map_err(|e| format!("{}: {e}", table.name))?);
    }
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
            report.moved += sync_leaf(puller, table.table, sub, &others).await?;
        }
    }
    Ok(())
}

/// Pulls leaf `(lo, hi]` from each of `others`, then pushes the merged
/// leaf back to each.
async fn sync_leaf(
    puller: &Puller,
    table: u128,
    (lo, hi): (i64, i64),
    others: &[&Host],
) -> Result<PullStats, String> {
    let sub = |h: &Host| RangeSource {
        start: lo,
        end: hi,
        source: h.host_id,
        address: h.address,
    };
    let mut moved = PullStats::default();
    for h in others {
        moved += puller.pull(table, &sub(h)).await?;
    }
    for h in others {
        moved += puller.push(table, &sub(h)).await?;
    }
    Ok(moved)
}

/// `host`'s leaves of `req`'s range.
async fn leaves_of(puller: &Puller, host: &Host, req: &ValidateRequest) -> Result<Leaves, String> {
    if host.is_local {
        return validate_here(puller.engine(), *req)
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
