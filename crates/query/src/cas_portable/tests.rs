use std::collections::BTreeMap;

use super::*;
use varve_schema::options::ReplicationParams;
use varve_schema::table::TableSpec;
use varve_schema::Keyspace;
use varve_storage::{Cell, ClusteringKey, Partition, Row};

const TABLE: u128 = 0x51;

fn table() -> Arc<Table> {
    let col = |n: &str, t: CqlType, is_static: bool| (n.to_string(), t, is_static);
    let text = || Box::new(CqlType::Text);
    let int = || Box::new(CqlType::Int);
    Arc::new(
        Table::create(TableSpec {
            keyspace: "ks".into(),
            name: "t".into(),
            id: TABLE,
            columns: vec![
                col("k", CqlType::Int, false),
                col("c", CqlType::Int, false),
                col("v", CqlType::Int, false),
                col("m", CqlType::Map(text(), int()), false),
                col("l", CqlType::List(int()), false),
                col("s", CqlType::Set(text()), false),
                col("st", CqlType::Int, true),
            ],
            partition_key: vec!["k".into()],
            clustering: vec![("c".into(), false)],
            options: Default::default(),
        })
        .unwrap(),
    )
}

fn schema(table: &Arc<Table>) -> Schema {
    let keyspace = Keyspace {
        name: "ks".into(),
        replication: ReplicationParams::local(),
        durable_writes: true,
        tables: BTreeMap::from([("t".to_string(), Arc::clone(table))]),
        types: BTreeMap::new(),
        is_system: false,
    };
    Schema {
        keyspaces: BTreeMap::from([("ks".to_string(), Arc::new(keyspace))]),
        ..Default::default()
    }
}

fn int(v: i32) -> Bytes {
    Bytes::copy_from_slice(&v.to_be_bytes())
}

fn cond(
    t: &Table,
    name: &str,
    element: Option<Value>,
    op: Operator,
    values: &[Option<Value>],
) -> Cond {
    Cond {
        column: t.column(name).unwrap().clone(),
        element,
        op,
        values: values.to_vec(),
    }
}

/// A batch of three checks using every kind of condition.
fn decider() -> StatementDecider {
    let t = table();
    let key = PartitionKey::new(int(5));
    let i = |v| Some(Value::Int(v));
    let text = |s: &str| Some(Value::Text(s.into()));
    let conditions = vec![
        cond(&t, "v", None, Operator::Eq, &[i(1)]),
        cond(&t, "v", None, Operator::Ne, &[None]),
        cond(&t, "v", None, Operator::Lt, &[i(9)]),
        cond(&t, "v", None, Operator::Le, &[i(9)]),
        cond(&t, "v", None, Operator::Gt, &[i(0)]),
        cond(&t, "v", None, Operator::Ge, &[i(1)]),
        cond(&t, "v", None, Operator::In, &[i(1), None, i(3)]),
        cond(&t, "m", text("a"), Operator::Eq, &[i(7)]),
        cond(&t, "l", Some(Value::Int(0)), Operator::Gt, &[i(-1)]),
        cond(&t, "s", None, Operator::Contains, &[text("x")]),
        cond(&t, "m", None, Operator::ContainsKey, &[text("a")]),
        cond(&t, "m", None, Operator::Contains, &[i(7)]),
    ];
    let check = |clustering: Option<Vec<Bytes>>, kind| CasCheck {
        table: Arc::clone(&t),
        key: key.clone(),
        clustering,
        kind,
    };
    let cmp = crate::comparator::of(&t);
    let mut update = Partition::default();
    let mut row = Row::default();
    row.cells.insert((2, None), Cell::live(1_000, int(2)));
    update
        .rows
        .insert(ClusteringKey::row(vec![int(1)], &cmp), row);
    StatementDecider {
        table: Arc::clone(&t),
        checks: vec![
            check(Some(vec![int(1)]), CasKind::Conditions(conditions)),
            check(Some(vec![int(2)]), CasKind::NotExists),
            check(
                None,
                CasKind::Conditions(vec![cond(&t, "st", None, Operator::Eq, &[None])]),
            ),
            check(Some(vec![int(3)]), CasKind::Exists),
        ],
        update,
        planned_micros: 1_000,
        is_batch: true,
    }
}

#[test]
fn a_rebuilt_decider_encodes_to_the_same_bytes_and_decides_the_same() {
    let d = decider();
    let bytes = encode(&d);
    let rebuilt = rebuild(&schema(&d.table), TABLE, &bytes).unwrap();
    assert_eq!(rebuilt.portable(), Some(bytes));
    // On an empty partition the NotExists check holds and the others do
    // not: both refuse; the update is only made when applied.
    let empty = Partition::default();
    assert_eq!(
        rebuilt.decide(&empty, 5_000).unwrap(),
        d.decide(&empty, 5_000).unwrap()
    );
}

#[test]
fn an_applied_rebuilt_decider_moves_the_update_to_the_given_timestamp() {
    let t = table();
    let mut d = decider();
    d.is_batch = false;
    d.checks = vec![CasCheck {
        table: Arc::clone(&t),
        key: PartitionKey::new(int(5)),
        clustering: Some(vec![int(1)]),
        kind: CasKind::NotExists,
    }];
    let rebuilt = rebuild(&schema(&t), TABLE, &encode(&d)).unwrap();
    let decision = rebuilt.decide(&Partition::default(), 9_000).unwrap();
    assert!(decision.applied);
    assert_eq!(decision, d.decide(&Partition::default(), 9_000).unwrap());
    let update = decision.update.unwrap();
    let row = update.rows.values().next().unwrap();
    assert_eq!(row.cells.values().next().unwrap().timestamp, 9_000);
}

#[test]
fn a_column_the_rebuilding_node_does_not_know_is_refused() {
    let d = decider();
    let bytes = encode(&d);
    // The same table without `s` (a column added elsewhere, not here yet).
    let mut spec_columns: Vec<_> = d
        .table
        .columns
        .iter()
        .filter(|c| c.name != "s")
        .map(|c| {
            (
                c.name.clone(),
                c.ty.clone(),
                c.kind == varve_schema::ColumnKind::Static,
            )
        })
        .collect();
    spec_columns.sort_by_key(|c| c.0 != "k" && c.0 != "c");
    let older = Arc::new(
        Table::create(TableSpec {
            keyspace: "ks".into(),
            name: "t".into(),
            id: TABLE,
            columns: spec_columns,
            partition_key: vec!["k".into()],
            clustering: vec![("c".into(), false)],
            options: Default::default(),
        })
        .unwrap(),
    );
    let err = rebuild(&schema(&older), TABLE, &bytes).err().unwrap();
    assert!(err.contains("unknown column s"), "{err}");
}

#[test]
fn a_statement_of_another_or_an_unknown_table_is_refused() {
    let d = decider();
    let bytes = encode(&d);
    let err = rebuild(&schema(&d.table), TABLE + 1, &bytes).err().unwrap();
    assert!(err.contains("sent for"), "{err}");
    let err = rebuild(&Schema::default(), TABLE, &bytes).err().unwrap();
    assert!(err.contains("unknown table"), "{err}");
}

/// Every cut, and every byte after the end, is refused; nothing panics.
#[test]
fn every_cut_and_trailing_byte_is_refused() {
    let d = decider();
    let bytes = encode(&d);
    let s = schema(&d.table);
    for n in 0..bytes.len() {
        assert!(rebuild(&s, TABLE, &bytes[..n]).is_err(), "cut at {n}");
    }
    let mut longer = bytes.to_vec();
    longer.push(0);
    assert!(rebuild(&s, TABLE, &longer).is_err());
    let mut other_version = bytes.to_vec();
    other_version[0] = CAS_DECIDER_VERSION + 1;
    assert!(rebuild(&s, TABLE, &other_version).is_err());
}

/// `MAX_CAS_ITEMS` values in one IN condition pass; one more is refused.
#[test]
fn a_condition_of_max_cas_items_values_passes_and_one_more_is_refused() {
    let t = table();
    let s = schema(&t);
    let with_values = |n: usize| {
        let mut d = decider();
        d.checks.truncate(1);
        d.checks[0].kind = CasKind::Conditions(vec![cond(
            &t,
            "v",
            None,
            Operator::In,
            &vec![Some(Value::Int(1)); n],
        )]);
        encode(&d)
    };
    assert!(rebuild(&s, TABLE, &with_values(MAX_CAS_ITEMS)).is_ok());
    let err = rebuild(&s, TABLE, &with_values(MAX_CAS_ITEMS + 1))
        .err()
        .unwrap();
    assert!(err.contains("at most"), "{err}");
}
