//! What a snapshot is on disk, without the I/O: where it lives, which tags
//! are allowed, the names auto_snapshot gives, and the `manifest.json`
//! inside each snapshot directory (docs/format/snapshot-manifest.md).
//!
//! A snapshot of a table is the directory
//! `<table directory>/snapshots/<tag>/`, holding a hard link of each live
//! sstable under its own file name, `manifest.json`, and `schema.cql`
//! when the table's CQL was known. The engine's side is
//! [`crate::engine_snapshot`].

use serde_json::{json, Value};

/// The subdirectory of a table directory that holds its snapshots.
pub const SNAPSHOTS_DIR: &str = "snapshots";
/// The file of a snapshot directory that lists its sstables.
pub const SNAPSHOT_MANIFEST_FILE: &str = "manifest.json";
/// The file of a snapshot directory that holds the table's CREATE TABLE.
pub const SNAPSHOT_SCHEMA_FILE: &str = "schema.cql";
/// The version of `manifest.json` this code writes and reads.
pub const SNAPSHOT_MANIFEST_VERSION: u64 = 1;
/// The `format` field of `manifest.json`.
pub const SNAPSHOT_MANIFEST_FORMAT: &str = "varve-snapshot";
/// The longest snapshot tag, in bytes: well under the 255 bytes a file
/// name may have, and room for every auto_snapshot name (a prefix, 13
/// digits of milliseconds and a table name).
pub const MAX_SNAPSHOT_TAG_LEN: usize = 200;
/// The tag prefix of the snapshot taken before DROP TABLE or DROP KEYSPACE.
pub const DROPPED_PREFIX: &str = "dropped";
/// The tag prefix of the snapshot taken before TRUNCATE.
pub const TRUNCATED_PREFIX: &str = "truncated";

/// Whether `tag` may name a snapshot: 1 to [`MAX_SNAPSHOT_TAG_LEN`] bytes
/// of `[A-Za-z0-9_.-]`, neither `.` nor holding `..`. The error says why
/// not.
pub fn validate_tag(tag: &str) -> Result<(), String> {
    if tag.is_empty() {
        return Err("a snapshot name must not be empty".into());
    }
    if tag.len() > MAX_SNAPSHOT_TAG_LEN {
        return Err(format!(
            "snapshot name is {} bytes long; the most is {MAX_SNAPSHOT_TAG_LEN}",
            tag.len()
        ));
    }
    if tag.contains('/') {
        return Err(format!("snapshot name {tag:?} must not contain '/'"));
    }
    if tag == "." || tag.contains("..") {
        return Err(format!(
            "snapshot name {tag:?} must not be '.' or contain '..'"
        ));
    }
    if let Some(c) = tag
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')))
    {
        return Err(format!(
            "snapshot name {tag:?} holds {c:?}: only letters, digits, '_', '.' and '-' are allowed"
        ));
    }
    Ok(())
}

/// The tag auto_snapshot gives: `<prefix>-<millis>-<table>`, as Cassandra
/// names them (`dropped-1700000000000-users`). A table name's characters
/// that a tag may not hold become `_`, and the name is cut so the tag fits
/// [`MAX_SNAPSHOT_TAG_LEN`]: the result always passes [`validate_tag`].
pub fn auto_tag(prefix: &str, millis: u64, table: &str) -> String {
    let head = format!("{prefix}-{millis}-");
    let room = MAX_SNAPSHOT_TAG_LEN.saturating_sub(head.len());
    let name: String = table
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(room)
        .collect();
    format!("{head}{name}")
}

/// The contents of `manifest.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotManifest {
    pub keyspace: String,
    pub table: String,
    pub table_id: u128,
    /// When the snapshot was taken, milliseconds since the epoch.
    pub created_at_millis: i64,
    /// The sstable file names of the snapshot directory.
    pub files: Vec<String>,
    /// The table's CREATE TABLE statement, when storage was told it.
    pub schema: Option<String>,
}

impl SnapshotManifest {
    /// The JSON text, pretty-printed, ending in a newline.
    pub fn encode(&self) -> Vec<u8> {
        let created_at = iso_instant(self.created_at_millis);
        let value = json!({
            "format": SNAPSHOT_MANIFEST_FORMAT,
            "version": SNAPSHOT_MANIFEST_VERSION,
            "keyspace": self.keyspace,
            "table": self.table,
            "table_id": format!("{:032x}", self.table_id),
            "created_at": created_at,
            "created_at_millis": self.created_at_millis,
            "files": self.files,
            "schema": self.schema,
        });
        let mut text = serde_json::to_string_pretty(&value).unwrap_or_default();
        text.push('\n');
        text.into_bytes()
    }

    /// Reads `manifest.json`; the error says what is wrong with it.
    pub fn decode(bytes: &[u8]) -> Result<SnapshotManifest, String> {
        let value: Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
        if value.get("format").and_then(Value::as_str) != Some(SNAPSHOT_MANIFEST_FORMAT) {
            return Err(format!("not a {SNAPSHOT_MANIFEST_FORMAT} manifest"));
        }
        match value.get("version").and_then(Value::as_u64) {
            Some(SNAPSHOT_MANIFEST_VERSION) => {}
            other => return Err(format!("unsupported manifest version {other:?}")),
        }
        let text = |key: &str| {
            value
                .get(key)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| format!("no {key:?}"))
        };
        let table_id = u128::from_str_radix(&text("table_id")?, 16)
            .map_err(|_| "\"table_id\" is not hexadecimal".to_string())?;
        let files = value
            .get("files")
            .and_then(Value::as_array)
            .ok_or("no \"files\"")?
            .iter()
            .map(|f| {
                f.as_str()
                    .map(str::to_string)
                    .ok_or("a file name is not text")
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(SnapshotManifest {
            keyspace: text("keyspace")?,
            table: text("table")?,
            table_id,
            created_at_millis: value
                .get("created_at_millis")
                .and_then(Value::as_i64)
                .ok_or("no \"created_at_millis\"")?,
            files,
            schema: value
                .get("schema")
                .and_then(Value::as_str)
                .map(str::to_string),
        })
    }
}

/// `2024-05-01T10:00:00.123Z` (ISO 8601, UTC, milliseconds), as
/// Cassandra's manifest.json writes `created_at`.
pub fn iso_instant(millis: i64) -> String {
    const MS_PER_DAY: i64 = 86_400_000;
    let (y, mo, d) = varve_types::time::civil_from_days(millis.div_euclid(MS_PER_DAY));
    let in_day = millis.rem_euclid(MS_PER_DAY);
    let secs = in_day / 1000;
    format!(
        "{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        secs / 3600,
        secs / 60 % 60,
        secs % 60,
        in_day % 1000
    )
}

/// The table name of a table directory's name (`<name>-<32 hex digits of
/// the id>`), or `None` for a directory that is not a table's.
pub fn table_of_dir_name(dir_name: &str) -> Option<(&str, u128)> {
    let (name, id) = dir_name.rsplit_once('-')?;
    if name.is_empty() || id.len() != 32 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    Some((name, u128::from_str_radix(id, 16).ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tags of [`MAX_SNAPSHOT_TAG_LEN`] bytes pass; one byte more does not.
    #[test]
    fn tag_length_is_limited_at_n() {
        let n = "a".repeat(MAX_SNAPSHOT_TAG_LEN);
        assert_eq!(validate_tag(&n), Ok(()));
        let over = "a".repeat(MAX_SNAPSHOT_TAG_LEN + 1);
        let err = validate_tag(&over).unwrap_err();
        assert!(err.contains("the most is 200"), "{err}");
    }

    #[test]
    fn tags_are_refused_with_a_reason() {
        for ok in [
            "t1",
            "1700000000000",
            "before-upgrade_2.0",
            ".hidden",
            "a.b",
        ] {
            assert_eq!(validate_tag(ok), Ok(()), "{ok}");
        }
        for (bad, why) in [
            ("", "empty"),
            ("a/b", "'/'"),
            ("/", "'/'"),
            ("..", "'..'"),
            (".", "'..'"),
            ("a..b", "'..'"),
            ("a b", "' '"),
            ("ünï", "'ü'"),
            ("a\0", "'\\0'"),
        ] {
            let err = validate_tag(bad).unwrap_err();
            assert!(err.contains(why), "{bad:?}: {err}");
        }
    }

    #[test]
    fn auto_tags_are_cassandras_names_and_always_valid() {
        assert_eq!(
            auto_tag(DROPPED_PREFIX, 1_700_000_000_123, "users"),
            "dropped-1700000000123-users"
        );
        assert_eq!(
            auto_tag(TRUNCATED_PREFIX, 5, "Odd Name/x"),
            "truncated-5-Odd_Name_x"
        );
        let long = auto_tag(DROPPED_PREFIX, u64::MAX, &"t".repeat(500));
        assert_eq!(long.len(), MAX_SNAPSHOT_TAG_LEN);
        assert_eq!(validate_tag(&long), Ok(()));
        assert_eq!(validate_tag(&auto_tag("dropped", 1, "..")), Ok(()));
    }

    #[test]
    fn manifest_round_trips_and_refuses_what_it_does_not_know() {
        let m = SnapshotManifest {
            keyspace: "ks".into(),
            table: "t".into(),
            table_id: 0xabc,
            created_at_millis: 1_700_000_000_123,
            files: vec!["1.sst".into(), "4.sst".into()],
            schema: Some("CREATE TABLE ks.t (\n    k int PRIMARY KEY\n) WITH \"x\"".into()),
        };
        let bytes = m.encode();
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(
            text.contains("\"created_at\": \"2023-11-14T22:13:20.123Z\""),
            "{text}"
        );
        assert_eq!(SnapshotManifest::decode(&bytes), Ok(m.clone()));
        let none = SnapshotManifest { schema: None, ..m };
        assert_eq!(SnapshotManifest::decode(&none.encode()), Ok(none));
        let newer = text.replace("\"version\": 1", "\"version\": 2");
        assert!(SnapshotManifest::decode(newer.as_bytes())
            .unwrap_err()
            .contains("version"));
        assert!(SnapshotManifest::decode(b"{}").is_err());
        assert!(SnapshotManifest::decode(&bytes[..bytes.len() / 2]).is_err());
    }

    #[test]
    fn table_directory_names_parse() {
        let id = format!("{:032x}", 42u128);
        assert_eq!(
            table_of_dir_name(&format!("users-{id}")),
            Some(("users", 42))
        );
        assert_eq!(
            table_of_dir_name(&format!("a-b-{id}")),
            Some(("a-b", 42)),
            "the id is after the last '-'"
        );
        assert_eq!(table_of_dir_name("users"), None);
        assert_eq!(table_of_dir_name(&format!("-{id}")), None);
        assert_eq!(table_of_dir_name("users-xyz"), None);
        assert_eq!(table_of_dir_name("commitlog"), None);
    }
}
