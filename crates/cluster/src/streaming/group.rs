//! Streaming a group of ranges with one node at the other end (a
//! bootstrap's pulls, a decommission's pushes): that node's, or this
//! node's, sstables that lie inside any of the ranges go whole first,
//! then each range in pages that leave those files out.

use super::bootstrap::StreamTable;
use super::plan::RangeSource;
use super::pull::{PullStats, Puller};

/// Which way a group's data goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// From the group's node to this one (STREAM_FILE, STREAM_PULL).
    Pull,
    /// From this node to the group's node (STREAM_FILE_OFFER,
    /// STREAM_PUSH).
    Push,
}

/// Streams the ranges of `group` (one node at the other end) of `t`,
/// counting each range done in `shown`.
pub async fn stream_group(
    puller: &Puller,
    t: &StreamTable,
    group: &[RangeSource],
    shown: Option<&super::Stream>,
    direction: Direction,
) -> Result<PullStats, String> {
    let named = |e: String| format!("{}: {e}", t.name);
    let Some(first) = group.first() else {
        return Ok(PullStats::default());
    };
    let spans: Vec<(i64, i64)> = group.iter().map(|r| (r.start, r.end)).collect();
    let whole = match direction {
        Direction::Pull => {
            puller
                .fetch_whole(t.table, first.source, first.address, &spans)
                .await
        }
        Direction::Push => puller.offer_whole(t.table, first, &spans).await,
    }
    .map_err(named)?;
    if let Some(s) = shown {
        s.files_done(whole.moved.files, whole.moved.bytes);
    }
    let mut moved = whole.moved;
    for range in group {
        let one = match direction {
            Direction::Pull => puller.pull_pages(t.table, range, &whole.skip).await,
            Direction::Push => puller.push_pages(t.table, range, &whole.skip).await,
        }
        .map_err(named)?;
        if let Some(s) = shown {
            s.range_done(one.bytes);
        }
        moved += one;
    }
    Ok(moved)
}
