//! The table definitions of the system keyspaces.

use std::collections::BTreeMap;
use std::sync::Arc;
use varve_schema::options::{ReplicationParams, TableOptions};
use varve_schema::table::TableSpec;
use varve_schema::{Keyspace, Schema, Table};

/// Keyspaces listed in system_virtual_schema rather than system_schema.
pub const VIRTUAL_KEYSPACES: &[&str] = &["system_virtual_schema", "system_views"];

/// (keyspace, table, columns as (name, type, kind: 'p'artition, 'c'lustering, 'r'egular))
type Def = (
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str, char)],
);

/// The columns of Cassandra's per-table latency views
/// (`system_views.coordinator_{read,write,scan}_latency`).
const LATENCY_VIEW_COLUMNS: &[(&str, &str, char)] = &[
    ("keyspace_name", "text", 'p'),
    ("table_name", "text", 'p'),
    ("count", "bigint", 'r'),
    ("max_ms", "double", 'r'),
    ("p50th_ms", "double", 'r'),
    ("p99th_ms", "double", 'r'),
    ("per_second", "double", 'r'),
];

const DEFS: &[Def] = &[
    (
        "system",
        "local",
        &[
            ("key", "text", 'p'),
            ("bootstrapped", "text", 'r'),
            ("broadcast_address", "inet", 'r'),
            ("broadcast_port", "int", 'r'),
            ("cluster_name", "text", 'r'),
            ("cql_version", "text", 'r'),
            ("data_center", "text", 'r'),
            ("gossip_generation", "int", 'r'),
            ("host_id", "uuid", 'r'),
            ("listen_address", "inet", 'r'),
            ("listen_port", "int", 'r'),
            ("native_protocol_version", "text", 'r'),
            ("partitioner", "text", 'r'),
            ("rack", "text", 'r'),
            ("release_version", "text", 'r'),
            ("rpc_address", "inet", 'r'),
            ("rpc_port", "int", 'r'),
            ("schema_version", "uuid", 'r'),
            ("tokens", "frozen<set<text>>", 'r'),
            ("truncated_at", "frozen<map<uuid, blob>>", 'r'),
        ],
    ),
    (
        "system",
        "peers",
        &[
            ("peer", "inet", 'p'),
            ("data_center", "text", 'r'),
            ("host_id", "uuid", 'r'),
            ("preferred_ip", "inet", 'r'),
            ("rack", "text", 'r'),
            ("release_version", "text", 'r'),
            ("rpc_address", "inet", 'r'),
            ("schema_version", "uuid", 'r'),
            ("tokens", "frozen<set<text>>", 'r'),
        ],
    ),
    (
        "system",
        "peers_v2",
        &[
            ("peer", "inet", 'p'),
            ("peer_port", "int", 'c'),
            ("data_center", "text", 'r'),
            ("host_id", "uuid", 'r'),
            ("native_address", "inet", 'r'),
            ("native_port", "int", 'r'),
            ("preferred_ip", "inet", 'r'),
            ("preferred_port", "int", 'r'),
            ("rack", "text", 'r'),
            ("release_version", "text", 'r'),
            ("schema_version", "uuid", 'r'),
            ("tokens", "frozen<set<text>>", 'r'),
        ],
    ),
    (
        "system",
        "size_estimates",
        &[
            ("keyspace_name", "text", 'p'),
            ("table_name", "text", 'c'),
            ("range_start", "text", 'c'),
            ("range_end", "text", 'c'),
            ("mean_partition_size", "bigint", 'r'),
            ("partitions_count", "bigint", 'r'),
        ],
    ),
    (
        "system",
        "table_estimates",
        &[
            ("keyspace_name", "text", 'p'),
            ("table_name", "text", 'c'),
            ("range_type", "text", 'c'),
            ("range_start", "text", 'c'),
            ("range_end", "text", 'c'),
            ("mean_partition_size", "bigint", 'r'),
            ("partitions_count", "bigint", 'r'),
        ],
    ),
    (
        "system_schema",
        "keyspaces",
        &[
            ("keyspace_name", "text", 'p'),
            ("durable_writes", "boolean", 'r'),
            ("replication", "frozen<map<text, text>>", 'r'),
        ],
    ),
    (
        "system_schema",
        "tables",
        &[
            ("keyspace_name", "text", 'p'),
            ("table_name", "text", 'c'),
            ("additional_write_policy", "text", 'r'),
            ("allow_auto_snapshot", "boolean", 'r'),
            ("bloom_filter_fp_chance", "double", 'r'),
            ("caching", "frozen<map<text, text>>", 'r'),
            ("cdc", "boolean", 'r'),
            ("comment", "text", 'r'),
            ("compaction", "frozen<map<text, text>>", 'r'),
            ("compression", "frozen<map<text, text>>", 'r'),
            ("crc_check_chance", "double", 'r'),
            ("default_time_to_live", "int", 'r'),
            ("extensions", "frozen<map<text, blob>>", 'r'),
            ("flags", "frozen<set<text>>", 'r'),
            ("gc_grace_seconds", "int", 'r'),
            ("id", "uuid", 'r'),
            ("incremental_backups", "boolean", 'r'),
            ("max_index_interval", "int", 'r'),
            ("memtable", "text", 'r'),
            ("memtable_flush_period_in_ms", "int", 'r'),
            ("min_index_interval", "int", 'r'),
            ("read_repair", "text", 'r'),
            ("speculative_retry", "text", 'r'),
        ],
    ),
    (
        "system_schema",
        "columns",
        &[
            ("keyspace_name", "text", 'p'),
            ("table_name", "text", 'c'),
            ("column_name", "text", 'c'),
            ("clustering_order", "text", 'r'),
            ("column_name_bytes", "blob", 'r'),
            ("kind", "text", 'r'),
            ("position", "int", 'r'),
            ("type", "text", 'r'),
        ],
    ),
    (
        "system_schema",
        "dropped_columns",
        &[
            ("keyspace_name", "text", 'p'),
            ("table_name", "text", 'c'),
            ("column_name", "text", 'c'),
            ("dropped_time", "timestamp", 'r'),
            ("kind", "text", 'r'),
            ("type", "text", 'r'),
        ],
    ),
    (
        "system_schema",
        "types",
        &[
            ("keyspace_name", "text", 'p'),
            ("type_name", "text", 'c'),
            ("field_names", "frozen<list<text>>", 'r'),
            ("field_types", "frozen<list<text>>", 'r'),
        ],
    ),
    (
        "system_schema",
        "functions",
        &[
            ("keyspace_name", "text", 'p'),
            ("function_name", "text", 'c'),
            ("argument_types", "frozen<list<text>>", 'c'),
            ("argument_names", "frozen<list<text>>", 'r'),
            ("body", "text", 'r'),
            ("called_on_null_input", "boolean", 'r'),
            ("language", "text", 'r'),
            ("return_type", "text", 'r'),
        ],
    ),
    (
        "system_schema",
        "aggregates",
        &[
            ("keyspace_name", "text", 'p'),
            ("aggregate_name", "text", 'c'),
            ("argument_types", "frozen<list<text>>", 'c'),
            ("final_func", "text", 'r'),
            ("initcond", "text", 'r'),
            ("return_type", "text", 'r'),
            ("state_func", "text", 'r'),
            ("state_type", "text", 'r'),
        ],
    ),
    (
        "system_schema",
        "indexes",
        &[
            ("keyspace_name", "text", 'p'),
            ("table_name", "text", 'c'),
            ("index_name", "text", 'c'),
            ("kind", "text", 'r'),
            ("options", "frozen<map<text, text>>", 'r'),
        ],
    ),
    (
        "system_schema",
        "triggers",
        &[
            ("keyspace_name", "text", 'p'),
            ("table_name", "text", 'c'),
            ("trigger_name", "text", 'c'),
            ("options", "frozen<map<text, text>>", 'r'),
        ],
    ),
    (
        "system_schema",
        "views",
        &[
            ("keyspace_name", "text", 'p'),
            ("view_name", "text", 'c'),
            ("base_table_id", "uuid", 'r'),
            ("base_table_name", "text", 'r'),
            ("include_all_columns", "boolean", 'r'),
            ("where_clause", "text", 'r'),
            ("id", "uuid", 'r'),
        ],
    ),
    (
        "system_virtual_schema",
        "keyspaces",
        &[("keyspace_name", "text", 'p')],
    ),
    (
        "system_virtual_schema",
        "tables",
        &[
            ("keyspace_name", "text", 'p'),
            ("table_name", "text", 'c'),
            ("comment", "text", 'r'),
        ],
    ),
    (
        "system_virtual_schema",
        "columns",
        &[
            ("keyspace_name", "text", 'p'),
            ("table_name", "text", 'c'),
            ("column_name", "text", 'c'),
            ("clustering_order", "text", 'r'),
            ("column_name_bytes", "blob", 'r'),
            ("kind", "text", 'r'),
            ("position", "int", 'r'),
            ("type", "text", 'r'),
        ],
    ),
    // system_views: Cassandra 4/5 names and columns; see views.rs.
    (
        "system_views",
        "coordinator_read_latency",
        LATENCY_VIEW_COLUMNS,
    ),
    (
        "system_views",
        "coordinator_write_latency",
        LATENCY_VIEW_COLUMNS,
    ),
    (
        "system_views",
        "coordinator_scan_latency",
        LATENCY_VIEW_COLUMNS,
    ),
    (
        "system_views",
        "tombstones_per_read",
        &[
            ("keyspace_name", "text", 'p'),
            ("table_name", "text", 'p'),
            ("count", "bigint", 'r'),
            ("max", "double", 'r'),
            ("p50th", "double", 'r'),
            ("p99th", "double", 'r'),
        ],
    ),
    (
        "system_views",
        "sstable_tasks",
        &[
            ("keyspace_name", "text", 'p'),
            ("table_name", "text", 'c'),
            ("task_id", "uuid", 'c'),
            ("kind", "text", 'r'),
            ("progress", "bigint", 'r'),
            ("total", "bigint", 'r'),
            ("unit", "text", 'r'),
        ],
    ),
    (
        "system_views",
        "settings",
        &[("name", "text", 'p'), ("value", "text", 'r')],
    ),
    // Paxos state, kept in storage (not generated): see STORED_TABLES.
    (
        "system",
        "paxos",
        &[
            ("row_key", "blob", 'p'),
            ("cf_id", "uuid", 'c'),
            ("in_progress_ballot", "timeuuid", 'r'),
            ("most_recent_commit", "blob", 'r'),
            ("most_recent_commit_at", "timeuuid", 'r'),
            ("most_recent_commit_version", "int", 'r'),
            ("proposal", "blob", 'r'),
            ("proposal_ballot", "timeuuid", 'r'),
            ("proposal_version", "int", 'r'),
        ],
    ),
    // Varve's own: every metric of the registry as rows (Cassandra has no
    // equivalent table).
    (
        "system_views",
        "varve_metrics",
        &[
            ("name", "text", 'p'),
            ("labels", "text", 'c'),
            ("field", "text", 'c'),
            ("value", "double", 'r'),
        ],
    ),
    // Roles and permissions, as Cassandra lays them out; built from the
    // schema's access data (docs/design/security.md, section 3).
    (
        "system_auth",
        "roles",
        &[
            ("role", "text", 'p'),
            ("can_login", "boolean", 'r'),
            ("is_superuser", "boolean", 'r'),
            ("member_of", "set<text>", 'r'),
            ("salted_hash", "text", 'r'),
        ],
    ),
    (
        "system_auth",
        "role_members",
        &[("role", "text", 'p'), ("member", "text", 'c')],
    ),
    (
        "system_auth",
        "role_permissions",
        &[
            ("role", "text", 'p'),
            ("resource", "text", 'c'),
            ("permissions", "set<text>", 'r'),
        ],
    ),
    (
        "system_auth",
        "resource_role_permissons_index",
        &[("resource", "text", 'p'), ("role", "text", 'c')],
    ),
];

/// System tables whose rows storage keeps, as any table's (the rest are
/// generated when read): a replica's Paxos state
/// (docs/design/paxos.md, section 4). (`system_traces`, built apart in
/// [`crate::trace::schema`], is kept in storage too.)
pub const STORED_TABLES: &[(&str, &str)] = &[("system", "paxos")];

/// A stable id for a system table, derived from its name.
fn table_id(ks: &str, name: &str) -> u128 {
    use md5::{Digest, Md5};
    let mut h = Md5::new();
    h.update(ks.as_bytes());
    h.update(b".");
    h.update(name.as_bytes());
    let d = h.finalize();
    let mut b = [0u8; 16];
    b.copy_from_slice(&d);
    u128::from_be_bytes(b)
}

fn build(def: &Def) -> Table {
    let (ks, name, cols) = def;
    let spec = TableSpec {
        keyspace: ks.to_string(),
        name: name.to_string(),
        id: table_id(ks, name),
        columns: cols
            .iter()
            .map(|(n, t, _)| {
                (
                    n.to_string(),
                    varve_cql::parse_type(t).unwrap_or(varve_types::CqlType::Blob),
                    false,
                )
            })
            .collect(),
        partition_key: cols
            .iter()
            .filter(|c| c.2 == 'p')
            .map(|c| c.0.to_string())
            .collect(),
        clustering: cols
            .iter()
            .filter(|c| c.2 == 'c')
            .map(|c| (c.0.to_string(), false))
            .collect(),
        options: TableOptions::default(),
    };
    // The definitions above are fixed and valid; a failure is a bug caught by tests.
    let mut t = Table::create(spec).unwrap_or_else(|e| panic!("bad system table {ks}.{name}: {e}"));
    t.is_virtual = !STORED_TABLES.contains(&(*ks, *name));
    t
}

/// The schema of a fresh node: the system keyspaces and nothing else.
pub fn initial_schema() -> Schema {
    let mut keyspaces: BTreeMap<String, Arc<Keyspace>> = BTreeMap::new();
    for def in DEFS {
        let entry = keyspaces.entry(def.0.to_string()).or_insert_with(|| {
            Arc::new(Keyspace {
                name: def.0.to_string(),
                replication: ReplicationParams::local(),
                durable_writes: true,
                tables: BTreeMap::new(),
                types: BTreeMap::new(),
                is_system: true,
            })
        });
        let ks = Arc::make_mut(entry);
        ks.tables.insert(def.1.to_string(), Arc::new(build(def)));
    }
    let traces = crate::trace::schema::keyspace();
    keyspaces.insert(traces.name.clone(), Arc::new(traces));
    Schema {
        keyspaces,
        version: varve_types::time::random_uuid(),
        access: Arc::default(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn system_tables_build() {
        let s = super::initial_schema();
        assert!(s.table("system", "local").is_some());
        assert!(s.table("system_schema", "columns").is_some());
        assert_eq!(
            s.table("system_schema", "columns")
                .unwrap()
                .clustering_len(),
            2
        );
    }
}
