//! Schema changes, shared by the Schema_change RESULT and the SCHEMA_CHANGE
//! EVENT: `<change_type><target><options>`, all `[string]`s except the
//! argument types of functions and aggregates (a `[string list]`).
//!
//! Functions and aggregates came in v4: a v3 client is told, as Cassandra
//! tells it, that their keyspace was updated (`UPDATED KEYSPACE ks`).

use crate::error::{ProtocolError, Result};
use crate::primitives::{put_string, put_string_list, Reader};

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchemaChangeType {
    Created,
    Updated,
    Dropped,
}

impl SchemaChangeType {
    fn as_str(self) -> &'static str {
        match self {
            SchemaChangeType::Created => "CREATED",
            SchemaChangeType::Updated => "UPDATED",
            SchemaChangeType::Dropped => "DROPPED",
        }
    }
}

/// What changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SchemaChangeTarget {
    Keyspace(String),
    Table {
        keyspace: String,
        name: String,
    },
    Type {
        keyspace: String,
        name: String,
    },
    Function {
        keyspace: String,
        name: String,
        arg_types: Vec<String>,
    },
    Aggregate {
        keyspace: String,
        name: String,
        arg_types: Vec<String>,
    },
}

/// A schema change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaChange {
    pub change: SchemaChangeType,
    pub target: SchemaChangeTarget,
}

impl SchemaChange {
    /// Appends `<change_type><target><options>` as a client of `version`
    /// reads it.
    pub fn encode(&self, version: u8, out: &mut Vec<u8>) {
        if let (
            true,
            SchemaChangeTarget::Function { keyspace, .. }
            | SchemaChangeTarget::Aggregate { keyspace, .. },
        ) = (version < 4, &self.target)
        {
            put_string(out, SchemaChangeType::Updated.as_str());
            put_string(out, "KEYSPACE");
            put_string(out, keyspace);
            return;
        }
        put_string(out, self.change.as_str());
        match &self.target {
            SchemaChangeTarget::Keyspace(ks) => {
                put_string(out, "KEYSPACE");
                put_string(out, ks);
            }
            SchemaChangeTarget::Table { keyspace, name }
            | SchemaChangeTarget::Type { keyspace, name } => {
                let t = if matches!(self.target, SchemaChangeTarget::Table { .. }) {
                    "TABLE"
                } else {
                    "TYPE"
                };
                put_string(out, t);
                put_string(out, keyspace);
                put_string(out, name);
            }
            SchemaChangeTarget::Function {
                keyspace,
                name,
                arg_types,
            }
            | SchemaChangeTarget::Aggregate {
                keyspace,
                name,
                arg_types,
            } => {
                let t = if matches!(self.target, SchemaChangeTarget::Function { .. }) {
                    "FUNCTION"
                } else {
                    "AGGREGATE"
                };
                put_string(out, t);
                put_string(out, keyspace);
                put_string(out, name);
                put_string_list(out, arg_types);
            }
        }
    }

    /// Reads `<change_type><target><options>`.
    pub fn decode(r: &mut Reader<'_>) -> Result<SchemaChange> {
        let change = match r.read_string()?.as_str() {
            "CREATED" => SchemaChangeType::Created,
            "UPDATED" => SchemaChangeType::Updated,
            "DROPPED" => SchemaChangeType::Dropped,
            other => {
                return Err(ProtocolError::invalid(format!(
                    "unknown schema change type {other:?}"
                )))
            }
        };
        let target = match r.read_string()?.as_str() {
            "KEYSPACE" => SchemaChangeTarget::Keyspace(r.read_string()?),
            "TABLE" => SchemaChangeTarget::Table {
                keyspace: r.read_string()?,
                name: r.read_string()?,
            },
            "TYPE" => SchemaChangeTarget::Type {
                keyspace: r.read_string()?,
                name: r.read_string()?,
            },
            "FUNCTION" => SchemaChangeTarget::Function {
                keyspace: r.read_string()?,
                name: r.read_string()?,
                arg_types: r.read_string_list()?,
            },
            "AGGREGATE" => SchemaChangeTarget::Aggregate {
                keyspace: r.read_string()?,
                name: r.read_string()?,
                arg_types: r.read_string_list()?,
            },
            other => {
                return Err(ProtocolError::invalid(format!(
                    "unknown schema change target {other:?}"
                )))
            }
        };
        Ok(SchemaChange { change, target })
    }
}
