//! Tables created `WITH COMPACT STORAGE`, modelled as Cassandra 5.0 keeps
//! them (docs/design/query-layer.md, "COMPACT STORAGE").
//!
//! Two kinds exist. A *static compact* table has no clustering columns: its
//! declared non-key columns become static columns, and two hidden columns
//! complete the layout Thrift once saw: a clustering column `column1`
//! (text) and a regular column `value` (blob). A *dense* table has
//! clustering columns and at most one regular column; without one, a hidden
//! regular column `value` of Cassandra's `empty` type holds the empty value
//! that makes a row exist. Hidden names avoid the declared ones (`column2`,
//! `value1`, ...).
//!
//! Neither kind writes row markers: a row exists only through its cells.
//! Hidden columns appear in system_schema.columns and nowhere else; every
//! statement that names one gets "Undefined column name".

use crate::column::{Column, ColumnKind};
use crate::error::{Error, Result};
use crate::table::{Table, TableSpec};
use varve_types::CqlType;

/// Whether a table is compact, and which kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compact {
    /// A CQL table (`flags` {'compound'}).
    #[default]
    No,
    /// No clustering columns (`flags` {}).
    Static,
    /// Clustering columns and one value column (`flags` {'dense'}, plus
    /// 'compound' with several clustering columns).
    Dense,
}

impl Table {
    pub fn is_compact(&self) -> bool {
        self.compact != Compact::No
    }

    /// A dense table with a single clustering column: Cassandra refuses
    /// an empty value for that column.
    pub fn is_dense_non_compound(&self) -> bool {
        self.compact == Compact::Dense && self.clustering_len() == 1
    }

    /// The regular column of a dense table (hidden or declared).
    pub fn dense_value(&self) -> Option<&Column> {
        match self.compact {
            Compact::Dense => self.columns.iter().find(|c| c.kind == ColumnKind::Regular),
            _ => None,
        }
    }

    /// `system_schema.tables.flags`, in the set's order.
    pub fn flags(&self) -> Vec<&'static str> {
        match self.compact {
            Compact::No => vec!["compound"],
            Compact::Static => vec![],
            Compact::Dense if self.clustering_len() > 1 => vec!["compound", "dense"],
            Compact::Dense => vec!["dense"],
        }
    }

    /// The kind a set of flags names, as the schema file stores them.
    pub fn compact_of_flags(flags: &[String]) -> Result<Compact> {
        let has = |f: &str| flags.iter().any(|x| x == f);
        if flags.iter().any(|f| f != "compound" && f != "dense") {
            return Err(Error::Config(format!("unknown table flags {flags:?}")));
        }
        Ok(match (has("dense"), has("compound")) {
            (true, _) => Compact::Dense,
            (false, true) => Compact::No,
            (false, false) => Compact::Static,
        })
    }

    /// The type system_schema.columns names for `c`: the hidden value of a
    /// dense table is Cassandra's `empty` type (stored as an empty blob).
    pub fn schema_type_name(&self, c: &Column) -> String {
        if c.hidden && self.compact == Compact::Dense {
            "empty".into()
        } else {
            c.ty.cql_name()
        }
    }
}

/// Builds a table as `CREATE TABLE ... WITH COMPACT STORAGE` does: the
/// plain table first (so key errors come as for any table), then
/// Cassandra's refusals for compact tables, then the hidden columns.
pub fn create(spec: TableSpec) -> Result<Table> {
    for (name, ty, is_static) in &spec.columns {
        let is_key =
            spec.partition_key.contains(name) || spec.clustering.iter().any(|(c, _)| c == name);
        if !is_key && ty.is_multi_cell() {
            return Err(Error::Invalid(
                "Non-frozen collections and UDTs are not supported with COMPACT STORAGE".into(),
            ));
        }
        if *is_static {
            return Err(Error::Invalid(
                "Static columns are not supported in COMPACT STORAGE tables".into(),
            ));
        }
    }
    let mut table = Table::create(spec)?;
    let regular: Vec<String> = table
        .columns
        .iter()
        .filter(|c| c.kind == ColumnKind::Regular)
        .map(|c| c.name.clone())
        .collect();
    if table.clustering_len() == 0 {
        if regular.is_empty() {
            return Err(Error::Invalid(
                "No definition found that is not part of the PRIMARY KEY".into(),
            ));
        }
        for c in table.columns.iter_mut() {
            if c.kind == ColumnKind::Regular {
                c.kind = ColumnKind::Static;
            }
        }
        let clustering = free_name(&table, "column", 1);
        push_hidden(
            &mut table,
            &clustering,
            CqlType::Text,
            ColumnKind::Clustering,
        );
        let value = free_name(&table, "value", 0);
        push_hidden(&mut table, &value, CqlType::Blob, ColumnKind::Regular);
        table.compact = Compact::Static;
    } else {
        if regular.len() > 1 {
            return Err(Error::Invalid(format!(
                "COMPACT STORAGE with composite PRIMARY KEY allows no more than one column not part of the PRIMARY KEY (got: {})",
                regular.join(", ")
            )));
        }
        if regular.is_empty() {
            let value = free_name(&table, "value", 0);
            push_hidden(&mut table, &value, CqlType::Blob, ColumnKind::Regular);
        }
        table.compact = Compact::Dense;
    }
    table.sort_columns();
    Ok(table)
}

/// `base` followed by the first number from `first` (0: no number) that no
/// column of the table has.
fn free_name(table: &Table, base: &str, first: u32) -> String {
    (first..)
        .map(|i| match i {
            0 => base.to_string(),
            i => format!("{base}{i}"),
        })
        .find(|n| table.column_any(n).is_none())
        .unwrap_or_else(|| base.to_string())
}

fn push_hidden(table: &mut Table, name: &str, ty: CqlType, kind: ColumnKind) {
    table.columns.push(Column {
        name: name.to_string(),
        ty,
        kind,
        position: if kind == ColumnKind::Clustering {
            0
        } else {
            -1
        },
        descending: false,
        id: table.next_column_id,
        hidden: true,
    });
    table.next_column_id += 1;
}

/// ALTER TABLE DROP on a compact table: the value column of a dense table
/// and the hidden value of a static one hold every row, so they stay
/// (Cassandra 5.0.4 fails such a drop with an internal AssertionError).
pub(crate) fn check_drop(table: &Table, col: &Column) -> Result<()> {
    if table.is_compact() && col.kind == ColumnKind::Regular {
        return Err(Error::Invalid(format!(
            "Cannot drop column {} of COMPACT STORAGE table {}",
            col.name, table.name
        )));
    }
    Ok(())
}

#[cfg(test)]
#[path = "compact_tests.rs"]
mod tests;
