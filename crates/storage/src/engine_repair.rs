//! Incremental repair's part in storage (docs/design/topology.md,
//! section 6): sstables carry a repair mark in the table's manifest
//! (none: unrepaired; `Pending` while a repair session holds them;
//! `Repaired` with the time once one succeeded), compaction keeps repaired
//! and unrepaired sstables apart and leaves pending ones alone, and a
//! session's validation reads only its pending sstables. Storage never
//! sees the ring: the caller says which token ranges a session repairs.
//!
//! Preparing a session (an *anticompaction*): the memtable is flushed,
//! then each unrepaired sstable that holds data of the ranges is
//! - marked pending whole when its token span lies inside the ranges
//!   (adjacent ones taken together);
//! - otherwise copied: the partitions of the ranges into new sstables
//!   marked pending (the original stays live meanwhile: both hold them,
//!   which reads merge to the same answer, so a crash here loses nothing),
//!   then the original is dropped if everything went into the copy, or
//!   rewritten without the ranges' partitions.
//!
//! A session ends with [`Engine::finalize_incremental`]: its sstables
//! become repaired at the session's time, or unrepaired again when it
//! failed. Sessions do not survive a restart: pending marks read from a
//! manifest are dropped when the table opens ([`forget_sessions`]).

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use crate::compaction::stats::CompactionKind;
use crate::compaction::SstableView;
use crate::engine::{sstable_path, Engine, PartitionKey, TableId, TableStore};
use crate::engine_compact::{generation_of, Job};
use crate::engine_concurrency::Claim;
use crate::error::{Error, Result};
use crate::manifest::Manifest;
pub use crate::manifest::RepairMark;
use crate::memtable::key_in_range;
use crate::partition::Partition;
use crate::sstable::Sstable;
use varve_types::data::TokenBound;

/// A token range `(start, end]` of the ring; `start >= end` wraps
/// (`start == end`: the whole ring).
pub type TokenRange = (i64, i64);

/// What preparing one table for a session did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PrepareResult {
    /// The generations now pending for the session.
    pub pending: Vec<u64>,
    /// Unrepaired sstables that had to be split (copied, then dropped or
    /// rewritten).
    pub split: usize,
}

/// Whether `token` lies in one of `ranges`.
pub fn token_in_ranges(ranges: &[TokenRange], token: i64) -> bool {
    ranges.iter().any(|&(start, end)| match start < end {
        true => start < token && token <= end,
        false => token > start || token <= end,
    })
}

/// Whether the span `[first, last]` lies inside the union of `ranges`:
/// ranges that touch or overlap count as one, so an sstable spanning
/// several adjacent ranges of a session (all of a node's ranges, often
/// the whole ring) is marked whole instead of rewritten.
fn span_inside(ranges: &[TokenRange], first: i64, last: i64) -> bool {
    let (first, end) = (first as i128, last as i128 + 1);
    merged_intervals(ranges)
        .iter()
        .any(|&(lo, hi)| lo <= first && end <= hi)
}

/// `ranges` as sorted, disjoint half-open intervals `[lo, hi)` of tokens
/// (in `i128`, so that `i64::MAX + 1` is an end): `(start, end]` is
/// `[start + 1, end + 1)`, a wrapping range is its two ends, and touching
/// or overlapping intervals are merged.
fn merged_intervals(ranges: &[TokenRange]) -> Vec<(i128, i128)> {
    let (min, past_max) = (i64::MIN as i128, i64::MAX as i128 + 1);
    let mut parts: Vec<(i128, i128)> = Vec::with_capacity(ranges.len() + 1);
    for &(start, end) in ranges {
        let (lo, hi) = (start as i128 + 1, end as i128 + 1);
        match start.cmp(&end) {
            std::cmp::Ordering::Less => parts.push((lo, hi)),
            std::cmp::Ordering::Equal => return vec![(min, past_max)],
            std::cmp::Ordering::Greater => {
                parts.push((lo, past_max));
                parts.push((min, hi));
            }
        }
    }
    parts.sort_unstable();
    let mut merged: Vec<(i128, i128)> = Vec::with_capacity(parts.len());
    for (lo, hi) in parts {
        match merged.last_mut() {
            Some(last) if lo <= last.1 => last.1 = last.1.max(hi),
            _ => merged.push((lo, hi)),
        }
    }
    merged
}

/// Whether the span `[first, last]` meets one of `ranges`.
fn span_meets(ranges: &[TokenRange], first: i64, last: i64) -> bool {
    ranges.iter().any(|&(start, end)| match start < end {
        true => first <= end && last > start,
        false => last > start || first <= end,
    })
}

/// The mark compaction outputs take from their inputs: the session all of
/// them are pending for, or repaired (at the oldest of their times) when
/// all are; unrepaired otherwise (a mix is compared again by the next
/// repair, which is always safe).
pub(crate) fn inherited_mark(
    marks: &BTreeMap<u64, RepairMark>,
    inputs: &HashSet<u64>,
) -> Option<RepairMark> {
    let mut marks_of = inputs.iter().map(|g| marks.get(g).copied());
    let mut out = marks_of.next()??;
    for mark in marks_of {
        out = match (out, mark?) {
            (RepairMark::Repaired { at_ms: a }, RepairMark::Repaired { at_ms: b }) => {
                RepairMark::Repaired { at_ms: a.min(b) }
            }
            (RepairMark::Pending { session: a }, RepairMark::Pending { session: b }) if a == b => {
                out
            }
            _ => return None,
        };
    }
    Some(out)
}

/// The views the strategy chooses from, one group at a time: unrepaired
/// and repaired sstables apart (the larger group first), pending ones
/// left out.
pub(crate) fn compaction_groups(
    table: &TableStore,
    views: &[SstableView],
) -> Vec<Vec<SstableView>> {
    let state = table.state.read();
    let marks = &state.manifest.repair;
    let (mut unrepaired, mut repaired) = (Vec::new(), Vec::new());
    for v in views {
        match marks.get(&v.id) {
            None => unrepaired.push(v.clone()),
            Some(RepairMark::Repaired { .. }) => repaired.push(v.clone()),
            Some(RepairMark::Pending { .. }) => {}
        }
    }
    let mut groups = vec![unrepaired, repaired];
    groups.retain(|g| !g.is_empty());
    groups.sort_by_key(|g| std::cmp::Reverse(g.len()));
    groups
}

/// Drops the pending marks of a manifest just read: the sessions that
/// set them ended with the process, so their sstables are unrepaired.
pub(crate) fn forget_sessions(manifest: &mut Manifest) {
    manifest
        .repair
        .retain(|_, m| matches!(m, RepairMark::Repaired { .. }));
}

/// One session's pending sstables of a table, read as one source (no
/// memtable: what came after the session began is not part of it).
pub struct PendingView {
    sstables: Vec<Arc<Sstable>>,
}

impl PendingView {
    /// Up to `limit` keys between the bounds, in token order.
    pub fn scan_keys(
        &self,
        start: &TokenBound,
        end: &TokenBound,
        limit: usize,
    ) -> Result<Vec<PartitionKey>> {
        let mut keys = std::collections::BTreeSet::new();
        for s in &self.sstables {
            keys.extend(s.keys(start, end, limit)?);
        }
        Ok(keys
            .into_iter()
            .filter(|k| key_in_range(k, start, end))
            .take(limit)
            .collect())
    }

    /// The partition `key` as the pending sstables hold it, whole
    /// (tombstones included), or `None`.
    pub fn read_partition(&self, key: &PartitionKey) -> Result<Option<Partition>> {
        let mut merged: Option<Partition> = None;
        for s in &self.sstables {
            if let Some(p) = s.read_partition(key)? {
                match &mut merged {
                    Some(m) => m.merge(p),
                    None => merged = Some(p),
                }
            }
        }
        Ok(merged)
    }

    /// How many sstables the view reads.
    pub fn sstable_count(&self) -> usize {
        self.sstables.len()
    }
}

impl Engine {
    /// The repair marks of the table's live sstables, by generation.
    pub fn repair_marks(&self, id: TableId) -> Result<BTreeMap<u64, RepairMark>> {
        let table = self.table(id)?;
        let state = table.state.read();
        Ok(state
            .manifest
            .repair
            .iter()
            .filter(|(g, _)| state.manifest.live.contains(g))
            .map(|(g, m)| (*g, *m))
            .collect())
    }

    /// Takes the table's unrepaired data of `ranges` into `session`
    /// (flushing the memtable first); see the module's documentation.
    pub fn prepare_incremental(
        &self,
        id: TableId,
        ranges: &[TokenRange],
        session: u128,
        now_seconds: i32,
    ) -> Result<PrepareResult> {
        // Flushes, waits for compactions to let go of sstables, rewrites
        // them: never on a thread that may not wait.
        self.check_disk_wait("an incremental repair's anticompaction")?;
        self.flush(id)?;
        let table = self.table(id)?;
        let candidates: Vec<u64> = {
            let state = table.state.read();
            state
                .sstables
                .iter()
                .filter_map(|s| generation_of(s))
                .filter(|g| !state.manifest.repair.contains_key(g))
                .collect()
        };
        let mark = RepairMark::Pending { session };
        let mut result = PrepareResult::default();
        for g in candidates {
            let Some(_claim) = Claim::wait_live(&table, g) else {
                continue;
            };
            let Some((first, last, level)) = unrepaired_span(&table, g) else {
                continue;
            };
            if !span_meets(ranges, first, last) {
                continue;
            }
            if span_inside(ranges, first, last) {
                self.set_marks(&table, &[g], Some(mark))?;
                result.pending.push(g);
                continue;
            }
            result.split += 1;
            result
                .pending
                .extend(self.split_off(&table, g, level, ranges, mark, now_seconds)?);
        }
        Ok(result)
    }

    /// Copies the partitions of `ranges` out of sstable `g` (claimed by the
    /// caller) into new sstables marked `mark`, then drops `g` or rewrites
    /// it without them; the generations of the copies.
    fn split_off(
        &self,
        table: &Arc<TableStore>,
        g: u64,
        level: u32,
        ranges: &[TokenRange],
        mark: RepairMark,
        now_seconds: i32,
    ) -> Result<Vec<u64>> {
        let inside = |t: i64| token_in_ranges(ranges, t);
        let outside = |t: i64| !token_in_ranges(ranges, t);
        let copy = Job {
            inputs: &[g],
            max_output_bytes: 0,
            output_level: 0,
            now_seconds,
            kind: CompactionKind::Anticompaction,
            shadow: None,
            keep: Some(&inside),
            keep_inputs: true,
            mark: Some(mark),
        };
        let copied = self.run_claimed(table, &copy)?;
        if copied.partitions_left_out == 0 {
            self.drop_sstable(table, g)?;
            return Ok(copied.outputs);
        }
        let rest = Job {
            output_level: level,
            keep: Some(&outside),
            keep_inputs: false,
            mark: None,
            ..copy
        };
        self.run_claimed(table, &rest)?;
        Ok(copied.outputs)
    }

    /// Ends `session` on the table: its sstables repaired at
    /// `repaired_at_ms`, or unrepaired again (`None`: the session failed).
    /// Returns how many sstables it held.
    pub fn finalize_incremental(
        &self,
        id: TableId,
        session: u128,
        repaired_at_ms: Option<i64>,
    ) -> Result<usize> {
        let table = self.table(id)?;
        let held: Vec<u64> = {
            let state = table.state.read();
            state
                .manifest
                .repair
                .iter()
                .filter(|(_, m)| **m == RepairMark::Pending { session })
                .map(|(g, _)| *g)
                .collect()
        };
        if !held.is_empty() {
            self.check_disk_wait("a manifest write")?;
        }
        let mark = repaired_at_ms.map(|at_ms| RepairMark::Repaired { at_ms });
        self.set_marks(&table, &held, mark)?;
        Ok(held.len())
    }

    /// The sstables of the table pending for `session`, as one source.
    pub fn pending_view(&self, id: TableId, session: u128) -> Result<PendingView> {
        let table = self.table(id)?;
        let state = table.state.read();
        let sstables = state
            .sstables
            .iter()
            .filter(|s| {
                generation_of(s).and_then(|g| state.manifest.repair.get(&g).copied())
                    == Some(RepairMark::Pending { session })
            })
            .cloned()
            .collect();
        Ok(PendingView { sstables })
    }

    /// Sets (or clears, `None`) the mark of live sstables `generations` in
    /// one manifest write.
    fn set_marks(
        &self,
        table: &TableStore,
        generations: &[u64],
        mark: Option<RepairMark>,
    ) -> Result<()> {
        let Some(dir) = &table.dir else {
            return Ok(());
        };
        let mut state = table.state.write();
        for g in generations {
            if !state.manifest.live.contains(g) {
                continue;
            }
            match mark {
                Some(m) => state.manifest.repair.insert(*g, m),
                None => state.manifest.repair.remove(g),
            };
        }
        state.manifest.store(self.fs.as_ref(), dir)
    }

    /// Makes live sstable `g` dead in one manifest write and deletes its
    /// file (everything it held is elsewhere: [`Self::split_off`]).
    fn drop_sstable(&self, table: &TableStore, g: u64) -> Result<()> {
        let Some(dir) = &table.dir else {
            return Ok(());
        };
        {
            let mut state = table.state.write();
            if !state.manifest.live.contains(&g) {
                return Err(Error::io(
                    dir,
                    std::io::Error::new(
                        std::io::ErrorKind::NotFound,
                        "the table was truncated during the anticompaction",
                    ),
                ));
            }
            state.manifest.live.retain(|l| *l != g);
            state.manifest.levels.remove(&g);
            state.manifest.repair.remove(&g);
            state.manifest.store(self.fs.as_ref(), dir)?;
            state.sstables.retain(|s| generation_of(s) != Some(g));
        }
        let path = sstable_path(dir, g);
        self.fs.remove(&path).map_err(|e| Error::io(&path, e))
    }
}

/// The token span and level of live, unrepaired sstable `g`.
fn unrepaired_span(table: &TableStore, g: u64) -> Option<(i64, i64, u32)> {
    let state = table.state.read();
    if state.manifest.repair.contains_key(&g) {
        return None;
    }
    let s = state
        .sstables
        .iter()
        .find(|s| generation_of(s) == Some(g))?;
    let st = s.stats();
    let first = st.first_key.as_ref().map_or(i64::MIN, |k| k.token);
    let last = st.last_key.as_ref().map_or(i64::MAX, |k| k.token);
    let level = state.manifest.levels.get(&g).copied().unwrap_or(0);
    Some((first, last, level))
}

#[cfg(test)]
#[path = "engine_repair_tests.rs"]
mod tests;
