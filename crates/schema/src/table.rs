//! Table definitions.

use crate::column::{Column, ColumnKind};
use crate::compact::Compact;
use crate::error::{Error, Result};
use crate::options::TableOptions;
use std::collections::BTreeMap;
use varve_types::CqlType;

/// A column dropped from a table: data written at or before
/// `dropped_at_micros` is ignored on read even if the column is added
/// again.
#[derive(Debug, Clone, PartialEq)]
pub struct DroppedColumn {
    pub ty: CqlType,
    pub dropped_at_micros: i64,
    pub kind: ColumnKind,
    /// The id its cells are stored under, which a column of the same name
    /// added again takes back, so that cells written after the drop show
    /// (as Cassandra, which stores cells by column name). `None` in
    /// records saved before the id was kept.
    pub id: Option<u32>,
}

#[derive(Debug, Clone)]
pub struct Table {
    pub keyspace: String,
    pub name: String,
    pub id: u128,
    /// Partition key columns by position, clustering by position, then the
    /// static and regular columns by name.
    pub columns: Vec<Column>,
    pub options: TableOptions,
    pub dropped: BTreeMap<String, DroppedColumn>,
    pub next_column_id: u32,
    /// A virtual table (system tables served from memory).
    pub is_virtual: bool,
    /// Whether the table was created `WITH COMPACT STORAGE`, and its kind.
    pub compact: Compact,
}

/// What CREATE TABLE gives: columns with their kind and clustering order.
#[derive(Debug, Clone)]
pub struct TableSpec {
    pub keyspace: String,
    pub name: String,
    pub id: u128,
    /// (name, type, is_static)
    pub columns: Vec<(String, CqlType, bool)>,
    pub partition_key: Vec<String>,
    pub clustering: Vec<(String, bool)>,
    pub options: TableOptions,
}

impl Table {
    /// Builds and validates a table as CREATE TABLE does.
    pub fn create(spec: TableSpec) -> Result<Table> {
        let mut seen = BTreeMap::new();
        for (name, ty, is_static) in &spec.columns {
            if seen
                .insert(name.clone(), (ty.clone(), *is_static))
                .is_some()
            {
                return Err(Error::Invalid(format!(
                    "Duplicate column '{name}' declaration for table {}.{}",
                    spec.keyspace, spec.name
                )));
            }
        }
        if spec.partition_key.is_empty() {
            return Err(Error::Invalid(
                "No PRIMARY KEY specifed for table (exactly one required)".into(),
            ));
        }
        let mut columns = Vec::new();
        let mut id = 0u32;
        let mut used = BTreeMap::new();
        for (pos, name) in spec.partition_key.iter().enumerate() {
            let (ty, is_static) = seen.get(name).cloned().ok_or_else(|| {
                Error::Invalid(format!(
                    "Unknown definition {name} referenced in PRIMARY KEY"
                ))
            })?;
            check_key_column(name, &ty, is_static)?;
            if used.insert(name.clone(), ()).is_some() {
                return Err(Error::Invalid(format!(
                    "Duplicate definition for {name} in PRIMARY KEY"
                )));
            }
            columns.push(Column {
                name: name.clone(),
                ty,
                kind: ColumnKind::PartitionKey,
                position: pos as i32,
                descending: false,
                id,
                hidden: false,
            });
            id += 1;
        }
        for (pos, (name, descending)) in spec.clustering.iter().enumerate() {
            let (ty, is_static) = seen.get(name).cloned().ok_or_else(|| {
                Error::Invalid(format!(
                    "Unknown definition {name} referenced in PRIMARY KEY"
                ))
            })?;
            check_key_column(name, &ty, is_static)?;
            if used.insert(name.clone(), ()).is_some() {
                return Err(Error::Invalid(format!(
                    "Duplicate definition for {name} in PRIMARY KEY"
                )));
            }
            columns.push(Column {
                name: name.clone(),
                ty,
                kind: ColumnKind::Clustering,
                position: pos as i32,
                descending: *descending,
                id,
                hidden: false,
            });
            id += 1;
        }
        for (name, (ty, is_static)) in &seen {
            if used.contains_key(name) {
                continue;
            }
            if *is_static && spec.clustering.is_empty() {
                return Err(Error::Invalid(format!(
                    "Static column {name} cannot be added to a table without clustering columns"
                )));
            }
            if matches!(ty, CqlType::Counter) {
                return Err(Error::Invalid(
                    "counter columns are not supported yet".into(),
                ));
            }
            let kind = if *is_static {
                ColumnKind::Static
            } else {
                ColumnKind::Regular
            };
            columns.push(Column {
                name: name.clone(),
                ty: ty.clone(),
                kind,
                position: -1,
                descending: false,
                id,
                hidden: false,
            });
            id += 1;
        }
        let mut table = Table {
            keyspace: spec.keyspace,
            name: spec.name,
            id: spec.id,
            columns,
            options: spec.options,
            dropped: BTreeMap::new(),
            next_column_id: id,
            is_virtual: false,
            compact: Compact::No,
        };
        table.sort_columns();
        Ok(table)
    }

    /// The column a statement names: hidden columns are not found.
    pub fn column(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|c| c.name == name && !c.hidden)
    }

    /// The column of that name, hidden or not (ALTER TABLE's checks).
    pub fn column_any(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|c| c.name == name)
    }

    /// The columns statements see (`SELECT *`, `INSERT ... JSON`): all
    /// but those COMPACT STORAGE hides.
    pub fn visible_columns(&self) -> impl Iterator<Item = &Column> {
        self.columns.iter().filter(|c| !c.hidden)
    }

    pub fn column_by_id(&self, id: u32) -> Option<&Column> {
        self.columns.iter().find(|c| c.id == id)
    }

    pub fn partition_key(&self) -> impl Iterator<Item = &Column> {
        self.columns
            .iter()
            .filter(|c| c.kind == ColumnKind::PartitionKey)
    }

    pub fn clustering(&self) -> impl Iterator<Item = &Column> {
        self.columns
            .iter()
            .filter(|c| c.kind == ColumnKind::Clustering)
    }

    pub fn regular_and_static(&self) -> impl Iterator<Item = &Column> {
        self.columns.iter().filter(|c| !c.is_primary_key())
    }

    pub fn has_static(&self) -> bool {
        self.columns.iter().any(|c| c.kind == ColumnKind::Static)
    }

    pub fn partition_key_len(&self) -> usize {
        self.partition_key().count()
    }

    pub fn clustering_len(&self) -> usize {
        self.clustering().count()
    }

    /// Adds a regular or static column (ALTER TABLE ADD).
    pub fn add_column(&mut self, name: &str, ty: CqlType, is_static: bool) -> Result<()> {
        if self.column_any(name).is_some() {
            return Err(Error::Invalid(format!(
                "Column with name '{name}' already exists"
            )));
        }
        if self.is_compact() {
            return Err(Error::Invalid(
                "Cannot add new column to a COMPACT STORAGE table".into(),
            ));
        }
        if is_static && self.clustering_len() == 0 {
            return Err(Error::Invalid(format!(
                "Static column {name} cannot be added to a table without clustering columns"
            )));
        }
        if matches!(ty, CqlType::Counter) {
            return Err(Error::Invalid(
                "counter columns are not supported yet".into(),
            ));
        }
        let kind = if is_static {
            ColumnKind::Static
        } else {
            ColumnKind::Regular
        };
        if let Some(d) = self.dropped.get(name) {
            if !value_compatible(&ty, &d.ty) {
                return Err(Error::Invalid(format!(
                    "Cannot re-add previously dropped column '{name}' of type {}, incompatible with previous type {}",
                    ty, d.ty
                )));
            }
            if d.kind != kind {
                return Err(Error::Invalid(format!(
                    "Cannot re-add previously dropped column '{name}' of kind {}, incompatible with previous kind {}",
                    kind_upper(kind),
                    kind_upper(d.kind)
                )));
            }
        }
        let id = match self.dropped.get(name).and_then(|d| d.id) {
            Some(id) => id,
            None => {
                self.next_column_id += 1;
                self.next_column_id - 1
            }
        };
        self.columns.push(Column {
            name: name.into(),
            ty,
            kind,
            position: -1,
            descending: false,
            id,
            hidden: false,
        });
        self.sort_columns();
        Ok(())
    }

    /// Drops a regular or static column (ALTER TABLE DROP).
    pub fn drop_column(&mut self, name: &str, at_micros: i64) -> Result<()> {
        let col = self.column_any(name).cloned().ok_or_else(|| {
            Error::Invalid(format!(
                "Column {name} was not found in table {}",
                self.name
            ))
        })?;
        if col.is_primary_key() {
            return Err(Error::Invalid(format!(
                "Cannot drop PRIMARY KEY column {name}"
            )));
        }
        crate::compact::check_drop(self, &col)?;
        if let CqlType::Udt(u) = &col.ty {
            return Err(Error::Invalid(format!(
                "Cannot drop non-frozen column {name} of user type {}",
                u.name
            )));
        }
        self.columns.retain(|c| c.name != name);
        self.dropped.insert(
            name.into(),
            DroppedColumn {
                // As Cassandra keeps it: user types as tuples of their
                // fields, so the record outlives the types.
                ty: crate::user_types::expand(&col.ty),
                dropped_at_micros: at_micros,
                kind: col.kind,
                id: Some(col.id),
            },
        );
        Ok(())
    }

    /// Renames a primary key column (ALTER TABLE RENAME).
    pub fn rename_column(&mut self, from: &str, to: &str) -> Result<()> {
        if self.column_any(to).is_some() {
            return Err(Error::Invalid(format!("Cannot rename column {from} to {to} in table {}; another column of that name already exist", self.name)));
        }
        let col = self
            .columns
            .iter_mut()
            .find(|c| c.name == from && !c.hidden)
            .ok_or_else(|| {
                Error::Invalid(format!(
                    "Column {from} was not found in table {}",
                    self.name
                ))
            })?;
        if !col.is_primary_key() {
            return Err(Error::Invalid(format!(
                "Cannot rename non PRIMARY KEY column {from}"
            )));
        }
        col.name = to.into();
        Ok(())
    }

    pub(crate) fn sort_columns(&mut self) {
        self.columns
            .sort_by(|a, b| (a.kind, a.position, &a.name).cmp(&(b.kind, b.position, &b.name)));
    }
}

/// Whether values written as `old` can be read as `new` (Cassandra's
/// `isValueCompatibleWith`, for the types Varve has).
fn value_compatible(new: &CqlType, old: &CqlType) -> bool {
    if new == old || matches!(new, CqlType::Blob) {
        return true;
    }
    if new.is_multi_cell() || old.is_multi_cell() {
        return false;
    }
    matches!(
        (new.unfrozen(), old.unfrozen()),
        (CqlType::Text, CqlType::Ascii)
            | (
                CqlType::Varint,
                CqlType::TinyInt | CqlType::SmallInt | CqlType::Int | CqlType::BigInt
            )
            | (CqlType::BigInt, CqlType::Timestamp)
            | (CqlType::Uuid, CqlType::Timeuuid)
    )
}

fn check_key_column(name: &str, ty: &CqlType, is_static: bool) -> Result<()> {
    if is_static {
        return Err(Error::Invalid(format!(
            "Static column {name} cannot be part of the PRIMARY KEY"
        )));
    }
    if let CqlType::Udt(u) = ty {
        return Err(Error::Invalid(format!(
            "Invalid non-frozen user-defined type \"{}.{}\" for PRIMARY KEY column '{name}'",
            u.keyspace, u.name
        )));
    }
    if ty.is_multi_cell() {
        return Err(Error::Invalid(format!(
            "Invalid non-frozen collection type {ty} for PRIMARY KEY component {name}"
        )));
    }
    match ty {
        CqlType::Counter => Err(Error::Invalid(format!(
            "counter type is not supported for PRIMARY KEY column '{name}'"
        ))),
        // A duration anywhere in the key's type, a tuple's element
        // included, as Cassandra 5.0.4 refuses it.
        t if t.references_duration() => Err(Error::Invalid(format!(
            "duration type is not supported for PRIMARY KEY column '{name}'"
        ))),
        _ => Ok(()),
    }
}

/// A column kind as Cassandra names it in messages (`STATIC`, `REGULAR`).
fn kind_upper(kind: ColumnKind) -> String {
    kind.schema_name().to_uppercase()
}

#[cfg(test)]
#[path = "table_drop_tests.rs"]
mod drop_tests;
