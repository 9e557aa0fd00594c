//! A `Leaving` node sends every range it gives away to the node that
//! takes it over (docs/design/topology.md, section 5), table by table,
//! and reports what it moved. The caller then proposes `Leave`; on an
//! error it reports it (the node stays `Leaving`, and a retry starts over:
//! every step is safe to repeat).

use super::bootstrap::{wait_for_epoch, BootstrapReport, StreamTable};
use super::plan::{ranges_to_give, RangeSource};
use super::pull::{PullStats, Puller};
use crate::coordinator::Coordinator;

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
        for range in &ranges {
            let one = streamer
                .push(t.table, range)
                .await
                .map_err(|e| format!("{}: {e}", t.name))?;
            if let Some(s) = &shown {
                s.range_done(one.bytes);
            }
            moved += one;
            report.ranges += 1;
        }
        tracing::info!(
            "decommission: {} sent: {} ranges, {} bytes",
            t.name,
            ranges.len(),
            moved.bytes
        );
        report.tables += 1;
        report.moved += moved;
    }
    Ok(report)
}
