//! What writes do differently on COMPACT STORAGE tables (see
//! `varve_schema::compact` for the layout), as Cassandra 5.0.4 does it:
//!
//! - no INSERT writes a row marker, so a row lives only through its cells
//!   (the caller leaves the marker out);
//! - an INSERT into a dense table must write its value column: with a
//!   hidden value it writes the empty value that makes the row exist, with
//!   a declared one it is refused ("Column v is mandatory ...");
//! - a dense table with one clustering column refuses an empty value for
//!   it (its cells were once addressed by that value alone);
//! - `INSERT ... JSON` names every column, the hidden ones included: the
//!   hidden clustering column of a static compact table cannot be named,
//!   so it is refused, while the hidden value of a dense table is written
//!   as the JSON default (null or unset), which makes no row.

use crate::error::{QueryError, Result};
use crate::restrictions::Selection;
use varve_cql::ast::{Assignment, Literal, Term};
use varve_schema::{ColumnKind, Table};

/// An INSERT's assignments on a dense table, completed or refused: with
/// none, the hidden value gets the empty value, a declared one is
/// mandatory.
pub fn complete_insert(table: &Table, assignments: &mut Vec<Assignment>) -> Result<()> {
    let Some(value) = table.dense_value() else {
        return Ok(());
    };
    if !assignments.is_empty() {
        return Ok(());
    }
    if !value.hidden {
        return Err(QueryError::Invalid(format!(
            "Column {} is mandatory for this COMPACT STORAGE table",
            value.name
        )));
    }
    assignments.push(Assignment::Set {
        column: value.name.clone(),
        value: Term::Literal(Literal::Blob(Vec::new())),
    });
    Ok(())
}

/// A write's clustering values on a dense table with one clustering
/// column: none may be empty.
pub fn check_clustering(table: &Table, sel: &Selection) -> Result<()> {
    if !table.is_dense_non_compound() {
        return Ok(());
    }
    let empty = sel
        .clustering
        .prefixes
        .iter()
        .any(|p| p.iter().any(|v| v.is_empty()));
    if empty {
        let name = table.clustering().next().map_or("", |c| c.name.as_str());
        return Err(QueryError::Invalid(format!(
            "Invalid empty or null value for column {name}"
        )));
    }
    Ok(())
}

/// The columns an `INSERT ... JSON` names on `table`: the visible ones and
/// the hidden value of a dense table; a hidden clustering column refuses
/// the statement as Cassandra does ("Undefined column name column1").
pub fn json_columns(table: &Table) -> Result<Vec<&varve_schema::Column>> {
    if let Some(c) = table
        .columns
        .iter()
        .find(|c| c.hidden && c.kind == ColumnKind::Clustering)
    {
        return Err(QueryError::Invalid(format!(
            "Undefined column name {} in table {}.{}",
            c.name, table.keyspace, table.name
        )));
    }
    Ok(table
        .columns
        .iter()
        .filter(|c| !c.hidden || c.kind == ColumnKind::Regular)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use varve_schema::table::TableSpec;
    use varve_types::CqlType;

    fn table(cols: &[&str], ck: &[&str]) -> Table {
        varve_schema::compact::create(TableSpec {
            keyspace: "ks".into(),
            name: "t".into(),
            id: 1,
            columns: cols
                .iter()
                .map(|n| (n.to_string(), CqlType::Int, false))
                .collect(),
            partition_key: vec!["k".into()],
            clustering: ck.iter().map(|n| (n.to_string(), false)).collect(),
            options: Default::default(),
        })
        .expect("valid compact table")
    }

    #[test]
    fn a_dense_insert_without_its_value() {
        let mut a = Vec::new();
        complete_insert(&table(&["k", "c"], &["c"]), &mut a).unwrap();
        assert!(matches!(&a[..], [Assignment::Set { column, .. }] if column == "value"));
        let err = complete_insert(&table(&["k", "c", "v"], &["c"]), &mut Vec::new());
        assert!(err
            .unwrap_err()
            .to_string()
            .contains("Column v is mandatory"));
        let mut none = Vec::new();
        complete_insert(&table(&["k", "v"], &[]), &mut none).unwrap();
        assert!(none.is_empty());
    }

    #[test]
    fn json_names_the_hidden_value_and_refuses_the_hidden_clustering() {
        let names = |t: &Table| -> Vec<String> {
            json_columns(t)
                .unwrap()
                .iter()
                .map(|c| c.name.clone())
                .collect()
        };
        assert_eq!(names(&table(&["k", "c"], &["c"])), ["k", "c", "value"]);
        let err = json_columns(&table(&["k", "v"], &[])).unwrap_err();
        assert!(err.to_string().contains("Undefined column name column1"));
    }
}
