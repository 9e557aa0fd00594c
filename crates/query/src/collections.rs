//! How assignments and deletions become cells, including the element-wise
//! operations on non-frozen lists, sets and maps.

use crate::context::Ctx;
use crate::data_path::ReadCommand;
use crate::error::{QueryError, Result};
use crate::processor::Processor;
use crate::terms::{bound_verbatim, eval, Evaluated};
use crate::user_types::cells;
use bytes::Bytes;
use varve_cql::ast::{Assignment, Term};
use varve_schema::{Column, Table};
use varve_storage::{value_slab, Cell, DeletionTime, PartitionKey, Row, Slice};
use varve_types::{codec, time, CqlType, Value};

/// Cassandra's reference time for list prepends (2010-01-01T00:00:00Z).
const PREPEND_REFERENCE_MILLIS: i64 = 1_262_304_000_000;

/// The live elements of a list column as a write read them first: (path,
/// cell) in list order.
pub type ListElements = Vec<(Bytes, Cell)>;

/// Whether assignment `a` to `col` needs the list's current elements
/// ([`current_elements`], read before [`assign`]): removing values from a
/// list, or setting an element by index.
pub fn assign_reads_list(col: &Column, a: &Assignment) -> bool {
    matches!(col.ty, CqlType::List(_))
        && matches!(a, Assignment::Remove { .. } | Assignment::SetElement { .. })
}

/// Whether deleting `element` of `col` needs the list's current elements
/// (deleting a list element by index).
pub fn delete_reads_list(col: &Column, element: Option<&Term>) -> bool {
    element.is_some() && matches!(col.ty, CqlType::List(_))
}

/// The list's elements a write read first, or an error if the caller
/// did not read them.
fn read_first<'a>(current: Option<&'a ListElements>, col: &Column) -> Result<&'a ListElements> {
    current.ok_or_else(|| {
        QueryError::Server(format!(
            "the elements of list {} were not read before the write",
            col.name
        ))
    })
}

/// Adds the cells of one assignment to `row`; `current`: the list's
/// elements when [`assign_reads_list`] says they are needed.
#[allow(clippy::too_many_arguments)]
pub fn assign(
    ctx: &Ctx<'_>,
    col: &Column,
    a: &Assignment,
    ts: i64,
    ttl: i32,
    current: Option<&ListElements>,
    row: &mut Row,
) -> Result<()> {
    let now = ctx.now_seconds;
    let ty = col.ty.clone();
    match a {
        Assignment::SetField { field, value, .. } => cells::set_field(
            ctx,
            col,
            (field, value),
            |v| Cell::expiring(ts, ttl, now, v),
            Cell::tombstone(ts, now),
            row,
        ),
        Assignment::Set { value, .. } => {
            if let Some(bytes) = bound_verbatim(ctx, value, &ty, &col.name) {
                let bytes = bytes?;
                check_value_len(bytes.len(), col)?;
                row.cells.put_reconciled(
                    (col.id, None),
                    Cell::expiring(ts, ttl, now, value_slab::copy_value(bytes)),
                );
                return Ok(());
            }
            let v = eval_write(ctx, value, col)?;
            if !ty.is_multi_cell() {
                match v {
                    Evaluated::Unset => {}
                    Evaluated::Null => {
                        row.cells
                            .put_reconciled((col.id, None), Cell::tombstone(ts, now));
                    }
                    Evaluated::Value(v) => {
                        row.cells.put_reconciled(
                            (col.id, None),
                            Cell::expiring(ts, ttl, now, Bytes::from(codec::serialize(&v))),
                        );
                    }
                }
                return Ok(());
            }
            match v {
                Evaluated::Unset => {}
                Evaluated::Null => {
                    row.complex_deletions
                        .insert(col.id, DeletionTime::new(ts, now));
                }
                Evaluated::Value(v) => {
                    row.complex_deletions
                        .insert(col.id, DeletionTime::new(ts - 1, now));
                    add_elements(col, v, ts, ttl, now, false, row)?;
                }
            }
            Ok(())
        }
        Assignment::Add { value, .. } | Assignment::Prepend { value, .. } => {
            if !ty.is_multi_cell() {
                return Err(QueryError::Invalid(format!(
                    "Invalid operation ({0} = {0} + ?) for non counter column {0}",
                    col.name
                )));
            }
            let prepend = matches!(a, Assignment::Prepend { .. });
            if prepend && !matches!(ty, CqlType::List(_)) {
                return Err(QueryError::Invalid(format!(
                    "Invalid operation ({0} = ? + {0}) for non list column {0}",
                    col.name
                )));
            }
            match eval_write(ctx, value, col)? {
                Evaluated::Value(v) => add_elements(col, v, ts, ttl, now, prepend, row),
                Evaluated::Null if prepend || matches!(ty, CqlType::List(_)) => Ok(()),
                Evaluated::Null => Err(QueryError::Invalid(format!(
                    "Invalid null value for column {}",
                    col.name
                ))),
                Evaluated::Unset => Ok(()),
            }
        }
        Assignment::Remove { value, .. } => match &ty {
            CqlType::List(_) => {
                let Evaluated::Value(Value::List(remove)) = eval_write(ctx, value, col)? else {
                    return Ok(());
                };
                let remove: Vec<Vec<u8>> = remove.iter().map(codec::serialize).collect();
                for (path, cell) in read_first(current, col)? {
                    if remove.iter().any(|r| r[..] == cell.value[..]) {
                        row.cells
                            .put_reconciled((col.id, Some(path.clone())), Cell::tombstone(ts, now));
                    }
                }
                Ok(())
            }
            CqlType::Set(_) => {
                if let Evaluated::Value(Value::Set(items)) = eval_write(ctx, value, col)? {
                    for it in items {
                        tombstone_element(row, col, &it, ts, now);
                    }
                }
                Ok(())
            }
            CqlType::Map(k, _) => {
                let keys_ty = CqlType::Set(k.clone());
                if let Evaluated::Value(Value::Set(keys)) = eval(ctx, value, &keys_ty, &col.name)? {
                    for it in keys {
                        tombstone_element(row, col, &it, ts, now);
                    }
                }
                Ok(())
            }
            _ => Err(QueryError::Invalid(format!(
                "Invalid operation ({0} = {0} - ?) for non counter column {0}",
                col.name
            ))),
        },
        Assignment::SetElement {
            key: elem_key,
            value,
            ..
        } => match &ty {
            CqlType::Map(kt, vt) => {
                let k = match eval(ctx, elem_key, kt, &col.name)? {
                    Evaluated::Value(k) => k,
                    _ => return Err(QueryError::Invalid("Invalid null value for map key".into())),
                };
                let path = Some(Bytes::from(codec::serialize(&k)));
                match eval(ctx, value, vt, &col.name)? {
                    Evaluated::Value(v) => {
                        row.cells.put_reconciled(
                            (col.id, path),
                            Cell::expiring(ts, ttl, now, Bytes::from(codec::serialize(&v))),
                        );
                    }
                    Evaluated::Null => {
                        row.cells
                            .put_reconciled((col.id, path), Cell::tombstone(ts, now));
                    }
                    Evaluated::Unset => {}
                }
                Ok(())
            }
            CqlType::List(et) => {
                let index = list_index(ctx, elem_key, &col.name)?;
                let path = element_at(read_first(current, col)?, row, col, index)?;
                match eval(ctx, value, et, &col.name)? {
                    Evaluated::Value(v) => {
                        row.cells.put_reconciled(
                            (col.id, Some(path)),
                            Cell::expiring(ts, ttl, now, Bytes::from(codec::serialize(&v))),
                        );
                    }
                    Evaluated::Null => {
                        row.cells
                            .put_reconciled((col.id, Some(path)), Cell::tombstone(ts, now));
                    }
                    Evaluated::Unset => {}
                }
                Ok(())
            }
            _ => Err(QueryError::Invalid(format!(
                "Invalid operation ({0}[?] = ?) for non list or map column {0}",
                col.name
            ))),
        },
    }
}

/// Deletes one element of a set or map: a tombstone at its path.
fn tombstone_element(row: &mut Row, col: &Column, element: &Value, ts: i64, now: i32) {
    row.cells.put_reconciled(
        (col.id, Some(Bytes::from(codec::serialize(element)))),
        Cell::tombstone(ts, now),
    );
}

/// Adds the cells of one DELETE target to `row`; `current`: the list's
/// elements when [`delete_reads_list`] says they are needed.
pub fn delete_target(
    ctx: &Ctx<'_>,
    col: &Column,
    (element, field): (Option<&Term>, Option<&str>),
    ts: i64,
    current: Option<&ListElements>,
    row: &mut Row,
) -> Result<()> {
    let now = ctx.now_seconds;
    if let Some(field) = field {
        let path = cells::deleted_field_path(col, field)?;
        row.cells
            .put_reconciled((col.id, Some(path)), Cell::tombstone(ts, now));
        return Ok(());
    }
    let Some(elem) = element else {
        if col.ty.is_multi_cell() {
            row.complex_deletions
                .insert(col.id, DeletionTime::new(ts, now));
        } else {
            row.cells
                .put_reconciled((col.id, None), Cell::tombstone(ts, now));
        }
        return Ok(());
    };
    match &col.ty {
        CqlType::Map(kt, _) => {
            let k = match eval(ctx, elem, kt, &col.name)? {
                Evaluated::Value(k) => k,
                _ => return Err(QueryError::Invalid("Invalid null value for map key".into())),
            };
            tombstone_element(row, col, &k, ts, now);
            Ok(())
        }
        CqlType::List(_) => {
            let index = list_index(ctx, elem, &col.name)?;
            let path = element_at(read_first(current, col)?, row, col, index)?;
            row.cells
                .put_reconciled((col.id, Some(path)), Cell::tombstone(ts, now));
            Ok(())
        }
        CqlType::Set(et) => {
            let e = match eval(ctx, elem, et, &col.name)? {
                Evaluated::Value(e) => e,
                _ => {
                    return Err(QueryError::Invalid(
                        "Invalid null value for set element".into(),
                    ))
                }
            };
            tombstone_element(row, col, &e, ts, now);
            Ok(())
        }
        _ => Err(QueryError::Invalid(format!(
            "Invalid deletion operation for non collection column {}",
            col.name
        ))),
    }
}

/// The largest single value accepted in a write. It bounds the memory one
/// cell can take; a frame (16 MiB by default) already bounds it in practice.
pub const MAX_VALUE_BYTES: usize = 16 * 1024 * 1024;

/// Evaluates one value to write, bounded by [`MAX_VALUE_BYTES`].
fn eval_write(ctx: &Ctx, term: &Term, col: &Column) -> Result<Evaluated> {
    let v = eval(ctx, term, &col.ty, &col.name)?;
    if let Evaluated::Value(val) = &v {
        check_value_len(codec::serialize(val).len(), col)?;
    }
    Ok(v)
}

fn check_value_len(len: usize, col: &Column) -> Result<()> {
    if len > MAX_VALUE_BYTES {
        return Err(QueryError::Invalid(format!(
            "Value for column {} is {len} bytes, over the limit of {MAX_VALUE_BYTES}",
            col.name
        )));
    }
    Ok(())
}

/// The path of the `index`-th element of the list as this statement has
/// left it so far: elements it deleted (tombstones in `row`) no longer
/// count, so `DELETE l[0], l[0]` removes two elements, as in Cassandra.
fn element_at(current: &ListElements, row: &Row, col: &Column, index: usize) -> Result<Bytes> {
    let deleted = |path: &Bytes| {
        row.cells
            .get(&(col.id, Some(path.clone())))
            .is_some_and(|c| c.is_tombstone())
    };
    let remaining: Vec<&Bytes> = current
        .iter()
        .map(|(path, _)| path)
        .filter(|p| !deleted(p))
        .collect();
    remaining.get(index).map(|p| (*p).clone()).ok_or_else(|| {
        QueryError::Invalid(format!(
            "List index {index} out of bound, list has size {}",
            remaining.len()
        ))
    })
}

fn list_index(ctx: &Ctx, term: &Term, name: &str) -> Result<usize> {
    match eval(ctx, term, &CqlType::Int, name)? {
        Evaluated::Value(Value::Int(i)) if i >= 0 => Ok(i as usize),
        Evaluated::Value(Value::Int(i)) => {
            Err(QueryError::Invalid(format!("List index {i} out of bound")))
        }
        _ => Err(QueryError::Invalid(
            "Invalid null value for list index".into(),
        )),
    }
}

/// Writes the elements of a collection value as cells.
fn add_elements(
    col: &Column,
    v: Value,
    ts: i64,
    ttl: i32,
    now: i32,
    prepend: bool,
    row: &mut Row,
) -> Result<()> {
    match v {
        Value::List(items) => {
            let start = prepend.then(|| prepend_block(items.len()));
            for (i, item) in items.into_iter().enumerate() {
                let path = if let Some(start) = start {
                    prepend_path(start + i as u64)
                } else {
                    Bytes::copy_from_slice(&time::new_timeuuid())
                };
                row.cells.put_reconciled(
                    (col.id, Some(path)),
                    Cell::expiring(ts, ttl, now, Bytes::from(codec::serialize(&item))),
                );
            }
        }
        Value::Set(items) => {
            for item in items {
                row.cells.put_reconciled(
                    (col.id, Some(Bytes::from(codec::serialize(&item)))),
                    Cell::expiring(ts, ttl, now, Bytes::new()),
                );
            }
        }
        Value::Map(entries) => {
            for (k, v) in entries {
                row.cells.put_reconciled(
                    (col.id, Some(Bytes::from(codec::serialize(&k)))),
                    Cell::expiring(ts, ttl, now, Bytes::from(codec::serialize(&v))),
                );
            }
        }
        Value::Tuple(fields) if col.ty.is_user_type() => {
            cells::add_fields(col, fields, |v| Cell::expiring(ts, ttl, now, v), row);
        }
        other => {
            return Err(QueryError::Invalid(format!(
                "Invalid value {other:?} for collection column {}",
                col.name
            )))
        }
    }
    Ok(())
}

/// The lowest timeuuid ticks a prepend of this process has used: every
/// prepend takes ticks below it, so two prepends in the same millisecond
/// (two in one statement or one batch) never share a path and the later
/// one sorts first, as Cassandra keeps them.
static PREPEND_TICKS_LOW: std::sync::atomic::AtomicU64 =
    std::sync::atomic::AtomicU64::new(u64::MAX);

/// The first of `count` timeuuid ticks for one prepend, which sort before
/// every appended element: mirrored around the reference time, so later
/// prepends sort earlier, and below every prepend made before.
fn prepend_block(count: usize) -> u64 {
    let now = time::now_millis();
    let millis = PREPEND_REFERENCE_MILLIS - (now - PREPEND_REFERENCE_MILLIS);
    let base = time::timeuuid_for_millis(millis, time::TimeuuidBound::Min);
    next_prepend_block(time::timeuuid_ticks(&base), count as u64)
}

/// The path of a prepended element: a timeuuid of these ticks.
fn prepend_path(ticks: u64) -> Bytes {
    let seed = time::new_timeuuid();
    Bytes::copy_from_slice(&timeuuid_from_ticks(ticks, &seed))
}

/// Reserves `count` ticks below both `top` and every block handed out
/// before; returns the first.
fn next_prepend_block(top: u64, count: u64) -> u64 {
    use std::sync::atomic::Ordering;
    let mut start = 0;
    let _ = PREPEND_TICKS_LOW.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |low| {
        start = top.min(low).saturating_sub(count.max(1));
        Some(start)
    });
    start
}

fn timeuuid_from_ticks(ticks: u64, seed: &[u8; 16]) -> [u8; 16] {
    let mut u = *seed;
    let low = (ticks & 0xFFFF_FFFF) as u32;
    let mid = ((ticks >> 32) & 0xFFFF) as u16;
    let hi = (((ticks >> 48) & 0x0FFF) as u16) | 0x1000;
    u[0..4].copy_from_slice(&low.to_be_bytes());
    u[4..6].copy_from_slice(&mid.to_be_bytes());
    u[6..8].copy_from_slice(&hi.to_be_bytes());
    u
}

/// The live elements of a list column now, in list order: (path, cell).
pub async fn current_elements(
    p: &Processor,
    ctx: &Ctx<'_>,
    table: &Table,
    key: &PartitionKey,
    prefix: Option<&Vec<Bytes>>,
    col: &Column,
) -> Result<Vec<(Bytes, Cell)>> {
    let cmp = crate::comparator::build(table);
    let slices = [Slice::prefix(prefix.cloned().unwrap_or_default(), &cmp)];
    let read = ReadCommand {
        table: table.id,
        key,
        slices: &slices,
        reversed: false,
        now_seconds: ctx.now_seconds,
        row_limit: usize::MAX,
        // The write's level; a read cannot be at ANY, so ANY reads at ONE.
        consistency: match crate::consistency::level(ctx.opts.consistency)? {
            varve_types::Consistency::Any => varve_types::Consistency::One,
            cl => cl,
        },
    };
    let Some(mut live) = p.data.read(read).await?.partition else {
        return Ok(Vec::new());
    };
    if let Some(d) = crate::dropped_cells::DroppedCells::of(table) {
        d.partition(&mut live);
    }
    let row = match prefix {
        None => live.static_row,
        Some(_) => live.rows.into_values().next(),
    };
    let Some(row) = row else {
        return Ok(Vec::new());
    };
    let mut out: Vec<(Bytes, Cell)> = row
        .cells
        .into_iter()
        .filter(|((c, _), _)| *c == col.id)
        .filter_map(|((_, path), cell)| path.map(|p| (p, cell)))
        .collect();
    out.sort_by(|a, b| varve_types::compare::compare(&CqlType::Timeuuid, &a.0, &b.0));
    Ok(out)
}

#[cfg(test)]
mod prepend_tests {
    use super::*;

    #[test]
    fn prepends_in_one_millisecond_never_share_a_path_and_later_ones_sort_first() {
        let first = prepend_block(2);
        let second = prepend_block(1);
        let third = prepend_block(3);
        assert!(second < first, "{second} then {first}");
        assert!(third + 3 <= second, "{third} then {second}");
        let a = prepend_path(first);
        let b = prepend_path(second);
        assert_ne!(a, b);
        let ord = varve_types::compare::compare(&CqlType::Timeuuid, &b, &a);
        assert_eq!(ord, std::cmp::Ordering::Less, "a later prepend sorts first");
    }
}
