//! SASL PLAIN (RFC 4616), the token of AUTH_RESPONSE under
//! PasswordAuthenticator: `[authzid] NUL authcid NUL password`.
//!
//! Split at the last two NULs, as Cassandra splits it (the authorization
//! id, which Cassandra ignores, may itself hold anything). A token longer
//! than [`SASL_TOKEN_MAX_BYTES`], with fewer than two NULs, or with an
//! empty user name or password is refused; nothing here panics. The parts
//! must be UTF-8, since role names and passwords are CQL text.

/// Longest PLAIN token accepted: a user name and a password together.
pub const SASL_TOKEN_MAX_BYTES: usize = 1024;

/// The credentials a PLAIN token carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlainCredentials {
    pub username: String,
    pub password: String,
}

/// Why a PLAIN token was refused (the AuthenticationError message).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SaslError {
    #[error("SASL token of {0} bytes is longer than the {SASL_TOKEN_MAX_BYTES} allowed")]
    TooLong(usize),
    #[error("Authentication ID must not be null")]
    NoUsername,
    #[error("Password must not be null")]
    NoPassword,
    #[error("SASL token is not UTF-8 text")]
    NotText,
}

/// The user name and password of a PLAIN `token`.
pub fn parse_plain(token: &[u8]) -> Result<PlainCredentials, SaslError> {
    if token.len() > SASL_TOKEN_MAX_BYTES {
        return Err(SaslError::TooLong(token.len()));
    }
    let last = token.iter().rposition(|&b| b == 0);
    let Some(last) = last else {
        return Err(SaslError::NoUsername);
    };
    let password = &token[last + 1..];
    let Some(first) = token[..last].iter().rposition(|&b| b == 0) else {
        return Err(SaslError::NoUsername);
    };
    let username = &token[first + 1..last];
    if username.is_empty() {
        return Err(SaslError::NoUsername);
    }
    if password.is_empty() {
        return Err(SaslError::NoPassword);
    }
    let text = |b: &[u8]| String::from_utf8(b.to_vec()).map_err(|_| SaslError::NotText);
    Ok(PlainCredentials {
        username: text(username)?,
        password: text(password)?,
    })
}

/// A PLAIN token for `username` and `password` (no authorization id).
pub fn encode_plain(username: &str, password: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(username.len() + password.len() + 2);
    out.push(0);
    out.extend_from_slice(username.as_bytes());
    out.push(0);
    out.extend_from_slice(password.as_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn creds(u: &str, p: &str) -> PlainCredentials {
        PlainCredentials {
            username: u.into(),
            password: p.into(),
        }
    }

    #[test]
    fn a_token_round_trips() {
        assert_eq!(
            parse_plain(&encode_plain("bob", "pw")),
            Ok(creds("bob", "pw"))
        );
    }

    #[test]
    fn the_authorization_id_is_skipped_whatever_it_holds() {
        assert_eq!(parse_plain(b"admin\0bob\0pw"), Ok(creds("bob", "pw")));
        assert_eq!(parse_plain(b"a\0b\0bob\0pw"), Ok(creds("bob", "pw")));
    }

    #[test]
    fn missing_parts_are_refused() {
        assert_eq!(parse_plain(b""), Err(SaslError::NoUsername));
        assert_eq!(parse_plain(b"bobpw"), Err(SaslError::NoUsername));
        assert_eq!(parse_plain(b"bob\0pw"), Err(SaslError::NoUsername));
        assert_eq!(parse_plain(b"\0\0pw"), Err(SaslError::NoUsername));
        assert_eq!(parse_plain(b"\0bob\0"), Err(SaslError::NoPassword));
        assert_eq!(parse_plain(b"\0\0"), Err(SaslError::NoUsername));
    }

    #[test]
    fn bytes_that_are_not_text_are_refused() {
        assert_eq!(parse_plain(b"\0b\xffob\0pw"), Err(SaslError::NotText));
        assert_eq!(parse_plain(b"\0bob\0p\xc3"), Err(SaslError::NotText));
    }

    #[test]
    fn the_length_limit_is_exact() {
        let n = SASL_TOKEN_MAX_BYTES;
        let password = "p".repeat(n - "\0bob\0".len());
        let at_limit = encode_plain("bob", &password);
        assert_eq!(at_limit.len(), n);
        assert_eq!(parse_plain(&at_limit), Ok(creds("bob", &password)));
        let over = encode_plain("bob", &format!("{password}p"));
        assert_eq!(parse_plain(&over), Err(SaslError::TooLong(n + 1)));
    }
}
