//! Who exists and what they may do: roles, the roles granted to them, and
//! the permissions granted on resources, as data kept in the schema
//! snapshot (docs/design/security.md, section 3), and how they resolve.
//!
//! Everything here is pure: a role change builds a new [`Access`] the way a
//! schema change builds a new [`crate::Schema`]. Hashing passwords and the
//! statements themselves belong to the query layer.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// A permission, in Cassandra's order (the order LIST PERMISSIONS shows).
/// UNMASK and SELECT_MASKED belong to Cassandra 5.0's dynamic data masking,
/// which Varve does not have: they are granted, listed and stored as
/// Cassandra does, and no statement needs them. EXECUTE (functions) is not
/// here: Varve has no user-defined functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Permission {
    Create,
    Alter,
    Drop,
    Select,
    Modify,
    Authorize,
    Describe,
    Unmask,
    SelectMasked,
}

impl Permission {
    /// Every permission, in order.
    pub const ALL: [Permission; 9] = [
        Permission::Create,
        Permission::Alter,
        Permission::Drop,
        Permission::Select,
        Permission::Modify,
        Permission::Authorize,
        Permission::Describe,
        Permission::Unmask,
        Permission::SelectMasked,
    ];

    /// The name in statements, messages and `system_auth`.
    pub fn name(self) -> &'static str {
        match self {
            Permission::Create => "CREATE",
            Permission::Alter => "ALTER",
            Permission::Drop => "DROP",
            Permission::Select => "SELECT",
            Permission::Modify => "MODIFY",
            Permission::Authorize => "AUTHORIZE",
            Permission::Describe => "DESCRIBE",
            Permission::Unmask => "UNMASK",
            Permission::SelectMasked => "SELECT_MASKED",
        }
    }

    /// The permission named `name` (any case).
    pub fn from_name(name: &str) -> Option<Permission> {
        Permission::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(name))
    }
}

/// Something permissions are granted on.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Resource {
    AllKeyspaces,
    Keyspace(String),
    Table(String, String),
    AllRoles,
    Role(String),
}

/// A keyspace's permissions (and all keyspaces'); a table takes the same
/// but CREATE, which comes first.
const DATA_PERMISSIONS: &[Permission] = &[
    Permission::Create,
    Permission::Alter,
    Permission::Drop,
    Permission::Select,
    Permission::Modify,
    Permission::Authorize,
    Permission::Unmask,
    Permission::SelectMasked,
];
/// All roles' permissions; one role takes the same but CREATE, first.
const ALL_ROLES_PERMISSIONS: &[Permission] = &[
    Permission::Create,
    Permission::Alter,
    Permission::Drop,
    Permission::Authorize,
    Permission::Describe,
];

impl Resource {
    /// The resource whose permissions this one inherits, if any.
    pub fn parent(&self) -> Option<Resource> {
        match self {
            Resource::Table(ks, _) => Some(Resource::Keyspace(ks.clone())),
            Resource::Keyspace(_) => Some(Resource::AllKeyspaces),
            Resource::Role(_) => Some(Resource::AllRoles),
            Resource::AllKeyspaces | Resource::AllRoles => None,
        }
    }

    /// The permissions that mean something on this resource.
    pub fn applicable(&self) -> &'static [Permission] {
        match self {
            Resource::AllKeyspaces | Resource::Keyspace(_) => DATA_PERMISSIONS,
            Resource::Table(..) => &DATA_PERMISSIONS[1..],
            Resource::AllRoles => ALL_ROLES_PERMISSIONS,
            Resource::Role(_) => &ALL_ROLES_PERMISSIONS[1..],
        }
    }

    /// The name `system_auth` tables store (`data/ks/t`, `roles/r`).
    pub fn stored_name(&self) -> String {
        match self {
            Resource::AllKeyspaces => "data".into(),
            Resource::Keyspace(ks) => format!("data/{ks}"),
            Resource::Table(ks, t) => format!("data/{ks}/{t}"),
            Resource::AllRoles => "roles".into(),
            Resource::Role(r) => format!("roles/{r}"),
        }
    }

    /// The resource a stored name names.
    pub fn from_stored_name(name: &str) -> Option<Resource> {
        let parts: Vec<&str> = name.split('/').collect();
        Some(match parts.as_slice() {
            ["data"] => Resource::AllKeyspaces,
            ["data", ks] => Resource::Keyspace((*ks).into()),
            ["data", ks, t] => Resource::Table((*ks).into(), (*t).into()),
            ["roles"] => Resource::AllRoles,
            ["roles", r] => Resource::Role((*r).into()),
            _ => return None,
        })
    }
}

/// As messages and LIST PERMISSIONS show it: `<table ks.t>`.
impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Resource::AllKeyspaces => write!(f, "<all keyspaces>"),
            Resource::Keyspace(ks) => write!(f, "<keyspace {ks}>"),
            Resource::Table(ks, t) => write!(f, "<table {ks}.{t}>"),
            Resource::AllRoles => write!(f, "<all roles>"),
            Resource::Role(r) => write!(f, "<role {r}>"),
        }
    }
}

/// One role.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Role {
    pub name: String,
    /// bcrypt hash of the password (`$2a$10$...`); `None`: no password.
    pub salted_hash: Option<String>,
    pub can_login: bool,
    pub is_superuser: bool,
    /// The roles granted to this one (directly).
    pub member_of: BTreeSet<String>,
    pub options: BTreeMap<String, String>,
}

/// Permissions granted to one role: resource to permissions.
pub type Grants = BTreeMap<Resource, BTreeSet<Permission>>;

/// Every role and permission of the cluster.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Access {
    pub roles: BTreeMap<String, Role>,
    /// Role name to what was granted to it.
    pub permissions: BTreeMap<String, Grants>,
}

impl Access {
    pub fn is_empty(&self) -> bool {
        self.roles.is_empty() && self.permissions.is_empty()
    }

    pub fn role(&self, name: &str) -> Option<&Role> {
        self.roles.get(name)
    }

    /// `name` and every role granted to it, directly or not.
    pub fn granted_roles(&self, name: &str) -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![name.to_string()];
        while let Some(r) = todo.pop() {
            if !seen.insert(r.clone()) {
                continue;
            }
            if let Some(role) = self.roles.get(&r) {
                todo.extend(role.member_of.iter().cloned());
            }
        }
        seen
    }

    /// Whether `name` or a role granted to it is a superuser.
    pub fn is_superuser(&self, name: &str) -> bool {
        self.granted_roles(name)
            .iter()
            .any(|r| self.roles.get(r).is_some_and(|r| r.is_superuser))
    }

    /// Whether `name` has `permission` on `resource`: a superuser has all;
    /// otherwise it, or a role granted to it, was granted it there or on a
    /// parent of `resource`.
    pub fn has_permission(&self, name: &str, permission: Permission, resource: &Resource) -> bool {
        let mut chain = vec![resource.clone()];
        while let Some(parent) = chain.last().and_then(Resource::parent) {
            chain.push(parent);
        }
        self.has_permission_on(name, permission, &chain)
    }

    /// Whether `name` is a superuser or has `permission` on one of
    /// `resources` (itself or through a role granted to it).
    pub fn has_permission_on(
        &self,
        name: &str,
        permission: Permission,
        resources: &[Resource],
    ) -> bool {
        let roles = self.granted_roles(name);
        if roles
            .iter()
            .any(|r| self.roles.get(r).is_some_and(|r| r.is_superuser))
        {
            return true;
        }
        resources.iter().any(|res| {
            roles.iter().any(|r| {
                self.permissions
                    .get(r)
                    .and_then(|g| g.get(res))
                    .is_some_and(|p| p.contains(&permission))
            })
        })
    }

    /// [`Access::has_permission`] as Cassandra answers a refusal: the
    /// Unauthorized message.
    pub fn authorize(
        &self,
        name: &str,
        permission: Permission,
        resource: &Resource,
    ) -> Result<(), String> {
        if self.has_permission(name, permission, resource) {
            return Ok(());
        }
        Err(refusal(name, permission, resource))
    }

    /// Grants `permissions` on `resource` to `role`.
    pub fn grant(&mut self, role: &str, resource: &Resource, permissions: &[Permission]) {
        let set = self
            .permissions
            .entry(role.to_string())
            .or_default()
            .entry(resource.clone())
            .or_default();
        set.extend(permissions.iter().copied());
    }

    /// Revokes `permissions` on `resource` from `role`.
    pub fn revoke(&mut self, role: &str, resource: &Resource, permissions: &[Permission]) {
        let Some(grants) = self.permissions.get_mut(role) else {
            return;
        };
        if let Some(set) = grants.get_mut(resource) {
            for p in permissions {
                set.remove(p);
            }
            if set.is_empty() {
                grants.remove(resource);
            }
        }
        if grants.is_empty() {
            self.permissions.remove(role);
        }
    }

    /// Removes every permission on `resource` and, for a keyspace, on its
    /// tables; for a role, also on the role (it was dropped).
    pub fn forget_resource(&mut self, resource: &Resource) {
        let covered = |r: &Resource| match (resource, r) {
            (Resource::Keyspace(ks), Resource::Table(k, _)) => ks == k,
            _ => r == resource,
        };
        for grants in self.permissions.values_mut() {
            grants.retain(|r, _| !covered(r));
        }
        self.permissions.retain(|_, g| !g.is_empty());
    }

    /// Removes role `name`: its grants, its memberships both ways, and the
    /// permissions on it.
    pub fn drop_role(&mut self, name: &str) {
        self.roles.remove(name);
        for role in self.roles.values_mut() {
            role.member_of.remove(name);
        }
        self.permissions.remove(name);
        self.forget_resource(&Resource::Role(name.to_string()));
    }

    /// The roles granted `name` directly (the members of `name`).
    pub fn members_of(&self, name: &str) -> Vec<String> {
        self.roles
            .values()
            .filter(|r| r.member_of.contains(name))
            .map(|r| r.name.clone())
            .collect()
    }
}

/// Cassandra's Unauthorized message for a missing permission.
pub fn refusal(name: &str, permission: Permission, resource: &Resource) -> String {
    format!(
        "User {name} has no {} permission on {resource} or any of its parents",
        permission.name()
    )
}

#[cfg(test)]
#[path = "access_tests.rs"]
mod tests;
