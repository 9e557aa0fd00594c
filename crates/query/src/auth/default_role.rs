//! The default superuser: `cassandra` / `cassandra`, created once when the
//! node runs PasswordAuthenticator and no role exists at all (a new
//! cluster), as Cassandra does (docs/design/security.md, section 4).

use std::sync::Arc;

use varve_schema::access::Role;

use crate::error::{QueryError, Result};
use crate::processor::Processor;

/// The default superuser's name and password.
pub const DEFAULT_SUPERUSER: &str = "cassandra";

impl Processor {
    /// Creates the default superuser if PasswordAuthenticator is on and no
    /// role exists. Answers whether this call created it. Another node
    /// creating it at the same time makes this one find a role and stop.
    pub async fn ensure_default_superuser(&self) -> Result<bool> {
        if !self.auth().settings.password_authenticator || !self.schema().access.roles.is_empty() {
            return Ok(false);
        }
        let hash = super::password::hash(DEFAULT_SUPERUSER)
            .ok_or_else(|| QueryError::Server("could not hash the default password".into()))?;
        let created = self
            .update_schema(|s| {
                if !s.access.roles.is_empty() {
                    return Ok(false);
                }
                let role = Role {
                    name: DEFAULT_SUPERUSER.into(),
                    salted_hash: Some(hash.clone()),
                    can_login: true,
                    is_superuser: true,
                    ..Role::default()
                };
                Arc::make_mut(&mut s.access)
                    .roles
                    .insert(role.name.clone(), role);
                Ok(true)
            })
            .await?;
        if created {
            tracing::warn!(
                "Created default superuser role '{DEFAULT_SUPERUSER}': create another superuser role and drop or change the password of '{DEFAULT_SUPERUSER}' (ALTER ROLE {DEFAULT_SUPERUSER} WITH PASSWORD = '...')"
            );
        }
        Ok(created)
    }
}
