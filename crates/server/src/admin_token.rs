//! The admin port's token (docs/design/security.md, section 12): when the
//! node is given one, every admin request must carry
//! `Authorization: Bearer <token>`; others are answered 401. The node
//! requires a token whenever the admin port listens on an address other
//! than loopback (the varve crate refuses to start without one).

/// The shortest token accepted: guessing must be hopeless.
pub const ADMIN_TOKEN_MIN_BYTES: usize = 16;

/// Whether the request head carries `token` as its bearer token. The
/// header name is matched without regard to case, as HTTP says; the token
/// is compared in time that does not depend on where it differs.
pub fn authorized(head: &str, token: &str) -> bool {
    head.lines().skip(1).any(|line| {
        let Some((name, value)) = line.split_once(':') else {
            return false;
        };
        if !name.trim().eq_ignore_ascii_case("authorization") {
            return false;
        }
        let value = value.trim();
        let Some(given) = value
            .get(..7)
            .filter(|scheme| scheme.eq_ignore_ascii_case("bearer "))
            .map(|_| value[7..].trim())
        else {
            return false;
        };
        same(given.as_bytes(), token.as_bytes())
    })
}

/// Equal bytes, compared without an early exit.
fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "0123456789abcdef";

    #[test]
    fn only_the_right_bearer_token_is_let_in() {
        let head = |auth: &str| format!("GET /metrics HTTP/1.1\r\nHost: x\r\n{auth}\r\n");
        assert!(authorized(
            &head("Authorization: Bearer 0123456789abcdef"),
            TOKEN
        ));
        assert!(authorized(
            &head("authorization:bearer 0123456789abcdef"),
            TOKEN
        ));
        assert!(!authorized(
            &head("Authorization: Bearer 0123456789abcdeX"),
            TOKEN
        ));
        assert!(!authorized(
            &head("Authorization: Bearer 0123456789abcde"),
            TOKEN
        ));
        assert!(!authorized(
            &head("Authorization: Basic 0123456789abcdef"),
            TOKEN
        ));
        assert!(!authorized(&head("X-Token: 0123456789abcdef"), TOKEN));
        assert!(!authorized("GET /metrics HTTP/1.1\r\n", TOKEN));
        // The request line is not a header.
        assert!(!authorized(
            "Authorization: Bearer 0123456789abcdef\r\n",
            TOKEN
        ));
        // Multi-byte text where the scheme would be: no panic.
        assert!(!authorized(
            &head("Authorization: éééé 0123456789abcdef"),
            TOKEN
        ));
    }
}
