//! CREATE / ALTER / DROP ROLE (and USER), GRANT and REVOKE of roles, LIST
//! ROLES and LIST USERS, with Cassandra's checks and messages.

use std::sync::Arc;

use varve_cql::auth_ast::RoleOptions;
use varve_schema::access::{Access, Permission, Resource, Role};
use varve_types::{CqlType, Value};

use super::grants::{need, result};
use crate::api::QueryResult;
use crate::error::{QueryError, Result};
use crate::processor::Processor;

fn missing(name: &str) -> QueryError {
    QueryError::Invalid(format!("{name} doesn't exist"))
}

fn unauthorized(message: &str) -> QueryError {
    QueryError::Unauthorized(message.into())
}

/// A refusal as role statements answer it, whatever [`need`] said:
/// Cassandra's role statements do not name the permission.
fn insufficient(user: &str) -> impl Fn(QueryError) -> QueryError + '_ {
    move |_| {
        QueryError::Unauthorized(format!(
            "User {user} does not have sufficient privileges to perform the requested operation"
        ))
    }
}

/// The password's hash, computed before the schema change (bcrypt is slow).
fn hashed(o: &RoleOptions) -> Result<Option<String>> {
    match &o.password {
        None => Ok(None),
        Some(p) => super::password::hash(p)
            .map(Some)
            .ok_or_else(|| QueryError::Server("could not hash the password".into())),
    }
}

/// CassandraRoleManager supports PASSWORD, LOGIN and SUPERUSER only.
fn supported(o: &RoleOptions) -> Result<()> {
    if o.options.is_some() {
        return Err(QueryError::Invalid(
            "org.apache.cassandra.auth.CassandraRoleManager doesn't support OPTIONS".into(),
        ));
    }
    Ok(())
}

pub(super) async fn create(
    p: &Processor,
    user: &str,
    name: &str,
    if_not_exists: bool,
    o: &RoleOptions,
) -> Result<QueryResult> {
    supported(o)?;
    if name.is_empty() {
        return Err(QueryError::Invalid(
            "Role name can't be an empty string".into(),
        ));
    }
    let schema = p.schema();
    need(
        p,
        &schema.access,
        user,
        Permission::Create,
        &Resource::AllRoles,
    )
    .map_err(insufficient(user))?;
    if o.superuser == Some(true) && !schema.access.is_superuser(user) {
        return Err(unauthorized(
            "Only superusers can create a role with superuser status",
        ));
    }
    if if_not_exists && schema.access.role(name).is_some() {
        return Ok(QueryResult::Void);
    }
    let hash = hashed(o)?;
    let grant_creator = p.auth().settings.cassandra_authorizer;
    p.update_schema(|s| {
        if s.access.role(name).is_some() {
            if if_not_exists {
                return Ok(());
            }
            return Err(QueryError::Invalid(format!("{name} already exists")));
        }
        let access = Arc::make_mut(&mut s.access);
        access.roles.insert(
            name.to_string(),
            Role {
                name: name.to_string(),
                salted_hash: hash.clone(),
                can_login: o.login.unwrap_or(false),
                is_superuser: o.superuser.unwrap_or(false),
                ..Role::default()
            },
        );
        if grant_creator {
            let resource = Resource::Role(name.to_string());
            access.grant(user, &resource, resource.applicable());
        }
        Ok(())
    })
    .await?;
    Ok(QueryResult::Void)
}

pub(super) async fn alter(
    p: &Processor,
    user: &str,
    name: &str,
    if_exists: bool,
    o: &RoleOptions,
) -> Result<QueryResult> {
    supported(o)?;
    if o.is_empty() {
        return Err(QueryError::Invalid(
            "ALTER [ROLE|USER] can't be empty".into(),
        ));
    }
    let schema = p.schema();
    let access = &schema.access;
    if access.role(name).is_none() {
        if if_exists {
            return Ok(QueryResult::Void);
        }
        return Err(QueryError::Invalid(format!("Role {name} doesn't exist")));
    }
    let is_super = access.is_superuser(user);
    if o.superuser.is_some() {
        if access.granted_roles(user).contains(name) {
            return Err(unauthorized(
                "You aren't allowed to alter your own superuser status or that of a role granted to you",
            ));
        }
        if !is_super {
            return Err(unauthorized(
                "Only superusers are allowed to alter superuser status",
            ));
        }
    }
    if !is_super {
        if user == name {
            if o.login.is_some() {
                return Err(unauthorized("You aren't allowed to alter LOGIN"));
            }
        } else {
            need(
                p,
                access,
                user,
                Permission::Alter,
                &Resource::Role(name.into()),
            )
            .map_err(insufficient(user))?;
        }
    }
    let hash = hashed(o)?;
    p.update_schema(|s| {
        let access = Arc::make_mut(&mut s.access);
        let role = access.roles.get_mut(name).ok_or_else(|| missing(name))?;
        if hash.is_some() {
            role.salted_hash = hash.clone();
        }
        if let Some(login) = o.login {
            role.can_login = login;
        }
        if let Some(su) = o.superuser {
            role.is_superuser = su;
        }
        Ok(())
    })
    .await?;
    Ok(QueryResult::Void)
}

pub(super) async fn drop(
    p: &Processor,
    user: &str,
    name: &str,
    if_exists: bool,
) -> Result<QueryResult> {
    let schema = p.schema();
    let access = &schema.access;
    let Some(role) = access.role(name) else {
        if if_exists {
            return Ok(QueryResult::Void);
        }
        return Err(missing(name));
    };
    need(
        p,
        access,
        user,
        Permission::Drop,
        &Resource::Role(name.into()),
    )
    .map_err(insufficient(user))?;
    if user == name {
        return Err(QueryError::Invalid(
            "Cannot DROP primary role for current login".into(),
        ));
    }
    if role.is_superuser && !access.is_superuser(user) {
        return Err(unauthorized(
            "Only superusers can drop a role with superuser status",
        ));
    }
    p.update_schema(|s| {
        if s.access.role(name).is_none() && !if_exists {
            return Err(missing(name));
        }
        Arc::make_mut(&mut s.access).drop_role(name);
        Ok(())
    })
    .await?;
    Ok(QueryResult::Void)
}

/// GRANT `role` TO `grantee` (`grant`), or REVOKE it FROM `grantee`.
pub(super) async fn grant_role(
    p: &Processor,
    user: &str,
    role: &str,
    grantee: &str,
    grant: bool,
) -> Result<QueryResult> {
    let schema = p.schema();
    for r in [role, grantee] {
        if schema.access.role(r).is_none() {
            return Err(missing(r));
        }
    }
    need(
        p,
        &schema.access,
        user,
        Permission::Authorize,
        &Resource::Role(role.into()),
    )
    .map_err(insufficient(user))?;
    p.update_schema(|s| membership_change(Arc::make_mut(&mut s.access), role, grantee, grant))
        .await?;
    Ok(QueryResult::Void)
}

/// Makes `grantee` a member of `role` (or no longer one), refusing a grant
/// already there, a cycle, or a revoke of what was not granted.
pub(crate) fn membership_change(
    access: &mut Access,
    role: &str,
    grantee: &str,
    grant: bool,
) -> Result<()> {
    let member_of = |a: &Access, who: &str, of: &str| a.granted_roles(who).contains(of);
    if grant {
        if member_of(access, grantee, role) {
            return Err(QueryError::Invalid(format!(
                "{grantee} is a member of {role}"
            )));
        }
        if member_of(access, role, grantee) {
            return Err(QueryError::Invalid(format!(
                "{role} is a member of {grantee}"
            )));
        }
    } else if !access
        .role(grantee)
        .is_some_and(|r| r.member_of.contains(role))
    {
        return Err(QueryError::Invalid(format!(
            "{grantee} is not a member of {role}"
        )));
    }
    let target = access
        .roles
        .get_mut(grantee)
        .ok_or_else(|| missing(grantee))?;
    if grant {
        target.member_of.insert(role.to_string());
    } else {
        target.member_of.remove(role);
    }
    Ok(())
}

/// LIST ROLES [OF r] [NORECURSIVE], LIST USERS.
pub(super) fn list(
    p: &Processor,
    user: &str,
    of: Option<&str>,
    recursive: bool,
    users: bool,
) -> Result<QueryResult> {
    let schema = p.schema();
    let access = &schema.access;
    let may_describe = !p.auth().settings.cassandra_authorizer
        || access.has_permission(user, Permission::Describe, &Resource::AllRoles);
    let names: Vec<String> = match of {
        Some(r) => {
            if access.role(r).is_none() {
                return Err(QueryError::Invalid(format!("<role {r}> doesn't exist")));
            }
            if !may_describe && !access.granted_roles(user).contains(r) {
                return Err(unauthorized(&format!(
                    "You are not authorized to view roles granted to {r} "
                )));
            }
            listed(access, r, recursive)
        }
        None if may_describe => access.roles.keys().cloned().collect(),
        None => listed(access, user, true),
    };
    let roles = names.iter().filter_map(|n| access.role(n));
    if users {
        let rows = roles
            .filter(|r| r.can_login)
            .map(|r| {
                vec![
                    Value::Text(r.name.clone()),
                    Value::Boolean(access.is_superuser(&r.name)),
                    Value::Text("ALL".into()),
                ]
            })
            .collect();
        return Ok(result(
            "users",
            &[
                ("name", CqlType::Text),
                ("super", CqlType::Boolean),
                ("datacenters", CqlType::Text),
            ],
            rows,
        ));
    }
    let options = CqlType::Map(Box::new(CqlType::Text), Box::new(CqlType::Text));
    let rows = roles
        .map(|r| {
            vec![
                Value::Text(r.name.clone()),
                Value::Boolean(r.is_superuser),
                Value::Boolean(r.can_login),
                Value::Map(Vec::new()),
                Value::Text("ALL".into()),
            ]
        })
        .collect();
    Ok(result(
        "roles",
        &[
            ("role", CqlType::Text),
            ("super", CqlType::Boolean),
            ("login", CqlType::Boolean),
            ("options", options),
            ("datacenters", CqlType::Text),
        ],
        rows,
    ))
}

/// `name` and the roles granted to it (all of them, or only directly).
fn listed(access: &Access, name: &str, recursive: bool) -> Vec<String> {
    if recursive {
        return access.granted_roles(name).into_iter().collect();
    }
    let mut out: Vec<String> = vec![name.to_string()];
    if let Some(r) = access.role(name) {
        out.extend(r.member_of.iter().cloned());
    }
    out.sort();
    out
}
