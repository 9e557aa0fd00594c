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

use crate::limits::LOGIN_FAILURE_DELAY;

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
            let login =
                tokio::task::spawn_blocking(move || p.login(&c.username, &c.password)).await;
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
