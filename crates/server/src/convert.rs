//! Conversions between the protocol's messages and the query layer's API.
//! Pure functions, no I/O.

use bytes::Bytes;
use varve_protocol as proto;
use varve_query as query;

/// A protocol `[value]` as the query layer takes it.
pub fn bound_value(v: &proto::BoundValue) -> query::BoundValue {
    match v {
        proto::BoundValue::Null => query::BoundValue::Null,
        proto::BoundValue::Unset => query::BoundValue::Unset,
        proto::BoundValue::Value(b) => query::BoundValue::Value(b.clone()),
    }
}

/// The options of a QUERY or EXECUTE.
pub fn query_options(p: &proto::QueryParams) -> query::QueryOptions {
    query::QueryOptions {
        values: p.values.iter().map(bound_value).collect(),
        names: p.names.clone(),
        page_size: p.page_size,
        paging_state: p.paging_state.clone(),
        timestamp: p.default_timestamp,
        keyspace: p.keyspace.clone(),
        now_in_seconds: p.now_in_seconds,
        consistency: p.consistency.code(),
        serial_consistency: p.serial_consistency.map(proto::Consistency::code),
        started: None,
    }
}

/// The batch kind, statements and options of a BATCH.
pub fn batch(
    b: &proto::BatchRequest,
) -> (query::BatchType, Vec<query::BatchItem>, query::QueryOptions) {
    let kind = match b.kind {
        proto::request::batch_kind::LOGGED => query::BatchType::Logged,
        proto::request::batch_kind::UNLOGGED => query::BatchType::Unlogged,
        _ => query::BatchType::Counter,
    };
    let items = b
        .statements
        .iter()
        .map(|s| {
            let values = s.values.iter().map(bound_value).collect();
            match &s.query_or_id {
                proto::QueryOrId::Query(text) => query::BatchItem::Query {
                    text: text.clone(),
                    values,
                },
                proto::QueryOrId::Id(id) => query::BatchItem::Prepared {
                    id: id.clone(),
                    values,
                },
            }
        })
        .collect();
    let opts = query::QueryOptions {
        timestamp: b.default_timestamp,
        keyspace: b.keyspace.clone(),
        now_in_seconds: b.now_in_seconds,
        consistency: b.consistency.code(),
        serial_consistency: b.serial_consistency.map(proto::Consistency::code),
        ..query::QueryOptions::default()
    };
    (kind, items, opts)
}

fn column(c: &query::ColumnSpec) -> proto::ColumnSpec {
    proto::ColumnSpec {
        keyspace: c.keyspace.clone(),
        table: c.table.clone(),
        name: c.name.clone(),
        ty: c.ty.clone(),
    }
}

/// How the client wants result metadata.
#[derive(Debug, Clone, Default)]
pub struct MetadataRequest {
    /// The skip_metadata flag.
    pub skip: bool,
    /// v5 EXECUTE: the result metadata id the client holds.
    pub client_id: Option<Bytes>,
}

/// A Rows result. With v5 EXECUTE, a client whose metadata id differs
/// from the statement's current one gets full metadata and the new id
/// (METADATA_CHANGED), whatever skip_metadata says.
pub fn rows(r: query::ResultRows, meta: &MetadataRequest) -> proto::ResultBody {
    let changed = match &meta.client_id {
        Some(id) => *id != r.metadata_id,
        None => false,
    };
    // Column specs left out are not converted either.
    let skipped = meta.skip && !changed;
    let columns = match skipped {
        true => Vec::new(),
        false => r.columns.iter().map(column).collect(),
    };
    let mut metadata = proto::ResultMetadata::new(columns);
    metadata.col_count = r.columns.len();
    metadata.paging_state = r.paging_state;
    if changed {
        metadata.new_metadata_id = Some(r.metadata_id);
    }
    metadata.no_metadata = skipped;
    proto::ResultBody::Rows(proto::Rows {
        metadata,
        rows: r.rows,
    })
}

/// The protocol form of a schema change.
pub fn schema_change(sc: &query::SchemaChange) -> proto::SchemaChange {
    let change = match sc.kind {
        query::SchemaChangeKind::Created => proto::SchemaChangeType::Created,
        query::SchemaChangeKind::Updated => proto::SchemaChangeType::Updated,
        query::SchemaChangeKind::Dropped => proto::SchemaChangeType::Dropped,
    };
    let target = match &sc.target {
        query::SchemaChangeTarget::Keyspace(ks) => proto::SchemaChangeTarget::Keyspace(ks.clone()),
        query::SchemaChangeTarget::Table(ks, t) => proto::SchemaChangeTarget::Table {
            keyspace: ks.clone(),
            name: t.clone(),
        },
        query::SchemaChangeTarget::Type(ks, t) => proto::SchemaChangeTarget::Type {
            keyspace: ks.clone(),
            name: t.clone(),
        },
    };
    proto::SchemaChange { change, target }
}

/// A RESULT for an outcome, and the EVENT to broadcast for a schema change.
pub fn outcome_result(
    result: query::QueryResult,
    meta: &MetadataRequest,
) -> (proto::ResultBody, Option<proto::SchemaChange>) {
    match result {
        query::QueryResult::Void => (proto::ResultBody::Void, None),
        query::QueryResult::Rows(r) => (rows(r, meta), None),
        query::QueryResult::SetKeyspace(ks) => (proto::ResultBody::SetKeyspace(ks), None),
        query::QueryResult::SchemaChange(sc) => {
            let sc = schema_change(&sc);
            (proto::ResultBody::SchemaChange(sc.clone()), Some(sc))
        }
    }
}

/// The Prepared result; `lwt_mark`: the client negotiated ScyllaDB's LWT
/// mark, which a conditional statement then carries.
pub fn prepared(p: query::PreparedInfo, lwt_mark: bool) -> proto::ResultBody {
    let result = if p.result.is_empty() {
        proto::ResultMetadata::empty()
    } else {
        proto::ResultMetadata::new(p.result.iter().map(column).collect())
    };
    proto::ResultBody::Prepared(proto::Prepared {
        id: p.id,
        result_metadata_id: p.result_metadata_id,
        bind: proto::PreparedMetadata {
            columns: p.bind.iter().map(column).collect(),
            pk_indices: p.pk_indices,
            extra_flags: if lwt_mark && p.is_lwt {
                proto::result::metadata_flags::SCYLLA_LWT_MARK
            } else {
                0
            },
        },
        result,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use varve_types::CqlType;

    fn result_rows() -> query::ResultRows {
        query::ResultRows {
            columns: vec![query::ColumnSpec {
                keyspace: "ks".into(),
                table: "t".into(),
                name: "v".into(),
                ty: CqlType::Int,
            }]
            .into(),
            rows: vec![vec![Some(Bytes::from_static(&[0, 0, 0, 1]))]],
            paging_state: None,
            metadata_id: Bytes::from_static(b"m1"),
        }
    }

    fn metadata(body: proto::ResultBody) -> proto::ResultMetadata {
        match body {
            proto::ResultBody::Rows(r) => r.metadata,
            other => panic!("not rows: {other:?}"),
        }
    }

    #[test]
    fn metadata_id_and_skip() {
        let same = MetadataRequest {
            skip: true,
            client_id: Some(Bytes::from_static(b"m1")),
        };
        let m = metadata(rows(result_rows(), &same));
        assert!(m.no_metadata && m.new_metadata_id.is_none() && m.col_count == 1);
        assert!(m.columns.is_empty());
        // Skipped without a v5 id (v4 EXECUTE with skip_metadata).
        let v4 = MetadataRequest {
            skip: true,
            client_id: None,
        };
        let m = metadata(rows(result_rows(), &v4));
        assert!(m.no_metadata && m.col_count == 1 && m.columns.is_empty());
        let other = MetadataRequest {
            skip: true,
            client_id: Some(Bytes::from_static(b"old")),
        };
        let m = metadata(rows(result_rows(), &other));
        assert!(!m.no_metadata);
        assert_eq!(m.new_metadata_id, Some(Bytes::from_static(b"m1")));
        assert_eq!(m.columns.len(), 1);
        let m = metadata(rows(result_rows(), &MetadataRequest::default()));
        assert!(!m.no_metadata && m.new_metadata_id.is_none());
        assert_eq!((m.col_count, m.columns[0].name.as_str()), (1, "v"));
    }

    #[test]
    fn schema_change_becomes_event() {
        let sc = query::SchemaChange {
            kind: query::SchemaChangeKind::Created,
            target: query::SchemaChangeTarget::Table("ks".into(), "t".into()),
        };
        let (_, ev) = outcome_result(
            query::QueryResult::SchemaChange(sc),
            &MetadataRequest::default(),
        );
        let ev = ev.expect("event");
        assert_eq!(ev.change, proto::SchemaChangeType::Created);
        assert_eq!(
            ev.target,
            proto::SchemaChangeTarget::Table {
                keyspace: "ks".into(),
                name: "t".into()
            }
        );
    }
}
