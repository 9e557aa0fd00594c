//! The `caching` table option: key cache on or off, and rows per partition in the row cache.

use super::{config, Result};
use std::collections::BTreeMap;

const KEYS: &str = "keys";
const ROWS_PER_PARTITION: &str = "rows_per_partition";
const ALL: &str = "ALL";
const NONE: &str = "NONE";

/// `caching = {'keys': 'ALL'|'NONE', 'rows_per_partition': 'ALL'|'NONE'|N}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachingParams {
    /// Whether partition keys are cached (`'keys': 'ALL'`).
    pub cache_keys: bool,
    /// Rows cached per partition: 0 is `NONE`, `i32::MAX` is `ALL`.
    pub rows_per_partition: i32,
}

impl Default for CachingParams {
    fn default() -> Self {
        CachingParams {
            cache_keys: true,
            rows_per_partition: 0,
        }
    }
}

impl CachingParams {
    /// Parses the map as Cassandra does. A missing `keys` means NONE (not the default ALL).
    pub fn from_map(map: &BTreeMap<String, String>) -> Result<CachingParams> {
        let cache_keys = match map.get(KEYS) {
            None => false,
            Some(v) if v.eq_ignore_ascii_case(ALL) => true,
            Some(v) if v.eq_ignore_ascii_case(NONE) => false,
            Some(v) => {
                return config(format!(
                    "Invalid value '{v}' for caching sub-option '{KEYS}': only '{ALL}' and '{NONE}' are allowed"
                ))
            }
        };
        let rows_per_partition = match map.get(ROWS_PER_PARTITION) {
            None => 0,
            Some(v) => rows_from_string(v)?,
        };
        let unknown: Vec<&String> = map
            .keys()
            .filter(|k| k.as_str() != KEYS && k.as_str() != ROWS_PER_PARTITION)
            .collect();
        if !unknown.is_empty() {
            return config(format!(
                "Invalid caching sub-options {}: only '{KEYS}' and '{ROWS_PER_PARTITION}' are allowed",
                super::java::key_list(unknown)
            ));
        }
        Ok(CachingParams {
            cache_keys,
            rows_per_partition,
        })
    }

    /// The map as `system_schema.tables.caching` stores it and DESCRIBE prints it.
    pub fn to_map(&self) -> BTreeMap<String, String> {
        let keys = if self.cache_keys { ALL } else { NONE };
        let rows = match self.rows_per_partition {
            0 => NONE.to_string(),
            i32::MAX => ALL.to_string(),
            n => n.to_string(),
        };
        BTreeMap::from([
            (KEYS.to_string(), keys.to_string()),
            (ROWS_PER_PARTITION.to_string(), rows),
        ])
    }

    /// Whether any rows are cached.
    pub fn cache_rows(&self) -> bool {
        self.rows_per_partition > 0
    }
}

fn rows_from_string(v: &str) -> Result<i32> {
    if v.eq_ignore_ascii_case(ALL) {
        return Ok(i32::MAX);
    }
    if v.eq_ignore_ascii_case(NONE) {
        return Ok(0);
    }
    // Cassandra checks "all digits" first, then parses; a digit string past i32 is refused here
    // with the same message instead of Cassandra's internal NumberFormatException.
    if super::java::is_numeric(v) {
        if let Some(n) = super::java::parse_int(v) {
            return Ok(n);
        }
    }
    config(format!(
        "Invalid value '{v}' for caching sub-option '{ROWS_PER_PARTITION}': only '{ALL}', '{NONE}', and integer values are allowed"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn parses_and_renders() {
        let c = CachingParams::from_map(&map(&[("keys", "none"), ("rows_per_partition", "10")]))
            .unwrap();
        assert!(!c.cache_keys);
        assert_eq!(c.rows_per_partition, 10);
        assert_eq!(
            c.to_map(),
            map(&[("keys", "NONE"), ("rows_per_partition", "10")])
        );
        let all = CachingParams::from_map(&map(&[("keys", "ALL"), ("rows_per_partition", "all")]))
            .unwrap();
        assert_eq!(all.to_map()["rows_per_partition"], "ALL");
        // Missing keys means no key cache.
        let c = CachingParams::from_map(&map(&[("rows_per_partition", "NONE")])).unwrap();
        assert!(!c.cache_keys);
    }

    #[test]
    fn rejects_bad_values() {
        let e = CachingParams::from_map(&map(&[("keys", "SOME")])).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Invalid value 'SOME' for caching sub-option 'keys': only 'ALL' and 'NONE' are allowed"
        );
        let e = CachingParams::from_map(&map(&[("rows_per_partition", "-1")])).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Invalid value '-1' for caching sub-option 'rows_per_partition': only 'ALL', 'NONE', and integer values are allowed"
        );
        let e = CachingParams::from_map(&map(&[("keys", "ALL"), ("foo", "1")])).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Invalid caching sub-options [foo]: only 'keys' and 'rows_per_partition' are allowed"
        );
    }
}
