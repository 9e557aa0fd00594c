//! The password check of a login (SASL PLAIN's user and password): the
//! role must exist, be allowed to log in, and its salted hash must match,
//! unless the credentials cache remembers a recent match.

use std::time::Instant;

use crate::processor::Processor;

/// A hash checked against when the role does not exist (or has no
/// password), so the answer takes as long as for a wrong password.
static STAND_IN_HASH: std::sync::LazyLock<String> =
    std::sync::LazyLock::new(|| super::password::hash("stand-in").unwrap_or_default());

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
        let role = schema.access.role(name);
        let Some((role, hash)) = role.and_then(|r| Some((r, r.salted_hash.as_deref()?))) else {
            // As long as a wrong password takes: timing must not tell
            // which roles exist.
            super::password::verify(password, &STAND_IN_HASH);
            return Err(incorrect());
        };
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
