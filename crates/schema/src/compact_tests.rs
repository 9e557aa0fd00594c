//! The kinds of compact tables, their hidden columns and refusals.

use super::*;
use crate::options::TableOptions;

fn spec(columns: &[(&str, CqlType)], pk: &[&str], ck: &[&str]) -> TableSpec {
    TableSpec {
        keyspace: "ks".into(),
        name: "t".into(),
        id: 1,
        columns: columns
            .iter()
            .map(|(n, t)| (n.to_string(), t.clone(), false))
            .collect(),
        partition_key: pk.iter().map(|n| n.to_string()).collect(),
        clustering: ck.iter().map(|n| (n.to_string(), false)).collect(),
        options: TableOptions::default(),
    }
}

fn layout(t: &Table) -> Vec<(String, &'static str, String, bool)> {
    t.columns
        .iter()
        .map(|c| {
            (
                c.name.clone(),
                c.kind.schema_name(),
                t.schema_type_name(c),
                c.hidden,
            )
        })
        .collect()
}

fn row(
    n: &str,
    kind: &'static str,
    ty: &str,
    hidden: bool,
) -> (String, &'static str, String, bool) {
    (n.into(), kind, ty.into(), hidden)
}

#[test]
fn a_table_without_clustering_is_static_compact() {
    let t = create(spec(
        &[("k", CqlType::Int), ("v", CqlType::Int)],
        &["k"],
        &[],
    ))
    .unwrap();
    assert_eq!(t.compact, Compact::Static);
    assert!(t.flags().is_empty());
    assert_eq!(
        layout(&t),
        vec![
            row("k", "partition_key", "int", false),
            row("column1", "clustering", "text", true),
            row("v", "static", "int", false),
            row("value", "regular", "blob", true),
        ]
    );
    assert!(t.column("column1").is_none() && t.column("value").is_none());
    assert!(t.column_any("value").is_some());
    let visible: Vec<&str> = t.visible_columns().map(|c| c.name.as_str()).collect();
    assert_eq!(visible, ["k", "v"]);
}

#[test]
fn hidden_names_avoid_declared_ones() {
    let cols = [
        ("k", CqlType::Int),
        ("column1", CqlType::Int),
        ("value", CqlType::Int),
    ];
    let t = create(spec(&cols, &["k"], &[])).unwrap();
    let hidden: Vec<&str> = t
        .columns
        .iter()
        .filter(|c| c.hidden)
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(hidden, ["column2", "value1"]);
    let dense = create(spec(
        &[("k", CqlType::Int), ("value", CqlType::Int)],
        &["k"],
        &["value"],
    ))
    .unwrap();
    assert_eq!(dense.dense_value().map(|c| c.name.as_str()), Some("value1"));
}

#[test]
fn a_table_with_clustering_is_dense() {
    let cols = [
        ("k", CqlType::Int),
        ("c", CqlType::Int),
        ("v", CqlType::Int),
    ];
    let t = create(spec(&cols, &["k"], &["c"])).unwrap();
    assert_eq!((t.compact, t.flags()), (Compact::Dense, vec!["dense"]));
    assert!(t.is_dense_non_compound());
    assert_eq!(
        t.dense_value().map(|c| (c.name.as_str(), c.hidden)),
        Some(("v", false))
    );
    let cols = [
        ("k", CqlType::Int),
        ("c", CqlType::Int),
        ("d", CqlType::Int),
    ];
    let t = create(spec(&cols, &["k"], &["c", "d"])).unwrap();
    assert_eq!(t.flags(), vec!["compound", "dense"]);
    assert_eq!(
        layout(&t).last().cloned(),
        Some(row("value", "regular", "empty", true))
    );
}

#[test]
fn what_compact_storage_refuses() {
    let err = |s: TableSpec| create(s).unwrap_err().to_string();
    assert!(err(spec(&[("k", CqlType::Int)], &["k"], &[])).contains("No definition found"));
    let two = [
        ("k", CqlType::Int),
        ("c", CqlType::Int),
        ("v", CqlType::Int),
        ("w", CqlType::Int),
    ];
    assert!(err(spec(&two, &["k"], &["c"])).contains("(got: v, w)"));
    let list = [
        ("k", CqlType::Int),
        ("l", CqlType::List(Box::new(CqlType::Int))),
    ];
    assert!(err(spec(&list, &["k"], &[])).contains("Non-frozen collections"));
    let mut statics = spec(
        &[
            ("k", CqlType::Int),
            ("c", CqlType::Int),
            ("s", CqlType::Int),
        ],
        &["k"],
        &["c"],
    );
    statics.columns[2].2 = true;
    assert!(err(statics).contains("Static columns are not supported"));
}

#[test]
fn alter_refuses_new_columns_and_the_value_column() {
    let cols = [
        ("k", CqlType::Int),
        ("v", CqlType::Int),
        ("w", CqlType::Int),
    ];
    let mut t = create(spec(&cols, &["k"], &[])).unwrap();
    let add = |t: &mut Table, n: &str| {
        t.add_column(n, CqlType::Int, false)
            .unwrap_err()
            .to_string()
    };
    assert!(add(&mut t, "z").contains("Cannot add new column to a COMPACT STORAGE table"));
    assert!(add(&mut t, "value").contains("already exists"));
    assert!(t
        .drop_column("column1", 1)
        .unwrap_err()
        .to_string()
        .contains("PRIMARY KEY column"));
    assert!(t.drop_column("value", 1).is_err());
    t.drop_column("w", 1).unwrap();
    assert!(t.rename_column("value", "x").is_err());
    assert!(t.rename_column("k", "column1").is_err());
    t.rename_column("k", "kk").unwrap();
}

#[test]
fn flags_read_back_as_the_kind_they_name() {
    let of =
        |f: &[&str]| Table::compact_of_flags(&f.iter().map(|s| s.to_string()).collect::<Vec<_>>());
    assert_eq!(of(&["compound"]).unwrap(), Compact::No);
    assert_eq!(of(&[]).unwrap(), Compact::Static);
    assert_eq!(of(&["dense"]).unwrap(), Compact::Dense);
    assert_eq!(of(&["compound", "dense"]).unwrap(), Compact::Dense);
    assert!(of(&["super"]).is_err());
}
