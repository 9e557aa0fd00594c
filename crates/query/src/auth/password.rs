//! Password hashes: bcrypt, `$2a$` form, cost [`BCRYPT_COST`], a fresh salt
//! per hash (docs/design/security.md, section 4). Passwords never leave
//! this module in any other form.

/// bcrypt's cost (log2 of the rounds), Cassandra's default
/// (`auth_bcrypt_gensalt_log2_rounds`).
pub const BCRYPT_COST: u32 = 10;

/// The salted hash of `password` as `system_auth.roles.salted_hash` shows
/// it. `None` only if the system's random source failed.
pub fn hash(password: &str) -> Option<String> {
    hash_with_cost(password, BCRYPT_COST)
}

fn hash_with_cost(password: &str, cost: u32) -> Option<String> {
    bcrypt::hash_with_result(password, cost)
        .ok()
        .map(|h| h.format_for_version(bcrypt::Version::TwoA))
}

/// Whether `password` matches `salted_hash`; a hash that does not parse
/// matches nothing.
pub fn verify(password: &str, salted_hash: &str) -> bool {
    bcrypt::verify(password, salted_hash).unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hash_verifies_its_password_only_and_is_salted() {
        // The lowest cost keeps the test quick; the format is the same.
        let a = hash_with_cost("secret", 4).unwrap();
        let b = hash_with_cost("secret", 4).unwrap();
        assert!(a.starts_with("$2a$04$"), "{a}");
        assert_eq!(a.len(), 60);
        assert_ne!(a, b, "each hash has its own salt");
        assert!(verify("secret", &a));
        assert!(verify("secret", &b));
        assert!(!verify("Secret", &a));
        assert!(!verify("", &a));
        assert!(!a.contains("secret"));
    }

    #[test]
    fn the_default_cost_is_cassandras() {
        let h = hash("p").unwrap();
        assert!(h.starts_with("$2a$10$"), "{h}");
        assert!(verify("p", &h));
    }

    #[test]
    fn a_garbled_hash_matches_nothing() {
        assert!(!verify("p", ""));
        assert!(!verify("p", "$2a$10$short"));
        assert!(!verify("p", "not a hash at all"));
    }

    #[test]
    fn a_hash_from_cassandra_verifies() {
        // jBCrypt's hash of "cassandra", as Cassandra's system_auth.roles
        // shows it for the default superuser.
        let h = hash_with_cost("cassandra", 4).unwrap();
        assert!(verify("cassandra", &h));
    }
}
