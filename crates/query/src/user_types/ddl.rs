//! CREATE TYPE, ALTER TYPE and DROP TYPE, with Cassandra 5.0's checks and
//! messages. A type lives in its keyspace's `types`; a change reaches the
//! tables and types holding it through [`Keyspace::put_type`].

use super::resolve;
use crate::api::{QueryResult, SchemaChange, SchemaChangeKind, SchemaChangeTarget};
use crate::context::Ctx;
use crate::error::{QueryError, Result};
use crate::processor::Processor;
use std::sync::Arc;
use varve_cql::ast::{AlterType, AlterTypeOp, CreateType, QualifiedName};
use varve_schema::{Keyspace, Schema};
use varve_types::{CqlType, UserType};

/// Most fields a user type may have: the protocol sends the count of a
/// UDT's fields as a `[short]`.
pub const MAX_USER_TYPE_FIELDS: usize = u16::MAX as usize;

fn invalid(msg: String) -> QueryError {
    QueryError::Invalid(msg)
}

fn changed(kind: SchemaChangeKind, ks: &str, name: &str) -> QueryResult {
    QueryResult::SchemaChange(SchemaChange {
        kind,
        target: SchemaChangeTarget::Type(ks.to_string(), name.to_string()),
    })
}

/// A user keyspace of the schema, for a change.
fn user_keyspace(s: &Schema, ks: &str, what: &str) -> Result<Keyspace> {
    let k = s
        .keyspaces
        .get(ks)
        .ok_or_else(|| invalid(format!("Keyspace '{ks}' doesn't exist")))?;
    if k.is_system {
        return Err(QueryError::Unauthorized(format!(
            "{ks} keyspace is not user-modifiable. ({what})"
        )));
    }
    Ok((**k).clone())
}

/// Checks one field's type as written and resolves it.
fn field_type(ty: &CqlType, ks: &Keyspace) -> Result<CqlType> {
    if *ty == CqlType::Counter {
        return Err(invalid("A user type cannot contain counters".into()));
    }
    if matches!(ty, CqlType::UserRef(_)) {
        return Err(invalid("A user type cannot contain non-frozen UDTs".into()));
    }
    resolve(ty, ks)
}

/// Checks the number of fields against [`MAX_USER_TYPE_FIELDS`].
pub fn check_field_count(n: usize) -> Result<()> {
    if n > MAX_USER_TYPE_FIELDS {
        return Err(invalid(format!(
            "A user type cannot have more than {MAX_USER_TYPE_FIELDS} fields (got {n})"
        )));
    }
    Ok(())
}

pub(crate) fn build(ks: &Keyspace, c: &CreateType) -> Result<UserType> {
    check_field_count(c.fields.len())?;
    let mut u = UserType {
        keyspace: ks.name.clone(),
        name: c.name.name.clone(),
        field_names: Vec::new(),
        field_types: Vec::new(),
    };
    for (name, ty) in &c.fields {
        if u.field_names.contains(name) {
            return Err(invalid(format!(
                "Duplicate field name '{name}' in type '{}'",
                u.name
            )));
        }
        u.field_names.push(name.clone());
        u.field_types.push(field_type(ty, ks)?);
    }
    Ok(u)
}

pub async fn create_type(p: &Processor, ctx: &mut Ctx<'_>, c: &CreateType) -> Result<QueryResult> {
    let ks_name = ctx.keyspace_of(&c.name.keyspace)?;
    let created = p
        .update_schema(|s| {
            let mut ks = user_keyspace(s, &ks_name, "CREATE TYPE")?;
            if ks.types.contains_key(&c.name.name) {
                if c.if_not_exists {
                    return Ok(false);
                }
                return Err(invalid(format!(
                    "A user type with name '{}' already exists",
                    c.name.name
                )));
            }
            let u = build(&ks, c)?;
            ks.types.insert(u.name.clone(), Arc::new(u));
            s.keyspaces.insert(ks_name.clone(), Arc::new(ks));
            Ok(true)
        })
        .await?;
    if !created {
        return Ok(QueryResult::Void);
    }
    Ok(changed(SchemaChangeKind::Created, &ks_name, &c.name.name))
}

/// The altered type, or `None` when IF [NOT] EXISTS makes it a no-op.
pub(crate) fn altered(ks: &Keyspace, old: &UserType, op: &AlterTypeOp) -> Result<Option<UserType>> {
    let qualified = format!("{}.{}", ks.name, old.name);
    let mut u = old.clone();
    match op {
        AlterTypeOp::AlterField => {
            return Err(invalid(
                "Altering field types is no longer supported".into(),
            ))
        }
        AlterTypeOp::Add {
            if_not_exists,
            field,
            ty,
        } => {
            if u.field_index(field).is_some() {
                if *if_not_exists {
                    return Ok(None);
                }
                return Err(invalid(format!(
                    "Cannot add field {field} to type {qualified}: a field with name {field} already exists"
                )));
            }
            let ty = field_type(ty, ks)?;
            let keyed = ks.type_users(&old.name).partition_key_tables;
            if !keyed.is_empty() {
                let tables: Vec<String> =
                    keyed.iter().map(|t| format!("{}.{t}", ks.name)).collect();
                return Err(invalid(format!(
                    "Cannot add new field {field} of type {ty} to user type {qualified} as the type is being used in partition key by the following tables: {}",
                    tables.join(", ")
                )));
            }
            check_field_count(u.field_names.len() + 1)?;
            u.field_names.push(field.clone());
            u.field_types.push(ty);
        }
        AlterTypeOp::Rename { if_exists, renames } => {
            for (from, to) in renames {
                let Some(i) = u.field_index(from) else {
                    if *if_exists {
                        continue;
                    }
                    return Err(invalid(format!(
                        "Unkown field {from} in user type {qualified}"
                    )));
                };
                u.field_names[i] = to.clone();
            }
            let mut seen = std::collections::BTreeSet::new();
            if let Some(dup) = u.field_names.iter().find(|n| !seen.insert(n.as_str())) {
                return Err(invalid(format!(
                    "Duplicate field name {dup} in type {}",
                    ks.name
                )));
            }
        }
    }
    Ok(Some(u))
}

pub async fn alter_type(p: &Processor, ctx: &mut Ctx<'_>, a: &AlterType) -> Result<QueryResult> {
    let ks_name = ctx.keyspace_of(&a.name.keyspace)?;
    let name = &a.name.name;
    let done = p
        .update_schema(|s| {
            let mut ks = user_keyspace(s, &ks_name, "ALTER TYPE")?;
            let Some(old) = ks.types.get(name).cloned() else {
                if a.if_exists {
                    return Ok(false);
                }
                return Err(invalid(format!("Type {ks_name}.{name} doesn't exist")));
            };
            let Some(new) = altered(&ks, &old, &a.op)? else {
                return Ok(false);
            };
            ks.put_type(Arc::new(new));
            s.keyspaces.insert(ks_name.clone(), Arc::new(ks));
            Ok(true)
        })
        .await?;
    if !done {
        return Ok(QueryResult::Void);
    }
    // Result metadata of statements over the type's columns changed.
    p.forget_prepared();
    Ok(changed(SchemaChangeKind::Updated, &ks_name, name))
}

pub async fn drop_type(
    p: &Processor,
    ctx: &mut Ctx<'_>,
    q: &QualifiedName,
    if_exists: bool,
) -> Result<QueryResult> {
    let ks_name = ctx.keyspace_of(&q.keyspace)?;
    let name = &q.name;
    let dropped = p
        .update_schema(|s| {
            let Some(k) = s.keyspaces.get(&ks_name) else {
                if if_exists {
                    return Ok(false);
                }
                return Err(invalid(format!("Keyspace '{ks_name}' doesn't exist")));
            };
            if !k.types.contains_key(name) {
                if if_exists {
                    return Ok(false);
                }
                return Err(invalid(format!("Type '{ks_name}.{name}' doesn't exist")));
            }
            let mut ks = user_keyspace(s, &ks_name, "DROP TYPE")?;
            let users = ks.type_users(name);
            let used_by = if !users.types.is_empty() {
                Some(format!("user types {}", users.types.join(", ")))
            } else if !users.tables.is_empty() {
                Some(format!("tables {}", users.tables.join(", ")))
            } else {
                None
            };
            if let Some(who) = used_by {
                return Err(invalid(format!(
                    "Cannot drop user type '{ks_name}.{name}' as it is still used by {who}"
                )));
            }
            ks.types.remove(name);
            s.keyspaces.insert(ks_name.clone(), Arc::new(ks));
            Ok(true)
        })
        .await?;
    if !dropped {
        return Ok(QueryResult::Void);
    }
    p.forget_prepared();
    Ok(changed(SchemaChangeKind::Dropped, &ks_name, name))
}
