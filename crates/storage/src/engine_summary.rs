//! The node-wide budget for partition summaries (`index_summary_capacity`).
//!
//! Every open sstable keeps its summary in memory: one entry per
//! `min_index_interval` partitions. When all of them together pass the
//! budget, every summary is downsampled by the same step, the smallest that
//! fits, but never past its table's `max_index_interval`; when there is
//! room again they go back to full. Cassandra also weighs each sstable by
//! its read rate; Varve treats them alike (a choice noted in
//! docs/design/storage-model.md). The flusher thread checks the budget
//! once a second and after opening; only a change of step costs I/O (the
//! summary section is re-read).

use crate::engine::Engine;
use crate::sstable::summary::{max_step, MAX_SUMMARY_STEP};
use crate::sstable::Sstable;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Cassandra's default is 5% of the heap; Varve has no heap, and this
/// covers about 40 million partitions at full sampling.
pub const DEFAULT_INDEX_SUMMARY_CAPACITY_BYTES: u64 = 32 << 20;

/// The step every summary should use so that `sizes` (per sstable: its
/// memory at step 1 and the coarsest step its table allows) fit in
/// `capacity` bytes: the smallest that fits, or each one's coarsest when
/// none does.
pub fn choose_step(sizes: &[(usize, usize)], capacity: u64) -> usize {
    let total_at = |step: usize| -> u64 {
        sizes
            .iter()
            .map(|&(bytes, max)| (bytes / step.min(max)) as u64)
            .sum()
    };
    (1..=MAX_SUMMARY_STEP)
        .find(|&step| total_at(step) <= capacity)
        .unwrap_or(MAX_SUMMARY_STEP)
}

/// What the summaries of the node take now, and the step in use.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SummaryUsage {
    pub memory_bytes: u64,
    pub full_bytes: u64,
    pub sstables: usize,
}

impl Engine {
    /// Sets `index_summary_capacity` (bytes); applied at the next check.
    pub fn set_index_summary_capacity(&self, bytes: u64) {
        self.index_summary_capacity.store(bytes, Ordering::Relaxed);
    }

    pub fn index_summary_capacity(&self) -> u64 {
        self.index_summary_capacity.load(Ordering::Relaxed)
    }

    /// Every open sstable with the coarsest step its table allows.
    fn summary_holders(&self) -> Vec<(Arc<Sstable>, usize)> {
        let tables: Vec<_> = self.tables.read().values().cloned().collect();
        let mut out = Vec::new();
        for t in tables {
            let params = t.desc.read().params;
            let max = max_step(params.min_index_interval, params.max_index_interval);
            for s in &t.state.read().sstables {
                out.push((s.clone(), max));
            }
        }
        out
    }

    /// Brings every summary to the step the budget calls for. A summary
    /// that cannot be re-read keeps its current step (logged).
    pub fn rebalance_index_summaries(&self) {
        let holders = self.summary_holders();
        let sizes: Vec<(usize, usize)> = holders
            .iter()
            .map(|(s, max)| (s.summary().full_bytes(), *max))
            .collect();
        let step = choose_step(&sizes, self.index_summary_capacity());
        for (s, max) in holders {
            if let Err(e) = s.resample_summary(step.min(max)) {
                tracing::warn!("cannot resample the summary of {}: {e}", s.path().display());
            }
        }
    }

    /// Summary memory across the node.
    pub fn index_summary_usage(&self) -> SummaryUsage {
        let holders = self.summary_holders();
        SummaryUsage {
            memory_bytes: holders
                .iter()
                .map(|(s, _)| s.summary().memory_bytes() as u64)
                .sum(),
            full_bytes: holders
                .iter()
                .map(|(s, _)| s.summary().full_bytes() as u64)
                .sum(),
            sstables: holders.len(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_downsampling_while_everything_fits() {
        assert_eq!(choose_step(&[(1000, 16), (3000, 16)], 4000), 1);
        assert_eq!(choose_step(&[], 0), 1);
    }

    #[test]
    fn the_smallest_step_that_fits_at_n_and_n_plus_one() {
        // 4000 bytes: step 2 gives 2000, step 3 gives 1332.
        assert_eq!(choose_step(&[(4000, 16)], 2000), 2);
        assert_eq!(choose_step(&[(4000, 16)], 1999), 3);
    }

    #[test]
    fn each_table_stops_at_its_max_index_interval() {
        // The second sstable may not go past step 2 (500 bytes), so the
        // first takes the rest of the squeeze: 1600 / 8 = 200.
        assert_eq!(choose_step(&[(1600, 16), (1000, 2)], 500 + 200), 8);
        assert_eq!(choose_step(&[(1600, 16), (1000, 2)], 500 + 199), 9);
        // Nothing fits: everyone at the coarsest step.
        assert_eq!(choose_step(&[(1600, 16), (1000, 2)], 1), MAX_SUMMARY_STEP);
    }
}
