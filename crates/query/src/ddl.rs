//! Schema statements: keyspaces, tables, TRUNCATE.

use crate::api::{QueryResult, SchemaChange, SchemaChangeKind, SchemaChangeTarget};
use crate::context::Ctx;
use crate::error::{QueryError, Result};
use crate::processor::Processor;
use crate::user_types::ddl as user_types;
use crate::user_types::{names_user_type, resolve};
use std::collections::BTreeMap;
use std::sync::Arc;
use varve_cql::ast::{self, AlterTableOp, Order, PropertyValue, Statement};
use varve_schema::access::Resource;
use varve_schema::options::{KeyspaceOptions, OptionValue, ReplicationContext, TableOptions};
use varve_schema::table::TableSpec;
use varve_schema::{Keyspace, Schema, Table};

/// Names longer than this are rejected (Cassandra's SchemaConstants.NAME_LENGTH).
pub const MAX_NAME_LENGTH: usize = 48;

pub async fn execute(p: &Processor, ctx: &mut Ctx<'_>, stmt: &Statement) -> Result<QueryResult> {
    match stmt {
        Statement::CreateKeyspace(c) => create_keyspace(p, c, ctx.creator.as_deref()).await,
        Statement::AlterKeyspace(a) if a.name == AUTH_KEYSPACE => alter_auth_keyspace(p, ctx, a),
        Statement::AlterKeyspace(a) => alter_keyspace(p, a).await,
        Statement::DropKeyspace { name, if_exists } => drop_keyspace(p, name, *if_exists).await,
        Statement::CreateTable(c) => create_table(p, ctx, c).await,
        Statement::AlterTable(a) => alter_table(p, ctx, a).await,
        Statement::DropTable { name, if_exists } => drop_table(p, ctx, name, *if_exists).await,
        Statement::CreateType(c) => user_types::create_type(p, ctx, c).await,
        Statement::AlterType(a) => user_types::alter_type(p, ctx, a).await,
        Statement::DropType { name, if_exists } => {
            user_types::drop_type(p, ctx, name, *if_exists).await
        }
        other => Err(QueryError::Server(format!(
            "not a schema statement: {other:?}"
        ))),
    }
}

/// The keyspace of roles and permissions (docs/design/security.md).
const AUTH_KEYSPACE: &str = "system_auth";

/// ALTER KEYSPACE system_auth, which Cassandra's operators run to raise
/// its replication: accepted when its options are valid, and changes
/// nothing, since roles live in the cluster metadata on every node; the
/// client is told so in a warning.
fn alter_auth_keyspace(
    p: &Processor,
    ctx: &mut Ctx<'_>,
    a: &ast::AlterKeyspace,
) -> Result<QueryResult> {
    let current = KeyspaceOptions {
        replication: varve_schema::options::ReplicationParams::local(),
        durable_writes: true,
    };
    current.altered(&a.name, &props(&a.properties), &replication_context(p))?;
    ctx.warnings.push(format!(
        "{AUTH_KEYSPACE} is kept in the cluster metadata, on every node: its replication options change nothing"
    ));
    Ok(QueryResult::Void)
}

/// Grants `creator` every permission that applies to what it created, as
/// Cassandra does (`None`: no authorizer, or nobody logged in).
fn grant_creator(s: &mut Schema, creator: Option<&str>, resource: Resource) {
    if let Some(who) = creator {
        Arc::make_mut(&mut s.access).grant(who, &resource, resource.applicable());
    }
}

fn change(kind: SchemaChangeKind, target: SchemaChangeTarget) -> QueryResult {
    QueryResult::SchemaChange(SchemaChange { kind, target })
}

fn check_name(name: &str, what: &str) -> Result<()> {
    if name.is_empty()
        || name.len() > MAX_NAME_LENGTH
        || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        return Err(QueryError::Invalid(format!(
            "{what} name must not be empty, more than {MAX_NAME_LENGTH} characters long, or contain non-alphanumeric-underscore characters (got \"{name}\")"
        )));
    }
    Ok(())
}

fn option_value(v: &PropertyValue) -> OptionValue {
    match v {
        PropertyValue::String(s) => OptionValue::Text(s.clone()),
        PropertyValue::Identifier(s) => OptionValue::Text(s.clone()),
        PropertyValue::Number(n) => OptionValue::Number(n.clone()),
        PropertyValue::Boolean(b) => OptionValue::Bool(*b),
        PropertyValue::Map(m) => OptionValue::Map(m.iter().cloned().collect()),
    }
}

fn props(list: &[(String, PropertyValue)]) -> Vec<(String, OptionValue)> {
    list.iter()
        .map(|(n, v)| (n.clone(), option_value(v)))
        .collect()
}

async fn create_keyspace(
    p: &Processor,
    c: &ast::CreateKeyspace,
    creator: Option<&str>,
) -> Result<QueryResult> {
    check_name(&c.name, "Keyspace")?;
    if !c.properties.iter().any(|(n, _)| n == "replication") {
        return Err(QueryError::Invalid(
            "Missing mandatory option 'replication'".into(),
        ));
    }
    // Cassandra reports an existing keyspace before looking at its options.
    if p.schema().keyspace(&c.name).is_some() {
        if c.if_not_exists {
            return Ok(QueryResult::Void);
        }
        return Err(QueryError::AlreadyExists {
            keyspace: c.name.clone(),
            table: String::new(),
            message: format!("Keyspace '{}' already exists", c.name),
        });
    }
    let options =
        KeyspaceOptions::for_create(&c.name, &props(&c.properties), &replication_context(p))?;
    let created = p
        .update_schema(|s| {
            if s.keyspaces.contains_key(&c.name) {
                if c.if_not_exists {
                    return Ok(false);
                }
                return Err(QueryError::AlreadyExists {
                    keyspace: c.name.clone(),
                    table: String::new(),
                    message: format!("Keyspace {} already exists", c.name),
                });
            }
            s.keyspaces.insert(
                c.name.clone(),
                Arc::new(Keyspace {
                    name: c.name.clone(),
                    replication: options.replication.clone(),
                    durable_writes: options.durable_writes,
                    tables: BTreeMap::new(),
                    types: BTreeMap::new(),
                    is_system: false,
                }),
            );
            grant_creator(s, creator, Resource::Keyspace(c.name.clone()));
            Ok(true)
        })
        .await?;
    if !created {
        return Ok(QueryResult::Void);
    }
    Ok(change(
        SchemaChangeKind::Created,
        SchemaChangeTarget::Keyspace(c.name.clone()),
    ))
}

async fn alter_keyspace(p: &Processor, a: &ast::AlterKeyspace) -> Result<QueryResult> {
    let altered = p
        .update_schema(|s| {
            let Some(ks) = s.keyspaces.get(&a.name) else {
                if a.if_exists {
                    return Ok(false);
                }
                return Err(QueryError::Invalid(format!(
                    "Keyspace '{}' does not exist",
                    a.name
                )));
            };
            if ks.is_system {
                return Err(QueryError::Unauthorized(format!(
                    "{} keyspace is not user-modifiable.",
                    a.name
                )));
            }
            let mut ks = (**ks).clone();
            let current = KeyspaceOptions {
                replication: ks.replication.clone(),
                durable_writes: ks.durable_writes,
            };
            let next = current.altered(&a.name, &props(&a.properties), &replication_context(p))?;
            ks.replication = next.replication;
            ks.durable_writes = next.durable_writes;
            s.keyspaces.insert(a.name.clone(), Arc::new(ks));
            Ok(true)
        })
        .await?;
    if !altered {
        return Ok(QueryResult::Void);
    }
    Ok(change(
        SchemaChangeKind::Updated,
        SchemaChangeTarget::Keyspace(a.name.clone()),
    ))
}

async fn drop_keyspace(p: &Processor, name: &str, if_exists: bool) -> Result<QueryResult> {
    let dropped = p
        .update_schema(|s| match s.keyspaces.get(name) {
            None if if_exists => Ok(false),
            None => Err(QueryError::Invalid(format!(
                "Keyspace '{name}' doesn't exist"
            ))),
            Some(ks) if ks.is_system => Err(QueryError::Unauthorized(format!(
                "Cannot DROP <keyspace {name}>"
            ))),
            Some(_) => {
                let resource = Resource::Keyspace(name.to_string());
                Arc::make_mut(&mut s.access).forget_resource(&resource);
                Ok(s.keyspaces.remove(name).is_some())
            }
        })
        .await?;
    if !dropped {
        return Ok(QueryResult::Void);
    }
    p.forget_prepared();
    Ok(change(
        SchemaChangeKind::Dropped,
        SchemaChangeTarget::Keyspace(name.to_string()),
    ))
}

async fn create_table(
    p: &Processor,
    ctx: &mut Ctx<'_>,
    c: &ast::CreateTable,
) -> Result<QueryResult> {
    let ks_name = ctx.keyspace_of(&c.name.keyspace)?;
    check_name(&c.name.name, "Table")?;
    let options = TableOptions::for_create(&props(&c.properties))?;
    let id = requested_id(&c.properties)?
        .unwrap_or_else(|| u128::from_be_bytes(varve_types::time::new_timeuuid()));
    let order: BTreeMap<&str, Order> = c
        .clustering_order
        .iter()
        .map(|(n, o)| (n.as_str(), *o))
        .collect();
    for (i, (name, _)) in c.clustering_order.iter().enumerate() {
        if c.clustering_key.get(i) != Some(name) {
            return Err(QueryError::Invalid(if c.clustering_key.contains(name) {
                "The order of columns in the CLUSTERING ORDER directive must match that of the clustering columns".to_string()
            } else {
                format!("Only clustering key columns can be defined in CLUSTERING ORDER directive: {name} is not a clustering column")
            }));
        }
    }
    let spec = TableSpec {
        keyspace: ks_name.clone(),
        name: c.name.name.clone(),
        id,
        columns: c
            .columns
            .iter()
            .map(|d| {
                Ok((
                    d.name.clone(),
                    column_type(p, &ks_name, &d.ty)?,
                    d.is_static,
                ))
            })
            .collect::<Result<_>>()?,
        partition_key: c.partition_key.clone(),
        clustering: c
            .clustering_key
            .iter()
            .map(|n| (n.clone(), order.get(n.as_str()) == Some(&Order::Desc)))
            .collect(),
        options,
    };
    let table = match c.compact_storage {
        true => varve_schema::compact::create(spec)?,
        false => Table::create(spec)?,
    };
    let created = p
        .update_schema(|s| {
            let ks = s.keyspaces.get(&ks_name).ok_or_else(|| {
                QueryError::Invalid(format!("Keyspace '{ks_name}' doesn't exist"))
            })?;
            if ks.is_system {
                return Err(QueryError::Unauthorized(format!(
                    "Cannot CREATE <table {ks_name}.{}>",
                    table.name
                )));
            }
            if ks.tables.contains_key(&table.name) {
                if c.if_not_exists {
                    return Ok(false);
                }
                return Err(QueryError::AlreadyExists {
                    keyspace: ks_name.clone(),
                    table: table.name.clone(),
                    message: format!("Table {ks_name}.{} already exists", table.name),
                });
            }
            if let Some(other) = s
                .keyspaces
                .values()
                .flat_map(|k| k.tables.values())
                .find(|t| t.id == table.id)
            {
                return Err(QueryError::Invalid(format!(
                    "Table id {} is already used by {}.{}",
                    varve_types::time::format_uuid(&table.id.to_be_bytes()),
                    other.keyspace,
                    other.name
                )));
            }
            let mut ks = (**ks).clone();
            ks.tables
                .insert(table.name.clone(), Arc::new(table.clone()));
            s.keyspaces.insert(ks_name.clone(), Arc::new(ks));
            let resource = Resource::Table(ks_name.clone(), table.name.clone());
            grant_creator(s, ctx.creator.as_deref(), resource);
            Ok(true)
        })
        .await?;
    if !created {
        return Ok(QueryResult::Void);
    }
    Ok(change(
        SchemaChangeKind::Created,
        SchemaChangeTarget::Table(ks_name, c.name.name.clone()),
    ))
}

/// A column's type as written, with the user types it names looked up in
/// keyspace `ks`.
fn column_type(p: &Processor, ks: &str, ty: &varve_types::CqlType) -> Result<varve_types::CqlType> {
    if !names_user_type(ty) {
        return Ok(ty.clone());
    }
    let schema = p.schema();
    let keyspace = schema
        .keyspace(ks)
        .ok_or_else(|| QueryError::Invalid(format!("Keyspace '{ks}' doesn't exist")))?;
    resolve(ty, keyspace)
}

/// The data centres a NetworkTopologyStrategy keyspace may name: this
/// node's and every peer's (as Cassandra refuses a data centre without
/// nodes).
fn replication_context(p: &Processor) -> ReplicationContext {
    let mut datacenters = vec![p.node().data_center.clone()];
    for peer in p.cluster_view().peers() {
        if !datacenters.contains(&peer.data_center) {
            datacenters.push(peer.data_center);
        }
    }
    ReplicationContext {
        datacenters,
        ..ReplicationContext::default()
    }
}

/// The table id a CREATE TABLE asks for (`WITH id = '<uuid>'`), as
/// Cassandra lets a table be recreated with the id its files carry.
fn requested_id(list: &[(String, PropertyValue)]) -> Result<Option<u128>> {
    let Some((_, value)) = list.iter().find(|(n, _)| n == "id") else {
        return Ok(None);
    };
    let text = match option_value(value) {
        OptionValue::Text(t) => t,
        _ => {
            return Err(QueryError::Config(
                "Invalid table id: expected a UUID".into(),
            ))
        }
    };
    varve_types::time::parse_uuid(&text)
        .map(|b| Some(u128::from_be_bytes(b)))
        .map_err(|_| QueryError::Config(format!("Invalid table id '{text}': not a UUID")))
}

/// Applies `f` to a copy of the table and stores it back.
async fn modify_table(
    p: &Processor,
    ks_name: &str,
    name: &str,
    if_exists: bool,
    mut f: impl FnMut(&mut Table) -> Result<()>,
) -> Result<bool> {
    p.update_schema(|s| {
        let ks = s
            .keyspaces
            .get(ks_name)
            .ok_or_else(|| QueryError::Invalid(format!("Keyspace '{ks_name}' doesn't exist")))?;
        let Some(t) = ks.tables.get(name) else {
            if if_exists {
                return Ok(false);
            }
            return Err(QueryError::Invalid(format!(
                "Table '{ks_name}.{name}' doesn't exist"
            )));
        };
        if ks.is_system {
            return Err(QueryError::Unauthorized(format!(
                "Cannot ALTER <table {ks_name}.{name}>"
            )));
        }
        let mut t = (**t).clone();
        f(&mut t)?;
        let mut ks = (**ks).clone();
        ks.tables.insert(name.to_string(), Arc::new(t));
        s.keyspaces.insert(ks_name.to_string(), Arc::new(ks));
        Ok(true)
    })
    .await
}

async fn alter_table(p: &Processor, ctx: &mut Ctx<'_>, a: &ast::AlterTable) -> Result<QueryResult> {
    let ks_name = ctx.keyspace_of(&a.name.keyspace)?;
    let at = ctx.timestamp_micros;
    let altered = modify_table(p, &ks_name, &a.name.name, a.if_exists, |t| match &a.op {
        AlterTableOp::Add {
            if_not_exists,
            columns,
        } => {
            for c in columns {
                if t.column(&c.name).is_some() && *if_not_exists {
                    continue;
                }
                t.add_column(&c.name, column_type(p, &ks_name, &c.ty)?, c.is_static)?;
            }
            Ok(())
        }
        AlterTableOp::Drop {
            if_exists,
            columns,
            timestamp,
        } => {
            for c in columns {
                if t.column(c).is_none() && *if_exists {
                    continue;
                }
                t.drop_column(c, timestamp.unwrap_or(at))?;
            }
            Ok(())
        }
        AlterTableOp::Rename { if_exists, renames } => {
            for (from, to) in renames {
                if t.column(from).is_none() && *if_exists {
                    continue;
                }
                t.rename_column(from, to)?;
            }
            Ok(())
        }
        AlterTableOp::AlterType { .. } => Err(QueryError::Invalid(
            "Altering column types is no longer supported".into(),
        )),
        AlterTableOp::With(list) => {
            t.options = t.options.altered(&props(list))?;
            Ok(())
        }
    })
    .await?;
    if !altered {
        return Ok(QueryResult::Void);
    }
    // As Cassandra does, an altered table's prepared statements are dropped:
    // drivers get UNPREPARED, re-prepare, and so learn the new result columns.
    p.forget_prepared();
    Ok(change(
        SchemaChangeKind::Updated,
        SchemaChangeTarget::Table(ks_name, a.name.name.clone()),
    ))
}

async fn drop_table(
    p: &Processor,
    ctx: &mut Ctx<'_>,
    name: &ast::QualifiedName,
    if_exists: bool,
) -> Result<QueryResult> {
    let ks_name = ctx.keyspace_of(&name.keyspace)?;
    let dropped = p
        .update_schema(|s| {
            let Some(ks) = s.keyspaces.get(&ks_name) else {
                if if_exists {
                    return Ok(false);
                }
                return Err(QueryError::Invalid(format!(
                    "Keyspace '{ks_name}' doesn't exist"
                )));
            };
            if ks.is_system {
                return Err(QueryError::Unauthorized(format!(
                    "Cannot DROP <table {ks_name}.{}>",
                    name.name
                )));
            }
            let mut ks = (**ks).clone();
            let t = ks.tables.remove(&name.name);
            if t.is_none() && !if_exists {
                return Err(QueryError::Invalid(format!(
                    "Table '{ks_name}.{}' doesn't exist",
                    name.name
                )));
            }
            s.keyspaces.insert(ks_name.clone(), Arc::new(ks));
            let resource = Resource::Table(ks_name.clone(), name.name.clone());
            Arc::make_mut(&mut s.access).forget_resource(&resource);
            Ok(t.is_some())
        })
        .await?;
    if !dropped {
        return Ok(QueryResult::Void);
    }
    p.forget_prepared();
    Ok(change(
        SchemaChangeKind::Dropped,
        SchemaChangeTarget::Table(ks_name, name.name.clone()),
    ))
}

/// TRUNCATE: every row of the table goes, on every replica.
pub(crate) async fn truncate(
    p: &Processor,
    ctx: &mut Ctx<'_>,
    name: &ast::QualifiedName,
) -> Result<QueryResult> {
    let t = ctx.table(name)?;
    if t.is_virtual {
        return Err(QueryError::Invalid(format!(
            "Error during truncate: Cannot truncate virtual table {}.{}",
            t.keyspace, t.name
        )));
    }
    p.data.truncate(t.id).await?;
    Ok(QueryResult::Void)
}
