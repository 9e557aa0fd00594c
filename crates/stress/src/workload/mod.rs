//! The workloads: schema creation, prepared statements, and one operation
//! at a time. [`Statements::execute`] runs an operation for a key index and
//! reports its [`Outcome`] or the [`ErrorKind`] it failed with.

pub mod lwt;
pub mod schema;

use std::collections::HashMap;

use rand::rngs::StdRng;
use scylla::client::session::Session;
use scylla::response::query_result::QueryResult;
use scylla::statement::prepared::PreparedStatement;
use scylla::value::{CqlValue, Row};

use crate::config::{StressConfig, Workload};
use crate::error::{Result, StressError};
use crate::errors::{classify, ErrorKind};
use crate::spec::Op;
use crate::values::{column_value, fill, key, mix64};

/// Rows per partition of `largeblob` (as the lab's latte workload).
pub const LARGEBLOB_ROWS_PER_PARTITION: u64 = 10;
/// Bytes of each `largeblob` clustering blob.
pub const LARGEBLOB_CLUSTERING_BYTES: usize = 16;
/// The write generation whose values `write` writes and `--verify` expects.
pub const GENERATION: u64 = 0;

/// What an operation did, beyond succeeding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Done,
    /// A conditional write: applied or not.
    Applied(bool),
    /// A verified read: the row matched or not.
    Verified(bool),
}

/// Per-worker state: its random generator and what LWT has seen.
#[derive(Debug)]
pub struct WorkerState {
    pub rng: StdRng,
    /// LWT: the last value seen per key (the expected value of the next
    /// conditional update).
    pub lwt_seen: HashMap<u64, i64>,
}

/// Prepared statements of the workload, shared by all workers.
#[derive(Debug)]
pub struct Statements {
    workload: Workload,
    column_size: usize,
    column_count: usize,
    lwt_keys: u64,
    verify: bool,
    write: PreparedStatement,
    read: PreparedStatement,
    delete: Option<PreparedStatement>,
    update_if: Option<PreparedStatement>,
}

/// Creates the keyspace and table (unless `--no-schema`) and truncates (with
/// `--truncate`).
pub async fn setup_schema(session: &Session, c: &StressConfig) -> Result<()> {
    if c.create_schema {
        let dc = crate::target::query_text(session, "SELECT data_center FROM system.local").await;
        for stmt in [
            schema::create_keyspace(c, dc.as_deref()),
            schema::create_table(c),
        ] {
            session
                .query_unpaged(stmt.as_str(), ())
                .await
                .map_err(|e| StressError::setup(stmt.clone(), e))?;
        }
        // Tables created by other clients may not be visible to every node yet.
        session
            .await_schema_agreement()
            .await
            .map_err(|e| StressError::setup("waiting for schema agreement", e))?;
    }
    if c.truncate {
        let stmt = format!("TRUNCATE {}", schema::qualified(c));
        session
            .query_unpaged(stmt.as_str(), ())
            .await
            .map_err(|e| StressError::setup(stmt.clone(), e))?;
    }
    Ok(())
}

impl Statements {
    /// Prepares the workload's statements.
    pub async fn prepare(session: &Session, c: &StressConfig) -> Result<Statements> {
        let text = schema::statements(c);
        let prepare = |cql: String| async move {
            let mut p = session
                .prepare(cql.as_str())
                .await
                .map_err(|e| StressError::setup(format!("preparing {cql}"), e))?;
            p.set_consistency(c.consistency);
            p.set_serial_consistency(Some(c.serial_consistency));
            Ok::<_, StressError>(p)
        };
        let mut read = prepare(text.read).await?;
        if c.workload == Workload::Lwt {
            read.set_consistency(lwt::serial_as_consistency(c.serial_consistency));
        }
        Ok(Statements {
            workload: c.workload,
            column_size: c.column_size,
            column_count: c.column_count,
            lwt_keys: c.lwt_keys,
            verify: c.verify,
            write: prepare(text.write).await?,
            read,
            delete: match text.delete {
                Some(t) => Some(prepare(t).await?),
                None => None,
            },
            update_if: match text.update_if {
                Some(t) => Some(prepare(t).await?),
                None => None,
            },
        })
    }

    /// Runs `op` on the key of `index`.
    pub async fn execute(
        &self,
        session: &Session,
        op: Op,
        index: u64,
        state: &mut WorkerState,
    ) -> std::result::Result<Outcome, ErrorKind> {
        match (self.workload, op) {
            (Workload::Kv, Op::Write) => {
                let mut values: Vec<Vec<u8>> = Vec::with_capacity(self.column_count + 1);
                values.push(key(index));
                values.extend(
                    (0..self.column_count)
                        .map(|c| column_value(index, c, GENERATION, self.column_size)),
                );
                run(session, &self.write, values)
                    .await
                    .map(|_| Outcome::Done)
            }
            (Workload::Kv, Op::Read) => {
                let result = run(session, &self.read, (key(index),)).await?;
                if !self.verify {
                    return Ok(Outcome::Done);
                }
                let rows = untyped_rows(result)?;
                Ok(Outcome::Verified(self.kv_row_matches(index, &rows)))
            }
            (Workload::Kv, Op::Delete) => self.delete_with(session, (key(index),)).await,
            (Workload::LargeBlob, Op::Write) => {
                let (pk, c0, c1) = largeblob_key(index);
                let value = column_value(index, 0, GENERATION, self.column_size);
                run(session, &self.write, (pk, c0, c1, value))
                    .await
                    .map(|_| Outcome::Done)
            }
            (Workload::LargeBlob, Op::Read) => run(session, &self.read, largeblob_key(index))
                .await
                .map(|_| Outcome::Done),
            (Workload::LargeBlob, Op::Delete) => {
                self.delete_with(session, largeblob_key(index)).await
            }
            (Workload::TimeSeries, Op::Write) => {
                let ts = now_micros();
                let value = fill(mix64(index) ^ ts as u64, self.column_size);
                run(session, &self.write, (key(index), ts, value))
                    .await
                    .map(|_| Outcome::Done)
            }
            (Workload::TimeSeries, Op::Read) => run(session, &self.read, (key(index),))
                .await
                .map(|_| Outcome::Done),
            (Workload::Lwt, Op::CasWrite) => {
                lwt::cas_write(self, session, index % self.lwt_keys, state).await
            }
            (Workload::Lwt, Op::CasRead) => {
                lwt::cas_read(self, session, index % self.lwt_keys, state).await
            }
            // Mixes are checked against `Workload::supports` before a phase.
            _ => Err(ErrorKind::Invalid),
        }
    }

    async fn delete_with(
        &self,
        session: &Session,
        values: impl scylla::serialize::row::SerializeRow,
    ) -> std::result::Result<Outcome, ErrorKind> {
        match &self.delete {
            Some(stmt) => run(session, stmt, values).await.map(|_| Outcome::Done),
            None => Err(ErrorKind::Invalid),
        }
    }

    /// True when `rows` is exactly the row generation 0 wrote for `index`.
    fn kv_row_matches(&self, index: u64, rows: &[Row]) -> bool {
        let [row] = rows else { return false };
        row.columns.len() == self.column_count
            && row.columns.iter().enumerate().all(|(c, v)| {
                matches!(v, Some(CqlValue::Blob(b)) if *b == column_value(index, c, GENERATION, self.column_size))
            })
    }
}

/// The `largeblob` primary key of logical row `index`.
pub fn largeblob_key(index: u64) -> (String, Vec<u8>, Vec<u8>) {
    (
        format!("key_{}", index / LARGEBLOB_ROWS_PER_PARTITION),
        fill(mix64(index), LARGEBLOB_CLUSTERING_BYTES),
        fill(mix64(index ^ (1 << 40)), LARGEBLOB_CLUSTERING_BYTES),
    )
}

/// Executes a prepared statement, classifying its failure.
async fn run(
    session: &Session,
    stmt: &PreparedStatement,
    values: impl scylla::serialize::row::SerializeRow,
) -> std::result::Result<QueryResult, ErrorKind> {
    session
        .execute_unpaged(stmt, values)
        .await
        .map_err(|e| classify(&e))
}

/// The rows of a result, untyped; a malformed result is `Other`.
pub(crate) fn untyped_rows(result: QueryResult) -> std::result::Result<Vec<Row>, ErrorKind> {
    let rows = result.into_rows_result().map_err(|_| ErrorKind::Other)?;
    let decoded = rows.rows::<Row>().map_err(|_| ErrorKind::Other)?;
    decoded
        .collect::<std::result::Result<Vec<Row>, _>>()
        .map_err(|_| ErrorKind::Other)
}

/// Microseconds since the Unix epoch (0 if the clock is before it).
fn now_micros() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn largeblob_keys_group_rows_into_partitions() {
        let (p0, a0, b0) = largeblob_key(0);
        let (p9, a9, _) = largeblob_key(9);
        let (p10, _, _) = largeblob_key(10);
        assert_eq!(p0, "key_0");
        assert_eq!(p9, "key_0");
        assert_eq!(p10, "key_1");
        assert_ne!(a0, a9);
        assert_ne!(a0, b0);
        assert_eq!(a0.len(), LARGEBLOB_CLUSTERING_BYTES);
    }
}
