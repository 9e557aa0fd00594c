use super::ddl::{altered, build, check_field_count, MAX_USER_TYPE_FIELDS};
use super::*;
use std::collections::BTreeMap;
use std::sync::Arc;
use varve_cql::ast::{AlterTypeOp, CreateType, QualifiedName};
use varve_schema::options::ReplicationParams;
use varve_types::{UserType, UserTypeRef};

fn keyspace() -> Keyspace {
    let addr = UserType {
        keyspace: "ks".into(),
        name: "addr".into(),
        field_names: vec!["street".into(), "zip".into()],
        field_types: vec![CqlType::Text, CqlType::Int],
    };
    Keyspace {
        name: "ks".into(),
        replication: ReplicationParams::simple(1),
        durable_writes: true,
        tables: BTreeMap::new(),
        types: BTreeMap::from([("addr".to_string(), Arc::new(addr))]),
        is_system: false,
    }
}

fn r(ks: Option<&str>, name: &str) -> CqlType {
    CqlType::UserRef(UserTypeRef {
        keyspace: ks.map(str::to_string),
        name: name.into(),
    })
}

fn message(e: QueryError) -> String {
    match e {
        QueryError::Invalid(m) => m,
        other => panic!("not Invalid: {other:?}"),
    }
}

#[test]
fn references_resolve_inside_other_types() {
    let ks = keyspace();
    let t = CqlType::List(Box::new(CqlType::Frozen(Box::new(r(Some("ks"), "addr")))));
    let CqlType::List(inner) = resolve(&t, &ks).unwrap() else {
        panic!("not a list")
    };
    assert_eq!(inner.user_type().unwrap().name, "addr");
    assert!(names_user_type(&t));
    assert!(!names_user_type(&CqlType::Tuple(vec![CqlType::Int])));
}

#[test]
fn unknown_and_foreign_types_are_refused() {
    let ks = keyspace();
    assert_eq!(
        message(resolve(&r(None, "nope"), &ks).unwrap_err()),
        "Unknown type ks.nope"
    );
    let e = message(resolve(&r(Some("other"), "addr"), &ks).unwrap_err());
    assert!(e.starts_with("Statement on keyspace ks cannot refer to a user type in keyspace other"));
}

#[test]
fn field_count_limit_holds_at_n_and_refuses_n_plus_one() {
    assert!(check_field_count(MAX_USER_TYPE_FIELDS).is_ok());
    assert!(check_field_count(MAX_USER_TYPE_FIELDS + 1).is_err());
}

#[test]
fn create_checks_fields_as_cassandra_does() {
    let ks = keyspace();
    let create = |fields: Vec<(&str, CqlType)>| CreateType {
        name: QualifiedName {
            keyspace: None,
            name: "t".into(),
        },
        if_not_exists: false,
        fields: fields
            .into_iter()
            .map(|(n, t)| (n.to_string(), t))
            .collect(),
    };
    let err = |fields| message(build(&ks, &create(fields)).unwrap_err());
    assert_eq!(
        err(vec![("a", CqlType::Int), ("a", CqlType::Text)]),
        "Duplicate field name 'a' in type 't'"
    );
    assert_eq!(
        err(vec![("a", CqlType::Counter)]),
        "A user type cannot contain counters"
    );
    assert_eq!(
        err(vec![("a", r(None, "addr"))]),
        "A user type cannot contain non-frozen UDTs"
    );
    let ok = build(
        &ks,
        &create(vec![("a", CqlType::Frozen(Box::new(r(None, "addr"))))]),
    );
    assert_eq!(ok.unwrap().field_types[0].user_type().unwrap().name, "addr");
}

#[test]
fn alter_adds_and_renames_fields() {
    let ks = keyspace();
    let old = ks.types["addr"].clone();
    let add = |field: &str, if_not_exists| AlterTypeOp::Add {
        if_not_exists,
        field: field.into(),
        ty: CqlType::Text,
    };
    let u = altered(&ks, &old, &add("city", false)).unwrap().unwrap();
    assert_eq!(u.field_names, ["street", "zip", "city"]);
    assert!(altered(&ks, &old, &add("zip", true)).unwrap().is_none());
    assert_eq!(
        message(altered(&ks, &old, &add("zip", false)).unwrap_err()),
        "Cannot add field zip to type ks.addr: a field with name zip already exists"
    );
    let rename = |pairs: &[(&str, &str)], if_exists| AlterTypeOp::Rename {
        if_exists,
        renames: pairs
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect(),
    };
    let u = altered(&ks, &old, &rename(&[("zip", "code")], false))
        .unwrap()
        .unwrap();
    assert_eq!(u.field_names, ["street", "code"]);
    assert_eq!(
        message(altered(&ks, &old, &rename(&[("zip", "street")], false)).unwrap_err()),
        "Duplicate field name street in type ks"
    );
    assert_eq!(
        message(altered(&ks, &old, &rename(&[("x", "y")], false)).unwrap_err()),
        "Unkown field x in user type ks.addr"
    );
    assert!(altered(&ks, &old, &rename(&[("x", "y")], true)).is_ok());
    assert!(altered(&ks, &old, &AlterTypeOp::AlterField).is_err());
}

#[test]
fn describe_and_snapshots_print_the_types_a_table_uses() {
    use varve_schema::options::TableOptions;
    use varve_schema::table::{Table, TableSpec};
    let mut ks = keyspace();
    let addr = ks.types["addr"].clone();
    let spec = TableSpec {
        keyspace: "ks".into(),
        name: "t".into(),
        id: 1,
        columns: vec![
            ("k".into(), CqlType::Int, false),
            ("a".into(), CqlType::Udt(addr.clone()), false),
        ],
        partition_key: vec!["k".into()],
        clustering: vec![],
        options: TableOptions::default(),
    };
    let table = Arc::new(Table::create(spec).unwrap());
    ks.tables.insert("t".into(), table.clone());
    let mut schema = varve_schema::Schema::default();
    schema.keyspaces.insert("ks".into(), Arc::new(ks));
    assert_eq!(
        crate::describe::type_cql(&addr),
        "CREATE TYPE ks.addr (\n    street text,\n    zip int\n);"
    );
    let cql = crate::describe::snapshot_cql(&schema, &table);
    assert!(
        cql.starts_with("CREATE TYPE IF NOT EXISTS ks.addr (\n"),
        "{cql}"
    );
    assert!(
        cql.contains(");\nCREATE TABLE ks.t (\n    k int PRIMARY KEY,\n    a addr\n)"),
        "{cql}"
    );
}
