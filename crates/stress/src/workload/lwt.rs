//! The `lwt` workload: conditional writes over `--lwt-keys` keys.
//!
//! Each worker remembers the last value it saw per key. A `cas_write` on a
//! key it has not seen is `INSERT (key, 0) IF NOT EXISTS`; on a key last
//! seen holding `x` it is `UPDATE SET v = x + 1 IF v = x`. When the
//! condition fails the server returns the current value, which the worker
//! remembers for its next try. With one key and several workers most
//! attempts race and fail (`not_applied`); with many keys almost all apply.
//! A `cas_read` is a SERIAL read of the key.

use scylla::client::session::Session;
use scylla::frame::types::{Consistency, SerialConsistency};
use scylla::response::query_result::QueryResult;
use scylla::value::{CqlValue, Row};

use super::{key, run, untyped_rows, Outcome, Statements, WorkerState};
use crate::errors::ErrorKind;

/// The consistency of a SERIAL read.
pub fn serial_as_consistency(s: SerialConsistency) -> Consistency {
    match s {
        SerialConsistency::Serial => Consistency::Serial,
        SerialConsistency::LocalSerial => Consistency::LocalSerial,
    }
}

/// One conditional write on key `k`.
pub async fn cas_write(
    st: &Statements,
    session: &Session,
    k: u64,
    state: &mut WorkerState,
) -> Result<Outcome, ErrorKind> {
    let result = match state.lwt_seen.get(&k) {
        None => run(session, &st.write, (key(k), 0i64)).await?,
        Some(&x) => {
            let update = st.update_if.as_ref().ok_or(ErrorKind::Invalid)?;
            run(session, update, (x.wrapping_add(1), key(k), x)).await?
        }
    };
    let (rows, v_index) = rows_and_v_index(result)?;
    let (applied, current) = applied_and_value(&rows, v_index)?;
    match (applied, state.lwt_seen.get(&k).copied()) {
        (true, None) => {
            state.lwt_seen.insert(k, 0);
        }
        (true, Some(x)) => {
            state.lwt_seen.insert(k, x.wrapping_add(1));
        }
        (false, _) => match current {
            Some(v) => {
                state.lwt_seen.insert(k, v);
            }
            // The row exists but `v` is null (or was not returned): start
            // over with an INSERT, which will fail and not tell us more, so
            // read it instead on the next `cas_read`.
            None => {
                state.lwt_seen.remove(&k);
            }
        },
    }
    Ok(Outcome::Applied(applied))
}

/// One SERIAL read of key `k`.
pub async fn cas_read(
    st: &Statements,
    session: &Session,
    k: u64,
    state: &mut WorkerState,
) -> Result<Outcome, ErrorKind> {
    let rows = untyped_rows(run(session, &st.read, (key(k),)).await?)?;
    match rows.first().and_then(|r| r.columns.first()) {
        Some(Some(CqlValue::BigInt(v))) => {
            state.lwt_seen.insert(k, *v);
        }
        _ => {
            state.lwt_seen.remove(&k);
        }
    }
    Ok(Outcome::Done)
}

/// The rows of a conditional result and the position of its `v` column
/// (present only when the condition failed).
fn rows_and_v_index(result: QueryResult) -> Result<(Vec<Row>, Option<usize>), ErrorKind> {
    let rows = result.into_rows_result().map_err(|_| ErrorKind::Other)?;
    let v_index = rows.column_specs().get_by_name("v").map(|(i, _)| i);
    let decoded = rows.rows::<Row>().map_err(|_| ErrorKind::Other)?;
    let rows = decoded
        .collect::<Result<Vec<Row>, _>>()
        .map_err(|_| ErrorKind::Other)?;
    Ok((rows, v_index))
}

/// `[applied]` (the first column) and, when the result has a `v` column at
/// `v_index`, the current value the server returned with a failed condition.
pub fn applied_and_value(
    rows: &[Row],
    v_index: Option<usize>,
) -> Result<(bool, Option<i64>), ErrorKind> {
    let row = rows.first().ok_or(ErrorKind::Other)?;
    let applied = match row.columns.first() {
        Some(Some(CqlValue::Boolean(b))) => *b,
        _ => return Err(ErrorKind::Other),
    };
    let value = match v_index.and_then(|i| row.columns.get(i)) {
        Some(Some(CqlValue::BigInt(v))) => Some(*v),
        _ => None,
    };
    Ok((applied, value))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(cols: Vec<Option<CqlValue>>) -> Row {
        Row { columns: cols }
    }

    #[test]
    fn conditional_results_parse() {
        let applied = [row(vec![Some(CqlValue::Boolean(true))])];
        assert_eq!(applied_and_value(&applied, None), Ok((true, None)));
        let insert_failed = [row(vec![
            Some(CqlValue::Boolean(false)),
            Some(CqlValue::Blob(vec![1])),
            Some(CqlValue::BigInt(7)),
        ])];
        assert_eq!(
            applied_and_value(&insert_failed, Some(2)),
            Ok((false, Some(7)))
        );
        let update_failed = [row(vec![
            Some(CqlValue::Boolean(false)),
            Some(CqlValue::BigInt(3)),
        ])];
        assert_eq!(
            applied_and_value(&update_failed, Some(1)),
            Ok((false, Some(3)))
        );
        let null_value = [row(vec![Some(CqlValue::Boolean(false)), None])];
        assert_eq!(applied_and_value(&null_value, Some(1)), Ok((false, None)));
        assert_eq!(applied_and_value(&[], None), Err(ErrorKind::Other));
        assert_eq!(
            applied_and_value(&[row(vec![Some(CqlValue::Int(1))])], None),
            Err(ErrorKind::Other)
        );
    }
}
