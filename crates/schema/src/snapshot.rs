//! The schema as a file: user keyspaces and tables written as JSON so a
//! node finds its schema again after a restart. The format is specified in
//! docs/format/schema-file.md; system keyspaces are never written (they are
//! built in).

use crate::access::Access;
use crate::column::{Column, ColumnKind};
use crate::error::{Error, Result};
use crate::keyspace::Keyspace;
use crate::options::{ReplicationContext, ReplicationParams, SchemaValue, TableOptions};
use crate::table::{DroppedColumn, Table};
use crate::Schema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;
use varve_types::{CqlType, UserType};

/// Version of the schema file format.
pub const SCHEMA_FILE_VERSION: u32 = 1;

#[derive(Serialize, Deserialize)]
struct FileV1 {
    version: u32,
    schema_version: String,
    keyspaces: Vec<KeyspaceV1>,
    /// Roles and permissions; absent when there are none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    access: Option<crate::access_json::AccessV1>,
}

#[derive(Serialize, Deserialize)]
struct KeyspaceV1 {
    name: String,
    replication: BTreeMap<String, String>,
    durable_writes: bool,
    tables: Vec<TableV1>,
    /// User types, each after the types it uses; absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    types: Vec<TypeV1>,
}

#[derive(Serialize, Deserialize)]
struct TypeV1 {
    name: String,
    field_names: Vec<String>,
    /// As [`CqlType::cql_name`] prints them.
    field_types: Vec<String>,
}

#[derive(Serialize, Deserialize)]
struct TableV1 {
    name: String,
    id: String,
    columns: Vec<ColumnV1>,
    dropped: Vec<DroppedV1>,
    next_column_id: u32,
    options: BTreeMap<String, OptionV1>,
    /// `system_schema.tables.flags` of a COMPACT STORAGE table; absent for
    /// a CQL table (flags {'compound'}), as in files written before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    flags: Option<Vec<String>>,
}

#[derive(Serialize, Deserialize)]
struct ColumnV1 {
    name: String,
    #[serde(rename = "type")]
    ty: String,
    kind: String,
    position: i32,
    descending: bool,
    id: u32,
    /// A column COMPACT STORAGE added; absent (false) otherwise.
    #[serde(default, skip_serializing_if = "is_false")]
    hidden: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

#[derive(Serialize, Deserialize)]
struct DroppedV1 {
    name: String,
    #[serde(rename = "type")]
    ty: String,
    kind: String,
    dropped_at_micros: i64,
    /// The column's id when it was dropped; absent in files written before
    /// it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    id: Option<u32>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum OptionV1 {
    Boolean(bool),
    Int(i32),
    Double(f64),
    Text(String),
    TextMap(BTreeMap<String, String>),
    BlobMap(BTreeMap<String, Vec<u8>>),
}

fn kind_name(k: ColumnKind) -> &'static str {
    k.schema_name()
}

fn kind_of(s: &str) -> Result<ColumnKind> {
    Ok(match s {
        "partition_key" => ColumnKind::PartitionKey,
        "clustering" => ColumnKind::Clustering,
        "static" => ColumnKind::Static,
        "regular" => ColumnKind::Regular,
        other => return Err(bad(format!("unknown column kind {other}"))),
    })
}

fn bad(msg: String) -> Error {
    Error::Config(format!("invalid schema file: {msg}"))
}

fn ty_of(s: &str, types: &BTreeMap<String, Arc<UserType>>) -> Result<CqlType> {
    CqlType::parse_name_with(s, &|n| types.get(n).cloned())
        .ok_or_else(|| bad(format!("unknown type {s}")))
}

/// The keyspace's types, each after the types its fields use.
fn types_in_order(k: &Keyspace) -> Vec<TypeV1> {
    let mut out: Vec<TypeV1> = Vec::new();
    let mut done = std::collections::BTreeSet::new();
    while done.len() < k.types.len() {
        let before = done.len();
        for u in k.types.values() {
            if done.contains(&u.name) {
                continue;
            }
            let ready = k
                .types
                .values()
                .filter(|o| o.name != u.name && u.references(&k.name, &o.name))
                .all(|o| done.contains(&o.name));
            if ready {
                out.push(TypeV1 {
                    name: u.name.clone(),
                    field_names: u.field_names.clone(),
                    field_types: u.field_types.iter().map(CqlType::cql_name).collect(),
                });
                done.insert(u.name.clone());
            }
        }
        if done.len() == before {
            break; // a cycle cannot be built by CREATE TYPE
        }
    }
    out
}

/// Reads the saved types back, in their saved order.
fn read_types(keyspace: &str, saved: Vec<TypeV1>) -> Result<BTreeMap<String, Arc<UserType>>> {
    let mut types = BTreeMap::new();
    for t in saved {
        let field_types = t
            .field_types
            .iter()
            .map(|f| ty_of(f, &types))
            .collect::<Result<Vec<_>>>()?;
        let u = UserType {
            keyspace: keyspace.to_string(),
            name: t.name.clone(),
            field_names: t.field_names,
            field_types,
        };
        types.insert(t.name, Arc::new(u));
    }
    Ok(types)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex16(s: &str) -> Result<[u8; 16]> {
    let err = || bad(format!("bad id {s}"));
    if s.len() != 32 {
        return Err(err());
    }
    let mut out = [0u8; 16];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(s.get(2 * i..2 * i + 2).ok_or_else(err)?, 16).map_err(|_| err())?;
    }
    Ok(out)
}

/// The user keyspaces of `schema` as the file's JSON text.
pub fn to_json(schema: &Schema) -> String {
    let keyspaces = schema
        .keyspaces
        .values()
        .filter(|k| !k.is_system)
        .map(|k| KeyspaceV1 {
            name: k.name.clone(),
            replication: k.replication.to_map(),
            durable_writes: k.durable_writes,
            types: types_in_order(k),
            tables: k
                .tables
                .values()
                .map(|t| TableV1 {
                    name: t.name.clone(),
                    id: hex(&t.id.to_be_bytes()),
                    columns: t
                        .columns
                        .iter()
                        .map(|c| ColumnV1 {
                            name: c.name.clone(),
                            ty: c.ty.cql_name(),
                            kind: kind_name(c.kind).into(),
                            position: c.position,
                            descending: c.descending,
                            id: c.id,
                            hidden: c.hidden,
                        })
                        .collect(),
                    dropped: t
                        .dropped
                        .iter()
                        .map(|(n, d)| DroppedV1 {
                            name: n.clone(),
                            ty: d.ty.cql_name(),
                            kind: kind_name(d.kind).into(),
                            dropped_at_micros: d.dropped_at_micros,
                            id: d.id,
                        })
                        .collect(),
                    next_column_id: t.next_column_id,
                    flags: t
                        .is_compact()
                        .then(|| t.flags().into_iter().map(String::from).collect()),
                    options: t
                        .options
                        .to_schema_row()
                        .into_iter()
                        .filter_map(|(n, v)| {
                            let v = match v {
                                SchemaValue::Null => return None,
                                SchemaValue::Boolean(b) => OptionV1::Boolean(b),
                                SchemaValue::Int(i) => OptionV1::Int(i),
                                SchemaValue::Double(d) => OptionV1::Double(d),
                                SchemaValue::Text(s) => OptionV1::Text(s),
                                SchemaValue::TextMap(m) => OptionV1::TextMap(m),
                                SchemaValue::BlobMap(m) => OptionV1::BlobMap(m),
                            };
                            Some((n.to_string(), v))
                        })
                        .collect(),
                })
                .collect(),
        })
        .collect();
    let file = FileV1 {
        version: SCHEMA_FILE_VERSION,
        schema_version: hex(&schema.version),
        keyspaces,
        access: crate::access_json::encode(&schema.access),
    };
    serde_json::to_string_pretty(&file).unwrap_or_default()
}

/// What a schema file holds: the user keyspaces, the schema version, and
/// the roles and permissions.
pub type Saved = (Vec<Keyspace>, [u8; 16], Access);

/// Reads a schema file back: the user keyspaces and the schema version.
pub fn from_json(text: &str) -> Result<(Vec<Keyspace>, [u8; 16])> {
    from_json_with_access(text).map(|(k, v, _)| (k, v))
}

/// Reads a schema file back: the user keyspaces, the schema version, and
/// the roles and permissions.
pub fn from_json_with_access(text: &str) -> Result<Saved> {
    let file: FileV1 = serde_json::from_str(text).map_err(|e| bad(e.to_string()))?;
    if file.version != SCHEMA_FILE_VERSION {
        return Err(bad(format!("unsupported version {}", file.version)));
    }
    let mut out = Vec::new();
    for k in file.keyspaces {
        // A saved keyspace may name any data centre: it was checked when
        // it was created, against the nodes of that time.
        let mut context = ReplicationContext::default();
        context.datacenters.extend(
            k.replication
                .keys()
                .filter(|n| !matches!(n.as_str(), "class" | "replication_factor"))
                .cloned(),
        );
        let replication = ReplicationParams::for_keyspace(&k.name, &k.replication, None, &context)?;
        let types = read_types(&k.name, k.types)?;
        let mut tables = BTreeMap::new();
        for t in k.tables {
            let mut columns = Vec::new();
            for c in t.columns {
                columns.push(Column {
                    name: c.name,
                    ty: ty_of(&c.ty, &types)?,
                    kind: kind_of(&c.kind)?,
                    position: c.position,
                    descending: c.descending,
                    id: c.id,
                    hidden: c.hidden,
                });
            }
            let mut dropped = BTreeMap::new();
            for d in t.dropped {
                dropped.insert(
                    d.name,
                    DroppedColumn {
                        ty: ty_of(&d.ty, &types)?,
                        dropped_at_micros: d.dropped_at_micros,
                        kind: kind_of(&d.kind)?,
                        id: d.id,
                    },
                );
            }
            let row: Vec<(&str, SchemaValue)> = t
                .options
                .iter()
                .map(|(n, v)| {
                    let v = match v {
                        OptionV1::Boolean(b) => SchemaValue::Boolean(*b),
                        OptionV1::Int(i) => SchemaValue::Int(*i),
                        OptionV1::Double(d) => SchemaValue::Double(*d),
                        OptionV1::Text(s) => SchemaValue::Text(s.clone()),
                        OptionV1::TextMap(m) => SchemaValue::TextMap(m.clone()),
                        OptionV1::BlobMap(m) => SchemaValue::BlobMap(m.clone()),
                    };
                    (n.as_str(), v)
                })
                .collect();
            let options = TableOptions::from_schema_row(&row)?;
            let table = Table {
                keyspace: k.name.clone(),
                name: t.name.clone(),
                id: u128::from_be_bytes(unhex16(&t.id)?),
                columns,
                options,
                dropped,
                next_column_id: t.next_column_id,
                is_virtual: false,
                compact: match &t.flags {
                    Some(flags) => {
                        Table::compact_of_flags(flags).map_err(|e| bad(e.to_string()))?
                    }
                    None => crate::compact::Compact::No,
                },
            };
            tables.insert(t.name, Arc::new(table));
        }
        out.push(Keyspace {
            name: k.name,
            replication,
            durable_writes: k.durable_writes,
            tables,
            types,
            is_system: false,
        });
    }
    let access = crate::access_json::decode(file.access)?;
    Ok((out, unhex16(&file.schema_version)?, access))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::TableSpec;

    #[test]
    fn schema_round_trips_through_json() {
        let options = TableOptions {
            gc_grace_seconds: 42,
            comment: "it's".into(),
            ..TableOptions::default()
        };
        let spec = TableSpec {
            keyspace: "ks".into(),
            name: "t".into(),
            id: 0x1234,
            columns: vec![
                ("k".into(), CqlType::Int, false),
                ("c".into(), CqlType::Text, false),
                ("s".into(), CqlType::Tuple(vec![CqlType::Int]), true),
                (
                    "m".into(),
                    CqlType::Map(Box::new(CqlType::Text), Box::new(CqlType::Int)),
                    false,
                ),
            ],
            partition_key: vec!["k".into()],
            clustering: vec![("c".into(), true)],
            options,
        };
        let mut table = Table::create(spec).unwrap();
        table.add_column("x", CqlType::Blob, false).unwrap();
        // Custom types are written as system_schema shows them, and read back.
        let lexical = CqlType::Custom(varve_types::cql_type::LEXICAL_UUID_CLASS.into());
        table.add_column("lu", lexical, false).unwrap();
        let empty = CqlType::Custom(varve_types::cql_type::EMPTY_TYPE_CLASS.into());
        table.add_column("e", empty, false).unwrap();
        table.drop_column("m", 99).unwrap();
        let mut schema = Schema::default();
        let mut tables = BTreeMap::new();
        tables.insert("t".to_string(), Arc::new(table.clone()));
        schema.keyspaces.insert(
            "ks".into(),
            Arc::new(Keyspace {
                name: "ks".into(),
                replication: ReplicationParams::simple(1),
                durable_writes: false,
                tables,
                types: BTreeMap::new(),
                is_system: false,
            }),
        );
        schema.version = [9; 16];
        let text = to_json(&schema);
        let (kss, version) = from_json(&text).unwrap();
        assert_eq!(version, [9; 16]);
        let back = &kss[0].tables["t"];
        assert_eq!(back.columns, table.columns);
        assert_eq!(back.dropped, table.dropped);
        assert!(
            back.dropped["m"].id.is_some(),
            "the dropped column's id is kept"
        );
        assert_eq!(back.next_column_id, table.next_column_id);
        // A file written before the id was kept reads as a record without one.
        let old = text.replace(
            &format!(
                ",\n              \"id\": {}",
                table.dropped["m"].id.unwrap()
            ),
            "",
        );
        assert_ne!(old, text);
        let (kss, _) = from_json(&old).unwrap();
        assert_eq!(kss[0].tables["t"].dropped["m"].id, None);
        assert_eq!(back.options.to_cql(), table.options.to_cql());
        assert!(!kss[0].durable_writes);
    }

    #[test]
    fn a_keyspace_over_any_data_centre_reads_back() {
        let options: BTreeMap<String, String> = [
            ("class", "NetworkTopologyStrategy"),
            ("dc1", "3"),
            ("east", "2"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let context = ReplicationContext {
            datacenters: vec!["dc1".into(), "east".into()],
            ..ReplicationContext::default()
        };
        let replication = ReplicationParams::for_keyspace("ks", &options, None, &context).unwrap();
        let mut schema = Schema::default();
        schema.keyspaces.insert(
            "ks".into(),
            Arc::new(Keyspace {
                name: "ks".into(),
                replication,
                durable_writes: true,
                tables: BTreeMap::new(),
                types: BTreeMap::new(),
                is_system: false,
            }),
        );
        // Read back on a node that knows neither data centre.
        let (kss, _) = from_json(&to_json(&schema)).unwrap();
        let r = &kss[0].replication;
        assert_eq!(
            (r.replication_factor("dc1"), r.replication_factor("east")),
            (3, 2)
        );
    }

    #[test]
    fn user_types_round_trip_through_json() {
        let mut ks = crate::user_types::tests_support::keyspace();
        ks.types.insert(
            "Zed".into(),
            Arc::new(UserType {
                keyspace: "ks".into(),
                name: "Zed".into(),
                field_names: vec!["a b".into()],
                field_types: vec![CqlType::Int],
            }),
        );
        let mut schema = Schema::default();
        schema.keyspaces.insert("ks".into(), Arc::new(ks.clone()));
        let (kss, _) = from_json(&to_json(&schema)).unwrap();
        assert_eq!(kss[0].types, ks.types);
        assert_eq!(kss[0].tables["t"].columns, ks.tables["t"].columns);
    }

    #[test]
    fn compact_tables_round_trip_and_plain_ones_write_no_flags() {
        let mut ks = crate::user_types::tests_support::keyspace();
        let spec = TableSpec {
            keyspace: "ks".into(),
            name: "cs".into(),
            id: 7,
            columns: vec![
                ("k".into(), CqlType::Int, false),
                ("c".into(), CqlType::Int, false),
            ],
            partition_key: vec!["k".into()],
            clustering: vec![("c".into(), false)],
            options: TableOptions::default(),
        };
        let dense = crate::compact::create(spec).unwrap();
        ks.tables.insert("cs".into(), Arc::new(dense.clone()));
        let mut schema = Schema::default();
        schema.keyspaces.insert("ks".into(), Arc::new(ks));
        let text = to_json(&schema);
        assert_eq!(text.matches("\"flags\"").count(), 1);
        assert_eq!(text.matches("\"hidden\": true").count(), 1);
        let (kss, _) = from_json(&text).unwrap();
        let back = &kss[0].tables["cs"];
        assert_eq!(
            (back.compact, &back.columns),
            (dense.compact, &dense.columns)
        );
        assert!(!kss[0].tables["t"].is_compact());
    }

    #[test]
    fn garbage_is_an_error() {
        assert!(from_json("{").is_err());
        assert!(
            from_json("{\"version\": 99, \"schema_version\": \"\", \"keyspaces\": []}").is_err()
        );
    }
}
