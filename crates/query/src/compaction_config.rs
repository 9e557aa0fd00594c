//! From a table's compaction options (schema) to what storage's strategies
//! take: the same numbers in storage's own types (storage does not depend on
//! the schema crate).

use varve_schema::options::{CompactionStrategy, TimeUnit as SchemaUnit, TombstoneOption};
use varve_schema::Table;
use varve_storage::compaction::{
    CommonOptions, CompactionConfig, LeveledOptions, ShadowMode, SizeTieredOptions,
    StrategyOptions, TimeUnit, TimeWindowOptions, UnifiedOptions,
};

fn unit(u: SchemaUnit) -> TimeUnit {
    match u {
        SchemaUnit::Nanoseconds | SchemaUnit::Microseconds => TimeUnit::Microseconds,
        SchemaUnit::Milliseconds => TimeUnit::Milliseconds,
        SchemaUnit::Seconds => TimeUnit::Seconds,
        SchemaUnit::Minutes => TimeUnit::Minutes,
        SchemaUnit::Hours => TimeUnit::Hours,
        SchemaUnit::Days => TimeUnit::Days,
    }
}

fn stcs(o: &varve_schema::options::SizeTieredOptions) -> SizeTieredOptions {
    SizeTieredOptions {
        min_threshold: o.min_threshold.max(2) as u32,
        max_threshold: o.max_threshold.max(2) as u32,
        bucket_low: o.bucket_low,
        bucket_high: o.bucket_high,
        min_sstable_size_bytes: o.min_sstable_size_bytes.max(0) as u64,
    }
}

/// The storage compaction setup of a table.
pub fn compaction_config(t: &Table) -> CompactionConfig {
    let c = &t.options.compaction;
    let common = c.common();
    let strategy = match c.strategy {
        CompactionStrategy::SizeTiered => StrategyOptions::SizeTiered(stcs(&c.size_tiered())),
        CompactionStrategy::Leveled => {
            let l = c.leveled();
            StrategyOptions::Leveled(LeveledOptions {
                sstable_size_in_mb: l.sstable_size_in_mb.max(1) as u32,
                fanout_size: l.fanout_size.max(2) as u32,
                l0: stcs(&c.size_tiered()),
            })
        }
        CompactionStrategy::TimeWindow => {
            let w = c.time_window();
            StrategyOptions::TimeWindow(TimeWindowOptions {
                compaction_window_unit: unit(w.compaction_window_unit),
                compaction_window_size: w.compaction_window_size.max(1) as u32,
                timestamp_resolution: unit(w.timestamp_resolution),
                expired_sstable_check_frequency_seconds: w.expired_sstable_check_frequency_seconds,
                unsafe_aggressive_sstable_expiration: w.unsafe_aggressive_sstable_expiration,
                stcs: stcs(&w.window),
            })
        }
        CompactionStrategy::Unified => {
            let u = c.unified();
            StrategyOptions::Unified(UnifiedOptions {
                scaling_parameters: u.scaling_parameters.clone(),
                target_sstable_size_bytes: u.target_sstable_size_bytes.max(1) as u64,
                min_sstable_size_bytes: u.min_sstable_size_bytes.max(0) as u64,
                base_shard_count: u.base_shard_count.max(1) as u32,
                sstable_growth: u.sstable_growth,
                flush_size_override_bytes: u.flush_size_override_bytes.max(0) as u64,
                max_sstables_to_compact: u.max_sstables_to_compact.max(0) as u32,
                expired_sstable_check_frequency_seconds: u.expired_sstable_check_frequency_seconds,
                unsafe_aggressive_sstable_expiration: u.unsafe_aggressive_sstable_expiration,
            })
        }
    };
    // Cassandra disables single-sstable tombstone compactions for TWCS unless
    // one of their options is set explicitly (CASSANDRA-14496).
    let explicit = [
        "tombstone_threshold",
        "tombstone_compaction_interval",
        "unchecked_tombstone_compaction",
    ]
    .iter()
    .any(|k| c.options.contains_key(*k));
    let tombstone_compactions = c.strategy != CompactionStrategy::TimeWindow || explicit;
    CompactionConfig {
        strategy,
        common: CommonOptions {
            enabled: common.enabled,
            tombstone_threshold: f64::from(common.tombstone_threshold),
            tombstone_compaction_interval_seconds: common.tombstone_compaction_interval_s,
            unchecked_tombstone_compaction: common.unchecked_tombstone_compaction,
            tombstone_compactions,
            provide_overlapping_tombstones: match common.provide_overlapping_tombstones {
                TombstoneOption::None => ShadowMode::None,
                TombstoneOption::Row => ShadowMode::Row,
                TombstoneOption::Cell => ShadowMode::Cell,
            },
        },
    }
}
