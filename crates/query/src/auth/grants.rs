//! GRANT / REVOKE / LIST PERMISSIONS, and the helpers the role statements
//! share: the permission check under the configured authorizer and the
//! result sets of LIST statements.

use std::collections::BTreeSet;
use std::sync::Arc;

use bytes::Bytes;
use varve_cql::auth_ast::AuthResource;
use varve_schema::access::{Access, Permission, Resource};
use varve_schema::Schema;
use varve_types::{codec, CqlType, Value};

use crate::api::{ColumnSpec, QueryResult, ResultRows};
use crate::context::Ctx;
use crate::error::{QueryError, Result};
use crate::processor::Processor;

/// Checks `permission` on `resource` for `user` when the authorizer is
/// CassandraAuthorizer; AllowAllAuthorizer allows everything.
pub(super) fn need(
    p: &Processor,
    access: &Access,
    user: &str,
    permission: Permission,
    resource: &Resource,
) -> Result<()> {
    if !p.auth().settings.cassandra_authorizer {
        return Ok(());
    }
    access
        .authorize(user, permission, resource)
        .map_err(QueryError::Unauthorized)
}

/// A LIST result: columns of `system_auth.<table>`, values in order.
pub(super) fn result(
    table: &str,
    columns: &[(&str, CqlType)],
    rows: Vec<Vec<Value>>,
) -> QueryResult {
    let columns: Vec<ColumnSpec> = columns
        .iter()
        .map(|(name, ty)| ColumnSpec {
            keyspace: "system_auth".into(),
            table: table.into(),
            name: (*name).into(),
            ty: ty.clone(),
        })
        .collect();
    let metadata_id = crate::prepare::metadata_id(&columns);
    QueryResult::Rows(ResultRows {
        columns: columns.into(),
        rows: rows
            .into_iter()
            .map(|r| {
                r.iter()
                    .map(|v| Some(Bytes::from(codec::serialize(v))))
                    .collect()
            })
            .collect(),
        paging_state: None,
        metadata_id,
    })
}

/// The resource as written, its keyspace filled in, checked to exist.
pub(super) fn resolve(ctx: &Ctx<'_>, schema: &Schema, r: &AuthResource) -> Result<Resource> {
    let resource = match r {
        AuthResource::AllKeyspaces => Resource::AllKeyspaces,
        AuthResource::Keyspace(ks) => Resource::Keyspace(ks.clone()),
        AuthResource::Table(name) => {
            Resource::Table(ctx.keyspace_of(&name.keyspace)?, name.name.clone())
        }
        AuthResource::AllRoles => Resource::AllRoles,
        AuthResource::Role(r) => Resource::Role(r.clone()),
    };
    let exists = match &resource {
        Resource::AllKeyspaces | Resource::AllRoles => true,
        Resource::Keyspace(ks) => schema.keyspace(ks).is_some(),
        Resource::Table(ks, t) => schema.table(ks, t).is_some(),
        Resource::Role(r) => schema.access.role(r).is_some(),
    };
    if !exists {
        return Err(QueryError::Invalid(format!(
            "Resource {resource} doesn't exist"
        )));
    }
    Ok(resource)
}

fn not_supported(what: &str) -> QueryError {
    QueryError::Invalid(format!(
        "{what} operation is not supported by AllowAllAuthorizer"
    ))
}

/// GRANT (`grant`) or REVOKE `permissions` ON `resource` TO / FROM `role`.
pub(super) async fn grant_permissions(
    p: &Processor,
    ctx: &Ctx<'_>,
    user: &str,
    permissions: &[Permission],
    resource: &AuthResource,
    role: &str,
    grant: bool,
) -> Result<QueryResult> {
    if !p.auth().settings.cassandra_authorizer {
        return Err(not_supported(if grant { "GRANT" } else { "REVOKE" }));
    }
    let schema = p.schema();
    let resource = resolve(ctx, &schema, resource)?;
    if schema.access.role(role).is_none() {
        return Err(QueryError::Invalid(format!("Role {role} doesn't exist")));
    }
    let applicable = resource.applicable();
    let wanted: Vec<Permission> = if permissions.len() == Permission::ALL.len() {
        applicable.to_vec()
    } else {
        permissions.to_vec()
    };
    if wanted.iter().any(|p| !applicable.contains(p)) {
        return Err(QueryError::Syntax(format!(
            "Resource type {} does not support any of the requested permissions",
            kind(&resource)
        )));
    }
    need(p, &schema.access, user, Permission::Authorize, &resource)?;
    for w in &wanted {
        need(p, &schema.access, user, *w, &resource)?;
    }
    p.update_schema(|s| {
        let access = Arc::make_mut(&mut s.access);
        if grant {
            access.grant(role, &resource, &wanted);
        } else {
            access.revoke(role, &resource, &wanted);
        }
        Ok(())
    })
    .await?;
    Ok(QueryResult::Void)
}

fn kind(r: &Resource) -> &'static str {
    match r {
        Resource::AllKeyspaces | Resource::Keyspace(_) | Resource::Table(..) => "DataResource",
        Resource::AllRoles | Resource::Role(_) => "RoleResource",
    }
}

/// LIST `permissions` [ON resource] [OF role] [NORECURSIVE].
pub(super) fn list_permissions(
    p: &Processor,
    ctx: &Ctx<'_>,
    user: &str,
    permissions: &[Permission],
    resource: Option<&AuthResource>,
    of: Option<&str>,
    recursive: bool,
) -> Result<QueryResult> {
    if !p.auth().settings.cassandra_authorizer {
        return Err(not_supported("LIST PERMISSIONS"));
    }
    let schema = p.schema();
    let access = &schema.access;
    let resource = resource.map(|r| resolve(ctx, &schema, r)).transpose()?;
    if let Some(r) = of {
        if access.role(r).is_none() {
            return Err(QueryError::Invalid(format!("<role {r}> doesn't exist")));
        }
    }
    let is_super = access.is_superuser(user);
    let own = access.granted_roles(user);
    match of {
        Some(r)
            if !is_super
                && !own.contains(r)
                && !access.has_permission(
                    user,
                    Permission::Describe,
                    &Resource::Role(r.into()),
                ) =>
        {
            return Err(QueryError::Unauthorized(format!(
                "You are not authorized to view {r}'s permissions"
            )));
        }
        None if !is_super => {
            return Err(QueryError::Unauthorized(
                "You are not authorized to view everyone's permissions".into(),
            ))
        }
        _ => {}
    }
    // The roles granted to `of` always count, as in Cassandra; NORECURSIVE
    // leaves out only the resource's parents.
    let roles: BTreeSet<String> = match of {
        Some(r) => access.granted_roles(r),
        None => access.permissions.keys().cloned().collect(),
    };
    // A resource and, recursively, its parents.
    let mut on: Option<Vec<Resource>> = None;
    if let Some(r) = resource {
        let mut chain = vec![r.clone()];
        if recursive {
            while let Some(parent) = chain.last().and_then(Resource::parent) {
                chain.push(parent);
            }
        }
        on = Some(chain);
    }
    let mut rows = Vec::new();
    for role in &roles {
        let Some(grants) = access.permissions.get(role) else {
            continue;
        };
        for (res, perms) in grants {
            if on.as_ref().is_some_and(|c| !c.contains(res)) {
                continue;
            }
            for perm in perms.iter().filter(|x| permissions.contains(x)) {
                rows.push(vec![
                    Value::Text(role.clone()),
                    Value::Text(role.clone()),
                    Value::Text(res.to_string()),
                    Value::Text(perm.name().into()),
                ]);
            }
        }
    }
    if rows.is_empty() {
        // Cassandra answers an empty listing with no result set at all.
        return Ok(QueryResult::Void);
    }
    Ok(result(
        "permissions",
        &[
            ("role", CqlType::Text),
            ("username", CqlType::Text),
            ("resource", CqlType::Text),
            ("permission", CqlType::Text),
        ],
        rows,
    ))
}
