//! Running a compaction: merge some sstables of a table into new ones,
//! dropping shadowed data and purgeable tombstones, then swap inputs for
//! outputs in one manifest write, so a crash at any point leaves either the
//! inputs or the outputs live (never both, never neither). Leftover files
//! of an interrupted compaction are removed when the table opens.
//!
//! Every compaction first *claims* its inputs (`engine_concurrency`): an
//! sstable is the input of at most one running compaction. With
//! `provide_overlapping_tombstones` (or garbagecollect), each merged
//! partition is also read from the live sstables outside the compaction and
//! what they shadow is left out (`compaction::shadow`).
//!
//! This file holds the entry points (major, explicit and strategy-chosen
//! compactions); [`run`] runs one claimed job, [`merge`] is the k-way merge
//! of the inputs, [`output`] writes the outputs and [`views`] answers the
//! strategy's and the purge rule's questions about the table.

mod large;
mod merge;
mod output;
mod run;
mod shadow_read;
#[cfg(test)]
mod tests_bench;
mod views;

use crate::compaction::shadow::ShadowMode;
use crate::compaction::stats::CompactionKind;
use crate::compaction::{SstableView, Task};
use crate::engine::{Engine, TableId};
use crate::engine_concurrency::Claim;
use crate::error::Result;
use crate::sstable::Sstable;
use views::{purgeable_whole, views_of};

/// The generation number of an sstable, from its file name.
pub fn generation_of(s: &Sstable) -> Option<u64> {
    s.path().file_stem()?.to_str()?.parse().ok()
}

/// What one compaction did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompactionResult {
    pub inputs: Vec<u64>,
    pub outputs: Vec<u64>,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub partitions_written: u64,
    /// Partitions the job's `keep` refused.
    pub partitions_left_out: u64,
}

/// One compaction to run, its inputs already claimed.
pub(crate) struct Job<'a> {
    pub(crate) inputs: &'a [u64],
    /// Start a new output past this many bytes (0: one output).
    pub(crate) max_output_bytes: u64,
    pub(crate) output_level: u32,
    pub(crate) now_seconds: i32,
    pub(crate) kind: CompactionKind,
    /// `None`: the table's `provide_overlapping_tombstones`.
    pub(crate) shadow: Option<ShadowMode>,
    /// Partitions whose token this says no to are left out (`nodetool
    /// cleanup`); `None` keeps every partition.
    pub(crate) keep: Option<&'a (dyn Fn(i64) -> bool + Sync)>,
    /// The inputs stay live beside the outputs (an anticompaction's copy
    /// of a range: `engine_repair`).
    pub(crate) keep_inputs: bool,
    /// The outputs' repair mark; `None`: the one the inputs share
    /// (`engine_repair::inherited_mark`).
    pub(crate) mark: Option<crate::manifest::RepairMark>,
}

impl Engine {
    /// The generations of the table's live sstables.
    pub fn table_generations(&self, id: TableId) -> Result<Vec<u64>> {
        Ok(self
            .table(id)?
            .state
            .read()
            .sstables
            .iter()
            .filter_map(|s| generation_of(s))
            .collect())
    }

    /// Merges every live sstable of the table into one (`nodetool compact`),
    /// after waiting for the running compactions of the table to finish.
    pub fn major_compact(&self, id: TableId, now_seconds: i32) -> Result<CompactionResult> {
        let table = self.table(id)?;
        let _one_major = table.compaction_lock.lock();
        let claim = Claim::all_live(&table);
        let inputs = claim.generations().to_vec();
        if inputs.len() < 2 && !self.has_purgeable(id, now_seconds)? {
            return Ok(CompactionResult {
                inputs: inputs.clone(),
                outputs: inputs,
                ..Default::default()
            });
        }
        let job = Job {
            inputs: &inputs,
            max_output_bytes: 0,
            output_level: 0,
            now_seconds,
            kind: CompactionKind::Major,
            shadow: None,
            keep: None,
            keep_inputs: false,
            mark: None,
        };
        self.run_claimed(&table, &job)
    }

    fn has_purgeable(&self, id: TableId, now_seconds: i32) -> Result<bool> {
        let table = self.table(id)?;
        let gc_before = now_seconds.saturating_sub(table.desc.read().gc_grace_seconds);
        let state = table.state.read();
        Ok(state.sstables.iter().any(|s| {
            s.stats().min_local_deletion_time < gc_before
                && s.stats().tombstone_count + s.stats().expiring_count > 0
        }))
    }

    /// Compacts the sstables with these generations into new sstables of at
    /// most `max_output_bytes` each (0: one output), once no other
    /// compaction holds any of them.
    pub fn compact(
        &self,
        id: TableId,
        inputs: &[u64],
        max_output_bytes: u64,
        now_seconds: i32,
    ) -> Result<CompactionResult> {
        let table = self.table(id)?;
        let _claim = Claim::wait(&table, inputs);
        let job = Job {
            inputs,
            max_output_bytes,
            output_level: 0,
            now_seconds,
            kind: CompactionKind::Compaction,
            shadow: None,
            keep: None,
            keep_inputs: false,
            mark: None,
        };
        self.run_claimed(&table, &job)
    }

    /// The view of a table's live sstables its strategy decides from.
    pub fn sstable_views(&self, id: TableId, now_seconds: i32) -> Result<Vec<SstableView>> {
        let table = self.table(id)?;
        let compacting = table.compacting.lock().clone();
        Ok(views_of(&table, now_seconds, &compacting))
    }

    /// Runs at most one task the table's strategy chooses; returns whether
    /// it ran one.
    pub fn compact_once(&self, id: TableId, now_seconds: i32) -> Result<bool> {
        let table = self.table(id)?;
        if table.dir.is_none() {
            return Ok(false);
        }
        let gc_before = now_seconds.saturating_sub(table.desc.read().gc_grace_seconds);
        // Choosing and claiming under the strategy lock: two workers never
        // pick the same sstable.
        let (task, views, _claim) = {
            let mut strategy = table.strategy.lock();
            let mut compacting = table.compacting.lock();
            let views = views_of(&table, now_seconds, &compacting);
            // Repaired and unrepaired sstables are compacted apart, pending
            // ones not at all (`engine_repair`).
            let groups = crate::engine_repair::compaction_groups(&table, &views);
            let Some(task) = groups
                .iter()
                .find_map(|g| strategy.next_task(g, i64::from(now_seconds), gc_before))
            else {
                return Ok(false);
            };
            let task = match task {
                Task::DropExpired { inputs } => {
                    let inputs = purgeable_whole(&table, &views, inputs);
                    if inputs.is_empty() {
                        return Ok(false);
                    }
                    Task::DropExpired { inputs }
                }
                other => other,
            };
            let inputs = task.inputs();
            if inputs.iter().any(|g| compacting.contains(g)) {
                return Ok(false);
            }
            compacting.extend(inputs.iter().copied());
            drop(compacting);
            (task, views, Claim::adopt(&table, inputs))
        };
        let inputs = task.inputs();
        let mut job = Job {
            inputs: &inputs,
            max_output_bytes: 0,
            output_level: 0,
            now_seconds,
            kind: CompactionKind::Compaction,
            shadow: None,
            keep: None,
            keep_inputs: false,
            mark: None,
        };
        match &task {
            Task::Compact {
                max_output_bytes,
                output_level,
                ..
            } => {
                job.max_output_bytes = *max_output_bytes;
                job.output_level = *output_level;
            }
            // An expired sstable is rewritten by the purge rule to nothing;
            // going through compaction re-checks memtables and other
            // sstables, so nothing shadowed can come back.
            Task::DropExpired { .. } => {}
            Task::TombstoneCompaction { input } => {
                job.output_level = views.iter().find(|v| v.id == *input).map_or(0, |v| v.level);
                job.kind = CompactionKind::Tombstone;
            }
        }
        self.run_claimed(&table, &job)?;
        let outputs = self.sstable_views(id, now_seconds)?;
        table.strategy.lock().on_completed(&task, &outputs);
        Ok(true)
    }
}
