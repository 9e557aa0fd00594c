//! The credentials cache (`credentials_validity`): a successful password
//! check is remembered for a while, so a burst of logins pays bcrypt once
//! (docs/design/security.md, section 4).
//!
//! An entry holds a keyed SHA-256 of the password (the key is random per
//! process), the salted hash it was checked against, and when. It counts
//! only while younger than the validity and while the role's stored hash is
//! still that one (a password change voids it at once). Failures are never
//! cached.

use parking_lot::Mutex;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Most entries the cache keeps (Cassandra's `credentials_cache_max_entries`).
pub const CREDENTIALS_CACHE_MAX_ENTRIES: usize = 1000;

struct Entry {
    digest: [u8; 32],
    salted_hash: String,
    verified_at: Instant,
}

/// Recently verified credentials, by role name.
pub struct CredentialsCache {
    validity: Duration,
    max_entries: usize,
    key: [u8; 32],
    entries: Mutex<HashMap<String, Entry>>,
}

impl CredentialsCache {
    /// A cache whose entries last `validity` (zero: nothing is cached).
    pub fn new(validity: Duration) -> Self {
        Self::with_max_entries(validity, CREDENTIALS_CACHE_MAX_ENTRIES)
    }

    fn with_max_entries(validity: Duration, max_entries: usize) -> Self {
        CredentialsCache {
            validity,
            max_entries,
            key: rand::random(),
            entries: Mutex::new(HashMap::new()),
        }
    }

    fn digest(&self, role: &str, password: &str) -> [u8; 32] {
        let mut h = Sha256::new();
        h.update(self.key);
        h.update((role.len() as u64).to_be_bytes());
        h.update(role.as_bytes());
        h.update(password.as_bytes());
        h.finalize().into()
    }

    /// Whether `password` was verified for `role` against `salted_hash`
    /// within the validity, as of `now`.
    pub fn is_verified(&self, role: &str, password: &str, salted_hash: &str, now: Instant) -> bool {
        if self.validity.is_zero() {
            return false;
        }
        let digest = self.digest(role, password);
        let entries = self.entries.lock();
        entries.get(role).is_some_and(|e| {
            e.digest == digest
                && e.salted_hash == salted_hash
                && now.saturating_duration_since(e.verified_at) < self.validity
        })
    }

    /// Remembers that `password` matched `salted_hash` for `role` at `now`.
    pub fn remember(&self, role: &str, password: &str, salted_hash: &str, now: Instant) {
        if self.validity.is_zero() {
            return;
        }
        let entry = Entry {
            digest: self.digest(role, password),
            salted_hash: salted_hash.to_string(),
            verified_at: now,
        };
        let mut entries = self.entries.lock();
        if !entries.contains_key(role) && entries.len() >= self.max_entries {
            let validity = self.validity;
            entries.retain(|_, e| now.saturating_duration_since(e.verified_at) < validity);
            if entries.len() >= self.max_entries {
                let oldest = entries
                    .iter()
                    .min_by_key(|(_, e)| e.verified_at)
                    .map(|(k, _)| k.clone());
                if let Some(k) = oldest {
                    entries.remove(&k);
                }
            }
        }
        entries.insert(role.to_string(), entry);
    }

    /// Entries held now.
    pub fn len(&self) -> usize {
        self.entries.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VALIDITY: Duration = Duration::from_millis(2000);

    #[test]
    fn an_entry_counts_for_its_password_and_hash_within_the_validity() {
        let c = CredentialsCache::new(VALIDITY);
        let t0 = Instant::now();
        assert!(!c.is_verified("bob", "pw", "h1", t0));
        c.remember("bob", "pw", "h1", t0);
        assert!(c.is_verified("bob", "pw", "h1", t0 + VALIDITY / 2));
        assert!(!c.is_verified("bob", "other", "h1", t0), "another password");
        assert!(!c.is_verified("alice", "pw", "h1", t0), "another role");
        assert!(
            !c.is_verified("bob", "pw", "h2", t0),
            "the password changed"
        );
        assert!(!c.is_verified("bob", "pw", "h1", t0 + VALIDITY), "expired");
    }

    #[test]
    fn zero_validity_caches_nothing() {
        let c = CredentialsCache::new(Duration::ZERO);
        let t0 = Instant::now();
        c.remember("bob", "pw", "h", t0);
        assert!(!c.is_verified("bob", "pw", "h", t0));
        assert!(c.is_empty());
    }

    #[test]
    fn the_cache_holds_at_most_its_limit_dropping_the_oldest() {
        let n = CREDENTIALS_CACHE_MAX_ENTRIES;
        let c = CredentialsCache::new(VALIDITY);
        let t0 = Instant::now();
        for i in 0..n {
            c.remember(
                &format!("r{i}"),
                "pw",
                "h",
                t0 + Duration::from_micros(i as u64),
            );
        }
        assert_eq!(c.len(), n, "N entries fit");
        assert!(c.is_verified("r0", "pw", "h", t0));
        c.remember("new", "pw", "h", t0 + Duration::from_millis(1));
        assert_eq!(c.len(), n, "N + 1 drops one");
        assert!(!c.is_verified("r0", "pw", "h", t0), "the oldest went");
        assert!(c.is_verified("new", "pw", "h", t0 + Duration::from_millis(1)));
        // Refreshing a role already there does not evict another.
        c.remember("r1", "pw", "h", t0 + Duration::from_millis(2));
        assert_eq!(c.len(), n);
        assert!(c.is_verified("r2", "pw", "h", t0 + Duration::from_millis(2)));
    }

    #[test]
    fn a_full_cache_drops_expired_entries_first() {
        let c = CredentialsCache::with_max_entries(VALIDITY, 3);
        let t0 = Instant::now();
        c.remember("a", "pw", "h", t0);
        c.remember("b", "pw", "h", t0);
        c.remember("c", "pw", "h", t0 + VALIDITY);
        c.remember("d", "pw", "h", t0 + VALIDITY + Duration::from_millis(1));
        assert_eq!(c.len(), 2, "both expired entries went");
    }
}
