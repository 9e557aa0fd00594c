//! Rows of system.local and of the schema tables, built from the node's
//! facts and the schema snapshot.

use super::{VRow, VIRTUAL_KEYSPACES};
use crate::processor::Processor;
use std::collections::BTreeMap;
use varve_schema::options::SchemaValue;
use varve_schema::{Schema, Table};
use varve_types::Value;

fn text(s: &str) -> Value {
    Value::Text(s.to_string())
}

fn text_map(m: &BTreeMap<String, String>) -> Value {
    Value::Map(m.iter().map(|(k, v)| (text(k), text(v))).collect())
}

pub fn local(p: &Processor, schema: &Schema) -> VRow {
    let n = &p.node;
    let mut r = VRow::new();
    r.insert("key", text("local"));
    r.insert("bootstrapped", text("COMPLETED"));
    r.insert("broadcast_address", Value::Inet(n.listen_address));
    r.insert("broadcast_port", Value::Int(i32::from(n.listen_port)));
    r.insert("cluster_name", text(&n.cluster_name));
    r.insert("cql_version", text(&n.cql_version));
    r.insert("data_center", text(&n.data_center));
    r.insert("gossip_generation", Value::Int(0));
    r.insert("host_id", Value::Uuid(n.host_id));
    r.insert("listen_address", Value::Inet(n.listen_address));
    r.insert("listen_port", Value::Int(i32::from(n.listen_port)));
    r.insert("native_protocol_version", text(&n.native_protocol_version));
    r.insert(
        "partitioner",
        text("org.apache.cassandra.dht.Murmur3Partitioner"),
    );
    r.insert("rack", text(&n.rack));
    r.insert("release_version", text(&n.release_version));
    r.insert("rpc_address", Value::Inet(n.rpc_address));
    r.insert("rpc_port", Value::Int(n.native_port as i32));
    r.insert("schema_version", Value::Uuid(schema.version));
    r.insert(
        "tokens",
        Value::Set(p.tokens().iter().map(|t| text(&t.to_string())).collect()),
    );
    r
}

/// The rows of `system.peers` (`v2`: `system.peers_v2`), one per peer.
pub fn peers(peers: &[crate::cluster_view::PeerInfo], v2: bool) -> Vec<VRow> {
    peers
        .iter()
        .filter(|peer| !peer.joining)
        .map(|peer| {
            let mut r = VRow::new();
            r.insert("peer", Value::Inet(peer.listen_address));
            r.insert("data_center", text(&peer.data_center));
            r.insert("host_id", Value::Uuid(peer.host_id));
            r.insert("preferred_ip", Value::Inet(peer.listen_address));
            r.insert("rack", text(&peer.rack));
            r.insert("release_version", text(&peer.release_version));
            r.insert("schema_version", Value::Uuid(peer.schema_version));
            r.insert(
                "tokens",
                Value::Set(peer.tokens.iter().map(|t| text(&t.to_string())).collect()),
            );
            if v2 {
                r.insert("peer_port", Value::Int(i32::from(peer.listen_port)));
                r.insert("native_address", Value::Inet(peer.rpc_address));
                r.insert("native_port", Value::Int(i32::from(peer.native_port)));
                r.insert("preferred_port", Value::Int(i32::from(peer.listen_port)));
            } else {
                r.insert("rpc_address", Value::Inet(peer.rpc_address));
            }
            r
        })
        .collect()
}

/// Keyspaces that system_schema lists (not the virtual ones).
fn schema_keyspaces(schema: &Schema) -> impl Iterator<Item = &varve_schema::Keyspace> {
    schema
        .keyspaces
        .values()
        .map(|k| k.as_ref())
        .filter(|k| !VIRTUAL_KEYSPACES.contains(&k.name.as_str()))
}

pub fn schema_table(name: &str, schema: &Schema) -> Vec<VRow> {
    let mut out = Vec::new();
    match name {
        "keyspaces" => {
            for ks in schema_keyspaces(schema) {
                let mut r = VRow::new();
                r.insert("keyspace_name", text(&ks.name));
                r.insert("durable_writes", Value::Boolean(ks.durable_writes));
                r.insert("replication", text_map(&ks.replication.to_map()));
                out.push(r);
            }
        }
        "tables" => {
            for ks in schema_keyspaces(schema) {
                for t in ks.tables.values() {
                    out.push(table_row(t));
                }
            }
        }
        "columns" => {
            for ks in schema_keyspaces(schema) {
                for t in ks.tables.values() {
                    out.extend(column_rows(t));
                }
            }
        }
        "dropped_columns" => {
            for ks in schema_keyspaces(schema) {
                for t in ks.tables.values() {
                    for (name, d) in &t.dropped {
                        let mut r = VRow::new();
                        r.insert("keyspace_name", text(&t.keyspace));
                        r.insert("table_name", text(&t.name));
                        r.insert("column_name", text(name));
                        r.insert("dropped_time", Value::Timestamp(d.dropped_at_micros / 1000));
                        r.insert("kind", text(d.kind.schema_name()));
                        r.insert("type", text(&d.ty.cql_name()));
                        out.push(r);
                    }
                }
            }
        }
        "types" => {
            for ks in schema_keyspaces(schema) {
                for u in ks.types.values() {
                    let names = u.field_names.iter().map(|n| text(n)).collect();
                    let types = u.field_types.iter().map(|t| text(&t.cql_name())).collect();
                    let mut r = VRow::new();
                    r.insert("keyspace_name", text(&ks.name));
                    r.insert("type_name", text(&u.name));
                    r.insert("field_names", Value::List(names));
                    r.insert("field_types", Value::List(types));
                    out.push(r);
                }
            }
        }
        _ => {}
    }
    out
}

fn table_row(t: &Table) -> VRow {
    let mut r = VRow::new();
    r.insert("keyspace_name", text(&t.keyspace));
    r.insert("table_name", text(&t.name));
    for (name, value) in t.options.to_schema_row() {
        let v = match value {
            SchemaValue::Null => continue,
            SchemaValue::Boolean(b) => Value::Boolean(b),
            SchemaValue::Int(i) => Value::Int(i),
            SchemaValue::Double(d) => Value::Double(d),
            SchemaValue::Text(s) => Value::Text(s),
            SchemaValue::TextMap(m) => text_map(&m),
            SchemaValue::BlobMap(m) => Value::Map(
                m.into_iter()
                    .map(|(k, v)| (text(&k), Value::Blob(v)))
                    .collect(),
            ),
        };
        r.insert(name, v);
    }
    r.insert(
        "flags",
        Value::Set(t.flags().into_iter().map(text).collect()),
    );
    r.insert("id", Value::Uuid(t.id.to_be_bytes()));
    r
}

fn column_rows(t: &Table) -> Vec<VRow> {
    t.columns
        .iter()
        .map(|c| {
            let mut r = VRow::new();
            r.insert("keyspace_name", text(&t.keyspace));
            r.insert("table_name", text(&t.name));
            r.insert("column_name", text(&c.name));
            r.insert("clustering_order", text(c.clustering_order()));
            r.insert("column_name_bytes", Value::Blob(c.name.as_bytes().to_vec()));
            r.insert("kind", text(c.kind.schema_name()));
            r.insert("position", Value::Int(c.position));
            r.insert("type", text(&t.schema_type_name(c)));
            r
        })
        .collect()
}

pub fn virtual_schema_table(name: &str, schema: &Schema) -> Vec<VRow> {
    let virtual_ks = schema
        .keyspaces
        .values()
        .filter(|k| VIRTUAL_KEYSPACES.contains(&k.name.as_str()));
    let mut out = Vec::new();
    for ks in virtual_ks {
        match name {
            "keyspaces" => {
                let mut r = VRow::new();
                r.insert("keyspace_name", text(&ks.name));
                out.push(r);
            }
            "tables" => {
                for t in ks.tables.values() {
                    let mut r = VRow::new();
                    r.insert("keyspace_name", text(&t.keyspace));
                    r.insert("table_name", text(&t.name));
                    r.insert("comment", text(""));
                    out.push(r);
                }
            }
            "columns" => {
                for t in ks.tables.values() {
                    out.extend(column_rows(t));
                }
            }
            _ => {}
        }
    }
    out
}
