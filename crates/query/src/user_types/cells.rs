//! Non-frozen user types in storage: like a non-frozen collection, the
//! column is a complex cell, one cell per non-null field, with the field's
//! position as the cell path (a 2-byte big-endian number, as Cassandra
//! keys them). Writing the whole value puts a complex deletion just below
//! the write's timestamp, so fields absent from the new value disappear;
//! `SET c.f = v` writes one cell; `DELETE c.f` is a tombstone at its path.

use crate::context::Ctx;
use crate::error::{QueryError, Result};
use crate::terms::{eval, Evaluated};
use bytes::{BufMut, Bytes, BytesMut};
use varve_cql::ast::Term;
use varve_schema::Column;
use varve_storage::{Cell, Row};
use varve_types::{codec, CqlType, UserType, Value};

/// Length prefix of a null field.
const NULL_FIELD: i32 = -1;

/// The cell path of field `index`.
pub fn field_path(index: usize) -> Bytes {
    let i = u16::try_from(index).unwrap_or(u16::MAX);
    Bytes::copy_from_slice(&i.to_be_bytes())
}

/// The field position a cell path names.
fn path_index(path: &[u8]) -> Option<usize> {
    Some(usize::from(u16::from_be_bytes(path.try_into().ok()?)))
}

/// The cells of a whole value (`fields`, each `None` for null).
pub fn add_fields(
    col: &Column,
    fields: Vec<Option<Value>>,
    cell: impl Fn(Bytes) -> Cell,
    row: &mut Row,
) {
    for (i, f) in fields.into_iter().enumerate() {
        if let Some(v) = f {
            let value = Bytes::from(codec::serialize(&v));
            row.cells
                .put_reconciled((col.id, Some(field_path(i))), cell(value));
        }
    }
}

/// The text of a term in an error message.
fn term_text(term: &Term) -> String {
    match term {
        Term::Literal(lit) => crate::select::selectors::literal_text(lit),
        Term::Bind(_) => "?".into(),
        _ => "...".into(),
    }
}

/// The user type of `col` and the position of `field`, for `SET c.f = v`,
/// with Cassandra's errors.
fn settable_field<'c>(col: &'c Column, field: &str, value: &Term) -> Result<(&'c UserType, usize)> {
    let op = || format!("{}.{field} = {}", col.name, term_text(value));
    let u = match &col.ty {
        CqlType::Udt(u) => u,
        CqlType::Frozen(inner) if inner.is_user_type() => {
            return Err(QueryError::Invalid(format!(
                "Invalid operation ({}) for frozen UDT column {}",
                op(),
                col.name
            )))
        }
        _ => {
            return Err(QueryError::Invalid(format!(
                "Invalid operation ({}) for non-UDT column {}",
                op(),
                col.name
            )))
        }
    };
    let i = u.field_index(field).ok_or_else(|| {
        QueryError::Invalid(format!(
            "UDT column {} does not have a field named {field}",
            col.name
        ))
    })?;
    Ok((u, i))
}

/// `SET c.f = v`: one field's cell (a tombstone for null).
pub fn set_field(
    ctx: &Ctx<'_>,
    col: &Column,
    (field, value): (&str, &Term),
    cell: impl Fn(Bytes) -> Cell,
    tombstone: Cell,
    row: &mut Row,
) -> Result<()> {
    let (u, i) = settable_field(col, field, value)?;
    let name = format!("{}.{field}", col.name);
    let key = (col.id, Some(field_path(i)));
    match eval(ctx, value, &u.field_types[i], &name)? {
        Evaluated::Value(v) => {
            row.cells
                .put_reconciled(key, cell(Bytes::from(codec::serialize(&v))));
        }
        Evaluated::Null => {
            row.cells.put_reconciled(key, tombstone);
        }
        Evaluated::Unset => {}
    }
    Ok(())
}

/// `DELETE c.f`: the field's path, after checking the column takes it.
pub fn deleted_field_path(col: &Column, field: &str) -> Result<Bytes> {
    let u = match &col.ty {
        CqlType::Udt(u) => u,
        t if t.is_user_type() => {
            return Err(QueryError::Invalid(format!(
                "Frozen UDT column {} does not support field deletions",
                col.name
            )))
        }
        _ => {
            return Err(QueryError::Invalid(format!(
                "Invalid field deletion on non-UDT column {}",
                col.name
            )))
        }
    };
    let i = u.field_index(field).ok_or_else(|| {
        QueryError::Invalid(format!(
            "UDT column {} does not have a field named {field}",
            col.name
        ))
    })?;
    Ok(field_path(i))
}

/// The value of a non-frozen user type from its live field cells (path,
/// value), or `None` when no field is set.
pub fn assemble(u: &UserType, cells: &[(&Bytes, &Bytes)]) -> Option<Bytes> {
    if cells.is_empty() {
        return None;
    }
    let mut fields: Vec<Option<&Bytes>> = vec![None; u.field_types.len()];
    for (path, value) in cells {
        if let Some(slot) = path_index(path).and_then(|i| fields.get_mut(i)) {
            *slot = Some(value);
        }
    }
    let mut out = BytesMut::new();
    for f in fields {
        match f {
            Some(v) => {
                out.put_i32(i32::try_from(v.len()).unwrap_or(i32::MAX));
                out.put_slice(v);
            }
            None => out.put_i32(NULL_FIELD),
        }
    }
    Some(out.freeze())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_two_byte_positions() {
        assert_eq!(&field_path(1)[..], &[0, 1]);
        assert_eq!(path_index(&field_path(300)), Some(300));
        assert_eq!(path_index(&[1]), None);
    }

    #[test]
    fn fields_assemble_in_type_order_with_nulls() {
        let u = UserType {
            keyspace: "ks".into(),
            name: "a".into(),
            field_names: vec!["x".into(), "y".into(), "z".into()],
            field_types: vec![CqlType::Int, CqlType::Int, CqlType::Int],
        };
        let (p2, v2) = (field_path(2), Bytes::from_static(&[0, 0, 0, 9]));
        let bytes = assemble(&u, &[(&p2, &v2)]).unwrap();
        let v = codec::deserialize(&CqlType::Udt(u.clone().into()), &bytes).unwrap();
        assert_eq!(v, Value::Tuple(vec![None, None, Some(Value::Int(9))]));
        assert_eq!(assemble(&u, &[]), None);
    }
}
