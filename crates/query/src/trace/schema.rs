//! The `system_traces` keyspace, as Cassandra 5.0.4 defines it
//! (`TraceKeyspace`): `sessions` and `events`, SimpleStrategy with
//! replication factor 2, `gc_grace_seconds` 0, and Cassandra's table ids
//! (name-based uuids of keyspace and table name), so DESCRIBE and
//! `system_schema` show what Cassandra shows.
//!
//! The factor is only shown: system keyspaces are node-local in Varve
//! (the cluster's data path routes every `is_system` keyspace to this
//! node), so a trace lives on the node that coordinated its request.

use std::collections::BTreeMap;
use std::sync::Arc;
use varve_schema::options::{ReplicationParams, TableOptions};
use varve_schema::table::TableSpec;
use varve_schema::{Keyspace, Table};

/// The keyspace's name.
pub const KEYSPACE: &str = "system_traces";
/// The table of trace sessions (one row per traced request).
pub const SESSIONS: &str = "sessions";
/// The table of trace events (one partition per session).
pub const EVENTS: &str = "events";

/// (name, type, kind: 'p'artition, 'c'lustering, 'r'egular)
type Column = (&'static str, &'static str, char);

const SESSIONS_COLUMNS: &[Column] = &[
    ("session_id", "uuid", 'p'),
    ("client", "inet", 'r'),
    ("command", "text", 'r'),
    ("coordinator", "inet", 'r'),
    ("coordinator_port", "int", 'r'),
    ("duration", "int", 'r'),
    ("parameters", "map<text, text>", 'r'),
    ("request", "text", 'r'),
    ("started_at", "timestamp", 'r'),
];

const EVENTS_COLUMNS: &[Column] = &[
    ("session_id", "uuid", 'p'),
    ("event_id", "timeuuid", 'c'),
    ("activity", "text", 'r'),
    ("source", "inet", 'r'),
    ("source_elapsed", "int", 'r'),
    ("source_port", "int", 'r'),
    ("thread", "text", 'r'),
];

/// Cassandra's id of a system table: `UUID.nameUUIDFromBytes` of the
/// keyspace name followed by the table name (an MD5, version 3).
pub fn cassandra_table_id(keyspace: &str, table: &str) -> u128 {
    use md5::{Digest, Md5};
    let mut h = Md5::new();
    h.update(keyspace.as_bytes());
    h.update(table.as_bytes());
    let mut b = [0u8; 16];
    b.copy_from_slice(&h.finalize());
    b[6] = (b[6] & 0x0f) | 0x30;
    b[8] = (b[8] & 0x3f) | 0x80;
    u128::from_be_bytes(b)
}

fn table(name: &str, comment: &str, columns: &[Column]) -> Table {
    let of_kind = |k: char| columns.iter().filter(move |c| c.2 == k).map(|c| c.0);
    let options = TableOptions {
        comment: comment.to_string(),
        gc_grace_seconds: 0,
        ..TableOptions::default()
    };
    let spec = TableSpec {
        keyspace: KEYSPACE.to_string(),
        name: name.to_string(),
        id: cassandra_table_id(KEYSPACE, name),
        columns: columns
            .iter()
            .map(|(n, t, _)| {
                let ty = varve_cql::parse_type(t).unwrap_or(varve_types::CqlType::Blob);
                (n.to_string(), ty, false)
            })
            .collect(),
        partition_key: of_kind('p').map(str::to_string).collect(),
        clustering: of_kind('c').map(|c| (c.to_string(), false)).collect(),
        options,
    };
    // Fixed, valid definitions: a failure is a bug the tests catch.
    Table::create(spec).unwrap_or_else(|e| panic!("bad system_traces.{name}: {e}"))
}

/// The keyspace with its two tables, kept in storage (not virtual).
pub fn keyspace() -> Keyspace {
    let tables = [
        table(SESSIONS, "tracing sessions", SESSIONS_COLUMNS),
        table(EVENTS, "tracing events", EVENTS_COLUMNS),
    ];
    Keyspace {
        name: KEYSPACE.to_string(),
        replication: ReplicationParams::simple(2),
        durable_writes: true,
        tables: tables
            .into_iter()
            .map(|t| (t.name.clone(), Arc::new(t)))
            .collect::<BTreeMap<_, _>>(),
        types: BTreeMap::new(),
        is_system: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_cassandras() {
        let id = |t| varve_types::time::format_uuid(&cassandra_table_id(KEYSPACE, t).to_be_bytes());
        assert_eq!(id(SESSIONS), "c5e99f16-8677-3914-b17e-960613512345");
        assert_eq!(id(EVENTS), "8826e8e9-e16a-3728-8753-3bc1fc713c25");
    }

    #[test]
    fn tables_are_stored_with_cassandras_keys() {
        let ks = keyspace();
        let events = &ks.tables[EVENTS];
        assert!(!events.is_virtual);
        assert_eq!(events.clustering_len(), 1);
        assert_eq!(events.options.gc_grace_seconds, 0);
        assert!(!ks.tables[SESSIONS].is_virtual);
        assert_eq!(ks.replication, ReplicationParams::simple(2));
    }
}
