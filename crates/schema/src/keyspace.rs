//! Keyspace definitions.

use crate::options::ReplicationParams;
use crate::table::Table;
use std::collections::BTreeMap;
use std::sync::Arc;
use varve_types::UserType;

#[derive(Debug, Clone)]
pub struct Keyspace {
    pub name: String,
    pub replication: ReplicationParams,
    pub durable_writes: bool,
    pub tables: BTreeMap<String, Arc<Table>>,
    /// User-defined types, by name; columns and other types hold copies
    /// (see [`crate::user_types`] for how a change reaches them).
    pub types: BTreeMap<String, Arc<UserType>>,
    /// Built-in keyspaces (system, system_schema, ...) cannot be altered.
    pub is_system: bool,
}
