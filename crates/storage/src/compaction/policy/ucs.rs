//! Unified (UCS, Cassandra 5.0): levels by *density* (size / fraction of the token ring
//! covered), a compaction when `threshold` sstables of a level overlap, output split at fixed
//! shard boundaries.
//!
//! Per level i, the scaling parameter W (the last one repeats) gives the fanout
//! `f = 2 + |W|` and the threshold `t = f` for W > 0 (tiered), `t = 2` for W < 0 (levelled),
//! and `f = t = 2` for W = 0. Levels (Cassandra's `Controller.getBaseSstableSize` and
//! `getMaxLevelDensity`): level 0 holds densities below
//! `floor(max(1 MiB, flush_size) * (1 - 0.9 / f0) * f0)`, and level i+1 densities below
//! `floor(max_i * f_{i+1})`. For a constant f this is `floor(log_f(d / (m * (1 - 0.9/f))))`
//! with m the flush size: the `log_f(d / m)` of the design doc, shifted down by the small
//! leeway Cassandra keeps so slightly small flushes still count as one.
//!
//! Within a level, sstables are grouped into overlap sets (every token's set of covering
//! sstables is inside one set); a set with at least t members triggers a compaction of its
//! transitive closure (sets sharing an sstable). Among candidates, the highest overlap wins,
//! then the lowest level, then the lowest token (Cassandra picks randomly among equals; we
//! stay deterministic). Output shards follow `Controller.getNumShards`.
//!
//! Assumes the node owns the whole token ring (no per-disk or local-range coverage).

use super::common::{tombstone_candidates, CommonOptions, ExpiredCheck};
use super::{total_bytes, Reason, SstableView, Strategy, Task, TOKEN_RING_SIZE};

pub const DEFAULT_SCALING_W: i32 = 2; // T4
pub const DEFAULT_TARGET_SSTABLE_SIZE_BYTES: u64 = 1 << 30;
pub const DEFAULT_MIN_SSTABLE_SIZE_BYTES: u64 = 100 << 20;
pub const DEFAULT_BASE_SHARD_COUNT: u32 = 4;
pub const DEFAULT_SSTABLE_GROWTH: f64 = 0.333;
pub const DEFAULT_EXPIRED_CHECK_FREQUENCY_SECONDS: i64 = 600;
/// Levels considered (densities beyond the last level stay in it).
pub const MAX_LEVELS: usize = 32;
/// The flush size assumed before any flush was seen.
pub const MIN_FLUSH_SIZE_BYTES: u64 = 1 << 20;
/// Maximum shard split exponent (`base_shard_count << 20` shards at most).
pub const MAX_SHARD_SHIFT: u32 = 20;
/// Coverage below this (a single-partition sstable) counts as the whole ring.
pub const MIN_TOKEN_COVERAGE: f64 = f64::EPSILON;

/// UCS options; sizes in bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct UnifiedOptions {
    /// W per level, the last repeating; never empty in practice (empty means T4).
    pub scaling_parameters: Vec<i32>,
    pub target_sstable_size_bytes: u64,
    pub min_sstable_size_bytes: u64,
    pub base_shard_count: u32,
    pub sstable_growth: f64,
    /// 0 means "use the observed flush size".
    pub flush_size_override_bytes: u64,
    /// 0 means no limit.
    pub max_sstables_to_compact: u32,
    pub expired_sstable_check_frequency_seconds: i64,
    pub unsafe_aggressive_sstable_expiration: bool,
}

impl Default for UnifiedOptions {
    fn default() -> Self {
        UnifiedOptions {
            scaling_parameters: vec![DEFAULT_SCALING_W],
            target_sstable_size_bytes: DEFAULT_TARGET_SSTABLE_SIZE_BYTES,
            min_sstable_size_bytes: DEFAULT_MIN_SSTABLE_SIZE_BYTES,
            base_shard_count: DEFAULT_BASE_SHARD_COUNT,
            sstable_growth: DEFAULT_SSTABLE_GROWTH,
            flush_size_override_bytes: 0,
            max_sstables_to_compact: 0,
            expired_sstable_check_frequency_seconds: DEFAULT_EXPIRED_CHECK_FREQUENCY_SECONDS,
            unsafe_aggressive_sstable_expiration: false,
        }
    }
}

impl UnifiedOptions {
    /// W of `level`.
    pub fn w(&self, level: usize) -> i32 {
        let ws = &self.scaling_parameters;
        ws.get(level)
            .or(ws.last())
            .copied()
            .unwrap_or(DEFAULT_SCALING_W)
    }

    pub fn fanout(&self, level: usize) -> u32 {
        2 + self.w(level).unsigned_abs()
    }

    pub fn threshold(&self, level: usize) -> u32 {
        let w = self.w(level);
        if w > 0 {
            2 + w.unsigned_abs()
        } else {
            2
        }
    }

    /// Upper density bound (exclusive) of each level, given the flush size.
    pub fn level_bounds(&self, flush_size_bytes: u64) -> Vec<f64> {
        let f0 = f64::from(self.fanout(0));
        let base = flush_size_bytes.max(MIN_FLUSH_SIZE_BYTES) as f64 * (1.0 - 0.9 / f0);
        let mut bounds = Vec::with_capacity(MAX_LEVELS);
        let mut min = base;
        for level in 0..MAX_LEVELS {
            let max = (min * f64::from(self.fanout(level))).floor();
            bounds.push(max);
            min = max;
        }
        bounds
    }

    /// Number of output shards for a compaction whose result has `density` bytes per ring.
    pub fn num_shards(&self, density: f64) -> u64 {
        let base = u64::from(self.base_shard_count.max(1));
        if self.min_sstable_size_bytes > 0 {
            let count = density / self.min_sstable_size_bytes as f64;
            if count < base as f64 {
                let lowest_base_bit = base & base.wrapping_neg();
                return highest_one_bit(count).min(lowest_base_bit);
            }
        }
        let target = self.target_sstable_size_bytes.max(1) as f64;
        if self.sstable_growth >= 1.0 {
            return base;
        }
        if self.sstable_growth <= 0.0 {
            let count = density / (target * std::f64::consts::FRAC_1_SQRT_2 * base as f64);
            let count = count.min(f64::from(1u32 << MAX_SHARD_SHIFT));
            return base * highest_one_bit(count);
        }
        let count = density / (target * base as f64);
        let pow = count.log2() * (1.0 - self.sstable_growth) + 0.5;
        if pow >= f64::from(MAX_SHARD_SHIFT) {
            base << MAX_SHARD_SHIFT
        } else if pow >= 0.0 {
            base << (pow as u32)
        } else {
            base // also NaN
        }
    }
}

/// Java's `Integer.highestOneBit((int) count | 1)` for a non-negative count.
fn highest_one_bit(count: f64) -> u64 {
    let n = (count as u64).min(u64::from(u32::MAX >> 1)) | 1;
    1u64 << (63 - n.leading_zeros())
}

/// Density of an sstable: bytes per whole ring.
pub fn density(s: &SstableView) -> f64 {
    let coverage = s.token_coverage();
    let coverage = if coverage >= MIN_TOKEN_COVERAGE {
        coverage
    } else {
        1.0
    };
    s.size_bytes as f64 / coverage
}

/// Overlap sets of `sstables` (sorted by first token inside): every token covered by some
/// sstables has all of them in one set; sets come in token order.
pub fn overlap_sets<'a>(sstables: &[&'a SstableView]) -> Vec<Vec<&'a SstableView>> {
    let mut sorted = sstables.to_vec();
    sorted.sort_by_key(|s| (s.first_token, s.id));
    let mut sets = Vec::new();
    let mut active: Vec<&SstableView> = Vec::new();
    for s in sorted {
        // Every removal follows a push, so the active set is new (maximal) when emitted.
        if active.iter().any(|a| a.last_token < s.first_token) {
            sets.push(active.clone());
            active.retain(|a| a.last_token >= s.first_token);
        }
        active.push(s);
    }
    if !active.is_empty() {
        sets.push(active);
    }
    sets
}

/// A compaction candidate within one level.
#[derive(Debug, Clone)]
struct Bucket<'a> {
    level: usize,
    overlap: usize,
    members: Vec<&'a SstableView>,
}

/// The Unified strategy.
#[derive(Debug, Clone)]
pub struct Unified {
    pub options: UnifiedOptions,
    pub common: CommonOptions,
    /// Flush size in use (whole MiB), from the override or observed flushes.
    flush_size_bytes: u64,
    expired: ExpiredCheck,
}

impl Unified {
    pub fn new(options: UnifiedOptions, common: CommonOptions) -> Self {
        let expired = ExpiredCheck::new(options.expired_sstable_check_frequency_seconds);
        let flush_size_bytes = options.flush_size_override_bytes;
        Unified {
            options,
            common,
            flush_size_bytes,
            expired,
        }
    }

    pub fn flush_size_bytes(&self) -> u64 {
        self.flush_size_bytes
    }

    /// Level of an sstable of the given density.
    pub fn level_of_density(&self, density: f64) -> usize {
        let bounds = self.options.level_bounds(self.flush_size_bytes);
        bounds
            .iter()
            .position(|&max| density < max)
            .unwrap_or(MAX_LEVELS - 1)
    }

    /// Uncompacting sstables by level.
    pub fn levels<'a>(&self, sstables: &'a [SstableView]) -> Vec<Vec<&'a SstableView>> {
        let mut levels: Vec<Vec<&SstableView>> = vec![Vec::new(); MAX_LEVELS];
        for s in super::uncompacting(sstables) {
            levels[self.level_of_density(density(s))].push(s);
        }
        while levels.last().is_some_and(Vec::is_empty) {
            levels.pop();
        }
        levels
    }

    fn buckets<'a>(&self, sstables: &'a [SstableView]) -> Vec<Bucket<'a>> {
        let mut buckets = Vec::new();
        for (level, members) in self.levels(sstables).iter().enumerate() {
            let threshold = self.options.threshold(level) as usize;
            let sets = overlap_sets(members);
            let mut i = 0;
            while i < sets.len() {
                // A run of consecutive sets sharing sstables is one transitive component.
                let mut j = i + 1;
                while j < sets.len()
                    && sets[j]
                        .iter()
                        .any(|s| sets[j - 1].iter().any(|p| p.id == s.id))
                {
                    j += 1;
                }
                let overlap = sets[i..j].iter().map(Vec::len).max().unwrap_or(0);
                if overlap >= threshold {
                    let mut union: Vec<&SstableView> = Vec::new();
                    for s in sets[i..j].iter().flatten() {
                        if union.iter().all(|u| u.id != s.id) {
                            union.push(s);
                        }
                    }
                    buckets.push(Bucket {
                        level,
                        overlap,
                        members: union,
                    });
                }
                i = j;
            }
        }
        buckets
    }

    /// Shard boundaries strictly inside the token span of `inputs`.
    pub fn shard_boundaries(&self, inputs: &[&SstableView]) -> Vec<i64> {
        let (Some(first), Some(last)) = (
            inputs.iter().map(|s| s.first_token).min(),
            inputs.iter().map(|s| s.last_token).max(),
        ) else {
            return Vec::new();
        };
        let coverage = super::token_span(first, last) / TOKEN_RING_SIZE;
        let coverage = if coverage >= MIN_TOKEN_COVERAGE {
            coverage
        } else {
            1.0
        };
        let shards = self.num_shards_for(total_bytes(inputs.iter().copied()) as f64 / coverage);
        let width = (1u128 << 64) / u128::from(shards);
        (1..shards)
            .map(|k| (i128::from(i64::MIN) + (width * u128::from(k)) as i128) as i64)
            .filter(|&b| b > first && b <= last)
            .collect()
    }

    fn num_shards_for(&self, density: f64) -> u64 {
        self.options.num_shards(density).max(1)
    }
}

impl Strategy for Unified {
    fn next_task(
        &mut self,
        sstables: &[SstableView],
        now_seconds: i64,
        gc_before: i32,
    ) -> Option<Task> {
        if !self.common.enabled {
            return None;
        }
        let aggressive = self.options.unsafe_aggressive_sstable_expiration;
        if let Some(task) = self
            .expired
            .task(sstables, now_seconds, gc_before, aggressive)
        {
            return Some(task);
        }
        let best = self.buckets(sstables).into_iter().min_by(|a, b| {
            b.overlap
                .cmp(&a.overlap)
                .then(a.level.cmp(&b.level))
                .then(a.members[0].first_token.cmp(&b.members[0].first_token))
        });
        if let Some(bucket) = best {
            let mut members = bucket.members;
            let limit = self.options.max_sstables_to_compact as usize;
            if limit > 0 {
                // Oldest first, so time order is kept when the bucket is cut short.
                members.sort_by_key(|s| s.id);
                members.truncate(limit.max(self.options.threshold(bucket.level) as usize));
            }
            let shard_boundaries = self.shard_boundaries(&members);
            let mut inputs: Vec<u64> = members.iter().map(|s| s.id).collect();
            inputs.sort_unstable();
            return Some(Task::Compact {
                inputs,
                output_level: 0,
                max_output_bytes: u64::MAX,
                shard_boundaries,
                reason: Reason::Unified {
                    level: bucket.level as u32,
                },
            });
        }
        tombstone_candidates(sstables, &self.common, now_seconds, gc_before)
            .into_iter()
            .max_by_key(|s| (s.size_bytes, std::cmp::Reverse(s.id)))
            .map(|s| Task::TombstoneCompaction { input: s.id })
    }

    /// The number of buckets at or over their level's threshold.
    fn pending_tasks(&self, sstables: &[SstableView]) -> u64 {
        self.buckets(sstables).len() as u64
    }

    fn on_flush(&mut self, flushed: &SstableView) {
        if self.options.flush_size_override_bytes > 0 || flushed.size_bytes == 0 {
            return;
        }
        let observed = flushed.size_bytes as f64;
        let current = self.flush_size_bytes as f64;
        if self.flush_size_bytes == 0 || (1.0 - current / observed).abs() > 0.5 {
            // Rounded up to a whole MiB, as Cassandra does.
            self.flush_size_bytes = flushed.size_bytes.div_ceil(1 << 20) << 20;
        }
    }

    #[cfg(test)]
    fn learned_flush_size_bytes(&self) -> Option<u64> {
        Some(self.flush_size_bytes)
    }

    fn name(&self) -> &'static str {
        "Unified"
    }
}
