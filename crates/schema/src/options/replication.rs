//! Keyspace replication (`WITH replication = {...}`) and `durable_writes`, as Cassandra 5.0
//! checks them.
//!
//! Datacenter expansion: for NetworkTopologyStrategy, `'replication_factor': N` stands for
//! "N in every known datacenter" (CASSANDRA-14303). Varve runs one datacenter, named
//! `datacenter1` by default ([`ReplicationContext`]), so `{'class': 'NetworkTopologyStrategy',
//! 'replication_factor': 3}` is stored as `{'datacenter1': '3'}`. A missing factor takes
//! `default_keyspace_rf` (1), or the previous value on ALTER. Datacenters at 0 are dropped.
//! Transient replicas (`'3/1'`) are refused: transient replication is disabled, as it is by
//! default in Cassandra.

use super::java::parse_int;
use super::{config, syntax, OptionValue, Result};
use std::collections::{BTreeMap, BTreeSet};

const CLASS: &str = "class";
const REPLICATION_FACTOR: &str = "replication_factor";
const LOCATOR_PACKAGE: &str = "org.apache.cassandra.locator.";
/// The datacenter name of a single-datacenter Varve cluster.
pub const DEFAULT_DATACENTER: &str = "datacenter1";
/// Cassandra's `default_keyspace_rf`.
pub const DEFAULT_KEYSPACE_RF: i32 = 1;

/// Replication strategies of Cassandra 5.0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplicationStrategy {
    /// Node-local system keyspaces only; users cannot choose it.
    Local,
    Simple,
    NetworkTopology,
}

impl ReplicationStrategy {
    const ALL: [ReplicationStrategy; 3] = [
        ReplicationStrategy::Local,
        ReplicationStrategy::Simple,
        ReplicationStrategy::NetworkTopology,
    ];

    /// Simple class name, e.g. `SimpleStrategy`.
    pub fn simple_name(self) -> &'static str {
        match self {
            ReplicationStrategy::Local => "LocalStrategy",
            ReplicationStrategy::Simple => "SimpleStrategy",
            ReplicationStrategy::NetworkTopology => "NetworkTopologyStrategy",
        }
    }

    /// Full class name, as `system_schema.keyspaces.replication['class']` stores it.
    pub fn class_name(self) -> String {
        format!("{LOCATOR_PACKAGE}{}", self.simple_name())
    }

    fn from_class(name: &str) -> Result<ReplicationStrategy> {
        let full = if name.contains('.') {
            name.to_string()
        } else {
            format!("{LOCATOR_PACKAGE}{name}")
        };
        if full == format!("{LOCATOR_PACKAGE}OldNetworkTopologyStrategy") {
            return config("The support for the OldNetworkTopologyStrategy has been removed in C* version 4.0. The keyspace strategy should be switch to NetworkTopologyStrategy");
        }
        match Self::ALL.into_iter().find(|s| s.class_name() == full) {
            Some(s) => Ok(s),
            None => config(format!(
                "Unable to find replication strategy class '{full}'"
            )),
        }
    }
}

/// What the cluster looks like, for checking datacenter names and expanding shorthands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicationContext {
    /// Datacenters that have nodes (the only valid NetworkTopologyStrategy option keys).
    pub datacenters: Vec<String>,
    /// Replication factor used when none is given.
    pub default_keyspace_rf: i32,
}

impl Default for ReplicationContext {
    fn default() -> Self {
        ReplicationContext {
            datacenters: vec![DEFAULT_DATACENTER.to_string()],
            default_keyspace_rf: DEFAULT_KEYSPACE_RF,
        }
    }
}

/// A keyspace's replication: strategy and its options (without `class`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicationParams {
    pub strategy: ReplicationStrategy,
    pub options: BTreeMap<String, String>,
}

impl ReplicationParams {
    /// `LocalStrategy`, for node-local system keyspaces.
    pub fn local() -> Self {
        ReplicationParams {
            strategy: ReplicationStrategy::Local,
            options: BTreeMap::new(),
        }
    }

    /// `SimpleStrategy` with the given factor.
    pub fn simple(rf: u32) -> Self {
        ReplicationParams {
            strategy: ReplicationStrategy::Simple,
            options: BTreeMap::from([(REPLICATION_FACTOR.to_string(), rf.to_string())]),
        }
    }

    /// `NetworkTopologyStrategy` with one factor per datacenter.
    pub fn network_topology(dcs: &[(&str, u32)]) -> Self {
        ReplicationParams {
            strategy: ReplicationStrategy::NetworkTopology,
            options: dcs
                .iter()
                .map(|(dc, rf)| (dc.to_string(), rf.to_string()))
                .collect(),
        }
    }

    /// Parses and validates a user keyspace's replication map in the default single-datacenter
    /// context. Messages that name the keyspace use an empty name; prefer
    /// [`ReplicationParams::for_keyspace`].
    pub fn from_map(map: &BTreeMap<String, String>) -> Result<ReplicationParams> {
        Self::for_keyspace("", map, None, &ReplicationContext::default())
    }

    /// Parses and validates `replication = {...}` of CREATE KEYSPACE (`previous == None`) or
    /// ALTER KEYSPACE (`previous` = current params, used to fill in omitted factors).
    pub fn for_keyspace(
        keyspace: &str,
        map: &BTreeMap<String, String>,
        previous: Option<&ReplicationParams>,
        ctx: &ReplicationContext,
    ) -> Result<ReplicationParams> {
        let mut options = map.clone();
        let Some(class) = options.remove(CLASS) else {
            return config("Missing replication strategy class");
        };
        let strategy = ReplicationStrategy::from_class(&class)?;
        let empty = BTreeMap::new();
        let previous = previous.map_or(&empty, |p| &p.options);
        match strategy {
            ReplicationStrategy::Local => return config(
                "Unable to use given strategy class: LocalStrategy is reserved for internal use.",
            ),
            ReplicationStrategy::Simple => {
                let rf = previous
                    .get(REPLICATION_FACTOR)
                    .cloned()
                    .unwrap_or_else(|| ctx.default_keyspace_rf.to_string());
                options.entry(REPLICATION_FACTOR.to_string()).or_insert(rf);
            }
            ReplicationStrategy::NetworkTopology => {
                prepare_network_topology(&mut options, previous, ctx)?
            }
        }
        let params = ReplicationParams { strategy, options };
        params.validate(keyspace, ctx)?;
        Ok(params)
    }

    fn validate(&self, keyspace: &str, ctx: &ReplicationContext) -> Result<()> {
        let simple = self.strategy.simple_name();
        let unrecognized = |key: &str| {
            config(format!(
                "Unrecognized strategy option {{{key}}} passed to {simple} for keyspace {keyspace}"
            ))
        };
        match self.strategy {
            ReplicationStrategy::Local => Ok(()),
            ReplicationStrategy::Simple => {
                let Some(rf) = self.options.get(REPLICATION_FACTOR) else {
                    return config("SimpleStrategy requires a replication_factor strategy option.");
                };
                parse_replication_factor(rf)?;
                match self
                    .options
                    .keys()
                    .find(|k| k.as_str() != REPLICATION_FACTOR)
                {
                    Some(k) => unrecognized(k),
                    None => Ok(()),
                }
            }
            ReplicationStrategy::NetworkTopology => {
                for (dc, rf) in &self.options {
                    if dc.eq_ignore_ascii_case(REPLICATION_FACTOR) {
                        return config(format!("{REPLICATION_FACTOR} should not appear as an option at construction time for NetworkTopologyStrategy"));
                    }
                    parse_replication_factor(rf)?;
                }
                if self.options.is_empty() {
                    return config("Configuration for at least one datacenter must be present");
                }
                match self.options.keys().find(|k| !ctx.datacenters.contains(k)) {
                    Some(k) => unrecognized(k),
                    None => Ok(()),
                }
            }
        }
    }

    /// The map as `system_schema.keyspaces.replication` stores it (full class name).
    pub fn to_map(&self) -> BTreeMap<String, String> {
        let mut map = self.options.clone();
        map.insert(CLASS.to_string(), self.strategy.class_name());
        map
    }

    /// The replication map as DESCRIBE prints it: `{'class': 'SimpleStrategy', ...}` with the
    /// simple class name first, then the options.
    pub fn to_cql(&self) -> String {
        let mut out = format!("{{'class': '{}'", self.strategy.simple_name());
        for (k, v) in &self.options {
            out.push_str(&format!(
                ", {}: {}",
                super::java::quote(k),
                super::java::quote(v)
            ));
        }
        out.push('}');
        out
    }

    /// Replicas in datacenter `dc` (SimpleStrategy counts as one datacenter-agnostic ring).
    pub fn replication_factor(&self, dc: &str) -> u32 {
        let key = match self.strategy {
            ReplicationStrategy::Local => return 1,
            ReplicationStrategy::Simple => REPLICATION_FACTOR,
            ReplicationStrategy::NetworkTopology => dc,
        };
        self.options
            .get(key)
            .and_then(|v| parse_replication_factor(v).ok())
            .unwrap_or(0)
    }
}

/// NetworkTopologyStrategy's `prepareOptions`: expands `replication_factor` into every known
/// datacenter, keeps previously configured datacenters on ALTER, drops datacenters at "0".
fn prepare_network_topology(
    options: &mut BTreeMap<String, String>,
    previous: &BTreeMap<String, String>,
    ctx: &ReplicationContext,
) -> Result<()> {
    if options.is_empty() {
        let rf = previous
            .get(REPLICATION_FACTOR)
            .cloned()
            .unwrap_or_else(|| ctx.default_keyspace_rf.to_string());
        options.insert(REPLICATION_FACTOR.to_string(), rf);
    }
    let mut replication = options.remove(REPLICATION_FACTOR);
    if replication.is_none() && options.is_empty() {
        // ALTER from SimpleStrategy to NetworkTopologyStrategy keeps the factor.
        replication = previous.get(REPLICATION_FACTOR).cloned();
    } else if replication.is_some() {
        for (dc, rf) in previous {
            if dc != REPLICATION_FACTOR {
                options.entry(dc.clone()).or_insert_with(|| rf.clone());
            }
        }
    }
    if let Some(rf) = replication {
        // Cassandra swallows this error and later reports a missing datacenter; the factor's
        // own message is clearer, so Varve reports it (documented difference).
        let n = parse_replication_factor(&rf)?;
        for dc in &ctx.datacenters {
            options.entry(dc.clone()).or_insert_with(|| n.to_string());
        }
    }
    options.retain(|_, v| v != "0");
    Ok(())
}

/// `ReplicationFactor.fromString` with transient replication disabled.
fn parse_replication_factor(s: &str) -> Result<u32> {
    let (all, transient) = match s.split_once('/') {
        Some((a, t)) => {
            let parts: Vec<&str> = s.split('/').collect();
            if parts.len() != 2 || t.is_empty() {
                return config("Replication factor format is <replicas> or <replicas>/<transient>");
            }
            (java_int(a)?, java_int(t)?)
        }
        None => (java_int(s)?, 0),
    };
    if transient != 0 {
        return config("Transient replication is not enabled on this node");
    }
    if all < 0 {
        return config(format!(
            "Replication factor must be non-negative, found {all}"
        ));
    }
    Ok(all.unsigned_abs())
}

fn java_int(s: &str) -> Result<i32> {
    match parse_int(s) {
        Some(n) => Ok(n),
        None => config(format!("For input string: \"{s}\"")),
    }
}

/// `WITH replication = {...} AND durable_writes = ...` of a keyspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyspaceOptions {
    pub replication: ReplicationParams,
    pub durable_writes: bool,
}

impl KeyspaceOptions {
    /// CREATE KEYSPACE: `replication` is mandatory, `durable_writes` defaults to true.
    pub fn for_create(
        keyspace: &str,
        props: &[(String, OptionValue)],
        ctx: &ReplicationContext,
    ) -> Result<KeyspaceOptions> {
        let (replication, durable) = read_properties(props)?;
        let Some(map) = replication else {
            return config("Missing mandatory option 'replication'");
        };
        Ok(KeyspaceOptions {
            replication: ReplicationParams::for_keyspace(keyspace, map, None, ctx)?,
            durable_writes: durable.unwrap_or(true),
        })
    }

    /// ALTER KEYSPACE: a replication map without `class` (only `{}` gets that far) keeps the
    /// current replication.
    pub fn altered(
        &self,
        keyspace: &str,
        props: &[(String, OptionValue)],
        ctx: &ReplicationContext,
    ) -> Result<KeyspaceOptions> {
        let (replication, durable) = read_properties(props)?;
        let replication = match replication {
            Some(map) if map.contains_key(CLASS) => {
                ReplicationParams::for_keyspace(keyspace, map, Some(&self.replication), ctx)?
            }
            _ => self.replication.clone(),
        };
        Ok(KeyspaceOptions {
            replication,
            durable_writes: durable.unwrap_or(self.durable_writes),
        })
    }

    /// The part of DESCRIBE KEYSPACE after the name: `WITH replication = {...}  AND
    /// durable_writes = true;` (two spaces before AND, as Cassandra prints it).
    pub fn to_cql(&self) -> String {
        format!(
            "WITH replication = {}  AND durable_writes = {};",
            self.replication.to_cql(),
            self.durable_writes
        )
    }
}

type KeyspaceProps<'a> = (Option<&'a BTreeMap<String, String>>, Option<bool>);

fn read_properties(props: &[(String, OptionValue)]) -> Result<KeyspaceProps<'_>> {
    let mut seen = BTreeSet::new();
    for (name, _) in props {
        if !seen.insert(name.as_str()) {
            return syntax(format!("Multiple definitions for property '{name}'"));
        }
        if name != "replication" && name != "durable_writes" {
            return syntax(format!("Unknown property '{name}'"));
        }
    }
    let mut replication = None;
    let mut durable = None;
    for (name, value) in props {
        match (name.as_str(), value) {
            ("replication", OptionValue::Map(m)) => {
                if !m.is_empty() && !m.contains_key(CLASS) {
                    return config("Missing replication strategy class");
                }
                replication = Some(m);
            }
            ("replication", _) => {
                return syntax("Invalid value for property 'replication'. It should be a map.")
            }
            (_, OptionValue::Map(_)) => {
                return syntax("Invalid value for property 'durable_writes'. It should be a string")
            }
            (_, v) => {
                let s = v.scalar_text().unwrap_or_default();
                durable = Some(match s.to_lowercase().as_str() {
                    "1" | "true" | "yes" => true,
                    "0" | "false" | "no" => false,
                    _ => return syntax(format!("Invalid boolean value {s} for 'durable_writes'. Positive values can be '1', 'true' or 'yes'. Negative values can be '0', 'false' or 'no'.")),
                });
            }
        }
    }
    Ok((replication, durable))
}

#[cfg(test)]
#[path = "tests_replication.rs"]
mod tests;
