//! SASL PLAIN (RFC 4616), the token of AUTH_RESPONSE under
//! PasswordAuthenticator: `[authzid] NUL authcid NUL password`.
//!
//! Read from the end as Cassandra reads it: the password follows the last
//! NUL, the user name the one before; the authorization id, which Cassandra
//! ignores, may not hold a NUL of its own. A token longer than
//! [`SASL_TOKEN_MAX_BYTES`], with a third NUL, or with an empty (or absent)
//! password or user name is refused, with Cassandra's messages; nothing
//! here panics. The parts must be UTF-8, since role names and passwords are
//! CQL text.

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
    #[error(
        "Credential format error: username or password is empty or contains NUL(\\0) character"
    )]
    Format,
    #[error("SASL token is not UTF-8 text")]
    NotText,
}

/// The user name and password of a PLAIN `token`.
pub fn parse_plain(token: &[u8]) -> Result<PlainCredentials, SaslError> {
    if token.len() > SASL_TOKEN_MAX_BYTES {
        return Err(SaslError::TooLong(token.len()));
    }
    let mut nuls = token
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, &b)| b == 0)
        .map(|(i, _)| i);
    let (last, before) = (nuls.next(), nuls.next());
    if nuls.next().is_some() {
        return Err(SaslError::Format);
    }
    let password = match last {
        Some(at) if at + 1 < token.len() => &token[at + 1..],
        _ => return Err(SaslError::NoPassword),
    };
    let username = match (last, before) {
        (Some(end), Some(start)) if start + 1 < end => &token[start + 1..end],
        _ => return Err(SaslError::NoUsername),
    };
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
    fn the_authorization_id_is_skipped_but_holds_no_nul() {
        assert_eq!(parse_plain(b"admin\0bob\0pw"), Ok(creds("bob", "pw")));
        assert_eq!(parse_plain(b"a\0b\0bob\0pw"), Err(SaslError::Format));
        assert_eq!(parse_plain(b"\0\0\0"), Err(SaslError::Format));
    }

    #[test]
    fn missing_parts_are_refused_password_first_as_cassandra() {
        assert_eq!(parse_plain(b""), Err(SaslError::NoPassword));
        assert_eq!(parse_plain(b"bobpw"), Err(SaslError::NoPassword));
        assert_eq!(parse_plain(b"\0bob\0"), Err(SaslError::NoPassword));
        assert_eq!(parse_plain(b"\0\0"), Err(SaslError::NoPassword));
        assert_eq!(parse_plain(b"bob\0pw"), Err(SaslError::NoUsername));
        assert_eq!(parse_plain(b"\0\0pw"), Err(SaslError::NoUsername));
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
