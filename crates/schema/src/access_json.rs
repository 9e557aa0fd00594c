//! The `access` object of the schema file and of the metadata log's schema
//! entries: roles and permissions as JSON (docs/format/schema-file.md).
//! Left out of the file when there is no role and no permission, so a node
//! that never used roles keeps the bytes (and the digest) it had.

use crate::access::{Access, Permission, Resource, Role};
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Serialize, Deserialize, Default)]
pub(crate) struct AccessV1 {
    roles: Vec<RoleV1>,
    permissions: Vec<GrantV1>,
}

#[derive(Serialize, Deserialize)]
struct RoleV1 {
    name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    salted_hash: Option<String>,
    can_login: bool,
    is_superuser: bool,
    member_of: Vec<String>,
    options: BTreeMap<String, String>,
}

#[derive(Serialize, Deserialize)]
struct GrantV1 {
    role: String,
    /// A stored resource name: `data/ks/t`, `roles/r`.
    resource: String,
    permissions: Vec<String>,
}

fn bad(msg: String) -> Error {
    Error::Config(format!("invalid schema file: {msg}"))
}

/// `access` as the file's object, `None` when empty.
pub(crate) fn encode(access: &Access) -> Option<AccessV1> {
    if access.is_empty() {
        return None;
    }
    let roles = access
        .roles
        .values()
        .map(|r| RoleV1 {
            name: r.name.clone(),
            salted_hash: r.salted_hash.clone(),
            can_login: r.can_login,
            is_superuser: r.is_superuser,
            member_of: r.member_of.iter().cloned().collect(),
            options: r.options.clone(),
        })
        .collect();
    let permissions = access
        .permissions
        .iter()
        .flat_map(|(role, grants)| {
            grants.iter().map(move |(resource, perms)| GrantV1 {
                role: role.clone(),
                resource: resource.stored_name(),
                permissions: perms.iter().map(|p| p.name().to_string()).collect(),
            })
        })
        .collect();
    Some(AccessV1 { roles, permissions })
}

/// The [`Access`] the file's object holds (empty when absent).
pub(crate) fn decode(file: Option<AccessV1>) -> Result<Access> {
    let mut access = Access::default();
    let Some(file) = file else {
        return Ok(access);
    };
    for r in file.roles {
        let role = Role {
            name: r.name.clone(),
            salted_hash: r.salted_hash,
            can_login: r.can_login,
            is_superuser: r.is_superuser,
            member_of: r.member_of.into_iter().collect(),
            options: r.options,
        };
        access.roles.insert(r.name, role);
    }
    for g in file.permissions {
        let resource = Resource::from_stored_name(&g.resource)
            .ok_or_else(|| bad(format!("unknown resource {}", g.resource)))?;
        let mut perms = Vec::new();
        for p in &g.permissions {
            perms.push(
                Permission::from_name(p).ok_or_else(|| bad(format!("unknown permission {p}")))?,
            );
        }
        access.grant(&g.role, &resource, &perms);
    }
    Ok(access)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Schema;
    use std::sync::Arc;

    #[test]
    fn roles_and_permissions_round_trip_through_the_schema_file() {
        let mut access = Access::default();
        access.roles.insert(
            "bob".into(),
            Role {
                name: "bob".into(),
                salted_hash: Some("$2a$10$abc".into()),
                can_login: true,
                is_superuser: false,
                member_of: ["reader".to_string()].into(),
                options: [("k".to_string(), "v".to_string())].into(),
            },
        );
        access.grant(
            "bob",
            &Resource::Table("ks".into(), "t".into()),
            &[Permission::Select, Permission::Modify],
        );
        let schema = Schema {
            access: Arc::new(access.clone()),
            ..Schema::default()
        };
        let text = crate::snapshot::to_json(&schema);
        let (_, _, back) = crate::snapshot::from_json_with_access(&text).unwrap();
        assert_eq!(back, access);
    }

    #[test]
    fn no_roles_leaves_the_file_as_it_was() {
        let text = crate::snapshot::to_json(&Schema::default());
        assert!(!text.contains("access"));
        let (_, _, back) = crate::snapshot::from_json_with_access(&text).unwrap();
        assert!(back.is_empty());
    }

    #[test]
    fn an_unknown_resource_or_permission_is_an_error() {
        let bad_resource = r#"{"version":1,"schema_version":"00000000000000000000000000000000","keyspaces":[],
            "access":{"roles":[],"permissions":[{"role":"r","resource":"functions/x","permissions":[]}]}}"#;
        assert!(crate::snapshot::from_json_with_access(bad_resource).is_err());
        let bad_permission = r#"{"version":1,"schema_version":"00000000000000000000000000000000","keyspaces":[],
            "access":{"roles":[],"permissions":[{"role":"r","resource":"data","permissions":["EXECUTE"]}]}}"#;
        assert!(crate::snapshot::from_json_with_access(bad_permission).is_err());
    }
}
