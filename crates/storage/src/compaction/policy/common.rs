//! Rules every strategy shares: dropping fully expired sstables without rewriting them, and
//! single-sstable tombstone compactions (`tombstone_threshold`,
//! `tombstone_compaction_interval`, `unchecked_tombstone_compaction`).
//!
//! Both follow Cassandra's `CompactionController.getFullyExpiredSSTables` and
//! `AbstractCompactionStrategy.worthDroppingTombstones`. One approximation: where Cassandra
//! estimates how many of an sstable's keys fall outside its overlapping sstables from the
//! index summary, we assume keys are spread evenly over the sstable's token range.

use super::{SstableView, Task};

/// Default `tombstone_threshold`.
pub const DEFAULT_TOMBSTONE_THRESHOLD: f64 = 0.2;
/// Default `tombstone_compaction_interval`, seconds.
pub const DEFAULT_TOMBSTONE_COMPACTION_INTERVAL_SECONDS: i64 = 86_400;

/// Options common to all strategies (the schema's `common()` accessor converts to this).
#[derive(Debug, Clone, PartialEq)]
pub struct CommonOptions {
    /// `enabled`: when false, no background task is chosen at all.
    pub enabled: bool,
    pub tombstone_threshold: f64,
    pub tombstone_compaction_interval_seconds: i64,
    pub unchecked_tombstone_compaction: bool,
    /// Whether single-sstable tombstone compactions run. True except for TWCS tables that set
    /// none of `tombstone_threshold`, `tombstone_compaction_interval` and
    /// `unchecked_tombstone_compaction` (Cassandra disables them there, CASSANDRA-14496);
    /// the converter sets it.
    pub tombstone_compactions: bool,
    /// `provide_overlapping_tombstones`: what the executor drops because overlapping sstables
    /// outside a compaction shadow it (the policy itself ignores it).
    pub provide_overlapping_tombstones: crate::compaction::shadow::ShadowMode,
}

impl Default for CommonOptions {
    fn default() -> Self {
        CommonOptions {
            enabled: true,
            tombstone_threshold: DEFAULT_TOMBSTONE_THRESHOLD,
            tombstone_compaction_interval_seconds: DEFAULT_TOMBSTONE_COMPACTION_INTERVAL_SECONDS,
            unchecked_tombstone_compaction: false,
            tombstone_compactions: true,
            provide_overlapping_tombstones: crate::compaction::shadow::ShadowMode::None,
        }
    }
}

/// The fully expired sstables among `candidates`, given every live sstable in `all` (which
/// may include the candidates) and the smallest timestamp held by any memtable
/// (`i64::MAX` when they are empty).
///
/// A candidate qualifies when its `max_local_deletion_time < gc_before` (nothing live, every
/// tombstone purgeable) and its `max_timestamp` is below the minimum timestamp of every
/// sstable overlapping it that still holds live or unpurgeable data (so it shadows nothing),
/// and below the memtables' minimum. With `ignore_overlaps`
/// (`unsafe_aggressive_sstable_expiration`) only the first condition is checked.
pub fn fully_expired(
    candidates: &[&SstableView],
    all: &[SstableView],
    gc_before: i32,
    memtable_min_timestamp: i64,
    ignore_overlaps: bool,
) -> Vec<u64> {
    let mut expired = Vec::new();
    for c in candidates {
        if c.max_local_deletion_time >= gc_before {
            continue;
        }
        if ignore_overlaps {
            expired.push(c.id);
            continue;
        }
        let shadowed_min = all
            .iter()
            .filter(|o| o.id != c.id && o.max_local_deletion_time >= gc_before && o.overlaps(c))
            .map(|o| o.min_timestamp)
            .fold(memtable_min_timestamp, i64::min);
        if c.max_timestamp < shadowed_min {
            expired.push(c.id);
        }
    }
    expired
}

/// Throttle for the expired-sstable check (`expired_sstable_check_frequency_seconds` in TWCS
/// and UCS; 0 checks on every call).
#[derive(Debug, Clone, Default)]
pub struct ExpiredCheck {
    pub frequency_seconds: i64,
    last_check_seconds: Option<i64>,
}

impl ExpiredCheck {
    pub fn new(frequency_seconds: i64) -> Self {
        ExpiredCheck {
            frequency_seconds,
            last_check_seconds: None,
        }
    }

    /// A [`Task::DropExpired`] for the uncompacting fully expired sstables, if the check is
    /// due and finds any.
    pub fn task(
        &mut self,
        sstables: &[SstableView],
        now_seconds: i64,
        gc_before: i32,
        ignore_overlaps: bool,
    ) -> Option<Task> {
        if let Some(last) = self.last_check_seconds {
            if now_seconds.saturating_sub(last) < self.frequency_seconds {
                return None;
            }
        }
        self.last_check_seconds = Some(now_seconds);
        let candidates: Vec<&SstableView> = sstables.iter().filter(|s| !s.compacting).collect();
        let inputs = fully_expired(&candidates, sstables, gc_before, i64::MAX, ignore_overlaps);
        (!inputs.is_empty()).then_some(Task::DropExpired { inputs })
    }
}

/// Whether a single-sstable tombstone compaction of `sstable` is worth running.
pub fn worth_dropping_tombstones(
    sstable: &SstableView,
    all: &[SstableView],
    options: &CommonOptions,
    now_seconds: i64,
    gc_before: i32,
) -> bool {
    if !options.tombstone_compactions {
        return false;
    }
    // Estimates can be wrong; without this wait a compaction that purged nothing would be
    // chosen again at once, forever.
    let ready_at = sstable
        .created_at_seconds
        .saturating_add(options.tombstone_compaction_interval_seconds);
    if now_seconds < ready_at {
        return false;
    }
    let ratio = sstable.droppable_tombstone_ratio;
    if ratio <= options.tombstone_threshold {
        return false;
    }
    if options.unchecked_tombstone_compaction {
        return true;
    }
    let overlapping: Vec<&SstableView> = all
        .iter()
        .filter(|o| o.id != sstable.id && o.overlaps(sstable))
        .collect();
    if overlapping.is_empty() {
        return true;
    }
    if !fully_expired(&[sstable], all, gc_before, i64::MAX, false).is_empty() {
        return true;
    }
    // Only the keys outside every overlapping sstable can lose their tombstones for sure.
    let outside = uncovered_fraction(sstable, &overlapping);
    outside * ratio > options.tombstone_threshold
}

/// Fraction of `s`'s token range that none of `others` covers.
pub fn uncovered_fraction(s: &SstableView, others: &[&SstableView]) -> f64 {
    let mut ranges: Vec<(i64, i64)> = others
        .iter()
        .map(|o| {
            (
                o.first_token.max(s.first_token),
                o.last_token.min(s.last_token),
            )
        })
        .filter(|(a, b)| a <= b)
        .collect();
    ranges.sort_unstable();
    let mut covered = 0.0;
    let mut current: Option<(i64, i64)> = None;
    for (a, b) in ranges {
        current = match current {
            Some((ca, cb)) if a <= cb.saturating_add(1) => Some((ca, cb.max(b))),
            Some((ca, cb)) => {
                covered += super::token_span(ca, cb);
                Some((a, b))
            }
            None => Some((a, b)),
        };
    }
    if let Some((ca, cb)) = current {
        covered += super::token_span(ca, cb);
    }
    let width = super::token_span(s.first_token, s.last_token);
    ((width - covered) / width).clamp(0.0, 1.0)
}

/// The uncompacting sstables worth a tombstone compaction.
pub fn tombstone_candidates<'a>(
    sstables: &'a [SstableView],
    options: &CommonOptions,
    now_seconds: i64,
    gc_before: i32,
) -> Vec<&'a SstableView> {
    sstables
        .iter()
        .filter(|s| !s.compacting)
        .filter(|s| worth_dropping_tombstones(s, sstables, options, now_seconds, gc_before))
        .collect()
}
