//! Compaction policy as pure code: from a view of the live sstables to the next task.
//!
//! Each strategy implements [`Strategy`]. The caller (the compaction executor) gives it the
//! current sstables as [`SstableView`]s, the current time and `gc_before`, and runs the
//! [`Task`] it returns; nothing here touches files or clocks.
//!
//! Invariants every strategy keeps (tested per strategy):
//! 1. A task never names an sstable marked `compacting`, and never names one twice.
//! 2. [`Task::DropExpired`] only names sstables whose every cell and tombstone is purgeable
//!    (`max_local_deletion_time < gc_before`) and that shadow nothing in any overlapping
//!    sstable holding live data (their `max_timestamp` is below that sstable's
//!    `min_timestamp`). Memtables are not visible here: the executor must re-check the
//!    condition against the memtables' minimum timestamp before dropping
//!    ([`common::fully_expired`] takes it as an argument).
//! 3. Switching strategy is creating a new instance: all state a strategy keeps (LCS's
//!    round-robin pointers, UCS's flush size, TWCS's newest window) is an optimisation or
//!    is rebuilt from the views, so a fresh instance is always correct.
//!
//! Where Cassandra's behaviour and its own comments disagree, the code follows the behaviour
//! and says so (see `stcs::most_interesting_bucket`).

pub mod common;
pub mod lcs;
pub mod stcs;
pub mod twcs;
pub mod ucs;

#[cfg(test)]
mod tests_common;
#[cfg(test)]
mod tests_lcs;
#[cfg(test)]
mod tests_stcs;
#[cfg(test)]
mod tests_twcs;
#[cfg(test)]
mod tests_ucs;

use crate::cell::NO_DELETION_TIME;

pub use common::CommonOptions;
pub use lcs::{Leveled, LeveledOptions};
pub use stcs::{SizeTiered, SizeTieredOptions};
pub use twcs::{TimeUnit, TimeWindow, TimeWindowOptions};
pub use ucs::{Unified, UnifiedOptions};

/// What a policy knows about one live sstable. Built by the caller from the sstable's
/// statistics; `droppable_tombstone_ratio` is computed at the `gc_before` passed to
/// [`Strategy::next_task`].
#[derive(Debug, Clone, PartialEq)]
pub struct SstableView {
    /// Generation: unique, and larger for newer sstables.
    pub id: u64,
    pub size_bytes: u64,
    /// LCS level (0 = unleveled); other strategies write 0 and ignore it.
    pub level: u32,
    pub min_timestamp: i64,
    pub max_timestamp: i64,
    pub max_local_deletion_time: i32,
    /// Token of the first and last partition (inclusive).
    pub first_token: i64,
    pub last_token: i64,
    /// When the data file was written (seconds), for `tombstone_compaction_interval`.
    pub created_at_seconds: i64,
    pub droppable_tombstone_ratio: f64,
    /// Reads per key (Cassandra's "hotness"); 0 when unknown.
    pub reads_per_key: f64,
    /// Already the input of a running task: never chosen again.
    pub compacting: bool,
}

impl SstableView {
    /// An sstable of `size_bytes` covering the whole token range, holding live data written
    /// at timestamp 0 (a convenient base for tests and the simulator).
    pub fn new(id: u64, size_bytes: u64) -> SstableView {
        SstableView {
            id,
            size_bytes,
            level: 0,
            min_timestamp: 0,
            max_timestamp: 0,
            max_local_deletion_time: NO_DELETION_TIME,
            first_token: i64::MIN,
            last_token: i64::MAX,
            created_at_seconds: 0,
            droppable_tombstone_ratio: 0.0,
            reads_per_key: 0.0,
            compacting: false,
        }
    }

    /// Whether the token ranges of `self` and `other` share a token.
    pub fn overlaps(&self, other: &SstableView) -> bool {
        self.first_token <= other.last_token && other.first_token <= self.last_token
    }

    /// Fraction of the whole token ring this sstable's range covers, in (0, 1].
    pub fn token_coverage(&self) -> f64 {
        token_span(self.first_token, self.last_token) / TOKEN_RING_SIZE
    }
}

/// Number of tokens in the Murmur3 ring, as a float (2^64).
pub const TOKEN_RING_SIZE: f64 = 18_446_744_073_709_551_616.0;

/// Number of tokens in `first..=last` as a float (at least 1).
pub fn token_span(first: i64, last: i64) -> f64 {
    let width = i128::from(last) - i128::from(first) + 1;
    width.max(1) as f64
}

/// Why a [`Task::Compact`] was chosen (for logs and `compactionstats`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// A SizeTiered bucket (STCS, or the newest TWCS window).
    SizeTiered,
    /// LCS: L0 held more than 32 sstables, so STCS ran inside L0.
    LeveledL0SizeTiered,
    /// LCS: L0 sstables (and the L1 sstables they overlap), or L0 sstables merged within L0.
    LeveledL0,
    /// LCS: one sstable of `from_level` with what it overlaps in the next level.
    Leveled { from_level: u32 },
    /// TWCS: an older window holding two or more sstables; `window_start_ms` is its key.
    TimeWindow { window_start_ms: i64 },
    /// UCS: an overlap bucket of the given density level reached its threshold.
    Unified { level: u32 },
}

/// What a strategy asks the executor to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Task {
    /// Merge `inputs` into new sstables written at `output_level`, starting a new output
    /// sstable whenever one reaches `max_output_bytes` and at every token in
    /// `shard_boundaries` (sorted; an output sstable holds tokens below the next boundary).
    Compact {
        inputs: Vec<u64>,
        output_level: u32,
        max_output_bytes: u64,
        shard_boundaries: Vec<i64>,
        reason: Reason,
    },
    /// Delete these sstables without rewriting them: they hold only purgeable data that
    /// shadows nothing (re-check against memtables first, see the module invariants).
    DropExpired { inputs: Vec<u64> },
    /// Rewrite one sstable alone to purge its tombstones; the output keeps its level.
    TombstoneCompaction { input: u64 },
}

impl Task {
    /// The sstables this task consumes.
    pub fn inputs(&self) -> Vec<u64> {
        match self {
            Task::Compact { inputs, .. } | Task::DropExpired { inputs } => inputs.clone(),
            Task::TombstoneCompaction { input } => vec![*input],
        }
    }
}

/// A compaction strategy: a pure policy plus whatever small state makes it fair (round-robin
/// pointers) or adaptive (observed flush size).
pub trait Strategy {
    /// The next task to run, or `None` when nothing needs doing. `now_seconds` is the current
    /// time; `gc_before` is `now - gc_grace_seconds` (tombstones deleted before it are
    /// purgeable).
    fn next_task(
        &mut self,
        sstables: &[SstableView],
        now_seconds: i64,
        gc_before: i32,
    ) -> Option<Task>;

    /// Estimated number of tasks still to run (Cassandra's `PendingTasks`).
    fn pending_tasks(&self, sstables: &[SstableView]) -> u64;

    /// The level a freshly flushed sstable is written at.
    fn level_of_new_sstable(&self) -> u32 {
        0
    }

    /// Told when a task finished, with the sstables it wrote.
    fn on_completed(&mut self, _task: &Task, _outputs: &[SstableView]) {}

    /// Told when a flush wrote `flushed` (UCS sizes its levels from flushes).
    fn on_flush(&mut self, _flushed: &SstableView) {}

    /// The flush size the strategy sizes its levels from, for strategies
    /// that learn it (UCS); lets engine tests see that flushes reach
    /// [`Strategy::on_flush`].
    #[cfg(test)]
    fn learned_flush_size_bytes(&self) -> Option<u64> {
        None
    }

    /// Short name for logs ("SizeTiered", ...).
    fn name(&self) -> &'static str;
}

/// A table's strategy and its options, as converted from the schema's `compaction` option.
#[derive(Debug, Clone, PartialEq)]
pub enum StrategyOptions {
    SizeTiered(SizeTieredOptions),
    Leveled(LeveledOptions),
    TimeWindow(TimeWindowOptions),
    Unified(UnifiedOptions),
}

/// A fresh strategy instance. Also the way to switch strategy at runtime: the new instance
/// needs nothing but the sstables it will be shown.
pub fn new_strategy(options: &StrategyOptions, common: &CommonOptions) -> Box<dyn Strategy + Send> {
    match options {
        StrategyOptions::SizeTiered(o) => Box::new(SizeTiered::new(o.clone(), common.clone())),
        StrategyOptions::Leveled(o) => Box::new(Leveled::new(o.clone(), common.clone())),
        StrategyOptions::TimeWindow(o) => Box::new(TimeWindow::new(o.clone(), common.clone())),
        StrategyOptions::Unified(o) => Box::new(Unified::new(o.clone(), common.clone())),
    }
}

/// The sstables a strategy may choose: those not already compacting.
pub(crate) fn uncompacting(sstables: &[SstableView]) -> impl Iterator<Item = &SstableView> {
    sstables.iter().filter(|s| !s.compacting)
}

/// Sum of sizes.
pub(crate) fn total_bytes<'a>(sstables: impl IntoIterator<Item = &'a SstableView>) -> u64 {
    sstables
        .into_iter()
        .fold(0u64, |acc, s| acc.saturating_add(s.size_bytes))
}
