//! Where a partition sits on the ring: its key with its token, and the
//! bounds of a scan over token ranges.

use bytes::Bytes;

/// A partition key: its Murmur3 token and its serialized bytes. Sorts by
/// token, then bytes.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PartitionKey {
    pub token: i64,
    pub key: Bytes,
}

impl PartitionKey {
    pub fn new(key: Bytes) -> Self {
        PartitionKey {
            token: crate::token::murmur3_token(&key),
            key,
        }
    }
}

/// One end of a scan over the ring.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenBound {
    Unbounded,
    /// Tokens at or above (start) / at or below (end) this one.
    TokenInclusive(i64),
    /// Tokens strictly above (start) / below (end) this one.
    TokenExclusive(i64),
    /// Strictly after (start) / before (end) this key: used by paging.
    AfterKey(PartitionKey),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_sort_by_token_then_bytes() {
        let a = PartitionKey::new(Bytes::from_static(b"a"));
        let b = PartitionKey::new(Bytes::from_static(b"b"));
        assert_eq!(a.token, crate::token::murmur3_token(b"a"));
        assert_eq!(a < b, (a.token, &a.key) < (b.token, &b.key));
        let same_token = PartitionKey {
            token: a.token,
            key: Bytes::from_static(b"z"),
        };
        assert!(a < same_token);
    }
}
