//! Write-amplification simulator: feeds a stream of flushes through a strategy, applying
//! each task instantly (outputs hold the sum of the inputs' bytes, nothing is deduplicated or
//! purged), and counts bytes written against bytes flushed.
//!
//! Each flush is an sstable of `flush_size_bytes` covering `flush_coverage` of the token ring
//! (1.0: every flush spans all keys, as with uniformly random writes; smaller: a random
//! contiguous range, as with time-ordered keys). A compaction's outputs are cut at the task's
//! shard boundaries and at `max_output_bytes`, bytes spread evenly over the token range the
//! inputs span. Deterministic for a given seed.
//!
//! Run `cargo test -p varve-storage --lib compaction::sim -- --ignored --nocapture` to print
//! the table in docs/design/compaction.md.

use super::policy::{SstableView, Strategy, Task};
use crate::cell::NO_DELETION_TIME;

/// Stop after this many tasks following one flush (a strategy that never settles).
pub const MAX_TASKS_PER_FLUSH: u32 = 10_000;
/// Simulated seconds between flushes.
pub const SECONDS_PER_FLUSH: i64 = 60;

/// The load.
#[derive(Debug, Clone)]
pub struct SimConfig {
    pub flushes: u32,
    pub flush_size_bytes: u64,
    /// Fraction of the token ring each flush covers, in (0, 1].
    pub flush_coverage: f64,
    pub seed: u64,
}

/// What a run measured.
#[derive(Debug, Clone, PartialEq)]
pub struct SimResult {
    pub strategy: &'static str,
    pub bytes_flushed: u64,
    /// Flushes plus compaction outputs.
    pub bytes_written: u64,
    pub tasks: u64,
    /// Most live sstables at any point (just after a flush, before its compactions).
    pub max_sstables: usize,
    pub final_sstables: usize,
    /// Largest pending-task estimate seen just after a flush.
    pub max_pending: u64,
    /// Whether some flush needed more than [`MAX_TASKS_PER_FLUSH`] tasks.
    pub stuck: bool,
}

impl SimResult {
    pub fn write_amplification(&self) -> f64 {
        self.bytes_written as f64 / self.bytes_flushed.max(1) as f64
    }
}

/// xorshift64*: enough randomness for flush placement, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

struct State {
    sstables: Vec<SstableView>,
    next_id: u64,
    bytes_written: u64,
}

impl State {
    fn view(&mut self, size: u64, first: i64, last: i64, like: &SstableView) -> SstableView {
        self.next_id += 1;
        SstableView {
            id: self.next_id,
            size_bytes: size,
            first_token: first,
            last_token: last,
            ..like.clone()
        }
    }

    /// Applies `task` at once; returns the sstables it wrote.
    fn apply(&mut self, task: &Task, now: i64) -> Vec<SstableView> {
        let inputs = task.inputs();
        let (taken, kept): (Vec<SstableView>, Vec<SstableView>) =
            std::mem::take(&mut self.sstables)
                .into_iter()
                .partition(|s| inputs.contains(&s.id));
        self.sstables = kept;
        let outputs = match task {
            Task::DropExpired { .. } => Vec::new(),
            Task::TombstoneCompaction { .. } => taken
                .iter()
                .map(|s| {
                    let like = SstableView {
                        created_at_seconds: now,
                        ..s.clone()
                    };
                    self.view(s.size_bytes, s.first_token, s.last_token, &like)
                })
                .collect(),
            Task::Compact {
                output_level,
                max_output_bytes,
                shard_boundaries,
                ..
            } => self.merge(
                &taken,
                *output_level,
                *max_output_bytes,
                shard_boundaries,
                now,
            ),
        };
        self.bytes_written += outputs.iter().map(|s| s.size_bytes).sum::<u64>();
        self.sstables.extend(outputs.iter().cloned());
        outputs
    }

    fn merge(
        &mut self,
        inputs: &[SstableView],
        level: u32,
        max_output_bytes: u64,
        boundaries: &[i64],
        now: i64,
    ) -> Vec<SstableView> {
        let (Some(first), Some(last)) = (
            inputs.iter().map(|s| s.first_token).min(),
            inputs.iter().map(|s| s.last_token).max(),
        ) else {
            return Vec::new();
        };
        let total: u64 = inputs.iter().map(|s| s.size_bytes).sum();
        let like = SstableView {
            level,
            min_timestamp: inputs.iter().map(|s| s.min_timestamp).min().unwrap_or(0),
            max_timestamp: inputs.iter().map(|s| s.max_timestamp).max().unwrap_or(0),
            created_at_seconds: now,
            compacting: false,
            ..SstableView::new(0, 0)
        };
        let width = i128::from(last) - i128::from(first) + 1;
        // Shard segments [a, b] inside [first, last].
        let mut segments = Vec::new();
        let mut start = first;
        for &b in boundaries.iter().filter(|&&b| b > first && b <= last) {
            segments.push((start, b - 1));
            start = b;
        }
        segments.push((start, last));
        let mut outputs = Vec::new();
        for (a, b) in segments {
            let seg_width = i128::from(b) - i128::from(a) + 1;
            let seg_bytes = (total as f64 * seg_width as f64 / width as f64) as u64;
            let pieces = seg_bytes.div_ceil(max_output_bytes.max(1)).max(1);
            let step = seg_width / i128::from(pieces);
            for p in 0..pieces {
                let lo = i128::from(a) + step * i128::from(p);
                let hi = if p + 1 == pieces {
                    i128::from(b)
                } else {
                    lo + step - 1
                };
                let size = seg_bytes / pieces;
                outputs.push(self.view(size, lo as i64, hi as i64, &like));
            }
        }
        outputs
    }
}

/// Runs the load through `strategy`.
pub fn simulate(strategy: &mut dyn Strategy, config: &SimConfig) -> SimResult {
    let mut rng = Rng(config.seed | 1);
    let mut state = State {
        sstables: Vec::new(),
        next_id: 0,
        bytes_written: 0,
    };
    let mut result = SimResult {
        strategy: strategy.name(),
        bytes_flushed: 0,
        bytes_written: 0,
        tasks: 0,
        max_sstables: 0,
        final_sstables: 0,
        max_pending: 0,
        stuck: false,
    };
    let coverage = config.flush_coverage.clamp(f64::EPSILON, 1.0);
    for i in 0..config.flushes {
        let now = i64::from(i) * SECONDS_PER_FLUSH;
        let (first, last) = if coverage >= 1.0 {
            (i64::MIN, i64::MAX)
        } else {
            let width = (coverage * u64::MAX as f64) as u64;
            let start = rng.next() % (u64::MAX - width);
            let first = (i128::from(i64::MIN) + i128::from(start)) as i64;
            (first, first.saturating_add(width as i64))
        };
        let ts = now * 1_000_000;
        let like = SstableView {
            level: strategy.level_of_new_sstable(),
            min_timestamp: ts,
            max_timestamp: ts,
            max_local_deletion_time: NO_DELETION_TIME,
            created_at_seconds: now,
            ..SstableView::new(0, 0)
        };
        let flushed = state.view(config.flush_size_bytes, first, last, &like);
        strategy.on_flush(&flushed);
        state.sstables.push(flushed);
        state.bytes_written += config.flush_size_bytes;
        result.bytes_flushed += config.flush_size_bytes;
        result.max_sstables = result.max_sstables.max(state.sstables.len());
        result.max_pending = result
            .max_pending
            .max(strategy.pending_tasks(&state.sstables));
        let mut done = 0;
        while let Some(task) = strategy.next_task(&state.sstables, now, 0) {
            let outputs = state.apply(&task, now);
            strategy.on_completed(&task, &outputs);
            result.tasks += 1;
            done += 1;
            if done >= MAX_TASKS_PER_FLUSH {
                result.stuck = true;
                break;
            }
        }
    }
    result.bytes_written = state.bytes_written;
    result.final_sstables = state.sstables.len();
    result
}

/// One line of the table printed by the simulator test.
pub fn format_row(label: &str, r: &SimResult) -> String {
    format!(
        "| {label:<24} | {:>6.2} | {:>7} | {:>5} | {:>5} | {:>7} |{}",
        r.write_amplification(),
        r.tasks,
        r.max_sstables,
        r.final_sstables,
        r.max_pending,
        if r.stuck { " stuck" } else { "" }
    )
}

#[cfg(test)]
mod tests;
