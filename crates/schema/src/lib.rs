//! Schema metadata: keyspaces, tables, columns, user types and their
//! options.
//!
//! A [`Schema`] is an immutable snapshot; a change builds a new snapshot
//! (copy on write) and bumps the schema version, so readers never see a
//! half-applied change. This crate validates options but executes nothing;
//! it depends only on `varve-types`.

pub mod access;
mod access_json;
pub mod column;
pub mod compact;
pub mod error;
pub mod keyspace;
pub mod options;
pub mod snapshot;
pub mod table;
pub mod user_types;

pub use column::{Column, ColumnKind};
pub use compact::Compact;
pub use error::{Error, Result};
pub use keyspace::Keyspace;
pub use table::Table;

use std::collections::BTreeMap;
use std::sync::Arc;

/// Every keyspace of the node, as one versioned snapshot.
#[derive(Debug, Clone, Default)]
pub struct Schema {
    pub keyspaces: BTreeMap<String, Arc<Keyspace>>,
    /// Changes with every schema change (drivers compare it for agreement).
    pub version: [u8; 16],
    /// Roles and permissions (docs/design/security.md, section 3).
    pub access: Arc<access::Access>,
}

impl Schema {
    pub fn keyspace(&self, name: &str) -> Option<&Arc<Keyspace>> {
        self.keyspaces.get(name)
    }

    pub fn table(&self, keyspace: &str, table: &str) -> Option<&Arc<Table>> {
        self.keyspaces.get(keyspace)?.tables.get(table)
    }

    /// Finds a table by its id.
    pub fn table_by_id(&self, id: u128) -> Option<&Arc<Table>> {
        self.keyspaces
            .values()
            .flat_map(|k| k.tables.values())
            .find(|t| t.id == id)
    }
}
