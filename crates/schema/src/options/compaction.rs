//! The `compaction` table option: strategy class plus its sub-options, kept as text (as
//! Cassandra stores them) with typed accessors for the engine.
//!
//! Parsing ([`CompactionParams::from_map`]) resolves the class and the common
//! `provide_overlapping_tombstones` value; [`CompactionParams::validate`] runs the strategy's
//! own checks (in `compaction_checks.rs`) and the threshold checks, in Cassandra's order.

use super::java::{parse_bool_lenient, parse_double, parse_float, parse_int, parse_long};
use super::{config, Result};
use std::collections::BTreeMap;

const CLASS: &str = "class";
const STRATEGY_PACKAGE: &str = "org.apache.cassandra.db.compaction.";
pub(crate) const MIN_THRESHOLD: &str = "min_threshold";
pub(crate) const MAX_THRESHOLD: &str = "max_threshold";
pub(crate) const PROVIDE_OVERLAPPING_TOMBSTONES: &str = "provide_overlapping_tombstones";

/// Defaults shared by STCS, LCS (its L0) and TWCS.
pub const DEFAULT_MIN_THRESHOLD: i32 = 4;
pub const DEFAULT_MAX_THRESHOLD: i32 = 32;
const DEFAULT_TOMBSTONE_THRESHOLD: f32 = 0.2;
const DEFAULT_TOMBSTONE_COMPACTION_INTERVAL_S: i64 = 86_400;
const DEFAULT_BUCKET_LOW: f64 = 0.5;
const DEFAULT_BUCKET_HIGH: f64 = 1.5;
const DEFAULT_STCS_MIN_SSTABLE_SIZE_BYTES: i64 = 50 * 1024 * 1024;
const DEFAULT_LCS_SSTABLE_SIZE_MB: i32 = 160;
const DEFAULT_LCS_FANOUT: i32 = 10;
const DEFAULT_EXPIRED_CHECK_FREQUENCY_S: i64 = 600;
const DEFAULT_UCS_SCALING_PARAMETERS: &str = "T4";
const DEFAULT_UCS_TARGET_SSTABLE_SIZE: &str = "1GiB";
const DEFAULT_UCS_MIN_SSTABLE_SIZE: &str = "100MiB";
const DEFAULT_UCS_BASE_SHARD_COUNT: i32 = 4;
const DEFAULT_UCS_SSTABLE_GROWTH: f64 = 0.333;

/// The compaction strategies of Cassandra 5.0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompactionStrategy {
    SizeTiered,
    Leveled,
    TimeWindow,
    Unified,
}

impl CompactionStrategy {
    const ALL: [CompactionStrategy; 4] = [
        CompactionStrategy::SizeTiered,
        CompactionStrategy::Leveled,
        CompactionStrategy::TimeWindow,
        CompactionStrategy::Unified,
    ];

    /// Simple class name, used in Cassandra's messages.
    pub fn simple_name(self) -> &'static str {
        match self {
            CompactionStrategy::SizeTiered => "SizeTieredCompactionStrategy",
            CompactionStrategy::Leveled => "LeveledCompactionStrategy",
            CompactionStrategy::TimeWindow => "TimeWindowCompactionStrategy",
            CompactionStrategy::Unified => "UnifiedCompactionStrategy",
        }
    }

    /// Full class name, as `system_schema.tables.compaction['class']` stores it.
    pub fn class_name(self) -> String {
        format!("{STRATEGY_PACKAGE}{}", self.simple_name())
    }

    /// Resolves a short or full class name.
    pub fn from_class(name: &str) -> Result<CompactionStrategy> {
        let full = if name.contains('.') {
            name.to_string()
        } else {
            format!("{STRATEGY_PACKAGE}{name}")
        };
        match Self::ALL.into_iter().find(|s| s.class_name() == full) {
            Some(s) => Ok(s),
            None => config(format!("Unable to find compaction strategy class '{full}'")),
        }
    }

    /// Whether `min_threshold`/`max_threshold` apply (and are filled in with defaults).
    fn uses_thresholds(self) -> bool {
        self != CompactionStrategy::Unified
    }
}

/// `provide_overlapping_tombstones`: how much a compaction consults overlapping sstables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TombstoneOption {
    None,
    Row,
    Cell,
}

impl TombstoneOption {
    fn parse(upper: &str) -> Option<TombstoneOption> {
        match upper {
            "NONE" => Some(TombstoneOption::None),
            "ROW" => Some(TombstoneOption::Row),
            "CELL" => Some(TombstoneOption::Cell),
            _ => None,
        }
    }
}

/// Time units used by TWCS options (Java `TimeUnit` names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeUnit {
    Nanoseconds,
    Microseconds,
    Milliseconds,
    Seconds,
    Minutes,
    Hours,
    Days,
}

impl TimeUnit {
    /// `TimeUnit.valueOf`: exact, upper-case names only.
    pub(crate) fn parse(s: &str) -> Option<TimeUnit> {
        Some(match s {
            "NANOSECONDS" => TimeUnit::Nanoseconds,
            "MICROSECONDS" => TimeUnit::Microseconds,
            "MILLISECONDS" => TimeUnit::Milliseconds,
            "SECONDS" => TimeUnit::Seconds,
            "MINUTES" => TimeUnit::Minutes,
            "HOURS" => TimeUnit::Hours,
            "DAYS" => TimeUnit::Days,
            _ => return None,
        })
    }

    /// Length of one unit in seconds (0 for sub-second units).
    pub fn seconds(self) -> u64 {
        match self {
            TimeUnit::Minutes => 60,
            TimeUnit::Hours => 3_600,
            TimeUnit::Days => 86_400,
            TimeUnit::Seconds => 1,
            _ => 0,
        }
    }
}

/// UCS `overlap_inclusion_method`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OverlapInclusionMethod {
    None,
    Single,
    Transitive,
}

/// Options every strategy understands.
#[derive(Debug, Clone, PartialEq)]
pub struct CommonCompactionOptions {
    pub enabled: bool,
    pub tombstone_threshold: f32,
    pub tombstone_compaction_interval_s: i64,
    pub unchecked_tombstone_compaction: bool,
    pub only_purge_repaired_tombstones: bool,
    pub log_all: bool,
    pub provide_overlapping_tombstones: TombstoneOption,
}

/// SizeTiered options (also used by LCS for L0 and by TWCS inside a window).
#[derive(Debug, Clone, PartialEq)]
pub struct SizeTieredOptions {
    pub min_threshold: i32,
    pub max_threshold: i32,
    pub bucket_low: f64,
    pub bucket_high: f64,
    pub min_sstable_size_bytes: i64,
}

/// Leveled options.
#[derive(Debug, Clone, PartialEq)]
pub struct LeveledOptions {
    pub sstable_size_in_mb: i32,
    pub fanout_size: i32,
    pub single_sstable_uplevel: bool,
    pub l0: SizeTieredOptions,
}

/// TimeWindow options.
#[derive(Debug, Clone, PartialEq)]
pub struct TimeWindowOptions {
    pub compaction_window_unit: TimeUnit,
    pub compaction_window_size: i32,
    pub timestamp_resolution: TimeUnit,
    pub expired_sstable_check_frequency_seconds: i64,
    pub unsafe_aggressive_sstable_expiration: bool,
    pub window: SizeTieredOptions,
}

/// Unified (UCS) options; sizes in bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct UnifiedOptions {
    /// One W per level (the last repeats): W < 0 levelled, W > 0 tiered, 0 both.
    pub scaling_parameters: Vec<i32>,
    pub target_sstable_size_bytes: i64,
    pub min_sstable_size_bytes: i64,
    pub base_shard_count: i32,
    pub sstable_growth: f64,
    /// 0 means "measure flushes".
    pub flush_size_override_bytes: i64,
    /// Values <= 0 select the built-in default.
    pub max_sstables_to_compact: i32,
    pub expired_sstable_check_frequency_seconds: i64,
    pub unsafe_aggressive_sstable_expiration: bool,
    pub overlap_inclusion_method: OverlapInclusionMethod,
}

/// `compaction = {'class': ..., ...}`: the strategy and every other sub-option as text.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionParams {
    pub strategy: CompactionStrategy,
    /// All sub-options except `class`, as given (plus default thresholds where they apply).
    pub options: BTreeMap<String, String>,
}

impl Default for CompactionParams {
    /// SizeTiered with `min_threshold` 4 and `max_threshold` 32 (Cassandra 5.0's shipped default).
    fn default() -> Self {
        Self::with_defaults(CompactionStrategy::SizeTiered, BTreeMap::new())
    }
}

impl CompactionParams {
    /// Builds params for `strategy`, filling in the default thresholds where they apply.
    /// Does not validate; see [`CompactionParams::from_map`].
    pub fn with_defaults(
        strategy: CompactionStrategy,
        mut options: BTreeMap<String, String>,
    ) -> Self {
        if strategy.uses_thresholds() {
            options
                .entry(MIN_THRESHOLD.to_string())
                .or_insert_with(|| DEFAULT_MIN_THRESHOLD.to_string());
            options
                .entry(MAX_THRESHOLD.to_string())
                .or_insert_with(|| DEFAULT_MAX_THRESHOLD.to_string());
        }
        CompactionParams { strategy, options }
    }

    /// Parses and validates the map (CQL value or `system_schema` row).
    pub fn from_map(map: &BTreeMap<String, String>) -> Result<CompactionParams> {
        let params = Self::parse(map)?;
        params.validate()?;
        Ok(params)
    }

    /// The first half of Cassandra's handling: class and `provide_overlapping_tombstones`.
    pub(crate) fn parse(map: &BTreeMap<String, String>) -> Result<CompactionParams> {
        let mut options = map.clone();
        let Some(class) = options.remove(CLASS) else {
            return config(format!(
                "Missing sub-option '{CLASS}' for the 'compaction' option"
            ));
        };
        let strategy = CompactionStrategy::from_class(&class)?;
        if let Some(v) = options.get(PROVIDE_OVERLAPPING_TOMBSTONES) {
            let upper = v.to_uppercase();
            if TombstoneOption::parse(&upper).is_none() {
                return config(format!(
                    "Invalid value {upper} for '{PROVIDE_OVERLAPPING_TOMBSTONES}' compaction sub-option - must be one of the following [NONE, ROW, CELL]."
                ));
            }
        }
        Ok(Self::with_defaults(strategy, options))
    }

    /// The second half: the strategy's option checks, then the threshold checks.
    pub fn validate(&self) -> Result<()> {
        let unknown = super::compaction_checks::validate_strategy_options(self)?;
        if !unknown.is_empty() {
            return config(format!(
                "Properties specified {} are not understood by {}",
                super::java::key_list(unknown.iter()),
                self.strategy.simple_name()
            ));
        }
        let threshold = |key: &str, default: i32| -> Result<i32> {
            match self.options.get(key) {
                None => Ok(default),
                Some(v) => match super::java::is_numeric(v).then(|| parse_int(v)).flatten() {
                    Some(n) => Ok(n),
                    None => config(format!(
                        "Invalid value {v} for '{key}' compaction sub-option - must be an integer"
                    )),
                },
            }
        };
        let min = threshold(MIN_THRESHOLD, DEFAULT_MIN_THRESHOLD)?;
        let max = threshold(MAX_THRESHOLD, DEFAULT_MAX_THRESHOLD)?;
        if min <= 0 || max <= 0 {
            return config("Disabling compaction by setting compaction thresholds to 0 has been removed, set the compaction option 'enabled' to false instead.");
        }
        if min <= 1 {
            return config(format!(
                "Min compaction threshold cannot be less than 2 (got {min})"
            ));
        }
        if min > max {
            return config(format!(
                "Min compaction threshold (got {min}) cannot be greater than max compaction threshold (got {max})"
            ));
        }
        Ok(())
    }

    /// The map as `system_schema.tables.compaction` stores it and DESCRIBE prints it.
    pub fn to_map(&self) -> BTreeMap<String, String> {
        let mut map = self.options.clone();
        map.insert(CLASS.to_string(), self.strategy.class_name());
        map
    }

    /// The bloom filter default Cassandra picks at CREATE when none is given.
    pub fn default_bloom_filter_fp_chance(&self) -> f64 {
        if self.strategy == CompactionStrategy::Leveled {
            0.1
        } else {
            0.01
        }
    }

    fn text(&self, key: &str) -> Option<&str> {
        self.options.get(key).map(String::as_str)
    }

    fn int_or(&self, key: &str, default: i32) -> i32 {
        self.text(key).and_then(parse_int).unwrap_or(default)
    }

    fn long_or(&self, key: &str, default: i64) -> i64 {
        self.text(key).and_then(parse_long).unwrap_or(default)
    }

    fn double_or(&self, key: &str, default: f64) -> f64 {
        self.text(key).and_then(parse_double).unwrap_or(default)
    }

    fn bool_or(&self, key: &str, default: bool) -> bool {
        self.text(key).map_or(default, parse_bool_lenient)
    }

    fn bytes_or(&self, key: &str, default: &str) -> i64 {
        let v = self.text(key).unwrap_or(default);
        super::ucs::parse_bytes(v)
            .or_else(|_| super::ucs::parse_bytes(default))
            .unwrap_or(0)
    }

    /// Options common to all strategies.
    pub fn common(&self) -> CommonCompactionOptions {
        let overlap = self
            .text(PROVIDE_OVERLAPPING_TOMBSTONES)
            .and_then(|v| TombstoneOption::parse(&v.to_uppercase()))
            .unwrap_or(TombstoneOption::None);
        CommonCompactionOptions {
            enabled: self.bool_or("enabled", true),
            tombstone_threshold: self
                .text("tombstone_threshold")
                .and_then(parse_float)
                .unwrap_or(DEFAULT_TOMBSTONE_THRESHOLD),
            tombstone_compaction_interval_s: self.long_or(
                "tombstone_compaction_interval",
                DEFAULT_TOMBSTONE_COMPACTION_INTERVAL_S,
            ),
            unchecked_tombstone_compaction: self.bool_or("unchecked_tombstone_compaction", false),
            only_purge_repaired_tombstones: self.bool_or("only_purge_repaired_tombstones", false),
            log_all: self.bool_or("log_all", false),
            provide_overlapping_tombstones: overlap,
        }
    }

    /// SizeTiered options (meaningful for STCS, LCS's L0 and TWCS windows).
    pub fn size_tiered(&self) -> SizeTieredOptions {
        SizeTieredOptions {
            min_threshold: self.int_or(MIN_THRESHOLD, DEFAULT_MIN_THRESHOLD),
            max_threshold: self.int_or(MAX_THRESHOLD, DEFAULT_MAX_THRESHOLD),
            bucket_low: self.double_or("bucket_low", DEFAULT_BUCKET_LOW),
            bucket_high: self.double_or("bucket_high", DEFAULT_BUCKET_HIGH),
            min_sstable_size_bytes: self
                .long_or("min_sstable_size", DEFAULT_STCS_MIN_SSTABLE_SIZE_BYTES),
        }
    }

    /// Leveled options.
    pub fn leveled(&self) -> LeveledOptions {
        LeveledOptions {
            sstable_size_in_mb: self.int_or("sstable_size_in_mb", DEFAULT_LCS_SSTABLE_SIZE_MB),
            fanout_size: self.int_or("fanout_size", DEFAULT_LCS_FANOUT),
            single_sstable_uplevel: self.bool_or("single_sstable_uplevel", false),
            l0: self.size_tiered(),
        }
    }

    /// TimeWindow options.
    pub fn time_window(&self) -> TimeWindowOptions {
        let unit = |key: &str, default: TimeUnit| {
            self.text(key).and_then(TimeUnit::parse).unwrap_or(default)
        };
        TimeWindowOptions {
            compaction_window_unit: unit("compaction_window_unit", TimeUnit::Days),
            compaction_window_size: self.int_or("compaction_window_size", 1),
            timestamp_resolution: unit("timestamp_resolution", TimeUnit::Microseconds),
            expired_sstable_check_frequency_seconds: self.long_or(
                "expired_sstable_check_frequency_seconds",
                DEFAULT_EXPIRED_CHECK_FREQUENCY_S,
            ),
            unsafe_aggressive_sstable_expiration: self
                .bool_or("unsafe_aggressive_sstable_expiration", false),
            window: self.size_tiered(),
        }
    }

    /// Unified options.
    pub fn unified(&self) -> UnifiedOptions {
        let scaling = self
            .text("scaling_parameters")
            .unwrap_or(DEFAULT_UCS_SCALING_PARAMETERS);
        let scaling_parameters = super::ucs::parse_scaling_parameters(scaling)
            .unwrap_or_else(|_| vec![super::ucs::DEFAULT_SCALING_W]);
        let overlap = match self
            .text("overlap_inclusion_method")
            .map(str::to_uppercase)
            .as_deref()
        {
            Some("NONE") => OverlapInclusionMethod::None,
            Some("SINGLE") => OverlapInclusionMethod::Single,
            _ => OverlapInclusionMethod::Transitive,
        };
        UnifiedOptions {
            scaling_parameters,
            target_sstable_size_bytes: self
                .bytes_or("target_sstable_size", DEFAULT_UCS_TARGET_SSTABLE_SIZE),
            min_sstable_size_bytes: self.bytes_or("min_sstable_size", DEFAULT_UCS_MIN_SSTABLE_SIZE),
            base_shard_count: self.int_or("base_shard_count", DEFAULT_UCS_BASE_SHARD_COUNT),
            sstable_growth: self
                .text("sstable_growth")
                .and_then(|v| super::ucs::parse_percent(v).ok())
                .unwrap_or(DEFAULT_UCS_SSTABLE_GROWTH),
            flush_size_override_bytes: self.bytes_or("flush_size_override", "0B"),
            max_sstables_to_compact: self.int_or("max_sstables_to_compact", 0),
            expired_sstable_check_frequency_seconds: self.long_or(
                "expired_sstable_check_frequency_seconds",
                DEFAULT_EXPIRED_CHECK_FREQUENCY_S,
            ),
            unsafe_aggressive_sstable_expiration: self
                .bool_or("unsafe_aggressive_sstable_expiration", false),
            overlap_inclusion_method: overlap,
        }
    }
}
