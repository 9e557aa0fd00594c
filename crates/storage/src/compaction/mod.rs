//! Compaction: which sstables to merge ([`policy`]) and what a merge keeps ([`purge`]).
//!
//! This module holds the *policy* only: [`policy`] maps a view of the live sstables
//! ([`policy::SstableView`]) to the next task ([`policy::Task`]) for each of Cassandra's four
//! strategies (SizeTiered, Leveled, TimeWindow, Unified), plus the rules every strategy shares
//! (fully expired sstables, single-sstable tombstone compactions). Policies are pure: no files,
//! no clocks (time arrives as an argument), so they can be tested exactly and replayed by the
//! write-amplification simulator in [`sim`].
//!
//! The I/O side (reading inputs, writing outputs, swapping them atomically) lives in
//! `crate::engine_compact`; it calls [`policy::Strategy::next_task`] and applies the result,
//! at most `compaction_throughput` ([`throttle`]) fast, dropping what overlapping sstables
//! outside the compaction shadow when `provide_overlapping_tombstones` asks ([`shadow`]), and
//! reporting progress and counters ([`stats`]).

pub mod policy;
pub mod purge;
pub mod shadow;
pub mod sim;
pub mod stats;
pub mod throttle;

/// A table's compaction setup: which strategy with which options.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionConfig {
    pub strategy: StrategyOptions,
    pub common: CommonOptions,
}

impl Default for CompactionConfig {
    /// SizeTiered with Cassandra's defaults.
    fn default() -> Self {
        CompactionConfig {
            strategy: StrategyOptions::SizeTiered(SizeTieredOptions::default()),
            common: CommonOptions::default(),
        }
    }
}

impl CompactionConfig {
    pub fn new_strategy(&self) -> Box<dyn Strategy + Send> {
        new_strategy(&self.strategy, &self.common)
    }
}

pub use shadow::ShadowMode;
pub use stats::{CompactionKind, CompactionStats, RunningCompaction, TableCompactionStats};

pub use policy::{
    new_strategy, CommonOptions, LeveledOptions, Reason, SizeTieredOptions, SstableView, Strategy,
    StrategyOptions, Task, TimeUnit, TimeWindowOptions, UnifiedOptions,
};
