//! Short read protection (docs/design/cluster.md, section 8.3).
//!
//! A replica asked for `row_limit` live rows covers the slices only up to
//! the last of them and says it stopped there. Merged with other replicas'
//! answers, its rows can be shadowed by their deletions, and their rows
//! past its stopping point can be shadowed by deletions it did not send.
//! So the merge is trusted only up to the *cut*: among the replicas that
//! stopped, the last row of the one that stopped nearest the start, in the
//! read's direction. When the merge up to the cut holds fewer live rows
//! than the limit, the coordinator reads on past the cut, at the same
//! level, for the rows still missing, as often as it takes (each read
//! covers at least one row more, so it ends). Cassandra does the same per
//! replica; reading on at the level keeps this simpler and as correct.

use varve_storage::engine_read::last_row;
use varve_types::data::{ClusteringKey, Partition, Slice};
use varve_types::data_error::DataError;

use super::read::{Read, ReadResult, Version};
use super::read_repair::Reconciled;
use super::service::Coordinator;

impl Coordinator {
    /// The answer of a reconciled read: resolved up to the cut, and read
    /// on past it while rows are missing.
    pub(super) async fn finish(
        &self,
        r: &Read<'_>,
        reconciled: Reconciled,
    ) -> Result<ReadResult, DataError> {
        let Reconciled {
            merged,
            cut,
            sstables,
        } = reconciled;
        let Some(cut) = cut else {
            return Ok(resolve_over(merged, r, r.slices, sstables));
        };
        let covered = Slice::cut_at(r.slices, &cut, r.reversed);
        let mut first = resolve_over(merged, r, &covered, sstables);
        let got = first.partition.as_ref().map_or(0, |p| p.rows.len());
        let rest = Slice::past(r.slices, &cut, r.reversed);
        if got >= r.row_limit {
            // The replicas stopped: there may be more.
            first.complete = false;
            return Ok(first);
        }
        if rest.is_empty() {
            return Ok(first);
        }
        self.metrics.short_read_rounds.inc();
        let next = Read {
            slices: &rest,
            row_limit: r.row_limit - got,
            ..*r
        };
        let more = Box::pin(self.read(next)).await?;
        Ok(join(first, more))
    }
}

/// The answer of a merge trusted up to `cut`, without reading on: marked
/// incomplete when slices remain past the cut, so that its reader asks
/// for the rest (a range scan's partitions, which query reads on).
pub(super) fn resolve_at_cut(
    merged: Option<Partition>,
    cut: Option<ClusteringKey>,
    r: &Read<'_>,
) -> ReadResult {
    let Some(cut) = cut else {
        return resolve_over(merged, r, r.slices, 0);
    };
    let covered = Slice::cut_at(r.slices, &cut, r.reversed);
    let mut found = resolve_over(merged, r, &covered, 0);
    if !Slice::past(r.slices, &cut, r.reversed).is_empty() {
        found.complete = false;
    }
    found
}

/// Where the merge of `versions` stops being trustworthy: among those that
/// stopped at the row limit, the last live row of the one that stopped
/// nearest the start in the read's direction; `None` when none stopped.
pub(super) fn bound(versions: &[Version], r: &Read<'_>) -> Option<ClusteringKey> {
    versions
        .iter()
        .filter(|v| v.stopped)
        .filter_map(|v| {
            let p = v.partition.as_ref()?;
            let (live, _, _) = p.resolve_slices(r.slices, r.reversed, r.now_seconds, r.row_limit);
            last_row(&live, r.reversed)
        })
        .reduce(|a, b| match r.reversed {
            false => a.min(b),
            true => a.max(b),
        })
}

/// The live rows of `merged` over `slices` with the read's limit.
fn resolve_over(
    merged: Option<Partition>,
    r: &Read<'_>,
    slices: &[Slice],
    sstables: u32,
) -> ReadResult {
    match merged {
        None => ReadResult {
            partition: None,
            tombstones: 0,
            complete: true,
            sstables,
        },
        Some(p) => {
            let (partition, stats, complete) =
                p.resolve_slices(slices, r.reversed, r.now_seconds, r.row_limit);
            ReadResult {
                partition: Some(partition),
                tombstones: stats.tombstones,
                complete,
                sstables,
            }
        }
    }
}

/// Two answers over consecutive parts of the slices, as one.
fn join(first: ReadResult, more: ReadResult) -> ReadResult {
    let partition = match (first.partition, more.partition) {
        (Some(mut a), Some(b)) => {
            a.merge(b);
            Some(a)
        }
        (a, b) => a.or(b),
    };
    ReadResult {
        partition,
        tombstones: first.tombstones + more.tombstones,
        complete: more.complete,
        sstables: first.sstables + more.sstables,
    }
}
