//! Per-strategy checks of compaction sub-options (Cassandra's static `validateOptions`).
//!
//! Each check refuses a bad value with Cassandra's message and removes the keys it
//! understands from a working set; whatever is left over is reported by the caller as
//! "Properties specified [...] are not understood by <Strategy>".

use super::compaction::{
    CompactionParams, CompactionStrategy, MAX_THRESHOLD, MIN_THRESHOLD,
    PROVIDE_OVERLAPPING_TOMBSTONES,
};
use super::java::{double_to_string, parse_double, parse_float, parse_int, parse_long};
use super::{config, Result};
use std::collections::{BTreeMap, BTreeSet};

/// Name of the JVM flag that allows `unsafe_aggressive_sstable_expiration: true` for TWCS.
const UNSAFE_EXPIRATION_FLAG: &str = "cassandra.allow_unsafe_aggressive_sstable_expiration";
/// Varve, like a default Cassandra, does not allow unsafe aggressive expiration under TWCS.
const UNSAFE_EXPIRATION_ALLOWED: bool = false;

type Options = BTreeMap<String, String>;
type Unknown = BTreeSet<String>;

/// Runs the strategy's checks and returns the sub-options it does not understand.
pub(crate) fn validate_strategy_options(params: &CompactionParams) -> Result<Unknown> {
    let options = &params.options;
    let mut unknown = check_common(options)?;
    match params.strategy {
        CompactionStrategy::SizeTiered => {
            check_size_tiered(options, &mut unknown)?;
            remove_thresholds(&mut unknown);
        }
        CompactionStrategy::Leveled => {
            check_leveled(options, &mut unknown)?;
            remove_thresholds(&mut unknown);
            check_size_tiered(options, &mut unknown)?;
        }
        CompactionStrategy::TimeWindow => {
            check_time_window(options, &mut unknown)?;
            remove_thresholds(&mut unknown);
        }
        CompactionStrategy::Unified => super::ucs::check_unified(options, &mut unknown)?,
    }
    Ok(unknown)
}

fn remove_thresholds(unknown: &mut Unknown) {
    unknown.remove(MIN_THRESHOLD);
    unknown.remove(MAX_THRESHOLD);
}

fn not_base10<T>(value: &str, key: &str) -> Result<T> {
    config(format!("{value} is not a parsable int (base10) for {key}"))
}

fn check_true_false(options: &Options, key: &str, message: impl Fn(&str) -> String) -> Result<()> {
    match options.get(key) {
        Some(v) if !v.eq_ignore_ascii_case("true") && !v.eq_ignore_ascii_case("false") => {
            config(message(v))
        }
        _ => Ok(()),
    }
}

/// `AbstractCompactionStrategy.validateOptions`: options every strategy accepts.
fn check_common(options: &Options) -> Result<Unknown> {
    if let Some(v) = options.get("tombstone_threshold") {
        match parse_float(v) {
            None => return not_base10(v, "tombstone_threshold"),
            Some(t) if t < 0.0 => {
                return config(format!(
                    "tombstone_threshold must be greater than 0, but was {t:.6}"
                ))
            }
            Some(_) => {}
        }
    }
    if let Some(v) = options.get("tombstone_compaction_interval") {
        match parse_long(v) {
            None => return not_base10(v, "tombstone_compaction_interval"),
            Some(i) if i < 0 => {
                return config(format!(
                    "tombstone_compaction_interval must be greater than 0, but was {i}"
                ))
            }
            Some(_) => {}
        }
    }
    check_true_false(options, "unchecked_tombstone_compaction", |v| {
        format!("'unchecked_tombstone_compaction' should be either 'true' or 'false', not '{v}'")
    })?;
    check_true_false(options, "log_all", |v| {
        format!("'log_all' should either be 'true' or 'false', not {v}")
    })?;
    check_true_false(options, "enabled", |v| {
        format!("enabled should either be 'true' or 'false', not {v}")
    })?;
    let understood = [
        "tombstone_threshold",
        "tombstone_compaction_interval",
        "unchecked_tombstone_compaction",
        "log_all",
        "enabled",
        "only_purge_repaired_tombstones",
        PROVIDE_OVERLAPPING_TOMBSTONES,
    ];
    Ok(options
        .keys()
        .filter(|k| !understood.contains(&k.as_str()))
        .cloned()
        .collect())
}

/// `SizeTieredCompactionStrategyOptions.validateOptions`.
fn check_size_tiered(options: &Options, unknown: &mut Unknown) -> Result<()> {
    if let Some(v) = options.get("min_sstable_size") {
        match parse_long(v) {
            None => return not_base10(v, "min_sstable_size"),
            Some(n) if n < 0 => {
                return config(format!("min_sstable_size must be non negative: {n}"))
            }
            Some(_) => {}
        }
    }
    let bucket = |key: &str, default: f64| -> Result<f64> {
        match options.get(key) {
            None => Ok(default),
            Some(v) => match parse_double(v) {
                Some(d) => Ok(d),
                None => config(format!("{v} is not a parsable float for {key}")),
            },
        }
    };
    let low = bucket("bucket_low", 0.5)?;
    let high = bucket("bucket_high", 1.5)?;
    if high <= low {
        return config(format!(
            "bucket_high value ({}) is less than or equal to the bucket_low value ({})",
            double_to_string(high),
            double_to_string(low)
        ));
    }
    for key in ["min_sstable_size", "bucket_low", "bucket_high"] {
        unknown.remove(key);
    }
    Ok(())
}

/// `LeveledCompactionStrategy.validateOptions` (STCS options are checked after, for L0).
fn check_leveled(options: &Options, unknown: &mut Unknown) -> Result<()> {
    let size = options
        .get("sstable_size_in_mb")
        .map_or("1", String::as_str);
    match parse_int(size) {
        None => return not_base10(size, "sstable_size_in_mb"),
        Some(n) if n < 1 => {
            return config(format!(
                "sstable_size_in_mb must be larger than 0, but was {n}"
            ))
        }
        Some(_) => {}
    }
    if let Some(v) = options.get("fanout_size") {
        match parse_int(v) {
            // Cassandra 5.0 names the sstable size, not the fanout, in this message.
            None => return not_base10(size, "fanout_size"),
            Some(n) if n < 1 => {
                return config(format!("fanout_size must be larger than 0, but was {n}"))
            }
            Some(_) => {}
        }
    }
    for key in [
        "sstable_size_in_mb",
        "fanout_size",
        "single_sstable_uplevel",
    ] {
        unknown.remove(key);
    }
    Ok(())
}

/// `TimeWindowCompactionStrategyOptions.validateOptions` (then the STCS options).
fn check_time_window(options: &Options, unknown: &mut Unknown) -> Result<()> {
    use super::compaction::TimeUnit;
    if let Some(v) = options.get("timestamp_resolution") {
        let ok = matches!(
            TimeUnit::parse(v),
            Some(
                TimeUnit::Seconds
                    | TimeUnit::Milliseconds
                    | TimeUnit::Microseconds
                    | TimeUnit::Nanoseconds
            )
        );
        if !ok {
            return config(format!("{v} is not valid for timestamp_resolution"));
        }
    }
    if let Some(v) = options.get("compaction_window_unit") {
        let ok = matches!(
            TimeUnit::parse(v),
            Some(TimeUnit::Minutes | TimeUnit::Hours | TimeUnit::Days)
        );
        if !ok {
            return config(format!("{v} is not valid for compaction_window_unit"));
        }
    }
    if let Some(v) = options.get("compaction_window_size") {
        match parse_int(v) {
            None => return not_base10(v, "compaction_window_size"),
            Some(n) if n < 1 => {
                return config(format!(
                    "{n} must be greater than 1 for compaction_window_size"
                ))
            }
            Some(_) => {}
        }
    }
    if let Some(v) = options.get("expired_sstable_check_frequency_seconds") {
        match parse_long(v) {
            None => return not_base10(v, "expired_sstable_check_frequency_seconds"),
            Some(n) if n < 0 => {
                return config(format!(
                    "expired_sstable_check_frequency_seconds must not be negative, but was {n}"
                ))
            }
            Some(_) => {}
        }
    }
    if let Some(v) = options.get("unsafe_aggressive_sstable_expiration") {
        let key = "unsafe_aggressive_sstable_expiration";
        if !v.eq_ignore_ascii_case("true") && !v.eq_ignore_ascii_case("false") {
            return config(format!("{key} is not 'true' or 'false' ({v})"));
        }
        if v.eq_ignore_ascii_case("true") && !UNSAFE_EXPIRATION_ALLOWED {
            return config(format!(
                "{key} is requested but not allowed, restart cassandra with -D{UNSAFE_EXPIRATION_FLAG}=true to allow it"
            ));
        }
    }
    for key in [
        "compaction_window_size",
        "compaction_window_unit",
        "timestamp_resolution",
        "expired_sstable_check_frequency_seconds",
        "unsafe_aggressive_sstable_expiration",
    ] {
        unknown.remove(key);
    }
    check_size_tiered(options, unknown)
}

#[cfg(test)]
#[path = "tests_compaction.rs"]
mod tests;
