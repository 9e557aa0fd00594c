//! SizeTiered (STCS): merge sstables of similar size once `min_threshold` of them exist.
//!
//! Bucketing (Cassandra's `SizeTieredCompactionStrategy.getBuckets`): sstables sorted by size
//! ascending; each joins the first existing bucket (in creation order) whose integer average
//! `avg` satisfies `avg * bucket_low < size < avg * bucket_high`, or where both the sstable
//! and the bucket average are below `min_sstable_size`; otherwise it opens a new bucket.
//! A bucket with at least `min_threshold` sstables is a candidate, trimmed to its
//! `max_threshold` hottest members; the hottest candidate (sum of reads per key) wins.
//!
//! Ties in hotness: Cassandra's comment says "smallest sstables first", but its comparator,
//! used with `Collections.max`, picks the bucket with the *larger* average size (a later
//! DataStax fork kept the behaviour and fixed the comment). We follow the behaviour.
//!
//! Also used by LCS (inside L0 when it is far behind) and TWCS (inside the newest window).

use super::common::{tombstone_candidates, CommonOptions, ExpiredCheck};
use super::{Reason, SstableView, Strategy, Task};

pub const DEFAULT_MIN_THRESHOLD: u32 = 4;
pub const DEFAULT_MAX_THRESHOLD: u32 = 32;
pub const DEFAULT_BUCKET_LOW: f64 = 0.5;
pub const DEFAULT_BUCKET_HIGH: f64 = 1.5;
pub const DEFAULT_MIN_SSTABLE_SIZE_BYTES: u64 = 50 * 1024 * 1024;

/// STCS options (also LCS's L0 fallback and TWCS's newest window).
#[derive(Debug, Clone, PartialEq)]
pub struct SizeTieredOptions {
    pub min_threshold: u32,
    pub max_threshold: u32,
    pub bucket_low: f64,
    pub bucket_high: f64,
    pub min_sstable_size_bytes: u64,
}

impl Default for SizeTieredOptions {
    fn default() -> Self {
        SizeTieredOptions {
            min_threshold: DEFAULT_MIN_THRESHOLD,
            max_threshold: DEFAULT_MAX_THRESHOLD,
            bucket_low: DEFAULT_BUCKET_LOW,
            bucket_high: DEFAULT_BUCKET_HIGH,
            min_sstable_size_bytes: DEFAULT_MIN_SSTABLE_SIZE_BYTES,
        }
    }
}

/// Groups sstables of similar size; each bucket lists indexes into `sstables`, buckets in
/// creation order, members in ascending size.
pub fn get_buckets(sstables: &[&SstableView], options: &SizeTieredOptions) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..sstables.len()).collect();
    order.sort_by_key(|&i| (sstables[i].size_bytes, sstables[i].id));
    // (average size, members)
    let mut buckets: Vec<(u64, Vec<usize>)> = Vec::new();
    let min_size = options.min_sstable_size_bytes;
    for i in order {
        let size = sstables[i].size_bytes;
        let similar = |avg: u64| {
            let (s, a) = (size as f64, avg as f64);
            (s > a * options.bucket_low && s < a * options.bucket_high)
                || (size < min_size && avg < min_size)
        };
        match buckets.iter_mut().find(|(avg, _)| similar(*avg)) {
            Some((avg, members)) => {
                let n = members.len() as u128;
                let total = u128::from(*avg) * n + u128::from(size);
                *avg = u64::try_from(total / (n + 1)).unwrap_or(u64::MAX);
                members.push(i);
            }
            None => buckets.push((size, vec![i])),
        }
    }
    buckets.into_iter().map(|(_, members)| members).collect()
}

/// The bucket to compact: among buckets with at least `min_threshold` members (each trimmed
/// to its `max_threshold` hottest), the hottest; ties go to the larger average size (see the
/// module note). Returns the chosen members as indexes into `sstables`.
pub fn most_interesting_bucket(
    sstables: &[&SstableView],
    buckets: &[Vec<usize>],
    min_threshold: u32,
    max_threshold: u32,
) -> Option<Vec<usize>> {
    let mut best: Option<(f64, u64, Vec<usize>)> = None;
    for bucket in buckets {
        let mut members = bucket.clone();
        // Hottest first; stable on size order for equal hotness.
        members.sort_by(|&a, &b| {
            sstables[b]
                .reads_per_key
                .total_cmp(&sstables[a].reads_per_key)
        });
        members.truncate(max_threshold as usize);
        if members.len() < min_threshold as usize || members.is_empty() {
            continue;
        }
        let hotness: f64 = members.iter().map(|&i| sstables[i].reads_per_key).sum();
        let total: u128 = members
            .iter()
            .map(|&i| u128::from(sstables[i].size_bytes))
            .sum();
        let avg = u64::try_from(total / members.len() as u128).unwrap_or(u64::MAX);
        let better = match &best {
            None => true,
            Some((h, a, _)) => hotness > *h || (hotness == *h && avg > *a),
        };
        if better {
            best = Some((hotness, avg, members));
        }
    }
    best.map(|(_, _, members)| members)
}

/// Cassandra's estimate: sum over buckets with at least `min_threshold` members of
/// `ceil(len / max_threshold)`.
pub fn pending_for(sstables: &[&SstableView], options: &SizeTieredOptions) -> u64 {
    let max = u64::from(options.max_threshold.max(1));
    get_buckets(sstables, options)
        .iter()
        .filter(|b| b.len() >= options.min_threshold as usize)
        .map(|b| (b.len() as u64).div_ceil(max))
        .sum()
}

/// The ids of the STCS choice among `sstables`, if any.
pub fn choose(sstables: &[&SstableView], options: &SizeTieredOptions) -> Option<Vec<u64>> {
    let buckets = get_buckets(sstables, options);
    let chosen = most_interesting_bucket(
        sstables,
        &buckets,
        options.min_threshold,
        options.max_threshold,
    )?;
    let mut ids: Vec<u64> = chosen.iter().map(|&i| sstables[i].id).collect();
    ids.sort_unstable();
    Some(ids)
}

/// The SizeTiered strategy.
#[derive(Debug, Clone)]
pub struct SizeTiered {
    pub options: SizeTieredOptions,
    pub common: CommonOptions,
    expired: ExpiredCheck,
}

impl SizeTiered {
    pub fn new(options: SizeTieredOptions, common: CommonOptions) -> Self {
        SizeTiered {
            options,
            common,
            expired: ExpiredCheck::new(0),
        }
    }
}

impl Strategy for SizeTiered {
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
        let candidates: Vec<&SstableView> = super::uncompacting(sstables).collect();
        if let Some(inputs) = choose(&candidates, &self.options) {
            return Some(Task::Compact {
                inputs,
                output_level: 0,
                max_output_bytes: u64::MAX,
                shard_boundaries: Vec::new(),
                reason: Reason::SizeTiered,
            });
        }
        // Nothing to merge: the largest sstable worth a tombstone compaction, if any.
        tombstone_candidates(sstables, &self.common, now_seconds, gc_before)
            .into_iter()
            .max_by_key(|s| (s.size_bytes, std::cmp::Reverse(s.id)))
            .map(|s| Task::TombstoneCompaction { input: s.id })
    }

    fn pending_tasks(&self, sstables: &[SstableView]) -> u64 {
        let candidates: Vec<&SstableView> = super::uncompacting(sstables).collect();
        pending_for(&candidates, &self.options)
    }

    fn name(&self) -> &'static str {
        "SizeTiered"
    }
}
