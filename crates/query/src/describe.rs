//! Server-side DESCRIBE (as Cassandra 4.0+ offers and cqlsh uses): the
//! CQL that recreates keyspaces, user types and tables.

use crate::api::{ColumnSpec, QueryResult, ResultRows};
use crate::context::Ctx;
use crate::error::{QueryError, Result};
use crate::processor::Processor;
use bytes::Bytes;
use std::sync::Arc;
use varve_cql::ast::{Describe, QualifiedName};
use varve_schema::options::KeyspaceOptions;
use varve_schema::{ColumnKind, Keyspace, Table};
use varve_types::{codec, CqlType, UserType, Value};

/// Quotes an identifier when CQL needs it to be read back unchanged.
pub fn quote(name: &str) -> String {
    let plain = name.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !varve_cql::is_reserved(name);
    if plain {
        name.to_string()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

pub fn keyspace_cql(ks: &Keyspace) -> String {
    let opts = KeyspaceOptions {
        replication: ks.replication.clone(),
        durable_writes: ks.durable_writes,
    };
    format!("CREATE KEYSPACE {} {}", quote(&ks.name), opts.to_cql())
}

/// The columns in the order Cassandra's DESCRIBE lists them: partition
/// key, clustering, statics, regulars; among statics and among regulars,
/// the columns of one cell before the multi-cell ones (non-frozen
/// collections and user types), each group by name.
fn describe_order(t: &Table) -> Vec<&varve_schema::Column> {
    let mut columns: Vec<&varve_schema::Column> = t.visible_columns().collect();
    columns.sort_by_key(|c| {
        let group = match c.kind {
            ColumnKind::PartitionKey => 0,
            ColumnKind::Clustering => 1,
            ColumnKind::Static => 2,
            ColumnKind::Regular => 3,
        };
        // Key columns keep their key order; the others go single-cell
        // before multi-cell, then by name, as Cassandra lists them.
        let other = matches!(c.kind, ColumnKind::Static | ColumnKind::Regular);
        let multi_cell = other && c.ty.is_multi_cell();
        (group, multi_cell, if other { c.name.as_str() } else { "" })
    });
    columns
}

/// The CREATE TABLE of `t`; for a COMPACT STORAGE table, inside the
/// comment Cassandra 5.0 puts around it (such tables are "not compatible
/// with CQL": their hidden columns cannot be written).
pub fn table_cql(t: &Table) -> String {
    let cql = create_table_cql(t);
    if !t.is_compact() {
        return cql;
    }
    format!(
        "/*\nWarning: Table {}.{} omitted because it has constructs not compatible with CQL (was created via legacy API).\nApproximate structure, for reference:\n(this should not be used to reproduce this schema)\n\n{cql}\n*/",
        quote(&t.keyspace),
        quote(&t.name)
    )
}

/// The CREATE TABLE statement: visible columns only (a static compact
/// table's columns without `static`), but every clustering column in
/// CLUSTERING ORDER BY, the hidden one of a static compact table included,
/// as Cassandra prints it.
fn create_table_cql(t: &Table) -> String {
    let mut s = format!("CREATE TABLE {}.{} (\n", quote(&t.keyspace), quote(&t.name));
    let pk: Vec<&str> = t.partition_key().map(|c| c.name.as_str()).collect();
    let ck: Vec<_> = t.clustering().collect();
    let inline_pk = pk.len() == 1 && ck.is_empty();
    for c in describe_order(t) {
        s.push_str(&format!("    {} {}", quote(&c.name), c.ty.cql_name()));
        if c.kind == ColumnKind::Static && !t.is_compact() {
            s.push_str(" static");
        }
        if inline_pk && c.kind == ColumnKind::PartitionKey {
            s.push_str(" PRIMARY KEY");
        }
        s.push_str(",\n");
    }
    if inline_pk {
        s.truncate(s.len() - 2);
        s.push('\n');
    } else {
        let pk_text = if pk.len() == 1 {
            quote(pk[0])
        } else {
            format!(
                "({})",
                pk.iter().map(|n| quote(n)).collect::<Vec<_>>().join(", ")
            )
        };
        let mut parts = vec![pk_text];
        parts.extend(ck.iter().filter(|c| !c.hidden).map(|c| quote(&c.name)));
        s.push_str(&format!("    PRIMARY KEY ({})\n", parts.join(", ")));
    }
    s.push_str(") WITH ");
    if t.is_compact() {
        s.push_str("COMPACT STORAGE\n    AND ");
    }
    if !ck.is_empty() {
        let order: Vec<String> = ck
            .iter()
            .map(|c| {
                format!(
                    "{} {}",
                    quote(&c.name),
                    if c.descending { "DESC" } else { "ASC" }
                )
            })
            .collect();
        s.push_str(&format!(
            "CLUSTERING ORDER BY ({})\n    AND ",
            order.join(", ")
        ));
    }
    s.push_str(&t.options.to_cql());
    s.push(';');
    s
}

fn spec(name: &str) -> ColumnSpec {
    ColumnSpec {
        keyspace: String::new(),
        table: String::new(),
        name: name.to_string(),
        ty: CqlType::Text,
    }
}

fn cell(s: &str) -> Option<Bytes> {
    Some(Bytes::from(codec::serialize(&Value::Text(s.to_string()))))
}

fn rows(columns: &[&str], rows: Vec<Vec<String>>) -> QueryResult {
    let columns: Vec<ColumnSpec> = columns.iter().map(|c| spec(c)).collect();
    let metadata_id = crate::prepare::metadata_id(&columns);
    QueryResult::Rows(ResultRows {
        columns: columns.into(),
        rows: rows
            .into_iter()
            .map(|r| r.iter().map(|v| cell(v)).collect())
            .collect(),
        paging_state: None,
        metadata_id,
    })
}

const ELEMENT: &[&str] = &["keyspace_name", "type", "name", "create_statement"];
const LISTING: &[&str] = &["keyspace_name", "type", "name"];

/// `CREATE TYPE ks.name (\n    field type,\n ...);` as Cassandra prints it.
pub fn type_cql(u: &UserType) -> String {
    let fields: Vec<String> = u
        .field_names
        .iter()
        .zip(&u.field_types)
        .map(|(n, t)| format!("    {} {}", quote(n), t.cql_name()))
        .collect();
    format!(
        "CREATE TYPE {}.{} (\n{}\n);",
        quote(&u.keyspace),
        quote(&u.name),
        fields.join(",\n")
    )
}

/// The keyspace's types by name, each after the types it uses.
fn types_in_order(ks: &Keyspace) -> Vec<&Arc<UserType>> {
    let mut out: Vec<&Arc<UserType>> = Vec::new();
    let mut left: Vec<&Arc<UserType>> = ks.types.values().collect();
    while !left.is_empty() {
        let ready = left.iter().position(|u| {
            left.iter()
                .all(|o| o.name == u.name || !u.references(&ks.name, &o.name))
        });
        out.push(left.remove(ready.unwrap_or(0)));
    }
    out
}

/// What a snapshot's `schema.cql` holds for `t`: `CREATE TYPE IF NOT
/// EXISTS` for each user type the table uses (each after the types it
/// uses), then the table's CREATE TABLE.
pub fn snapshot_cql(schema: &varve_schema::Schema, t: &Table) -> String {
    let mut out = String::new();
    if let Some(ks) = schema.keyspace(&t.keyspace) {
        for u in types_in_order(ks) {
            let used = t
                .columns
                .iter()
                .any(|c| c.ty.references_user_type(&ks.name, &u.name));
            if used {
                let cql = type_cql(u).replacen("CREATE TYPE", "CREATE TYPE IF NOT EXISTS", 1);
                out.push_str(&cql);
                out.push('\n');
            }
        }
    }
    out.push_str(&table_cql(t));
    out
}

fn type_rows(ks: &Keyspace) -> Vec<Vec<String>> {
    types_in_order(ks)
        .into_iter()
        .map(|u| vec![ks.name.clone(), "type".into(), quote(&u.name), type_cql(u)])
        .collect()
}

fn user_type(ctx: &Ctx, name: &QualifiedName) -> Result<Arc<UserType>> {
    let ks = ctx.keyspace_of(&name.keyspace)?;
    ctx.schema
        .keyspace(&ks)
        .and_then(|k| k.types.get(&name.name))
        .cloned()
        .ok_or_else(|| {
            QueryError::Invalid(format!(
                "User defined type '{}' not found in '{ks}'",
                name.name
            ))
        })
}

fn is_hidden(ks: &Keyspace) -> bool {
    ks.is_system
}

fn keyspace_rows(ks: &Keyspace, only: bool) -> Vec<Vec<String>> {
    let mut out = vec![vec![
        ks.name.clone(),
        "keyspace".into(),
        ks.name.clone(),
        keyspace_cql(ks),
    ]];
    if !only {
        out.extend(type_rows(ks));
        for t in ks.tables.values() {
            out.push(vec![
                ks.name.clone(),
                "table".into(),
                t.name.clone(),
                table_cql(t),
            ]);
        }
    }
    out
}

pub fn execute(_p: &Processor, ctx: &Ctx, d: &Describe) -> Result<QueryResult> {
    let schema = &ctx.schema;
    Ok(match d {
        Describe::Cluster => rows(
            &["cluster", "partitioner", "snitch"],
            vec![vec![
                _p.node.cluster_name.clone(),
                "org.apache.cassandra.dht.Murmur3Partitioner".into(),
                "org.apache.cassandra.locator.SimpleSnitch".into(),
            ]],
        ),
        Describe::Keyspaces => rows(
            LISTING,
            schema
                .keyspaces
                .values()
                .map(|k| vec![k.name.clone(), "keyspace".into(), k.name.clone()])
                .collect(),
        ),
        Describe::Schema { full } => {
            let mut out = Vec::new();
            for ks in schema.keyspaces.values() {
                if *full || !is_hidden(ks) {
                    out.extend(keyspace_rows(ks, false));
                }
            }
            rows(ELEMENT, out)
        }
        Describe::Keyspace { name, only } => {
            let name = ctx.keyspace_of(name)?;
            let ks = schema
                .keyspace(&name)
                .ok_or_else(|| QueryError::Invalid(format!("'{name}' not found in keyspaces")))?;
            rows(ELEMENT, keyspace_rows(ks, *only))
        }
        Describe::Tables => {
            let mut out = Vec::new();
            for ks in schema.keyspaces.values() {
                if ctx.keyspace.as_ref().is_some_and(|k| *k != ks.name)
                    || (ctx.keyspace.is_none() && is_hidden(ks))
                {
                    continue;
                }
                for t in ks.tables.values() {
                    out.push(vec![ks.name.clone(), "table".into(), t.name.clone()]);
                }
            }
            rows(LISTING, out)
        }
        Describe::Table(name) => {
            let t = table(ctx, name)?;
            rows(
                ELEMENT,
                vec![vec![
                    t.keyspace.clone(),
                    "table".into(),
                    t.name.clone(),
                    table_cql(&t),
                ]],
            )
        }
        Describe::Types => {
            let mut out = Vec::new();
            for ks in schema.keyspaces.values() {
                if ctx.keyspace.as_ref().is_some_and(|k| *k != ks.name) {
                    continue;
                }
                out.extend(type_rows(ks).into_iter().map(|mut r| {
                    r.truncate(3);
                    r
                }));
            }
            rows(LISTING, out)
        }
        Describe::Type(name) => {
            let u = user_type(ctx, name)?;
            let row = vec![
                u.keyspace.clone(),
                "type".into(),
                quote(&u.name),
                type_cql(&u),
            ];
            rows(ELEMENT, vec![row])
        }
        Describe::Functions | Describe::Aggregates => rows(LISTING, Vec::new()),
        Describe::Name(name) => {
            if name.keyspace.is_none() {
                if let Some(ks) = schema.keyspace(&name.name) {
                    return Ok(rows(ELEMENT, keyspace_rows(ks, false)));
                }
            }
            let t = table(ctx, name)?;
            rows(
                ELEMENT,
                vec![vec![
                    t.keyspace.clone(),
                    "table".into(),
                    t.name.clone(),
                    table_cql(&t),
                ]],
            )
        }
    })
}

fn table(ctx: &Ctx, name: &QualifiedName) -> Result<std::sync::Arc<Table>> {
    let ks = ctx.keyspace_of(&name.keyspace)?;
    ctx.schema
        .table(&ks, &name.name)
        .cloned()
        .ok_or_else(|| QueryError::Invalid(format!("'{}' not found in keyspace '{ks}'", name.name)))
}
