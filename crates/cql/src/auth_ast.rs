//! The syntax tree of role and permission statements (CREATE / ALTER /
//! DROP ROLE and USER, GRANT, REVOKE, LIST): docs/design/security.md.

use crate::ast::QualifiedName;
use varve_schema::access::Permission;

/// A role or permission statement.
#[derive(Debug, Clone, PartialEq)]
pub enum AuthStatement {
    CreateRole {
        name: String,
        if_not_exists: bool,
        options: RoleOptions,
    },
    AlterRole {
        name: String,
        if_exists: bool,
        options: RoleOptions,
    },
    DropRole {
        name: String,
        if_exists: bool,
    },
    /// `GRANT role TO grantee`.
    GrantRole {
        role: String,
        grantee: String,
    },
    /// `REVOKE role FROM revokee`.
    RevokeRole {
        role: String,
        revokee: String,
    },
    /// LIST ROLES / LIST USERS.
    ListRoles {
        of: Option<String>,
        recursive: bool,
        /// LIST USERS: its own columns (name, super, datacenters).
        users: bool,
    },
    GrantPermissions {
        permissions: Vec<Permission>,
        resource: AuthResource,
        role: String,
    },
    RevokePermissions {
        permissions: Vec<Permission>,
        resource: AuthResource,
        role: String,
    },
    ListPermissions {
        permissions: Vec<Permission>,
        resource: Option<AuthResource>,
        of: Option<String>,
        recursive: bool,
    },
}

/// What WITH sets on a role; `None` leaves it as it is (ALTER) or at its
/// default (CREATE).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RoleOptions {
    pub password: Option<String>,
    pub login: Option<bool>,
    pub superuser: Option<bool>,
    pub options: Option<Vec<(String, String)>>,
}

impl RoleOptions {
    pub fn is_empty(&self) -> bool {
        *self == RoleOptions::default()
    }
}

/// A resource as written; a table's keyspace may be the session's.
#[derive(Debug, Clone, PartialEq)]
pub enum AuthResource {
    AllKeyspaces,
    Keyspace(String),
    Table(QualifiedName),
    AllRoles,
    Role(String),
}
