//! The system keyspaces drivers and cqlsh read: `system.local`,
//! `system.peers(_v2)`, `system.size_estimates` and `system.table_estimates`
//! ([`estimates`]), `system_schema.*` and `system_virtual_schema.*`;
//! `system_views.*`, the node's metrics and settings ([`views`]); and
//! `system_auth.*`, the roles and permissions ([`auth_rows`]).
//!
//! They are virtual: their rows are built from the schema and the node's
//! facts when a query reads them, put in a scratch storage table, and the
//! query then runs through the normal SELECT path (so every restriction,
//! paging and projection works on them too).

mod auth_rows;
mod definitions;
mod estimates;
mod schema_rows;
mod views;

use crate::context::Ctx;
use crate::error::{QueryError, Result};
use crate::processor::Processor;
use bytes::Bytes;
use std::collections::BTreeMap;
use varve_schema::{ColumnKind, Table};
use varve_storage::{Cell, ClusteringKey, LivenessInfo, Partition, Row, Storage};
use varve_types::{codec, Value};

pub use definitions::{initial_schema, VIRTUAL_KEYSPACES};

/// One row of a virtual table: column name to value.
pub type VRow = BTreeMap<&'static str, Value>;

/// Builds a scratch storage holding the current rows of a virtual table.
pub fn materialize(p: &Processor, table: &Table, ctx: &Ctx) -> Result<Storage> {
    let rows = match (table.keyspace.as_str(), table.name.as_str()) {
        ("system", "local") => vec![schema_rows::local(p, &ctx.schema)],
        ("system", "peers") => schema_rows::peers(&p.cluster_view().peers(), false),
        ("system", "peers_v2") => schema_rows::peers(&p.cluster_view().peers(), true),
        ("system", "size_estimates") => estimates::rows(p, &ctx.schema, false),
        ("system", "table_estimates") => estimates::rows(p, &ctx.schema, true),
        ("system_schema", name) => schema_rows::schema_table(name, &ctx.schema),
        ("system_virtual_schema", name) => schema_rows::virtual_schema_table(name, &ctx.schema),
        ("system_views", name) => views::rows(p, name),
        ("system_auth", name) => auth_rows::rows(name, &ctx.schema.access),
        _ => Vec::new(),
    };
    let storage = Storage::new();
    let cmp = crate::comparator::build(table);
    storage.create_table(crate::local_schema::descriptor(table, false))?;
    for r in rows {
        let mut pk = Vec::new();
        let mut ck = Vec::new();
        let mut row = Row {
            liveness: Some(LivenessInfo::new(0, 0, 0)),
            ..Row::default()
        };
        for col in &table.columns {
            let Some(v) = r.get(col.name.as_str()) else {
                if col.is_primary_key() {
                    return Err(QueryError::Server(format!(
                        "virtual row without {}",
                        col.name
                    )));
                }
                continue;
            };
            let bytes = Bytes::from(codec::serialize(v));
            match (col.kind, v) {
                (ColumnKind::PartitionKey, _) => pk.push(bytes),
                (ColumnKind::Clustering, _) => ck.push(bytes),
                // A set that is not frozen: a cell per element, keyed by it.
                (_, Value::Set(items)) if col.ty.is_multi_cell() => {
                    for item in items {
                        let path = Bytes::from(codec::serialize(item));
                        row.cells
                            .insert((col.id, Some(path)), Cell::live(0, Bytes::new()));
                    }
                }
                _ => {
                    row.cells.insert((col.id, None), Cell::live(0, bytes));
                }
            }
        }
        let key = crate::restrictions::partition_key(&pk)?;
        let mut partition = Partition::default();
        partition.rows.insert(ClusteringKey::row(ck, &cmp), row);
        storage.apply(table.id, &key, partition)?;
    }
    Ok(storage)
}
