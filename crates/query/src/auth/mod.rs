//! Authentication and authorization in the query layer
//! (docs/design/security.md): the settings a node runs with, the password
//! check the server calls at login ([`login`]), what each statement needs
//! ([`required`]), the role and permission statements ([`roles`],
//! [`grants`]) and the default superuser ([`default_role`]).
//!
//! Roles and permissions themselves are data in the schema snapshot
//! (`varve_schema::access`); a change to them goes through
//! [`crate::Processor::update_schema`] like any schema change.

pub mod credentials;
pub mod default_role;
mod grants;
pub mod login;
pub mod password;
pub(crate) mod required;
mod roles;

use std::time::Duration;

pub use credentials::CredentialsCache;
pub use login::LoginError;

/// Cassandra's default `credentials_validity`.
pub const CREDENTIALS_VALIDITY_DEFAULT: Duration = Duration::from_millis(2000);

/// How a node authenticates and authorizes (cassandra.yaml).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuthSettings {
    /// PasswordAuthenticator: clients log in; otherwise AllowAllAuthenticator.
    pub password_authenticator: bool,
    /// CassandraAuthorizer: statements are checked; otherwise AllowAllAuthorizer.
    pub cassandra_authorizer: bool,
    /// How long a verified password is remembered (zero: never).
    pub credentials_validity: Duration,
}

impl Default for AuthSettings {
    fn default() -> Self {
        AuthSettings {
            password_authenticator: false,
            cassandra_authorizer: false,
            credentials_validity: CREDENTIALS_VALIDITY_DEFAULT,
        }
    }
}

/// A node's authentication state: its settings and credentials cache.
pub struct Auth {
    pub settings: AuthSettings,
    pub credentials: CredentialsCache,
}

impl Auth {
    pub fn new(settings: AuthSettings) -> Self {
        Auth {
            settings,
            credentials: CredentialsCache::new(settings.credentials_validity),
        }
    }
}

/// Runs a role or permission statement for `user` (`None`: nobody logged
/// in, which Cassandra refuses for all of them).
pub(crate) async fn execute(
    p: &crate::Processor,
    ctx: &crate::context::Ctx<'_>,
    user: Option<&str>,
    stmt: &varve_cql::auth_ast::AuthStatement,
) -> crate::Result<crate::QueryResult> {
    use varve_cql::auth_ast::AuthStatement as A;
    let user = user.ok_or_else(|| crate::QueryError::Unauthorized(required::ANONYMOUS.into()))?;
    match stmt {
        A::CreateRole {
            name,
            if_not_exists,
            options,
        } => roles::create(p, user, name, *if_not_exists, options).await,
        A::AlterRole {
            name,
            if_exists,
            options,
        } => roles::alter(p, user, name, *if_exists, options).await,
        A::DropRole { name, if_exists } => roles::drop(p, user, name, *if_exists).await,
        A::GrantRole { role, grantee } => roles::grant_role(p, user, role, grantee, true).await,
        A::RevokeRole { role, revokee } => roles::grant_role(p, user, role, revokee, false).await,
        A::ListRoles {
            of,
            recursive,
            users,
        } => roles::list(p, user, of.as_deref(), *recursive, *users),
        A::GrantPermissions {
            permissions,
            resource,
            role,
        } => grants::grant_permissions(p, ctx, user, permissions, resource, role, true).await,
        A::RevokePermissions {
            permissions,
            resource,
            role,
        } => grants::grant_permissions(p, ctx, user, permissions, resource, role, false).await,
        A::ListPermissions {
            permissions,
            resource,
            of,
            recursive,
        } => grants::list_permissions(
            p,
            ctx,
            user,
            permissions,
            resource.as_ref(),
            of.as_deref(),
            *recursive,
        ),
    }
}
