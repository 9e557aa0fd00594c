//! Writes a finished trace session into `system_traces`: one `sessions`
//! row and one `events` row per step, every cell with Cassandra's trace
//! TTL, straight into this node's storage (node-local, as every system
//! keyspace is in Varve; commitlog then memtable, like any write).

use bytes::Bytes;
use varve_schema::Table;
use varve_storage::{Cell, ClusteringKey, LivenessInfo, Partition, Row};
use varve_types::{codec, Value};

use super::schema::{EVENTS, KEYSPACE, SESSIONS};
use super::{Request, Session};
use crate::error::{QueryError, Result};
use crate::processor::Processor;

/// How long trace rows live: cassandra.yaml's `trace_type_query_ttl`
/// default (1 day).
pub const TRACE_TTL_SECONDS: i32 = 86_400;

/// What Cassandra's sessions row calls the kind of traced command.
const COMMAND_QUERY: &str = "QUERY";

/// Writes `session`'s row and its events, with `request`'s description.
pub fn store(p: &Processor, session: &Session, request: &Request) -> Result<()> {
    let schema = p.schema();
    let table = |name: &str| {
        schema
            .table(KEYSPACE, name)
            .ok_or_else(|| QueryError::Server(format!("no table {KEYSPACE}.{name}")))
    };
    let (sessions, events) = (table(SESSIONS)?, table(EVENTS)?);
    let writer = RowWriter {
        timestamp: p.next_timestamp(),
        now_seconds: varve_types::time::now_seconds() as i32,
    };
    let node = p.node();
    let id = Value::Uuid(session.id());
    let duration = session.elapsed_micros();
    let mut session_row = vec![
        ("command", Value::Text(COMMAND_QUERY.into())),
        ("coordinator", Value::Inet(node.listen_address)),
        ("coordinator_port", Value::Int(i32::from(node.listen_port))),
        ("duration", Value::Int(duration)),
        ("request", Value::Text(request.kind.into())),
        ("started_at", Value::Timestamp(session.started_at_millis())),
    ];
    if let Some(client) = session.client() {
        session_row.push(("client", Value::Inet(client)));
    }
    let parameters = request
        .parameters
        .iter()
        .map(|(k, v)| (Value::Text(k.clone()), Value::Text(v.clone())));
    session_row.push(("parameters", Value::Map(parameters.collect())));
    let mut partition = Partition::default();
    writer.add_row(sessions, &mut partition, &[], &session_row)?;
    apply(p, sessions, &id, partition)?;

    let mut partition = Partition::default();
    for e in session.events() {
        let row = [
            ("activity", Value::Text(e.activity)),
            ("source", Value::Inet(node.listen_address)),
            ("source_elapsed", Value::Int(e.elapsed_micros)),
            ("source_port", Value::Int(i32::from(node.listen_port))),
            ("thread", Value::Text(e.thread)),
        ];
        writer.add_row(events, &mut partition, &[Value::Timeuuid(e.id)], &row)?;
    }
    apply(p, events, &id, partition)
}

fn apply(p: &Processor, table: &Table, key: &Value, partition: Partition) -> Result<()> {
    let key = crate::restrictions::partition_key(&[Bytes::from(codec::serialize(key))])?;
    p.storage.engine().apply(table.id, &key, partition)?;
    Ok(())
}

/// Builds rows whose cells all carry one timestamp and the trace TTL.
struct RowWriter {
    timestamp: i64,
    now_seconds: i32,
}

impl RowWriter {
    fn cell(&self, value: Bytes) -> Cell {
        Cell::expiring(self.timestamp, TRACE_TTL_SECONDS, self.now_seconds, value)
    }

    /// Adds the row of `clustering` with `columns` (name, value) to
    /// `partition`; a map column becomes a cell per entry.
    fn add_row(
        &self,
        table: &Table,
        partition: &mut Partition,
        clustering: &[Value],
        columns: &[(&str, Value)],
    ) -> Result<()> {
        let mut row = Row {
            liveness: Some(LivenessInfo::new(
                self.timestamp,
                TRACE_TTL_SECONDS,
                self.now_seconds,
            )),
            ..Row::default()
        };
        for (name, value) in columns {
            let col = table
                .column(name)
                .ok_or_else(|| QueryError::Server(format!("no column {name} in {}", table.name)))?;
            match value {
                Value::Map(entries) if col.ty.is_multi_cell() => {
                    for (k, v) in entries {
                        let path = Bytes::from(codec::serialize(k));
                        let cell = self.cell(Bytes::from(codec::serialize(v)));
                        row.cells.insert((col.id, Some(path)), cell);
                    }
                }
                _ => {
                    let cell = self.cell(Bytes::from(codec::serialize(value)));
                    row.cells.insert((col.id, None), cell);
                }
            }
        }
        let values = clustering
            .iter()
            .map(|v| Bytes::from(codec::serialize(v)))
            .collect();
        let key = ClusteringKey::row(values, &crate::comparator::build(table));
        partition.rows.insert(key, row);
        Ok(())
    }
}
