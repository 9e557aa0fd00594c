//! [`TableOptions`]: every `WITH` option of a Cassandra 5.0 table, its default, parsing and checks.
//!
//! Cassandra handles a `WITH` clause in two passes, and so do [`TableOptions::for_create`] and
//! [`TableOptions::altered`]: first every name is checked and every value parsed (in a fixed
//! order), then the whole result is validated (ranges and cross-field rules). That order
//! decides which message a statement with several faults gets, so it is kept.

use super::{
    config, syntax, CachingParams, CompactionParams, CompressionParams, OptionValue, Result,
    SpeculativeRetry,
};
use std::collections::{BTreeMap, BTreeSet};

/// Largest TTL Cassandra accepts, 20 years in seconds (`Attributes.MAX_TTL`).
pub const MAX_TTL_SECONDS: i32 = 20 * 365 * 24 * 60 * 60;
/// Smallest false-positive chance the bloom filter tables support (exclusive lower bound).
pub const MIN_BLOOM_FILTER_FP_CHANCE: f64 = 6.71e-05;
/// Memtable configurations a `memtable` option may name (those of Cassandra 5.0's shipped yaml).
pub const MEMTABLE_CONFIGURATIONS: [&str; 3] = ["default", "skiplist", "trie"];

/// The table-level option names, in Cassandra's parse order. `id` is also a valid
/// keyword but belongs to the table metadata, not to these options.
const OPTION_NAMES: [&str; 19] = [
    "allow_auto_snapshot",
    "bloom_filter_fp_chance",
    "caching",
    "comment",
    "compaction",
    "compression",
    "memtable",
    "default_time_to_live",
    "gc_grace_seconds",
    "incremental_backups",
    "max_index_interval",
    "memtable_flush_period_in_ms",
    "min_index_interval",
    "speculative_retry",
    "additional_write_policy",
    "crc_check_chance",
    "cdc",
    "read_repair",
    "extensions",
];
const ID: &str = "id";

/// `read_repair`: whether a digest mismatch repairs replicas before answering.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReadRepair {
    #[default]
    Blocking,
    None,
}

impl ReadRepair {
    /// `ReadRepairStrategy.fromString`: case-insensitive `BLOCKING` or `NONE`.
    pub fn parse(s: &str) -> Result<ReadRepair> {
        match s.to_uppercase().as_str() {
            "BLOCKING" => Ok(ReadRepair::Blocking),
            "NONE" => Ok(ReadRepair::None),
            // Cassandra lets Java's enum lookup fail here; its message is kept.
            upper => config(format!(
                "No enum constant org.apache.cassandra.service.reads.repair.ReadRepairStrategy.{upper}"
            )),
        }
    }

    /// `BLOCKING` or `NONE`.
    pub fn as_str(self) -> &'static str {
        match self {
            ReadRepair::Blocking => "BLOCKING",
            ReadRepair::None => "NONE",
        }
    }
}

/// Every option of a table, with Cassandra 5.0's defaults (see [`TableOptions::default`]).
#[derive(Debug, Clone, PartialEq)]
pub struct TableOptions {
    pub additional_write_policy: SpeculativeRetry,
    pub allow_auto_snapshot: bool,
    pub bloom_filter_fp_chance: f64,
    pub caching: CachingParams,
    pub cdc: bool,
    pub comment: String,
    pub compaction: CompactionParams,
    pub compression: CompressionParams,
    /// Name of a memtable configuration (one of [`MEMTABLE_CONFIGURATIONS`]).
    pub memtable: String,
    pub crc_check_chance: f64,
    pub default_time_to_live: i32,
    /// Extension blobs; CQL cannot set them (Cassandra ignores `WITH extensions`).
    pub extensions: BTreeMap<String, Vec<u8>>,
    pub gc_grace_seconds: i32,
    pub incremental_backups: bool,
    pub max_index_interval: i32,
    pub memtable_flush_period_in_ms: i32,
    pub min_index_interval: i32,
    pub read_repair: ReadRepair,
    pub speculative_retry: SpeculativeRetry,
}

impl Default for TableOptions {
    fn default() -> Self {
        TableOptions {
            additional_write_policy: SpeculativeRetry::default(),
            allow_auto_snapshot: true,
            bloom_filter_fp_chance: 0.01,
            caching: CachingParams::default(),
            cdc: false,
            comment: String::new(),
            compaction: CompactionParams::default(),
            compression: CompressionParams::default(),
            memtable: "default".to_string(),
            crc_check_chance: 1.0,
            default_time_to_live: 0,
            extensions: BTreeMap::new(),
            gc_grace_seconds: 864_000,
            incremental_backups: true,
            max_index_interval: 2048,
            memtable_flush_period_in_ms: 0,
            min_index_interval: 128,
            read_repair: ReadRepair::Blocking,
            speculative_retry: SpeculativeRetry::default(),
        }
    }
}

/// Whether `name` is a valid `WITH` property of CREATE/ALTER TABLE (including `id`).
pub fn is_table_property(name: &str) -> bool {
    name == ID || OPTION_NAMES.contains(&name)
}

impl TableOptions {
    /// Options of a new table from its `WITH` properties (CREATE TABLE). `id` is accepted and
    /// skipped: the caller reads it. When no `bloom_filter_fp_chance` is given, the default
    /// follows the compaction strategy (0.1 for LCS, 0.01 otherwise), as in Cassandra.
    pub fn for_create(props: &[(String, OptionValue)]) -> Result<TableOptions> {
        check_names(props)?;
        let mut options = TableOptions::default();
        options.set_all(props)?;
        if !props.iter().any(|(n, _)| n == "bloom_filter_fp_chance") {
            options.bloom_filter_fp_chance = options.compaction.default_bloom_filter_fp_chance();
        }
        options.validate()?;
        Ok(options)
    }

    /// These options changed by ALTER TABLE ... WITH. A `compaction`, `compression` or `caching`
    /// map replaces the previous one whole; `id` cannot be altered.
    pub fn altered(&self, props: &[(String, OptionValue)]) -> Result<TableOptions> {
        check_names(props)?;
        if props.iter().any(|(n, _)| n == ID) {
            return config("Cannot alter table id.");
        }
        let mut options = self.clone();
        options.set_all(props)?;
        options.validate()?;
        Ok(options)
    }

    /// Applies one option, as a one-property ALTER would: parse, then validate the result.
    /// On error `self` is unchanged.
    pub fn apply(&mut self, name: &str, value: &OptionValue) -> Result<()> {
        *self = self.altered(&[(name.to_string(), value.clone())])?;
        Ok(())
    }

    fn set_all(&mut self, props: &[(String, OptionValue)]) -> Result<()> {
        for name in OPTION_NAMES {
            if let Some((_, value)) = props.iter().find(|(n, _)| n == name) {
                self.set(name, value)?;
            }
        }
        Ok(())
    }

    /// Parses one value into its field (no cross-field checks).
    fn set(&mut self, name: &str, value: &OptionValue) -> Result<()> {
        match name {
            "allow_auto_snapshot" => self.allow_auto_snapshot = boolean(name, value)?,
            "bloom_filter_fp_chance" => self.bloom_filter_fp_chance = double(name, value)?,
            "caching" => self.caching = CachingParams::from_map(map(name, value)?)?,
            "comment" => self.comment = string(name, value)?,
            "compaction" => self.compaction = CompactionParams::parse(map(name, value)?)?,
            "compression" => self.compression = CompressionParams::from_map(map(name, value)?)?,
            "memtable" => {
                let key = string(name, value)?;
                if !MEMTABLE_CONFIGURATIONS.contains(&key.as_str()) {
                    return config(format!("Memtable configuration \"{key}\" not found."));
                }
                self.memtable = key;
            }
            "default_time_to_live" => self.default_time_to_live = int(name, value)?,
            "gc_grace_seconds" => self.gc_grace_seconds = int(name, value)?,
            "incremental_backups" => self.incremental_backups = boolean(name, value)?,
            "max_index_interval" => self.max_index_interval = int(name, value)?,
            "memtable_flush_period_in_ms" => self.memtable_flush_period_in_ms = int(name, value)?,
            "min_index_interval" => self.min_index_interval = int(name, value)?,
            "speculative_retry" => {
                self.speculative_retry = SpeculativeRetry::parse(&string(name, value)?)?
            }
            "additional_write_policy" => {
                self.additional_write_policy = SpeculativeRetry::parse(&string(name, value)?)?
            }
            "crc_check_chance" => self.crc_check_chance = double(name, value)?,
            "cdc" => self.cdc = boolean(name, value)?,
            "read_repair" => self.read_repair = ReadRepair::parse(&string(name, value)?)?,
            // A valid keyword that Cassandra 5.0 does not apply from CQL.
            "extensions" => {}
            _ => return syntax(format!("Unknown property '{name}'")),
        }
        Ok(())
    }

    /// Cassandra's `TableParams.validate`, in its order. Non-finite doubles are refused
    /// (Cassandra lets `NaN` through its comparisons; Varve does not).
    pub fn validate(&self) -> Result<()> {
        self.compaction.validate()?;
        let fp = self.bloom_filter_fp_chance;
        if !(fp > MIN_BLOOM_FILTER_FP_CHANCE && fp <= 1.0) {
            return config(format!(
                "bloom_filter_fp_chance must be larger than {} and less than or equal to 1.0 (got {})",
                super::java::double_to_string(MIN_BLOOM_FILTER_FP_CHANCE),
                super::java::double_to_string(fp)
            ));
        }
        let crc = self.crc_check_chance;
        if !(0.0..=1.0).contains(&crc) {
            return config(format!(
                "crc_check_chance must be larger than or equal to 0 and smaller than or equal to 1.0 (got {})",
                super::java::double_to_string(crc)
            ));
        }
        let ttl = self.default_time_to_live;
        if ttl < 0 {
            return config(format!(
                "default_time_to_live must be greater than or equal to 0 (got {ttl})"
            ));
        }
        if ttl > MAX_TTL_SECONDS {
            return config(format!(
                "default_time_to_live must be less than or equal to {MAX_TTL_SECONDS} (got {ttl})"
            ));
        }
        non_negative("gc_grace_seconds", self.gc_grace_seconds)?;
        if self.min_index_interval < 1 {
            return config(format!(
                "min_index_interval must be greater than or equal to 1 (got {})",
                self.min_index_interval
            ));
        }
        if self.max_index_interval < self.min_index_interval {
            return config(format!(
                "max_index_interval must be greater than or equal to min_index_interval ({}) (got {})",
                self.min_index_interval, self.max_index_interval
            ));
        }
        non_negative(
            "memtable_flush_period_in_ms",
            self.memtable_flush_period_in_ms,
        )
    }
}

fn non_negative(name: &str, v: i32) -> Result<()> {
    if v < 0 {
        return config(format!(
            "{name} must be greater than or equal to 0 (got {v})"
        ));
    }
    Ok(())
}

/// Duplicate names and unknown names are syntax errors, found before any value is parsed.
fn check_names(props: &[(String, OptionValue)]) -> Result<()> {
    let mut seen = BTreeSet::new();
    for (name, _) in props {
        if !seen.insert(name.as_str()) {
            return syntax(format!("Multiple definitions for property '{name}'"));
        }
    }
    for (name, _) in props {
        if !is_table_property(name) {
            return syntax(format!("Unknown property '{name}'"));
        }
    }
    Ok(())
}

fn string(name: &str, value: &OptionValue) -> Result<String> {
    match value.scalar_text() {
        Some(s) => Ok(s),
        None => syntax(format!(
            "Invalid value for property '{name}'. It should be a string"
        )),
    }
}

fn map<'a>(name: &str, value: &'a OptionValue) -> Result<&'a BTreeMap<String, String>> {
    match value {
        OptionValue::Map(m) => Ok(m),
        _ => syntax(format!(
            "Invalid value for property '{name}'. It should be a map."
        )),
    }
}

/// `PropertyDefinitions.parseBoolean`: `1|true|yes` or `0|false|no`, case-insensitive.
fn boolean(name: &str, value: &OptionValue) -> Result<bool> {
    let s = string(name, value)?;
    match s.to_lowercase().as_str() {
        "1" | "true" | "yes" => Ok(true),
        "0" | "false" | "no" => Ok(false),
        _ => syntax(format!(
            "Invalid boolean value {s} for '{name}'. Positive values can be '1', 'true' or 'yes'. Negative values can be '0', 'false' or 'no'."
        )),
    }
}

fn int(name: &str, value: &OptionValue) -> Result<i32> {
    let s = string(name, value)?;
    match super::java::parse_int(&s) {
        Some(n) => Ok(n),
        None => syntax(format!("Invalid integer value {s} for '{name}'")),
    }
}

fn double(name: &str, value: &OptionValue) -> Result<f64> {
    let s = string(name, value)?;
    match super::java::parse_double(&s) {
        Some(d) => Ok(d),
        None => syntax(format!("Invalid double value {s} for '{name}'")),
    }
}
