//! Table and keyspace options, validated and rendered as Apache Cassandra 5.0 does.
//!
//! The query layer turns each parsed `WITH name = value` into an [`OptionValue`] and hands it
//! here; this module decides whether the name and value are acceptable, stores typed values the
//! engine can use, and renders them back exactly as Cassandra shows them (in `DESCRIBE` output
//! and in the `system_schema` tables).
//!
//! Error kinds follow Cassandra: an unknown property name is a `SyntaxException`
//! ([`OptionError::Syntax`]); a bad value, an unknown compaction class or an unknown
//! sub-option is a `ConfigurationException` ([`OptionError::Config`]). Messages are Cassandra's
//! own wording wherever it has one; the design note `docs/design/table-options.md` lists the
//! places where Varve deliberately differs.
//!
//! Invariant: every value stored in a [`TableOptions`] or [`ReplicationParams`] has passed
//! validation, so the typed accessors never fail.

mod caching;
mod compaction;
mod compaction_checks;
mod compression;
mod java;
mod replication;
mod speculative;
mod table;
mod table_render;
mod ucs;

#[cfg(test)]
mod tests_robust;
#[cfg(test)]
mod tests_table;

use std::collections::BTreeMap;

pub use caching::CachingParams;
pub use compaction::{
    CommonCompactionOptions, CompactionParams, CompactionStrategy, LeveledOptions,
    OverlapInclusionMethod, SizeTieredOptions, TimeUnit, TimeWindowOptions, TombstoneOption,
    UnifiedOptions,
};
pub use compression::{CompressionAlgorithm, CompressionParams};
pub use replication::{
    KeyspaceOptions, ReplicationContext, ReplicationParams, ReplicationStrategy, DEFAULT_DATACENTER,
};
pub use speculative::SpeculativeRetry;
pub use table::{
    is_table_property, ReadRepair, TableOptions, MAX_TTL_SECONDS, MEMTABLE_CONFIGURATIONS,
    MIN_BLOOM_FILTER_FP_CHANCE,
};
pub use table_render::SchemaValue;

/// One `WITH name = value` right-hand side, as the query layer parsed it.
///
/// Map values arrive as text: numbers and booleans as written, strings unquoted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OptionValue {
    /// A quoted string constant (or an unreserved keyword), unquoted.
    Text(String),
    /// A numeric constant, exactly as written (`0.01`, `-5`, `1e-3`).
    Number(String),
    /// `true` or `false`.
    Bool(bool),
    /// A map literal `{'k': v, ...}`.
    Map(BTreeMap<String, String>),
}

impl OptionValue {
    /// The value as Cassandra's property code sees a scalar: every constant is kept as text.
    fn scalar_text(&self) -> Option<String> {
        match self {
            OptionValue::Text(s) | OptionValue::Number(s) => Some(s.clone()),
            OptionValue::Bool(b) => Some(b.to_string()),
            OptionValue::Map(_) => None,
        }
    }
}

/// Why an option was refused. Both variants carry the message the client sees.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OptionError {
    /// Cassandra's `SyntaxException` (code 0x2000), e.g. "Unknown property 'foo'".
    #[error("{0}")]
    Syntax(String),
    /// Cassandra's `ConfigurationException` (code 0x2300), e.g. a bad value or sub-option.
    #[error("{0}")]
    Config(String),
}

/// Result alias for option handling.
pub type Result<T> = std::result::Result<T, OptionError>;

pub(crate) fn config<T>(msg: impl Into<String>) -> Result<T> {
    Err(OptionError::Config(msg.into()))
}

pub(crate) fn syntax<T>(msg: impl Into<String>) -> Result<T> {
    Err(OptionError::Syntax(msg.into()))
}
