//! Fields of user type values: finding a field of a type by name, reading
//! one field out of a value's bytes (each field `[int length][bytes]`, -1
//! for null, missing trailing fields null), a field in a condition, and the
//! write time and ttl of one field.

use crate::error::{QueryError, Result};
use crate::rows::RowView;
use crate::select::selectors::Sel;
use bytes::Bytes;
use varve_schema::Column;
use varve_types::{codec, CqlType, Value};

/// The position and type of `field` in `ty`, the type of the selector
/// `name`, with Cassandra's errors.
pub fn field_of(name: &str, ty: &CqlType, field: &str) -> Result<(usize, CqlType)> {
    let Some(u) = ty.user_type() else {
        return Err(QueryError::Invalid(format!(
            "Invalid field selection: {name} of type {ty} is not a user type"
        )));
    };
    let i = u
        .field_index(field)
        .ok_or_else(|| QueryError::Invalid(format!("{name} of type {ty} has no field {field}")))?;
    Ok((i, u.field_types[i].clone()))
}

/// `writetime(c.f)` (`ttl: false`) or `ttl(c.f)` as a selector: its
/// selector, column name and type, with Cassandra's errors.
pub fn compile_cell_info(c: &Column, field: &str, ttl: bool) -> Result<(Sel, String, CqlType)> {
    let (fname, ty) = match ttl {
        true => ("ttl", CqlType::Int),
        false => ("writetime", CqlType::BigInt),
    };
    if c.is_primary_key() {
        return Err(QueryError::Invalid(format!(
            "Cannot use selection function {fname} on PRIMARY KEY part {}",
            c.name
        )));
    }
    let (index, _) = field_of(&c.name, &c.ty, field)?;
    let sel = Sel::FieldCell {
        column: c.clone(),
        index,
        ttl,
    };
    let name = format!("{fname}({}.{})", c.name, crate::describe::quote(field));
    Ok((sel, name, ty))
}

/// The write time (or remaining ttl) of field `index` of `column`: its own
/// cell when the column is not frozen, the column's cell when it is.
pub fn cell_info(
    view: &RowView,
    column: &Column,
    index: usize,
    ttl: bool,
    now: i32,
) -> Option<Bytes> {
    let cell = match column.ty {
        CqlType::Udt(_) => view.field_cell(column, index),
        _ => view.cell(column),
    }?;
    let v = match ttl {
        false => Value::BigInt(cell.timestamp),
        true if cell.is_expiring() => Value::Int((cell.local_deletion_time - now).max(0)),
        true => return None,
    };
    Some(Bytes::from(codec::serialize(&v)))
}

/// The type and position (as the element of a condition) of the field a
/// condition `IF c.field ...` names, with Cassandra's errors.
pub fn condition_field(col: &Column, field: Option<&str>) -> Result<(CqlType, Option<Value>)> {
    let field = field.unwrap_or_default();
    let Some(u) = col.ty.user_type() else {
        return Err(QueryError::Invalid(format!(
            "Invalid field selection: {} of type {} is not a user type",
            col.name, col.ty
        )));
    };
    let i = u.field_index(field).ok_or_else(|| {
        QueryError::Invalid(format!("Unknown field {field} for column {}", col.name))
    })?;
    let index = i32::try_from(i).unwrap_or(i32::MAX);
    Ok((
        u.field_types[i].clone(),
        Some(varve_types::Value::Int(index)),
    ))
}

/// The bytes of field `index` of an encoded value; `None` when the field
/// is null, missing, or the value is malformed.
pub fn field_bytes(value: &[u8], index: usize) -> Option<Bytes> {
    let mut rest = value;
    for i in 0..=index {
        let len = i32::from_be_bytes(rest.get(..4)?.try_into().ok()?);
        rest = &rest[4..];
        let Ok(len) = usize::try_from(len) else {
            if i == index {
                return None;
            }
            continue;
        };
        let body = rest.get(..len)?;
        if i == index {
            return Some(Bytes::copy_from_slice(body));
        }
        rest = &rest[len..];
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_read_by_position() {
        let v = Value::Tuple(vec![
            Some(Value::Int(7)),
            None,
            Some(Value::Text("x".into())),
        ]);
        let b = codec::serialize(&v);
        assert_eq!(field_bytes(&b, 0).as_deref(), Some(&[0, 0, 0, 7][..]));
        assert_eq!(field_bytes(&b, 1), None);
        assert_eq!(field_bytes(&b, 2).as_deref(), Some(&b"x"[..]));
        assert_eq!(field_bytes(&b, 3), None);
        assert_eq!(field_bytes(&b[..6], 0), None);
    }
}
