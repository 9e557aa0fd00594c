//! The SASL exchange of PasswordAuthenticator (docs/design/security.md,
//! section 4): the class STARTUP names in AUTHENTICATE, and the check of an
//! AUTH_RESPONSE token. The connection owns the stages; this file owns
//! what one token gets.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use varve_protocol::sasl::parse_plain;
use varve_protocol::{ErrorBody, ErrorCode};
use varve_query::Processor;

use crate::limits::{LOGIN_CHECKS_MAX, LOGIN_FAILURE_DELAY};

/// Password checks running at once, node-wide (see [`LOGIN_CHECKS_MAX`]).
static LOGIN_CHECKS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(LOGIN_CHECKS_MAX);

/// The authenticator AUTHENTICATE names (drivers pick their SASL
/// mechanism by it).
pub const PASSWORD_AUTHENTICATOR: &str = "org.apache.cassandra.auth.PasswordAuthenticator";

/// Checks an AUTH_RESPONSE `token`: the role logged in, or the
/// AuthenticationError to send, after [`LOGIN_FAILURE_DELAY`]. bcrypt runs
/// on the blocking pool; the failure is logged once, without the password.
pub async fn check_token(
    processor: &Arc<Processor>,
    token: Option<Bytes>,
    peer: Option<SocketAddr>,
) -> Result<String, ErrorBody> {
    let token = token.unwrap_or_default();
    let outcome = match parse_plain(&token) {
        Err(e) => Err((None, e.to_string())),
        Ok(c) => {
            let p = Arc::clone(processor);
            let name = c.username.clone();
            // Waits its turn: a flood of logins may not take every core.
            let turn = LOGIN_CHECKS.acquire().await;
            let login =
                tokio::task::spawn_blocking(move || p.login(&c.username, &c.password)).await;
            drop(turn);
            match login {
                Ok(Ok(role)) => Ok(role),
                Ok(Err(e)) => Err((Some(name), e.to_string())),
                Err(e) => Err((
                    Some(name),
                    format!("Internal error while checking the password: {e}"),
                )),
            }
        }
    };
    let (role, message) = match outcome {
        Ok(role) => return Ok(role),
        Err(failed) => failed,
    };
    let from = peer
        .map(|p| p.to_string())
        .unwrap_or_else(|| "an unknown address".into());
    match role {
        Some(r) => tracing::warn!("failed login as role {r:?} from {from}: {message}"),
        None => tracing::warn!("failed login from {from}: bad SASL PLAIN token ({message})"),
    }
    tokio::time::sleep(LOGIN_FAILURE_DELAY).await;
    Err(ErrorBody::new(ErrorCode::BAD_CREDENTIALS, message))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn secured() -> Arc<Processor> {
        let p = Processor::new(varve_query::NodeInfo::single_local());
        p.set_auth(varve_query::auth::AuthSettings {
            password_authenticator: true,
            ..Default::default()
        });
        p
    }

    #[tokio::test]
    async fn a_bad_token_waits_the_delay_and_is_bad_credentials() {
        let p = secured();
        let started = tokio::time::Instant::now();
        let err = check_token(&p, Some(Bytes::from_static(b"no nul")), None)
            .await
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::BAD_CREDENTIALS);
        assert_eq!(err.message, "Password must not be null");
        assert!(started.elapsed() >= LOGIN_FAILURE_DELAY);
        let err = check_token(&p, None, None).await.unwrap_err();
        assert_eq!(err.code, ErrorCode::BAD_CREDENTIALS);
    }

    #[tokio::test]
    async fn at_most_login_checks_max_passwords_are_checked_at_once() {
        let p = secured();
        let token = || Some(Bytes::from_static(b"\0nobody\0pw"));
        // N checks already running: the next one waits for a turn.
        let held = LOGIN_CHECKS
            .acquire_many(LOGIN_CHECKS_MAX as u32)
            .await
            .expect("open semaphore");
        let waiting =
            tokio::time::timeout(Duration::from_millis(50), check_token(&p, token(), None)).await;
        assert!(waiting.is_err(), "the N+1th check ran beside N others");
        // N - 1 running: it gets its turn.
        drop(held);
        let held = LOGIN_CHECKS
            .acquire_many(LOGIN_CHECKS_MAX as u32 - 1)
            .await
            .expect("open semaphore");
        let checked = check_token(&p, token(), None).await.unwrap_err();
        assert!(
            checked.message.contains("Provided username nobody"),
            "{}",
            checked.message
        );
        drop(held);
    }
}
