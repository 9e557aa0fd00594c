//! The password check of a login (SASL PLAIN's user and password): the
//! role must exist, be allowed to log in, and its salted hash must match,
//! unless the credentials cache remembers a recent match.

use std::time::Instant;

use crate::processor::Processor;

/// Why a login failed; its text is the AuthenticationError message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoginError {
    /// Unknown role or wrong password (one message for both, as Cassandra).
    #[error("Provided username {0} and/or password are incorrect")]
    Incorrect(String),
    #[error("{0} is not permitted to log in")]
    NotPermitted(String),
}

impl Processor {
    /// Checks `name`'s `password` and answers the role logged in. Runs
    /// bcrypt (tens of milliseconds): call it where blocking is allowed.
    pub fn login(&self, name: &str, password: &str) -> Result<String, LoginError> {
        let schema = self.schema();
        let incorrect = || LoginError::Incorrect(name.to_string());
        let role = schema.access.role(name).ok_or_else(incorrect)?;
        let hash = role.salted_hash.as_deref().ok_or_else(incorrect)?;
        let cache = &self.auth().credentials;
        let now = Instant::now();
        if !cache.is_verified(name, password, hash, now) {
            if !super::password::verify(password, hash) {
                return Err(incorrect());
            }
            cache.remember(name, password, hash, now);
        }
        if !role.can_login {
            return Err(LoginError::NotPermitted(name.to_string()));
        }
        Ok(role.name.clone())
    }
}
