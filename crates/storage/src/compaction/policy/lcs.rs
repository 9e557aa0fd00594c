//! Leveled (LCS): L0 receives flushes; L1.. each hold non-overlapping sstables of
//! `sstable_size_in_mb`, level n holding up to `fanout^n` of them.
//!
//! Choice (Cassandra's `LeveledManifest.getCompactionCandidates`):
//! 1. From the highest level down to L1, the first level whose score (bytes of its
//!    uncompacting sstables / capacity) exceeds 1.001 compacts, unless L0 holds more than 32
//!    sstables, in which case STCS runs inside L0 first. The level's sstable is picked round
//!    robin (the first whose first token is past the last one compacted from that level) and
//!    compacted with every sstable of the next level it overlaps.
//! 2. Otherwise L0: oldest sstables first (by max timestamp), each with the L0 sstables it
//!    overlaps, at most `max_threshold`; if they add up to more than one sstable size they are
//!    compacted with the L1 sstables under their token span and go to L1, else they are merged
//!    within L0. If no such set exists, STCS in L0 when it holds more than 32 sstables.
//! 3. Otherwise a single-sstable tombstone compaction, highest level first.
//!
//! Not modelled: Cassandra's "starved level" rule (pulling an L(n+1) sstable into a
//! compaction when a level has not been compacted for 25 rounds), and suspect sstables.
//! Levels are taken from the views; an sstable whose level overlaps another of the same level
//! (e.g. after a strategy switch) is treated as L0, as Cassandra does when adding it.

use super::common::{tombstone_candidates, CommonOptions, ExpiredCheck};
use super::stcs::{self, SizeTieredOptions};
use super::{total_bytes, Reason, SstableView, Strategy, Task};

/// Levels L0..L8.
pub const MAX_LEVEL_COUNT: usize = 9;
/// L0's capacity in sstables (its score is bytes / (4 * sstable size)).
pub const L0_CAPACITY_SSTABLES: u64 = 4;
/// Above this many sstables in L0, STCS runs inside L0 before higher levels.
pub const MAX_COMPACTING_L0: usize = 32;
/// A level compacts when its score exceeds this.
pub const LEVEL_SCORE_THRESHOLD: f64 = 1.001;
pub const DEFAULT_SSTABLE_SIZE_IN_MB: u32 = 160;
pub const DEFAULT_FANOUT_SIZE: u32 = 10;
const MIB: u64 = 1024 * 1024;

/// LCS options.
#[derive(Debug, Clone, PartialEq)]
pub struct LeveledOptions {
    pub sstable_size_in_mb: u32,
    pub fanout_size: u32,
    /// `min_threshold`/`max_threshold` and the STCS options used inside L0.
    pub l0: SizeTieredOptions,
}

impl Default for LeveledOptions {
    fn default() -> Self {
        LeveledOptions {
            sstable_size_in_mb: DEFAULT_SSTABLE_SIZE_IN_MB,
            fanout_size: DEFAULT_FANOUT_SIZE,
            l0: SizeTieredOptions::default(),
        }
    }
}

impl LeveledOptions {
    pub fn sstable_size_bytes(&self) -> u64 {
        u64::from(self.sstable_size_in_mb.max(1)) * MIB
    }

    /// Capacity of `level` in bytes: 4 sstables for L0, `fanout^level` sstables above.
    pub fn max_bytes_for_level(&self, level: usize) -> u64 {
        let size = self.sstable_size_bytes();
        if level == 0 {
            return L0_CAPACITY_SSTABLES.saturating_mul(size);
        }
        let bytes = f64::from(self.fanout_size).powi(level as i32) * size as f64;
        if bytes >= u64::MAX as f64 {
            u64::MAX
        } else {
            bytes as u64
        }
    }
}

/// The sstables of each level L0..L8, with overlapping same-level sstables demoted to L0.
pub fn levels(sstables: &[SstableView]) -> Vec<Vec<&SstableView>> {
    let mut levels: Vec<Vec<&SstableView>> = vec![Vec::new(); MAX_LEVEL_COUNT];
    for s in sstables {
        let level = (s.level as usize).min(MAX_LEVEL_COUNT - 1);
        levels[level].push(s);
    }
    for level in 1..MAX_LEVEL_COUNT {
        let mut members = std::mem::take(&mut levels[level]);
        members.sort_by_key(|s| (s.first_token, s.id));
        let mut kept: Vec<&SstableView> = Vec::with_capacity(members.len());
        for s in members {
            match kept.last() {
                Some(prev) if prev.last_token >= s.first_token => levels[0].push(s),
                _ => kept.push(s),
            }
        }
        levels[level] = kept;
    }
    levels
}

/// The Leveled strategy.
#[derive(Debug, Clone)]
pub struct Leveled {
    pub options: LeveledOptions,
    pub common: CommonOptions,
    /// Per level, the first token of the sstable last compacted out of it (round robin).
    last_compacted_first_token: [Option<i64>; MAX_LEVEL_COUNT],
    expired: ExpiredCheck,
}

impl Leveled {
    pub fn new(options: LeveledOptions, common: CommonOptions) -> Self {
        Leveled {
            options,
            common,
            last_compacted_first_token: [None; MAX_LEVEL_COUNT],
            expired: ExpiredCheck::new(0),
        }
    }

    /// "Unleveled sstables": the number in L0.
    pub fn unleveled_count(&self, sstables: &[SstableView]) -> usize {
        levels(sstables)[0].len()
    }

    /// (sstable count, bytes) per level, for `tablestats`.
    pub fn level_sizes(&self, sstables: &[SstableView]) -> Vec<(usize, u64)> {
        levels(sstables)
            .iter()
            .map(|l| (l.len(), total_bytes(l.iter().copied())))
            .collect()
    }

    /// Score of `level`: bytes of its uncompacting sstables over its capacity.
    pub fn score(&self, levels: &[Vec<&SstableView>], level: usize) -> f64 {
        let bytes = total_bytes(levels[level].iter().copied().filter(|s| !s.compacting));
        bytes as f64 / self.options.max_bytes_for_level(level) as f64
    }

    fn l0_stcs(&self, levels: &[Vec<&SstableView>]) -> Option<Task> {
        if levels[0].len() <= MAX_COMPACTING_L0 {
            return None;
        }
        let l0: Vec<&SstableView> = levels[0]
            .iter()
            .copied()
            .filter(|s| !s.compacting)
            .collect();
        let inputs = stcs::choose(&l0, &self.options.l0)?;
        Some(Task::Compact {
            inputs,
            output_level: 0,
            max_output_bytes: u64::MAX,
            shard_boundaries: Vec::new(),
            reason: Reason::LeveledL0SizeTiered,
        })
    }

    /// Candidates from `level` >= 1: one sstable (round robin) plus what it overlaps above.
    fn candidates_for_level(&self, levels: &[Vec<&SstableView>], level: usize) -> Vec<u64> {
        let members = &levels[level]; // sorted by first token
        if members.is_empty() || level + 1 >= MAX_LEVEL_COUNT {
            return Vec::new();
        }
        let start = match self.last_compacted_first_token[level] {
            Some(pointer) => members
                .iter()
                .position(|s| s.first_token > pointer)
                .unwrap_or(0),
            None => 0,
        };
        let next = &levels[level + 1];
        for k in 0..members.len() {
            let s = members[(start + k) % members.len()];
            let mut set: Vec<&SstableView> = vec![s];
            set.extend(next.iter().copied().filter(|n| n.overlaps(s)));
            if set.iter().all(|c| !c.compacting) {
                return set.iter().map(|c| c.id).collect();
            }
        }
        Vec::new()
    }

    /// Candidates from L0 (with their L1 overlaps when they make a full sstable).
    fn candidates_for_l0<'a>(&self, levels: &[Vec<&'a SstableView>]) -> Vec<&'a SstableView> {
        let l0 = &levels[0];
        let compacting_l0: Vec<&SstableView> =
            l0.iter().copied().filter(|s| s.compacting).collect();
        let compacting_span = span(&compacting_l0);
        let touches_compacting = |s: &SstableView| {
            compacting_span.is_some_and(|(a, b)| s.first_token <= b && a <= s.last_token)
        };
        let mut aged: Vec<&SstableView> = l0.clone();
        aged.sort_by_key(|s| (s.max_timestamp, s.id));
        let max_threshold = self.options.l0.max_threshold.max(1) as usize;
        let mut remaining: Vec<&SstableView> = aged.clone();
        let mut candidates: Vec<&SstableView> = Vec::new();
        for s in &aged {
            if candidates.iter().any(|c| c.id == s.id) {
                continue;
            }
            let mut overlapped: Vec<&SstableView> = vec![s];
            overlapped.extend(
                remaining
                    .iter()
                    .copied()
                    .filter(|r| r.id != s.id && r.overlaps(s)),
            );
            if overlapped.iter().any(|o| o.compacting) {
                continue;
            }
            for n in overlapped {
                if !touches_compacting(n) && candidates.iter().all(|c| c.id != n.id) {
                    candidates.push(n);
                }
                remaining.retain(|r| r.id != n.id);
            }
            if candidates.len() > max_threshold {
                candidates.sort_by_key(|c| (c.max_timestamp, c.id));
                candidates.truncate(max_threshold);
                break;
            }
        }
        if total_bytes(candidates.iter().copied()) > self.options.sstable_size_bytes() {
            let Some((first, last)) = span(&candidates) else {
                return Vec::new();
            };
            let l1: Vec<&SstableView> = levels[1]
                .iter()
                .copied()
                .filter(|s| s.first_token <= last && first <= s.last_token)
                .collect();
            if l1.iter().any(|s| s.compacting) {
                return Vec::new();
            }
            if compacting_span.is_some_and(|(a, b)| first <= b && a <= last) {
                return Vec::new();
            }
            candidates.extend(l1);
        }
        if candidates.len() < 2 {
            return Vec::new();
        }
        candidates
    }

    /// Output level: L0 sets smaller than one sstable stay in L0; otherwise one above the
    /// inputs' level (or the highest input level when they span two).
    pub fn next_level(&self, inputs: &[&SstableView]) -> u32 {
        let min = inputs.iter().map(|s| s.level.min(8)).min().unwrap_or(0);
        let max = inputs.iter().map(|s| s.level.min(8)).max().unwrap_or(0);
        if max == 0 && total_bytes(inputs.iter().copied()) < self.options.sstable_size_bytes() {
            0
        } else if min == max {
            max + 1
        } else {
            max
        }
    }

    fn compact(&self, inputs: &[&SstableView], output_level: u32, reason: Reason) -> Task {
        let mut ids: Vec<u64> = inputs.iter().map(|s| s.id).collect();
        ids.sort_unstable();
        Task::Compact {
            inputs: ids,
            output_level,
            max_output_bytes: self.options.sstable_size_bytes(),
            shard_boundaries: Vec::new(),
            reason,
        }
    }

    fn leveled_task(&mut self, sstables: &[SstableView]) -> Option<Task> {
        // Inputs are re-read with their effective level (demoted ones count as L0).
        let mut effective: Vec<SstableView> = Vec::with_capacity(sstables.len());
        for (level, members) in levels(sstables).iter().enumerate() {
            effective.extend(members.iter().map(|s| SstableView {
                level: level as u32,
                ..(*s).clone()
            }));
        }
        let levels = levels(&effective);
        for level in (1..MAX_LEVEL_COUNT - 1).rev() {
            if levels[level].is_empty() || self.score(&levels, level) <= LEVEL_SCORE_THRESHOLD {
                continue;
            }
            if let Some(task) = self.l0_stcs(&levels) {
                return Some(task);
            }
            let ids = self.candidates_for_level(&levels, level);
            if ids.is_empty() {
                continue;
            }
            let inputs: Vec<&SstableView> =
                effective.iter().filter(|s| ids.contains(&s.id)).collect();
            let pointer = inputs
                .iter()
                .filter(|s| s.level as usize == level)
                .map(|s| s.first_token)
                .max();
            self.last_compacted_first_token[level] = pointer;
            let output = self.next_level(&inputs);
            return Some(self.compact(
                &inputs,
                output,
                Reason::Leveled {
                    from_level: level as u32,
                },
            ));
        }
        if levels[0].is_empty() {
            return None;
        }
        let candidates = self.candidates_for_l0(&levels);
        if candidates.is_empty() {
            return self.l0_stcs(&levels);
        }
        let output = self.next_level(&candidates);
        Some(self.compact(&candidates, output, Reason::LeveledL0))
    }
}

/// Smallest first token and largest last token of `sstables`.
fn span(sstables: &[&SstableView]) -> Option<(i64, i64)> {
    let first = sstables.iter().map(|s| s.first_token).min()?;
    let last = sstables.iter().map(|s| s.last_token).max()?;
    Some((first, last))
}

impl Strategy for Leveled {
    fn next_task(
        &mut self,
        sstables: &[SstableView],
        now_seconds: i64,
        gc_before: i32,
    ) -> Option<Task> {
        if !self.common.enabled {
            return None;
        }
        if let Some(task) = self.expired.task(sstables, now_seconds, gc_before, false) {
            return Some(task);
        }
        if let Some(task) = self.leveled_task(sstables) {
            return Some(task);
        }
        // Highest level first; within a level, the largest droppable ratio first.
        let mut worth = tombstone_candidates(sstables, &self.common, now_seconds, gc_before);
        worth.sort_by(|a, b| {
            b.level
                .cmp(&a.level)
                .then(
                    b.droppable_tombstone_ratio
                        .total_cmp(&a.droppable_tombstone_ratio),
                )
                .then(a.id.cmp(&b.id))
        });
        worth
            .first()
            .map(|s| Task::TombstoneCompaction { input: s.id })
    }

    /// Sum over levels of `ceil(max(0, bytes - 1.001 * capacity) / sstable_size)`, plus
    /// `|L0| / max_threshold` when L0 holds more than `max_threshold` sstables.
    fn pending_tasks(&self, sstables: &[SstableView]) -> u64 {
        let levels = levels(sstables);
        let size = self.options.sstable_size_bytes();
        let mut tasks = 0u64;
        for (level, members) in levels.iter().enumerate() {
            let bytes = total_bytes(members.iter().copied());
            let allowed =
                (self.options.max_bytes_for_level(level) as f64 * LEVEL_SCORE_THRESHOLD) as u64;
            tasks += bytes.saturating_sub(allowed).div_ceil(size);
        }
        let max_threshold = self.options.l0.max_threshold.max(1) as usize;
        if levels[0].len() > max_threshold {
            tasks += (levels[0].len() / max_threshold) as u64;
        }
        tasks
    }

    fn name(&self) -> &'static str {
        "Leveled"
    }
}
