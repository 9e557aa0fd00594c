//! Reading column values out of resolved storage rows.

use bytes::{BufMut, Bytes, BytesMut};
use varve_schema::{Column, ColumnKind, Table};
use varve_storage::{Cell, PartitionKey, Row};
use varve_types::{compare, token, CqlType};

/// The serialized components of a partition key.
pub fn key_components(table: &Table, key: &PartitionKey) -> Vec<Bytes> {
    if table.partition_key_len() == 1 {
        return vec![key.key.clone()];
    }
    match token::split_composite(&key.key) {
        Ok(parts) => parts.into_iter().map(Bytes::from).collect(),
        Err(_) => vec![Bytes::new(); table.partition_key_len()],
    }
}

/// A row as the query layer sees it: keys plus the live row and static row.
pub struct RowView<'a> {
    pub pk: &'a [Bytes],
    /// `None` for a static-only result row (no clustering row matched).
    pub clustering: Option<&'a [Bytes]>,
    pub row: Option<&'a Row>,
    pub static_row: Option<&'a Row>,
}

impl<'a> RowView<'a> {
    /// The serialized value of `col`, or `None` for null.
    pub fn value(&self, col: &Column) -> Option<Bytes> {
        match col.kind {
            ColumnKind::PartitionKey => self.pk.get(col.position as usize).cloned(),
            ColumnKind::Clustering => self
                .clustering
                .and_then(|c| c.get(col.position as usize).cloned()),
            ColumnKind::Static => cell_value(self.static_row?, col),
            ColumnKind::Regular => cell_value(self.row?, col),
        }
    }

    /// The single cell of a non-collection column (for writetime / ttl).
    pub fn cell(&self, col: &Column) -> Option<&'a Cell> {
        let row = match col.kind {
            ColumnKind::Static => self.static_row?,
            ColumnKind::Regular => self.row?,
            _ => return None,
        };
        row.cells.get(&(col.id, None))
    }

    /// The cell of field `index` of a non-frozen user type column.
    pub fn field_cell(&self, col: &Column, index: usize) -> Option<&'a Cell> {
        let row = match col.kind {
            ColumnKind::Static => self.static_row?,
            ColumnKind::Regular => self.row?,
            _ => return None,
        };
        let path = crate::user_types::cells::field_path(index);
        row.cells.get(&(col.id, Some(path)))
    }
}

impl<'a> RowView<'a> {
    /// The element cells of a non-frozen collection, in element order.
    pub fn element_cells(&self, col: &Column) -> Vec<&'a Cell> {
        self.element_cells_with_paths(col)
            .into_iter()
            .map(|(_, c)| c)
            .collect()
    }

    /// The element cells of a non-frozen collection with their paths (a
    /// map's key, a set's element, a list's timeuuid), in element order.
    pub fn element_cells_with_paths(&self, col: &Column) -> Vec<(&'a Bytes, &'a Cell)> {
        let row = match col.kind {
            ColumnKind::Static => self.static_row,
            ColumnKind::Regular => self.row,
            _ => None,
        };
        let Some(row) = row else { return Vec::new() };
        let mut cells: Vec<(&Bytes, &Cell)> = row
            .cells
            .range((col.id, Some(Bytes::new()))..)
            .take_while(|((c, _), _)| *c == col.id)
            .filter_map(|((_, path), cell)| path.as_ref().map(|p| (p, cell)))
            .collect();
        let key_ty = element_key_type(&col.ty);
        cells.sort_by(|a, b| compare::compare(&key_ty, a.0, b.0));
        cells
    }
}

/// The type that orders a collection's cell paths.
fn element_key_type(ty: &CqlType) -> CqlType {
    match ty {
        CqlType::List(_) => CqlType::Timeuuid,
        CqlType::Set(e) => (**e).clone(),
        CqlType::Map(k, _) => (**k).clone(),
        _ => CqlType::Blob,
    }
}

fn cell_value(row: &Row, col: &Column) -> Option<Bytes> {
    if !col.ty.is_multi_cell() {
        return row.cells.get(&(col.id, None)).map(|c| c.value.clone());
    }
    let mut elements: Vec<(&Bytes, &Bytes)> = row
        .cells
        .range((col.id, Some(Bytes::new()))..)
        .take_while(|((c, _), _)| *c == col.id)
        .filter_map(|((_, path), cell)| path.as_ref().map(|p| (p, &cell.value)))
        .collect();
    if let CqlType::Udt(u) = &col.ty {
        return crate::user_types::cells::assemble(u, &elements);
    }
    if elements.is_empty() {
        return None;
    }
    let key_ty = element_key_type(&col.ty);
    elements.sort_by(|a, b| compare::compare(&key_ty, a.0, b.0));
    let mut out = BytesMut::new();
    out.put_i32(elements.len() as i32);
    for (path, value) in elements {
        match &col.ty {
            CqlType::List(_) => put_bytes(&mut out, value),
            CqlType::Set(_) => put_bytes(&mut out, path),
            _ => {
                put_bytes(&mut out, path);
                put_bytes(&mut out, value);
            }
        }
    }
    Some(out.freeze())
}

fn put_bytes(out: &mut BytesMut, b: &[u8]) {
    out.put_i32(b.len() as i32);
    out.put_slice(b);
}
