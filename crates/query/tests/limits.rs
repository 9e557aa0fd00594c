//! Every limit of the query layer, at N (accepted) and N+1 (refused).

mod common;
use common::Db;
use varve_query::{BoundValue, QueryError, QueryOptions};

fn in_list(n: usize) -> String {
    (0..n).map(|i| i.to_string()).collect::<Vec<_>>().join(", ")
}

#[test]
fn in_product_limit() {
    // MAX_IN_PRODUCT = 10000 keys or clustering prefixes.
    let mut db = Db::new();
    db.ok("CREATE TABLE t (k int, c int, PRIMARY KEY (k, c))");
    // Each product on its own: the partition keys, then the clustering prefixes.
    db.ok(&format!("SELECT * FROM t WHERE k IN ({})", in_list(10_000)));
    let err = db.err(&format!("SELECT * FROM t WHERE k IN ({})", in_list(10_001)));
    assert!(
        matches!(err, QueryError::Invalid(ref m) if m.contains("10000")),
        "{err:?}"
    );
    db.ok(&format!(
        "SELECT * FROM t WHERE k = 1 AND c IN ({})",
        in_list(10_000)
    ));
    let err = db.err(&format!(
        "SELECT * FROM t WHERE k = 1 AND c IN ({})",
        in_list(10_001)
    ));
    assert!(
        matches!(err, QueryError::Invalid(ref m) if m.contains("10000")),
        "{err:?}"
    );
}

#[test]
fn name_length_limit() {
    // MAX_NAME_LENGTH = 48.
    let mut db = Db::new();
    db.ok(&format!(
        "CREATE TABLE {} (k int PRIMARY KEY)",
        "t".repeat(48)
    ));
    assert!(matches!(
        db.err(&format!(
            "CREATE TABLE {} (k int PRIMARY KEY)",
            "t".repeat(49)
        )),
        QueryError::Invalid(_)
    ));
}

#[test]
fn ttl_limit() {
    // MAX_TTL_SECONDS = 630720000 (20 years).
    let mut db = Db::new();
    db.ok("CREATE TABLE t (k int PRIMARY KEY, v int)");
    db.ok("INSERT INTO t (k, v) VALUES (1, 1) USING TTL 630720000");
    assert!(matches!(
        db.err("INSERT INTO t (k, v) VALUES (1, 1) USING TTL 630720001"),
        QueryError::Invalid(_)
    ));
}

#[test]
fn value_size_limit() {
    // MAX_VALUE_BYTES = 16 MiB per written value.
    const MAX: usize = 16 * 1024 * 1024;
    let mut db = Db::new();
    db.ok("CREATE TABLE t (k int PRIMARY KEY, v blob)");
    let insert = |db: &mut Db, len: usize| {
        let opts = QueryOptions {
            values: vec![common::int(1), BoundValue::Value(vec![7u8; len].into())],
            ..Default::default()
        };
        common::now(db.p.query(&mut db.state, "INSERT INTO t (k, v) VALUES (?, ?)", &opts))
    };
    insert(&mut db, MAX).unwrap();
    assert!(matches!(
        insert(&mut db, MAX + 1),
        Err(QueryError::Invalid(_))
    ));
}

#[test]
fn tombstone_thresholds() {
    // Warn past 1000 tombstones read, fail past 100000.
    let mut db = Db::new();
    db.ok("CREATE TABLE t (k int, c int, v int, PRIMARY KEY (k, c))");
    let delete_rows = |db: &mut Db, k: i32, n: i32| {
        let mut text = String::from("BEGIN UNLOGGED BATCH ");
        for c in 0..n {
            text.push_str(&format!("DELETE FROM t WHERE k = {k} AND c = {c}; "));
        }
        text.push_str("APPLY BATCH");
        db.ok(&text);
    };
    delete_rows(&mut db, 1, 1000);
    assert!(db.ok("SELECT * FROM t WHERE k = 1").warnings.is_empty());
    delete_rows(&mut db, 2, 1001);
    let warned = db.ok("SELECT * FROM t WHERE k = 2").warnings;
    assert!(
        warned.iter().any(|w| w.contains("1001 tombstone")),
        "{warned:?}"
    );
    for chunk in 0..100 {
        let mut text = String::from("BEGIN UNLOGGED BATCH ");
        for c in 0..1000 {
            text.push_str(&format!(
                "DELETE FROM t WHERE k = 3 AND c = {}; ",
                chunk * 1000 + c
            ));
        }
        text.push_str("APPLY BATCH");
        db.ok(&text);
    }
    db.ok("SELECT * FROM t WHERE k = 3");
    db.ok("DELETE FROM t WHERE k = 3 AND c = 100000");
    assert!(matches!(
        db.err("SELECT * FROM t WHERE k = 3"),
        QueryError::ReadFailure { .. }
    ));
}

#[test]
fn prepared_statement_cache_limit() {
    // MAX_PREPARED_STATEMENTS = 10000: all of them stay cached; the next
    // one evicts half (those answer Unprepared, and drivers re-prepare).
    let n = varve_query::processor::MAX_PREPARED_STATEMENTS;
    let mut db = Db::new();
    db.ok("CREATE TABLE t (k int PRIMARY KEY, v int)");
    let prepare = |db: &Db, i: usize| {
        db.p.prepare(&db.state, &format!("SELECT v FROM t WHERE k = {i}"), None)
            .expect("prepare")
            .id
    };
    let ids: Vec<_> = (0..n).map(|i| prepare(&db, i)).collect();
    assert_eq!(db.p.prepared_count(), n);
    let opts = QueryOptions::default();
    for id in [&ids[0], &ids[n - 1]] {
        assert!(common::now(db.p.execute(&mut db.state, id, &opts)).is_ok());
    }
    let newest = prepare(&db, n);
    assert_eq!(db.p.prepared_count(), n / 2 + 1);
    assert!(common::now(db.p.execute(&mut db.state, &newest, &opts)).is_ok());
    let still: usize = ids
        .iter()
        .filter(
            |id| match common::now(db.p.execute(&mut db.state, id, &opts)) {
                Ok(_) => true,
                Err(QueryError::Unprepared { .. }) => false,
                Err(e) => panic!("{e:?}"),
            },
        )
        .count();
    assert_eq!(still, n / 2);
}
