//! Keyspace definitions.

use crate::options::ReplicationParams;
use crate::table::Table;
use std::collections::BTreeMap;
use std::sync::Arc;

#[derive(Debug, Clone)]
pub struct Keyspace {
    pub name: String,
    pub replication: ReplicationParams,
    pub durable_writes: bool,
    pub tables: BTreeMap<String, Arc<Table>>,
    /// Built-in keyspaces (system, system_schema, ...) cannot be altered.
    pub is_system: bool,
}
