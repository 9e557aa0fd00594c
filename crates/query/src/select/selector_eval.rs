//! Computing a compiled selector ([`Sel`]) on one row, the type it
//! produces, and CAST between native types.

use super::elements;
use super::selectors::{Agg, Sel};
use crate::error::{QueryError, Result};
use crate::functions;
use crate::rows::RowView;
use bytes::Bytes;
use varve_types::{codec, CqlType, Value};

/// Evaluates a non-aggregate selector on one row.
pub fn eval(sel: &Sel, view: &RowView, token: i64, now: i32) -> Result<Option<Bytes>> {
    Ok(match sel {
        Sel::Const(_, v) => v.clone(),
        Sel::Column(c) => view.value(c),
        Sel::WriteTime(c) if c.ty.is_multi_cell() => {
            let cells = view.element_cells(c);
            element_list(cells.iter().map(|cell| Some(Value::BigInt(cell.timestamp))))
        }
        Sel::Ttl(c) if c.ty.is_multi_cell() => {
            let cells = view.element_cells(c);
            if !cells.iter().any(|cell| cell.is_expiring()) {
                return Ok(None);
            }
            element_list(cells.iter().map(|cell| {
                cell.is_expiring()
                    .then(|| Value::Int((cell.local_deletion_time - now).max(0)))
            }))
        }
        Sel::WriteTime(c) => view
            .cell(c)
            .map(|cell| Bytes::from(codec::serialize(&Value::BigInt(cell.timestamp)))),
        Sel::Ttl(c) => view.cell(c).and_then(|cell| {
            if cell.is_expiring() {
                let left = (cell.local_deletion_time - now).max(0);
                Some(Bytes::from(codec::serialize(&Value::Int(left))))
            } else {
                None
            }
        }),
        Sel::Token => Some(Bytes::from(codec::serialize(&Value::BigInt(token)))),
        Sel::Cast { inner, ty } => {
            let Some(bytes) = eval(inner, view, token, now)? else {
                return Ok(None);
            };
            let from = type_of(inner);
            Some(Bytes::from(codec::serialize(&cast(&from, &bytes, ty)?)))
        }
        Sel::FieldCell { column, index, ttl } => {
            crate::user_types::fields::cell_info(view, column, *index, *ttl, now)
        }
        Sel::Field { inner, index, .. } => match eval(inner, view, token, now)? {
            Some(bytes) => crate::user_types::fields::field_bytes(&bytes, *index),
            None => None,
        },
        Sel::Func { name, args } => {
            let mut typed = Vec::with_capacity(args.len());
            for a in args {
                let ty = type_of(a);
                let v = match eval(a, view, token, now)? {
                    Some(b) => Some(
                        codec::deserialize(&ty, &b)
                            .map_err(|e| QueryError::Server(e.to_string()))?,
                    ),
                    None => None,
                };
                typed.push((ty, v));
            }
            let (_, v) = functions::apply(name, typed)?;
            v.map(|v| Bytes::from(codec::serialize(&v)))
        }
        Sel::Element {
            inner, coll, key, ..
        } => elements::eval_element(coll, eval(inner, view, token, now)?, key)?,
        Sel::Slice {
            inner,
            coll,
            from,
            to,
            ..
        } => elements::eval_slice(coll, eval(inner, view, token, now)?, from, to)?,
        Sel::CellInfo { kind, column, pick } => {
            elements::eval_cell_info(*kind, column, pick, view, now)?
        }
        Sel::Aggregate { .. } => {
            return Err(QueryError::Server("aggregate evaluated per row".into()))
        }
        Sel::Marker { receiver, .. } => {
            return Err(QueryError::Server(format!(
                "bind marker {receiver} of the selection was not bound"
            )))
        }
    })
}

/// A list result with possibly-null elements; `None` when it is empty.
fn element_list(items: impl Iterator<Item = Option<Value>>) -> Option<Bytes> {
    let items: Vec<Option<Value>> = items.collect();
    if items.is_empty() {
        return None;
    }
    let mut out = Vec::new();
    out.extend_from_slice(&(items.len() as i32).to_be_bytes());
    for it in items {
        match it {
            Some(v) => {
                let b = codec::serialize(&v);
                out.extend_from_slice(&(b.len() as i32).to_be_bytes());
                out.extend_from_slice(&b);
            }
            None => out.extend_from_slice(&(-1i32).to_be_bytes()),
        }
    }
    Some(Bytes::from(out))
}

/// The type a selector produces.
pub fn type_of(sel: &Sel) -> CqlType {
    match sel {
        Sel::Const(ty, _) | Sel::Marker { ty, .. } => ty.clone(),
        Sel::Column(c) => c.ty.clone(),
        Sel::WriteTime(c) if c.ty.is_multi_cell() => CqlType::List(Box::new(CqlType::BigInt)),
        Sel::Ttl(c) if c.ty.is_multi_cell() => CqlType::List(Box::new(CqlType::Int)),
        Sel::WriteTime(_) | Sel::Token => CqlType::BigInt,
        Sel::FieldCell { ttl: false, .. } => CqlType::BigInt,
        Sel::FieldCell { ttl: true, .. } => CqlType::Int,
        Sel::Ttl(_) => CqlType::Int,
        Sel::Cast { ty, .. } | Sel::Field { ty, .. } => ty.clone(),
        Sel::Element { coll, .. } => elements::element_type(coll),
        Sel::Slice { coll, .. } => coll.clone(),
        Sel::CellInfo { kind, column, pick } => elements::cell_info_type(*kind, column, pick),
        Sel::Func { name, args } => {
            let probe = args.iter().map(|a| (type_of(a), None)).collect();
            functions::apply(name, probe)
                .map(|(t, _)| t)
                .unwrap_or(CqlType::Blob)
        }
        Sel::Aggregate {
            kind: Agg::Count | Agg::CountRows,
            ..
        } => CqlType::BigInt,
        Sel::Aggregate { arg: Some(a), .. } => type_of(a),
        Sel::Aggregate { .. } => CqlType::BigInt,
    }
}

/// [`super::cast::cast`].
pub fn cast(from: &CqlType, bytes: &[u8], to: &CqlType) -> Result<Value> {
    super::cast::cast(from, bytes, to)
}
