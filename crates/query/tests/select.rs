//! In-process SELECT tests: restrictions, ordering, limits and paging.

mod common;
use common::Db;
use varve_query::{QueryOptions, QueryResult};

fn pages(db: &mut Db, q: &str, size: i32) -> (Vec<Vec<String>>, usize) {
    let mut all = Vec::new();
    let mut state = None;
    let mut n = 0;
    loop {
        let opts = QueryOptions {
            page_size: Some(size),
            paging_state: state.clone(),
            ..Default::default()
        };
        let out = common::now(db.p.query(&mut db.state, q, &opts)).unwrap();
        all.extend(common::render(&out));
        n += 1;
        let QueryResult::Rows(r) = out.result else {
            panic!()
        };
        match r.paging_state {
            Some(s) => state = Some(s),
            None => return (all, n),
        }
        assert!(n < 1000, "too many pages");
    }
}

fn setup(db: &mut Db) {
    db.ok("CREATE TABLE t (k int, c int, d int, v int, s int static, PRIMARY KEY (k, c, d))");
    for k in 0..4 {
        for c in 0..3 {
            for d in 0..3 {
                db.ok(&format!(
                    "INSERT INTO t (k, c, d, v) VALUES ({k}, {c}, {d}, {})",
                    k * 100 + c * 10 + d
                ));
            }
        }
    }
}

#[test]
fn clustering_slices_and_multi_column() {
    let mut db = Db::new();
    setup(&mut db);
    let r = db.rows("SELECT v FROM t WHERE k = 1 AND c = 1 AND d > 0");
    assert_eq!(r, vec![vec!["111"], vec!["112"]]);
    let r = db.rows("SELECT v FROM t WHERE k = 1 AND (c, d) > (1, 1) AND (c, d) <= (2, 0)");
    assert_eq!(r, vec![vec!["112"], vec!["120"]]);
    let r = db.rows("SELECT v FROM t WHERE k = 1 AND c IN (0, 2) AND d = 1");
    assert_eq!(r, vec![vec!["101"], vec!["121"]]);
    let r = db.rows("SELECT v FROM t WHERE k IN (2, 1) AND c = 0 AND d = 0");
    assert_eq!(r.len(), 2);
    assert!(matches!(
        db.err("SELECT v FROM t WHERE k = 1 AND d = 1"),
        varve_query::QueryError::Invalid(_)
    ));
    assert_eq!(
        db.rows("SELECT v FROM t WHERE k = 1 AND d = 1 ALLOW FILTERING")
            .len(),
        3
    );
}

#[test]
fn order_limits_distinct_count() {
    let mut db = Db::new();
    setup(&mut db);
    let r = db.rows("SELECT v FROM t WHERE k = 3 ORDER BY c DESC, d DESC LIMIT 4");
    assert_eq!(r, vec![vec!["322"], vec!["321"], vec!["320"], vec!["312"]]);
    let r = db.rows("SELECT v FROM t WHERE k IN (1, 2) ORDER BY c DESC LIMIT 2");
    assert_eq!(r.len(), 2);
    assert!(r.iter().all(|row| row[0].contains("22")), "{r:?}");
    assert_eq!(db.rows("SELECT k FROM t PER PARTITION LIMIT 2").len(), 8);
    assert_eq!(db.rows("SELECT DISTINCT k FROM t").len(), 4);
    assert_eq!(db.rows("SELECT count(*) FROM t"), vec![vec!["36"]]);
    assert_eq!(
        db.rows("SELECT count(*), max(v), min(v), sum(v) FROM t WHERE k = 0"),
        vec![vec!["9", "22", "0", "99"]]
    );
    assert_eq!(
        db.rows("SELECT v AS value FROM t WHERE k = 0 LIMIT 1"),
        vec![vec!["0"]]
    );
}

#[test]
fn statics_show_with_rows_and_alone() {
    let mut db = Db::new();
    setup(&mut db);
    db.ok("UPDATE t SET s = 7 WHERE k = 9");
    assert_eq!(
        db.rows("SELECT k, c, s FROM t WHERE k = 9"),
        vec![vec!["9", "null", "7"]]
    );
    db.ok("UPDATE t SET s = 5 WHERE k = 0");
    let r = db.rows("SELECT s FROM t WHERE k = 0");
    assert_eq!(r.len(), 9);
    assert!(r.iter().all(|x| x[0] == "5"));
}

#[test]
fn token_ranges_cover_the_ring_once() {
    let mut db = Db::new();
    setup(&mut db);
    let all = db.rows("SELECT token(k), k FROM t");
    assert_eq!(all.len(), 36);
    let mut toks: Vec<i64> = all.iter().map(|r| r[0].parse().unwrap()).collect();
    let sorted = {
        let mut s = toks.clone();
        s.sort();
        s
    };
    assert_eq!(toks, sorted, "full scan is in token order");
    toks.dedup();
    let mid = toks[1];
    let low = db.rows(&format!("SELECT k FROM t WHERE token(k) <= {mid}"));
    let high = db.rows(&format!("SELECT k FROM t WHERE token(k) > {mid}"));
    assert_eq!(low.len() + high.len(), 36);
    assert_eq!(low.len(), 18);
}

#[test]
fn paging_forward_reversed_and_with_limits() {
    let mut db = Db::new();
    setup(&mut db);
    let full = db.rows("SELECT v FROM t");
    for size in [1, 2, 5, 9, 100] {
        let (rows, _) = pages(&mut db, "SELECT v FROM t", size);
        assert_eq!(rows, full, "page size {size}");
    }
    let rev = db.rows("SELECT v FROM t WHERE k = 2 ORDER BY c DESC, d DESC");
    let (rows, n) = pages(
        &mut db,
        "SELECT v FROM t WHERE k = 2 ORDER BY c DESC, d DESC",
        2,
    );
    assert_eq!(rows, rev);
    assert!(n >= 5);
    let (rows, _) = pages(&mut db, "SELECT v FROM t LIMIT 7", 3);
    assert_eq!(rows.len(), 7);
    let (rows, _) = pages(&mut db, "SELECT v FROM t PER PARTITION LIMIT 4", 3);
    assert_eq!(rows.len(), 16);
    let (rows, _) = pages(&mut db, "SELECT v FROM t WHERE k IN (0, 3) AND c = 1", 2);
    assert_eq!(rows.len(), 6);
    let (rows, _) = pages(&mut db, "SELECT DISTINCT k FROM t", 3);
    assert_eq!(rows.len(), 4);
}

#[test]
fn range_deletion_and_reinsert() {
    let mut db = Db::new();
    setup(&mut db);
    db.ok("DELETE FROM t WHERE k = 0 AND c = 1");
    assert_eq!(db.rows("SELECT v FROM t WHERE k = 0").len(), 6);
    db.ok("DELETE FROM t WHERE k = 0 AND c >= 2");
    assert_eq!(db.rows("SELECT v FROM t WHERE k = 0").len(), 3);
    db.ok("INSERT INTO t (k, c, d, v) VALUES (0, 1, 1, 1)");
    assert_eq!(
        db.rows("SELECT v FROM t WHERE k = 0 AND c = 1"),
        vec![vec!["1"]]
    );
    db.ok("DELETE FROM t USING TIMESTAMP 1 WHERE k = 0 AND c = 0");
    assert_eq!(
        db.rows("SELECT v FROM t WHERE k = 0 AND c = 0").len(),
        3,
        "an older deletion shadows nothing newer"
    );
}

/// CONTAINS NULL is an InvalidRequest (it panicked while filtering).
#[test]
fn contains_null_is_refused() {
    let mut db = Db::new();
    db.ok("CREATE TABLE cn (p int, c int, s set<int>, PRIMARY KEY (p, c))");
    db.ok("INSERT INTO cn (p, c, s) VALUES (0, 0, {1, 2})");
    assert!(matches!(
        db.err("SELECT * FROM cn WHERE s CONTAINS NULL ALLOW FILTERING"),
        varve_query::QueryError::Invalid(m) if m == "Unsupported null value for column s"
    ));
}

/// Scalar functions over an aggregate evaluate over the aggregate's result
/// (they were evaluated per row, which failed with "aggregate evaluated per
/// row"); an aggregate of an aggregate is refused, as Cassandra refuses it.
#[test]
fn functions_over_aggregates() {
    let mut db = Db::new();
    db.ok("CREATE TABLE tu (p int, c int, b timeuuid, v int, PRIMARY KEY (p, c))");
    db.ok("INSERT INTO tu (p, c, b, v) VALUES (0, 0, e23f450f-53a6-11ec-8080-808080808080, 3)");
    db.ok("INSERT INTO tu (p, c, b, v) VALUES (0, 1, 50554d6e-29bb-11e5-b345-feff819cdc9f, -7)");
    let r =
        db.rows("SELECT todate(max(b)), abs(min(v)), cast(max(v) as text), v FROM tu WHERE p = 0");
    assert_eq!(r, vec![vec!["'2021-12-02'", "7", "'3'", "3"]]);
    let r = db.rows("SELECT blobasint(intasblob(sum(v))), count(*) FROM tu WHERE p = 0");
    assert_eq!(r, vec![vec!["-4", "2"]]);
    let r = db.rows("SELECT todate(min(b)) FROM tu WHERE p = 9");
    assert_eq!(r, vec![vec!["null"]]);
    assert!(matches!(
        db.err("SELECT max(min(v)) FROM tu WHERE p = 0"),
        varve_query::QueryError::Invalid(m) if m == "aggregate functions cannot be used as arguments of aggregate functions"
    ));
}

/// Multi-column slices on `a ASC, b DESC` compare tuples in natural order
/// (they read one slice in clustering order, which selects other rows).
#[test]
fn multi_column_slices_on_mixed_clustering_orders() {
    let mut db = Db::new();
    db.ok("CREATE TABLE mx (p int, a int, b int, PRIMARY KEY (p, a, b)) WITH CLUSTERING ORDER BY (a ASC, b DESC)");
    for a in 0..3 {
        for b in 0..3 {
            db.ok(&format!("INSERT INTO mx (p, a, b) VALUES (0, {a}, {b})"));
        }
    }
    let ab = |db: &mut Db, q: &str| -> Vec<String> {
        db.rows(q).into_iter().map(|r| r.join("")).collect()
    };
    let q = "SELECT a, b FROM mx WHERE p = 0 AND (a, b) > (1, 1)";
    assert_eq!(ab(&mut db, q), ["12", "22", "21", "20"]);
    let q = "SELECT a, b FROM mx WHERE p = 0 AND (a, b) <= (1, 1) ORDER BY a DESC";
    assert_eq!(ab(&mut db, q), ["10", "11", "00", "01", "02"]);
    let q = "SELECT a, b FROM mx WHERE p = 0 AND (a, b) >= (0, 2) AND (a) < (2)";
    assert_eq!(ab(&mut db, q), ["02", "12", "11", "10"]);
}

/// GROUP BY the partition key and a clustering prefix: one row per group
/// (aggregates over it, other columns from its first row), a static-only
/// partition as a group of its own, LIMIT and pages counting groups; pages
/// end after a group and join up to the unpaged answer.
#[test]
fn group_by_partition_and_clustering_prefix() {
    let mut db = Db::new();
    db.ok("CREATE TABLE g (p int, c1 int, c2 int, v int, s int static, PRIMARY KEY (p, c1, c2))");
    for (p, c1, c2) in [
        (1, 1, 1),
        (1, 1, 2),
        (1, 2, 1),
        (1, 3, 1),
        (1, 3, 2),
        (2, 1, 1),
    ] {
        let v = p * 100 + c1 * 10 + c2;
        db.ok(&format!(
            "INSERT INTO g (p, c1, c2, v) VALUES ({p}, {c1}, {c2}, {v})"
        ));
    }
    db.ok("INSERT INTO g (p, s) VALUES (3, 7)");
    let q = "SELECT p, c1, c2, count(*), max(v) FROM g WHERE p = 1 GROUP BY p, c1";
    let want = [
        ["1", "1", "1", "2", "112"],
        ["1", "2", "1", "1", "121"],
        ["1", "3", "1", "2", "132"],
    ];
    assert_eq!(db.rows(q), want);
    for size in 1..4 {
        let (rows, _) = pages(&mut db, q, size);
        assert_eq!(rows, want, "page size {size}");
    }
    let q = "SELECT p, count(*), s FROM g WHERE p IN (1, 3) GROUP BY p";
    assert_eq!(db.rows(q), [["1", "5", "null"], ["3", "1", "7"]]);
    let q = "SELECT p, c1 FROM g GROUP BY p, c1 LIMIT 2";
    assert_eq!(pages(&mut db, q, 1).0, [["1", "1"], ["1", "2"]]);
    assert!(matches!(
        db.err("SELECT p, count(*) FROM g GROUP BY c1"),
        varve_query::QueryError::Invalid(m) if m.starts_with("Group by currently only support")
    ));
}
