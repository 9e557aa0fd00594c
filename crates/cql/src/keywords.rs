//! Reserved CQL keywords (Cassandra's "Appendix A: CQL Keywords").
//!
//! A reserved keyword can never be an unquoted identifier; every other
//! keyword (`key`, `value`, `ttl`, `count`, `text`, `json`, ...) is only a
//! keyword where the grammar expects it and a plain name elsewhere.
//! `true` and `false` are not in the appendix but are literals, so they are
//! not usable as names either, as in Cassandra.

/// Sorted, lower-case.
const RESERVED: &[&str] = &[
    "add",
    "allow",
    "alter",
    "and",
    "apply",
    "asc",
    "authorize",
    "batch",
    "begin",
    "by",
    "columnfamily",
    "create",
    "default",
    "delete",
    "desc",
    "describe",
    "drop",
    "entries",
    "execute",
    "false",
    "from",
    "full",
    "grant",
    "if",
    "in",
    "index",
    "infinity",
    "insert",
    "into",
    "is",
    "keyspace",
    "limit",
    "materialized",
    "mbean",
    "mbeans",
    "modify",
    "nan",
    "norecursive",
    "not",
    "null",
    "of",
    "on",
    "or",
    "order",
    "primary",
    "rename",
    "replace",
    "revoke",
    "schema",
    "select",
    "set",
    "table",
    "to",
    "token",
    "true",
    "truncate",
    "unlogged",
    "unset",
    "update",
    "use",
    "using",
    "view",
    "where",
    "with",
];

/// True if `word` (already lower-cased) is reserved.
pub fn is_reserved(word: &str) -> bool {
    RESERVED.binary_search(&word).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_is_sorted_so_binary_search_works() {
        assert!(RESERVED.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn unreserved_keywords_are_names() {
        for w in [
            "key",
            "value",
            "type",
            "ttl",
            "writetime",
            "count",
            "timestamp",
            "text",
            "json",
        ] {
            assert!(!is_reserved(w), "{w}");
        }
        for w in ["select", "from", "token", "keyspace", "null"] {
            assert!(is_reserved(w), "{w}");
        }
    }
}
