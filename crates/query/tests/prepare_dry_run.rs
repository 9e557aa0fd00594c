//! PREPARE refuses what execution would refuse whatever the bound values
//! (issue 21, differential corpus 18_issue21_prepare), and nothing else.

mod common;

use common::Db;
use varve_query::QueryError;

fn db() -> Db {
    let mut db = Db::new();
    db.ok(
        "CREATE TABLE t (p int, c int, v int, w text, s int static, l list<int>, \
           m map<text, int>, PRIMARY KEY (p, c))",
    );
    db
}

fn prepare_err(db: &Db, q: &str) -> String {
    match db.p.prepare(&db.state, q, None) {
        Ok(_) => panic!("{q}: prepared, expected a refusal"),
        Err(QueryError::Invalid(m)) => m,
        Err(e) => panic!("{q}: {e:?}"),
    }
}

#[test]
fn refuses_what_execution_always_refuses() {
    let db = db();
    let cases = [
        ("INSERT INTO t (c, v) VALUES (?, ?)", "Some partition key parts are missing: p"),
        ("INSERT INTO t (p, v) VALUES (?, ?)", "Some clustering keys are missing: c"),
        ("INSERT INTO t (p, c, nope) VALUES (?, ?, ?)", "Undefined column name nope"),
        ("INSERT INTO t (p, c, v) VALUES (?, ?, 'x')", "Invalid STRING constant (x)"),
        ("UPDATE t SET v = ? WHERE p = ?", "Some clustering keys are missing: c"),
        ("UPDATE t SET p = ? WHERE p = ? AND c = ?", "PRIMARY KEY part p found in SET part"),
        ("UPDATE t SET v = ? WHERE c = ?", "Some partition key parts are missing: p"),
        ("UPDATE t SET v = ? WHERE p = ? AND c > 0", "Slice restrictions are not supported"),
        ("DELETE FROM t WHERE p > ?", "Only EQ and IN relation are supported on the partition key"),
        ("DELETE FROM t WHERE p = ? AND v = ?", "Non PRIMARY KEY columns found in where clause: v"),
        ("SELECT * FROM t WHERE v = ?", "Cannot execute this query"),
        ("SELECT * FROM t WHERE c = ?", "Cannot execute this query"),
        ("SELECT * FROM t ORDER BY c DESC", "ORDER BY is only supported"),
        ("SELECT * FROM t WHERE p = ? ORDER BY v DESC", "Order by is currently only supported"),
        ("SELECT p, count(*) FROM t GROUP BY v", "Group by is currently only supported"),
        ("SELECT * FROM t WHERE p = ? AND c = ? AND v > ? AND l CONTAINS ?", "Cannot execute"),
        (
            "BEGIN BATCH INSERT INTO t (p, c) VALUES (?, ?); UPDATE t SET v = ? WHERE p = ?; APPLY BATCH",
            "Some clustering keys are missing: c",
        ),
    ];
    for (q, want) in cases {
        let got = prepare_err(&db, q);
        assert!(got.starts_with(want), "{q}: {got}");
    }
}

#[test]
fn prepares_what_some_values_run() {
    let db = db();
    let valid = [
        "INSERT INTO t (p, c, v, w, s, l, m) VALUES (?, ?, ?, ?, ?, ?, ?)",
        "INSERT INTO t (p, c, v) VALUES (?, ?, ?) USING TTL ? AND TIMESTAMP ?",
        "INSERT INTO t (p, s) VALUES (?, ?)",
        "INSERT INTO t (p, c, v) VALUES (?, ?, ?) IF NOT EXISTS",
        "INSERT INTO t JSON ?",
        "INSERT INTO t (p, c, v) VALUES (?, ?, fromJson(?))",
        "UPDATE t SET l[?] = ? WHERE p = ? AND c = ?",
        "UPDATE t SET l = l + ?, m[?] = ? WHERE p = ? AND c = ?",
        "UPDATE t SET s = ? WHERE p = ?",
        "UPDATE t SET v = ? WHERE p = ? AND c IN ?",
        "UPDATE t SET v = ? WHERE p = ? AND c = ? IF v = ?",
        "DELETE l[?] FROM t WHERE p = ? AND c = ?",
        "DELETE FROM t WHERE p = ? AND c > ?",
        "DELETE FROM t WHERE p IN ?",
        "DELETE s FROM t WHERE p = ?",
        "DELETE v FROM t WHERE p = ?",
        "DELETE FROM t WHERE p = ? AND c = ? IF EXISTS",
        "SELECT * FROM t WHERE p IN ? AND c IN ?",
        "SELECT * FROM t WHERE token(p) > ? AND token(p) < ?",
        "SELECT * FROM t WHERE p = ? LIMIT ?",
        "SELECT * FROM t PER PARTITION LIMIT ?",
        "SELECT * FROM t WHERE v = ? ALLOW FILTERING",
        "SELECT * FROM t WHERE p = ? AND c > ? AND c < ?",
        "SELECT c FROM t WHERE p IN ? ORDER BY c DESC",
        "SELECT p, count(*) FROM t WHERE p = ? GROUP BY p",
        "SELECT DISTINCT p, s FROM t WHERE p = ?",
        "SELECT * FROM system.local WHERE key = ?",
        "BEGIN BATCH INSERT INTO t (p, c) VALUES (?, ?); UPDATE t SET v = ? WHERE p = ? AND c = ?; APPLY BATCH",
    ];
    for q in valid {
        if let Err(e) = db.p.prepare(&db.state, q, None) {
            panic!("{q}: {e:?}");
        }
    }
}
