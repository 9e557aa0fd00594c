//! TimeWindow (TWCS): sstables grouped into fixed time windows by their max timestamp.
//!
//! Cassandra's `TimeWindowCompactionStrategy`: a window's key is its start, the max
//! timestamp (converted from `timestamp_resolution` to milliseconds, then to whole seconds)
//! rounded down to a multiple of `compaction_window_size` units. Going from the newest window
//! down: the newest window seen so far compacts with STCS once it holds `min_threshold`
//! sstables; any older window compacts as soon as it holds two (at most `max_threshold`, the
//! smallest first). Fully expired sstables are dropped first, checked at most every
//! `expired_sstable_check_frequency_seconds`. Tombstone compactions (the smallest qualifying
//! sstable) only when the table set one of the tombstone options ([`CommonOptions`]).
//!
//! Rounding: we round down (towards minus infinity) where Java's `%` truncates towards zero;
//! the two differ only for timestamps before 1970.

use super::common::{tombstone_candidates, CommonOptions, ExpiredCheck};
use super::stcs::{self, SizeTieredOptions};
use super::{Reason, SstableView, Strategy, Task};
use std::collections::BTreeMap;

pub const DEFAULT_EXPIRED_CHECK_FREQUENCY_SECONDS: i64 = 600;

/// Java `TimeUnit` values TWCS accepts for windows and timestamp resolution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeUnit {
    Microseconds,
    Milliseconds,
    Seconds,
    Minutes,
    Hours,
    Days,
}

impl TimeUnit {
    /// Converts `value` in this unit to milliseconds (saturating, truncating like Java).
    pub fn to_millis(self, value: i64) -> i64 {
        match self {
            TimeUnit::Microseconds => value / 1_000,
            TimeUnit::Milliseconds => value,
            TimeUnit::Seconds => value.saturating_mul(1_000),
            TimeUnit::Minutes => value.saturating_mul(60_000),
            TimeUnit::Hours => value.saturating_mul(3_600_000),
            TimeUnit::Days => value.saturating_mul(86_400_000),
        }
    }

    /// Seconds in one unit for window sizes (MINUTES, HOURS; anything else counts as DAYS,
    /// as in Cassandra's `getWindowBoundsInMillis`).
    fn window_seconds(self) -> i64 {
        match self {
            TimeUnit::Minutes => 60,
            TimeUnit::Hours => 3_600,
            _ => 86_400,
        }
    }
}

/// TWCS options.
#[derive(Debug, Clone, PartialEq)]
pub struct TimeWindowOptions {
    pub compaction_window_unit: TimeUnit,
    pub compaction_window_size: u32,
    pub timestamp_resolution: TimeUnit,
    pub expired_sstable_check_frequency_seconds: i64,
    pub unsafe_aggressive_sstable_expiration: bool,
    /// Thresholds and STCS options used inside the newest window.
    pub stcs: SizeTieredOptions,
}

impl Default for TimeWindowOptions {
    fn default() -> Self {
        TimeWindowOptions {
            compaction_window_unit: TimeUnit::Days,
            compaction_window_size: 1,
            timestamp_resolution: TimeUnit::Microseconds,
            expired_sstable_check_frequency_seconds: DEFAULT_EXPIRED_CHECK_FREQUENCY_SECONDS,
            unsafe_aggressive_sstable_expiration: false,
            stcs: SizeTieredOptions::default(),
        }
    }
}

impl TimeWindowOptions {
    /// Start of the window holding `timestamp` (in `timestamp_resolution`), in milliseconds.
    pub fn window_start_ms(&self, timestamp: i64) -> i64 {
        let seconds = self
            .timestamp_resolution
            .to_millis(timestamp)
            .div_euclid(1_000);
        let width = self
            .compaction_window_unit
            .window_seconds()
            .saturating_mul(i64::from(self.compaction_window_size.max(1)));
        let lower = seconds - seconds.rem_euclid(width);
        lower.saturating_mul(1_000)
    }

    /// Windows (by start) of `sstables`, members as given.
    pub fn windows<'a>(&self, sstables: &[&'a SstableView]) -> BTreeMap<i64, Vec<&'a SstableView>> {
        let mut windows: BTreeMap<i64, Vec<&'a SstableView>> = BTreeMap::new();
        for &s in sstables {
            windows
                .entry(self.window_start_ms(s.max_timestamp))
                .or_default()
                .push(s);
        }
        windows
    }
}

/// The TimeWindow strategy.
#[derive(Debug, Clone)]
pub struct TimeWindow {
    pub options: TimeWindowOptions,
    pub common: CommonOptions,
    /// Start of the newest window ever seen (Cassandra's `highestWindowSeen`).
    highest_window_seen_ms: Option<i64>,
    expired: ExpiredCheck,
}

impl TimeWindow {
    pub fn new(options: TimeWindowOptions, common: CommonOptions) -> Self {
        let expired = ExpiredCheck::new(options.expired_sstable_check_frequency_seconds);
        TimeWindow {
            options,
            common,
            highest_window_seen_ms: None,
            expired,
        }
    }

    fn newest_window(&self, windows: &BTreeMap<i64, Vec<&SstableView>>) -> i64 {
        let newest_now = windows.keys().next_back().copied().unwrap_or(i64::MIN);
        self.highest_window_seen_ms
            .map_or(newest_now, |h| h.max(newest_now))
    }

    /// The sstables to compact among the uncompacting ones, newest window first.
    fn window_choice(&mut self, sstables: &[&SstableView]) -> Option<(Vec<u64>, Reason)> {
        let windows = self.options.windows(sstables);
        let newest = self.newest_window(&windows);
        self.highest_window_seen_ms = Some(newest);
        let stcs_options = &self.options.stcs;
        for (&start, members) in windows.iter().rev() {
            if start >= newest && members.len() >= stcs_options.min_threshold as usize {
                if let Some(ids) = stcs::choose(members, stcs_options) {
                    return Some((ids, Reason::SizeTiered));
                }
            } else if start < newest && members.len() >= 2 {
                let mut smallest = members.clone();
                smallest.sort_by_key(|s| (s.size_bytes, s.id));
                smallest.truncate(stcs_options.max_threshold.max(2) as usize);
                let mut ids: Vec<u64> = smallest.iter().map(|s| s.id).collect();
                ids.sort_unstable();
                return Some((
                    ids,
                    Reason::TimeWindow {
                        window_start_ms: start,
                    },
                ));
            }
        }
        None
    }
}

impl Strategy for TimeWindow {
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
        let candidates: Vec<&SstableView> = super::uncompacting(sstables).collect();
        if let Some((inputs, reason)) = self.window_choice(&candidates) {
            return Some(Task::Compact {
                inputs,
                output_level: 0,
                max_output_bytes: u64::MAX,
                shard_boundaries: Vec::new(),
                reason,
            });
        }
        tombstone_candidates(sstables, &self.common, now_seconds, gc_before)
            .into_iter()
            .min_by_key(|s| (s.size_bytes, s.id))
            .map(|s| Task::TombstoneCompaction { input: s.id })
    }

    /// The newest window counts as STCS would; every older window with two or more sstables
    /// counts `ceil(len / max_threshold)`.
    fn pending_tasks(&self, sstables: &[SstableView]) -> u64 {
        let candidates: Vec<&SstableView> = super::uncompacting(sstables).collect();
        let windows = self.options.windows(&candidates);
        let newest = self.newest_window(&windows);
        let max = u64::from(self.options.stcs.max_threshold.max(1));
        windows
            .iter()
            .map(|(&start, members)| {
                if start >= newest {
                    stcs::pending_for(members, &self.options.stcs)
                } else if members.len() >= 2 {
                    (members.len() as u64).div_ceil(max)
                } else {
                    0
                }
            })
            .sum()
    }

    fn name(&self) -> &'static str {
        "TimeWindow"
    }
}
