//! A `Leaving` node sends every range it gives away to the node that
//! takes it over (docs/design/topology.md, section 5), table by table,
//! and reports what it moved. The caller then proposes `Leave`; on an
//! error it reports it (the node stays `Leaving`, and a retry starts over:
//! every step is safe to repeat).

use super::bootstrap::{wait_for_epoch, BootstrapReport, StreamTable};
use super::group::{stream_group, Direction};
use super::plan::{by_node, ranges_to_give, RangeSource};
use super::pull::{PullStats, Puller};
use crate::coordinator::Coordinator;
use crate::verbs::stream_file::MAX_STREAM_FILE_RANGES;

/// Sends, for each of `tables`, the ranges this node gives away in the
/// coordinator's current ring, once every UP node has applied `epoch`
/// (the entry that made this node `Leaving`).
pub async fn decommission(
    coordinator: &Coordinator,
    streamer: &Puller,
    tables: &[StreamTable],
    epoch: u64,
) -> Result<BootstrapReport, String> {
    wait_for_epoch(coordinator, streamer, epoch).await?;
    let topology = coordinator.topology();
    let mut plans: Vec<(&StreamTable, Vec<RangeSource>)> = Vec::new();
    for t in tables {
        let ranges = ranges_to_give(&topology, &t.replication, |h| coordinator.is_up(h))
            .map_err(|e| format!("{}: {e}", t.name))?;
        plans.push((t, ranges));
    }
    let total: usize = plans.iter().map(|(_, r)| r.len()).sum();
    tracing::info!(
        "decommission: {total} ranges of {} tables to send",
        plans.len()
    );
    let mut report = BootstrapReport::default();
    for (t, ranges) in plans {
        let mut moved = PullStats::default();
        let shown = streamer.begin("decommission", &t.name, ranges.len());
        for group in by_node(&ranges, MAX_STREAM_FILE_RANGES) {
            moved += stream_group(streamer, t, &group, shown.as_ref(), Direction::Push).await?;
            report.ranges += group.len();
        }
        tracing::info!(
            "decommission: {} sent: {} ranges, {} bytes ({} whole sstables)",
            t.name,
            ranges.len(),
            moved.bytes,
            moved.files
        );
        report.tables += 1;
        report.moved += moved;
    }
    Ok(report)
}
