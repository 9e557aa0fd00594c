//! Dropping a column and adding it again: the id it takes, the checks
//! Cassandra makes, and the record's id across the schema file.

use super::*;

fn table() -> Table {
    Table::create(TableSpec {
        keyspace: "ks".into(),
        name: "t".into(),
        id: 7,
        columns: vec![
            ("k".into(), CqlType::Int, false),
            ("c".into(), CqlType::Int, false),
            ("v".into(), CqlType::Int, false),
            ("s".into(), CqlType::Int, true),
        ],
        partition_key: vec!["k".into()],
        clustering: vec![("c".into(), false)],
        options: TableOptions::default(),
    })
    .unwrap()
}

#[test]
fn a_column_added_again_takes_its_old_id_back() {
    let mut t = table();
    let v = t.column("v").unwrap().id;
    let next = t.next_column_id;
    t.drop_column("v", 200).unwrap();
    assert_eq!(t.dropped["v"].id, Some(v));
    t.add_column("v", CqlType::Int, false).unwrap();
    assert_eq!(t.column("v").unwrap().id, v);
    assert_eq!(t.next_column_id, next, "no id was spent");
    assert_eq!(t.dropped["v"].dropped_at_micros, 200, "the record stays");
    t.add_column("x", CqlType::Int, false).unwrap();
    assert_eq!(t.column("x").unwrap().id, next);
}

#[test]
fn a_column_added_again_with_another_kind_or_type_is_refused() {
    let mut t = table();
    t.drop_column("v", 200).unwrap();
    t.drop_column("s", 200).unwrap();
    let e = t.add_column("v", CqlType::Int, true).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Cannot re-add previously dropped column 'v' of kind STATIC, incompatible with previous kind REGULAR"
    );
    let e = t.add_column("s", CqlType::Int, false).unwrap_err();
    assert!(e
        .to_string()
        .contains("of kind REGULAR, incompatible with previous kind STATIC"));
    let e = t.add_column("v", CqlType::Text, false).unwrap_err();
    assert!(e
        .to_string()
        .contains("of type text, incompatible with previous type int"));
    assert!(t.column("v").is_none() && t.column("s").is_none());
}

#[test]
fn a_record_saved_without_an_id_gives_a_fresh_one() {
    let mut t = table();
    let v = t.column("v").unwrap().id;
    t.drop_column("v", 200).unwrap();
    t.dropped.get_mut("v").unwrap().id = None;
    t.add_column("v", CqlType::Int, false).unwrap();
    assert_ne!(t.column("v").unwrap().id, v);
}
