//! Point reads of one partition: the memtables and every sstable that may
//! hold the key, merged with Cassandra's reconciliation, then resolved.
//!
//! Small partitions (the common case) are read whole from each source and
//! merged at once. When a source holds the partition with a row index (a
//! large partition, sstable format 3), the live read goes *window by
//! window*: the windows follow the row index blocks of the largest source,
//! each source gives only its rows and range tombstones inside the window,
//! and the read stops once it has the rows it needs. So a page of a 1 GB
//! partition reads a page, forwards or backwards (docs/design/read-path-io.md).

use crate::clustering::{ClusteringKey, Slice};
use crate::engine::{Engine, PartitionKey, TableId, TableStore};
use crate::error::Result;
use crate::memtable::Memtable;
use crate::partition::Partition;
use crate::read_stats::ReadCost;
use crate::row::ReadStats;
use crate::row_map::RowMap;
use crate::sstable::partition_reader::next_edge;
use crate::sstable::{IndexedPartition, Sstable, StoredPartition};
use std::sync::Arc;

/// Row index blocks of the largest source per window of a large
/// partition's read (about 128 KiB of it).
pub const WINDOW_BLOCKS: usize = 8;

/// What the sources hold of one partition.
struct Gathered<'a> {
    memtables: Vec<Arc<Memtable>>,
    /// The memtables' and the small sstable partitions' data, merged and
    /// restricted to the slices.
    small: Option<Partition>,
    /// Large partitions, read block by block.
    indexed: Vec<IndexedPartition<'a>>,
}

use varve_types::trace;

impl Engine {
    /// The stored partition restricted to `slices` (tombstones included),
    /// merged from every source, or `None` when no source has the key.
    pub fn read_partition(
        &self,
        id: TableId,
        key: &PartitionKey,
        slices: &[Slice],
    ) -> Result<Option<Partition>> {
        let mut cost = ReadCost::default();
        self.read_partition_costed(id, key, slices, &mut cost)
    }

    /// [`Self::read_partition`], adding what the read touched to `cost`
    /// (see [`crate::read_stats`]). Large partitions are read in one go for
    /// the slices asked (callers ask for a few rows).
    pub fn read_partition_costed(
        &self,
        id: TableId,
        key: &PartitionKey,
        slices: &[Slice],
        cost: &mut ReadCost,
    ) -> Result<Option<Partition>> {
        let table = self.table(id)?;
        trace_start(&table);
        let (memtables, sstables) = self.sources_of(&table);
        let before = cost.sstables;
        let found = read_partition_in(&memtables, &sstables, key, slices, cost)?;
        trace_merged(cost.sstables - before);
        Ok(found)
    }

    /// The live rows of `slices` at `now_seconds`, at most `max_rows` of
    /// them, in clustering order (the last ones when `reversed`), with the
    /// static row; whether every row of the slices was visited; `None`
    /// when nothing is stored under the key.
    #[allow(clippy::too_many_arguments)]
    pub fn read_live_costed(
        &self,
        id: TableId,
        key: &PartitionKey,
        slices: &[Slice],
        reversed: bool,
        now_seconds: i32,
        max_rows: usize,
        cost: &mut ReadCost,
    ) -> Result<Option<(Partition, ReadStats, bool)>> {
        let table = self.table(id)?;
        trace_start(&table);
        let (memtables, sstables) = self.sources_of(&table);
        let before = cost.sstables;
        let g = gather(&memtables, &sstables, key, slices, cost)?;
        let found = if g.indexed.is_empty() {
            g.small
                .map(|p| p.resolve_slices(slices, reversed, now_seconds, max_rows))
        } else {
            Some(read_windows(
                g,
                key,
                slices,
                reversed,
                now_seconds,
                max_rows,
            )?)
        };
        trace_merged(cost.sstables - before);
        trace::event(|| {
            let (rows, tombstones) = found.as_ref().map_or((0, 0), |(p, stats, _)| {
                let statics = p.static_row.as_ref().is_some_and(|r| !r.cells.is_empty());
                (p.rows.len() + usize::from(statics), stats.tombstones)
            });
            format!("Read {rows} live rows and {tombstones} tombstone cells")
        });
        Ok(found)
    }

    /// A replica's answer to a coordinator that merges several: the stored
    /// partition (tombstones included, unresolved) over as much of
    /// `slices` as holds its first `max_rows` live rows at `now_seconds`
    /// in the read's direction, and whether it was cut there (`true`: more
    /// rows may follow the last of them). The live read finds the row to
    /// cut at (window by window on a large partition), then the stored
    /// data of the cut slices is read, so the answer carries every
    /// deletion of the range it covers and nothing beyond.
    /// `usize::MAX` reads the slices whole.
    #[allow(clippy::too_many_arguments)]
    pub fn read_stored_limited(
        &self,
        id: TableId,
        key: &PartitionKey,
        slices: &[Slice],
        reversed: bool,
        now_seconds: i32,
        max_rows: usize,
        cost: &mut ReadCost,
    ) -> Result<(Option<Partition>, bool)> {
        if max_rows == usize::MAX {
            return Ok((self.read_partition_costed(id, key, slices, cost)?, false));
        }
        let live = self.read_live_costed(id, key, slices, reversed, now_seconds, max_rows, cost)?;
        let last = match &live {
            Some((p, _, false)) => last_row(p, reversed),
            _ => None,
        };
        match last {
            None => Ok((self.read_partition_costed(id, key, slices, cost)?, false)),
            Some(last) => {
                let covered = Slice::cut_at(slices, &last, reversed);
                Ok((self.read_partition_costed(id, key, &covered, cost)?, true))
            }
        }
    }

    /// [`Self::read_live_costed`] without the cost.
    pub fn read_live(
        &self,
        id: TableId,
        key: &PartitionKey,
        slices: &[Slice],
        reversed: bool,
        now_seconds: i32,
        max_rows: usize,
    ) -> Result<Option<(Partition, ReadStats, bool)>> {
        let mut cost = ReadCost::default();
        self.read_live_costed(id, key, slices, reversed, now_seconds, max_rows, &mut cost)
    }

    /// For each sstable holding `key`, the blocks of its row index as a
    /// read sees it (0: read whole): how a partition is laid out on disk
    /// (tests and diagnostics).
    pub fn row_index_blocks(&self, id: TableId, key: &PartitionKey) -> Result<Vec<usize>> {
        let table = self.table(id)?;
        let (_, sstables) = self.sources_of(&table);
        let mut out = Vec::new();
        for s in &sstables {
            match s.open_partition(key)? {
                None => {}
                Some(StoredPartition::Whole(_)) => out.push(0),
                Some(StoredPartition::Indexed(ip)) => out.push(ip.block_count()),
            }
        }
        Ok(out)
    }

    /// The sources of a table, taken together under its state lock (one
    /// snapshot: a flush that completes between two looks would otherwise
    /// hide its memtable's data from both): the memtables, newest first
    /// (the active one, then those being flushed), and the sstables, newest
    /// data first (by max timestamp), so that a partition deletion read
    /// early can rule out older ones.
    pub(crate) fn sources_of(&self, table: &TableStore) -> (Vec<Arc<Memtable>>, Vec<Arc<Sstable>>) {
        let state = table.state.read();
        let mut memtables = vec![state.memtable.clone()];
        memtables.extend(state.flushing.iter().rev().cloned());
        let mut sstables: Vec<Arc<Sstable>> = state.sstables.to_vec();
        drop(state);
        sstables.sort_by_key(|s| std::cmp::Reverse(s.stats().max_timestamp));
        (memtables, sstables)
    }
}

/// Records the start of a partition read of a traced request, with
/// Cassandra's texts.
fn trace_start(table: &TableStore) {
    trace::event(|| {
        let name = table.desc.read().name.clone();
        format!("Executing single-partition query on {name}")
    });
    trace::event(|| "Acquiring sstable references".into());
}

/// Records how many sstables a traced read merged with the memtables.
fn trace_merged(sstables: u32) {
    trace::event(|| format!("Merged data from memtables and {sstables} sstables"));
}

/// The clustering of the last row of `p` in the read's direction.
pub fn last_row(p: &Partition, reversed: bool) -> Option<ClusteringKey> {
    let last = if reversed {
        p.rows.first_key_value()
    } else {
        p.rows.last_key_value()
    };
    last.map(|(k, _)| k.clone())
}

/// The partition as `memtables` and `sstables` hold it within `slices`
/// (tombstones included), or `None` when none of them has the key.
pub(crate) fn read_partition_in(
    memtables: &[Arc<Memtable>],
    sstables: &[Arc<Sstable>],
    key: &PartitionKey,
    slices: &[Slice],
    cost: &mut ReadCost,
) -> Result<Option<Partition>> {
    let g = gather(memtables, sstables, key, slices, cost)?;
    let mut merged = g.small;
    for ip in &g.indexed {
        merge_into(&mut merged, ip.read_stored(slices)?);
    }
    Ok(merged)
}

fn merge_into(merged: &mut Option<Partition>, p: Partition) {
    match merged {
        Some(m) => m.merge(p),
        None => *merged = Some(p),
    }
}

/// Reads what every source holds of `key` within `slices`: small
/// partitions whole (merged), large ones as handles. An sstable whose
/// newest data is at or below a partition deletion already read, or whose
/// clustering bounds miss the slices, or whose bloom filter rules the key
/// out, is skipped.
fn gather<'a>(
    memtables: &[Arc<Memtable>],
    sstables: &'a [Arc<Sstable>],
    key: &PartitionKey,
    slices: &[Slice],
    cost: &mut ReadCost,
) -> Result<Gathered<'a>> {
    let mut small: Option<Partition> = None;
    for m in memtables {
        if let Some(p) = m.read(key, slices) {
            merge_into(&mut small, p);
        }
    }
    let mut indexed = Vec::new();
    let mut deleted_at = small.as_ref().map(|m| m.deletion.marked_for_delete_at);
    for s in sstables {
        if deleted_at.is_some_and(|d| s.stats().max_timestamp <= d) {
            continue;
        }
        if !s.stats().may_hold(slices) || !s.may_contain(key) {
            continue;
        }
        cost.sstables += 1;
        match s.open_partition_for(key, slices)? {
            None => {}
            Some(StoredPartition::Whole(p)) => merge_into(&mut small, p.slice(slices)),
            Some(StoredPartition::Indexed(ip)) => {
                let d = ip.header.deletion.marked_for_delete_at;
                if !ip.header.deletion.is_live() {
                    deleted_at = Some(deleted_at.map_or(d, |x| x.max(d)));
                }
                indexed.push(ip);
                continue;
            }
        }
        if let Some(m) = &small {
            if !m.deletion.is_live() {
                let d = m.deletion.marked_for_delete_at;
                deleted_at = Some(deleted_at.map_or(d, |x| x.max(d)));
            }
        }
    }
    Ok(Gathered {
        memtables: memtables.to_vec(),
        small,
        indexed,
    })
}

/// The slices cut to `[start, end)`, empty ones dropped.
fn within(slices: &[Slice], start: &ClusteringKey, end: &ClusteringKey) -> Vec<Slice> {
    slices
        .iter()
        .filter_map(|s| {
            let cut = Slice {
                start: s.start.clone().max(start.clone()),
                end: s.end.clone().min(end.clone()),
            };
            (cut.start < cut.end).then_some(cut)
        })
        .collect()
}

/// The live read of a large partition, window by window (see the module
/// doc).
fn read_windows(
    g: Gathered<'_>,
    key: &PartitionKey,
    slices: &[Slice],
    reversed: bool,
    now_seconds: i32,
    max_rows: usize,
) -> Result<(Partition, ReadStats, bool)> {
    let Some((first, last)) = slices.first().zip(slices.last()) else {
        return Ok((Partition::default(), ReadStats::default(), true));
    };
    // The partition deletion and the static row come from every source,
    // once.
    let mut head = Partition::default();
    for m in &g.memtables {
        if let Some(p) = m.read(key, &[]) {
            head.merge(p);
        }
    }
    if let Some(s) = &g.small {
        head.deletion = head.deletion.max(s.deletion);
        if let Some(r) = &s.static_row {
            merge_static(&mut head, r.clone());
        }
    }
    for ip in &g.indexed {
        head.deletion = head.deletion.max(ip.header.deletion);
        if let Some(r) = &ip.header.static_row {
            merge_static(&mut head, r.clone());
        }
    }
    let (head_live, mut stats, _) = head.resolve_slices(&[], reversed, now_seconds, 0);

    // A slice that spans few blocks of every source (a row, a page of a
    // slice) is one window, read with the block ranges found once.
    let span = Slice {
        start: first.start.clone(),
        end: last.end.clone(),
    };
    let mut ranges = Vec::with_capacity(g.indexed.len());
    for ip in &g.indexed {
        ranges.push(ip.blocks_for(&span)?);
    }
    if ranges.iter().all(|(from, to)| to - from <= WINDOW_BLOCKS) {
        let mut window = Partition {
            deletion: head.deletion,
            ..Partition::default()
        };
        for m in &g.memtables {
            if let Some(p) = m.read(key, slices) {
                window.merge(p.without_static());
            }
        }
        if let Some(s) = &g.small {
            window.merge(s.slice(slices).without_static());
        }
        for (ip, (from, to)) in g.indexed.iter().zip(ranges) {
            window.merge(ip.read_blocks(from, to)?.slice(slices).without_static());
        }
        let (live, st, complete) = window.resolve_slices(slices, reversed, now_seconds, max_rows);
        stats.tombstones += st.tombstones - u64::from(!head.deletion.is_live());
        let out = Partition {
            static_row: head_live.static_row,
            rows: live.rows,
            ..Partition::default()
        };
        return Ok((out, stats, complete));
    }

    let mut rows = RowMap::new();
    let mut complete = true;
    // Windows from one end of the slices to the other, each ending where
    // some source has passed WINDOW_BLOCKS of its blocks (see `next_edge`).
    let mut frontier = if reversed {
        last.end.clone()
    } else {
        first.start.clone()
    };
    loop {
        frontier = skip_gap(slices, frontier, reversed);
        let edge = next_edge(&g.indexed, &frontier, WINDOW_BLOCKS, reversed)?;
        let (edge, final_window) = match edge {
            Some(e) if reversed && e > first.start => (e, false),
            Some(e) if !reversed && e < last.end => (e, false),
            _ if reversed => (first.start.clone(), true),
            _ => (last.end.clone(), true),
        };
        let (start, end) = if reversed {
            (&edge, &frontier)
        } else {
            (&frontier, &edge)
        };
        let cut = within(slices, start, end);
        if cut.is_empty() {
            if final_window {
                break;
            }
            frontier = edge;
            continue;
        }
        let mut window = Partition {
            deletion: head.deletion,
            ..Partition::default()
        };
        for m in &g.memtables {
            if let Some(p) = m.read(key, &cut) {
                window.merge(p.without_static());
            }
        }
        if let Some(s) = &g.small {
            window.merge(s.slice(&cut).without_static());
        }
        for ip in &g.indexed {
            window.merge(ip.read_slices(&cut)?);
        }
        let want = max_rows - rows.len();
        let (live, st, done) = window.resolve_slices(&cut, reversed, now_seconds, want);
        // The partition deletion was counted once, with the static row.
        stats.tombstones += st.tombstones - u64::from(!head.deletion.is_live());
        for (k, r) in live.rows {
            rows.insert(k, r);
        }
        if !done {
            complete = false;
            break;
        }
        if rows.len() >= max_rows {
            complete = final_window;
            break;
        }
        if final_window {
            break;
        }
        frontier = edge;
    }
    let out = Partition {
        static_row: head_live.static_row,
        rows,
        ..Partition::default()
    };
    Ok((out, stats, complete))
}

/// The frontier moved past a gap between slices: to the next slice's
/// start going forward, to the previous slice's end going backward (a
/// window of nothing but gap reads nothing, but costs a search per source).
fn skip_gap(slices: &[Slice], frontier: ClusteringKey, reversed: bool) -> ClusteringKey {
    let inside = |s: &Slice| s.start <= frontier && frontier <= s.end;
    if slices.iter().any(inside) {
        return frontier;
    }
    let next = if reversed {
        slices
            .iter()
            .rev()
            .find(|s| s.end < frontier)
            .map(|s| &s.end)
    } else {
        slices.iter().find(|s| s.start > frontier).map(|s| &s.start)
    };
    next.cloned().unwrap_or(frontier)
}

/// Merges a static row into the partition's.
fn merge_static(p: &mut Partition, r: crate::row::Row) {
    match &mut p.static_row {
        Some(mine) => mine.merge(r),
        None => p.static_row = Some(r),
    }
}
