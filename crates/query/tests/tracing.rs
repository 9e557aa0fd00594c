//! Query tracing in process: a traced statement's session and events land
//! in system_traces with their TTL; an untraced one writes nothing there.

mod common;

use common::{now, Db};
use std::time::Instant;
use varve_query::trace::{self, Session};
use varve_query::QueryOptions;

/// Runs `q` traced and stores its session, as the server does.
fn traced(db: &mut Db, q: &str) -> String {
    let session = Session::begin(Some("10.1.2.3".parse().unwrap()), Instant::now());
    let opts = QueryOptions::default();
    let run = db.p.query(&mut db.state, q, &opts);
    now(trace::run(Some(&session), run)).unwrap();
    db.p.store_trace(&session, &trace::request::query(q, &opts))
        .unwrap();
    varve_types::time::format_uuid(&session.id())
}

fn activities(db: &mut Db, id: &str) -> Vec<String> {
    let q = format!("SELECT activity FROM system_traces.events WHERE session_id = {id}");
    db.rows(&q).into_iter().map(|r| r[0].clone()).collect()
}

#[test]
fn a_traced_write_and_read_record_their_steps() {
    let mut db = Db::new();
    db.ok("CREATE TABLE t (k int, c int, v text, PRIMARY KEY (k, c))");
    let write = traced(&mut db, "INSERT INTO t (k, c, v) VALUES (1, 1, 'a')");
    assert_eq!(
        activities(&mut db, &write),
        [
            "'Parsing INSERT INTO t (k, c, v) VALUES (1, 1, ''a'')'",
            "'Preparing statement'",
            "'Determining replicas for mutation'",
            "'Adding to t memtable'",
        ],
        "no commitlog on an in-memory node"
    );
    let read = traced(&mut db, "SELECT * FROM t WHERE k = 1");
    assert_eq!(
        activities(&mut db, &read)[2..],
        [
            "'Executing single-partition query on t'",
            "'Acquiring sstable references'",
            "'Merged data from memtables and 0 sstables'",
            "'Read 1 live rows and 0 tombstone cells'",
        ]
    );
    let q = format!(
        "SELECT client, command, request, parameters, ttl(request) FROM system_traces.sessions WHERE session_id = {read}"
    );
    let row = &db.rows(&q)[0];
    assert_eq!(row[0], "'10.1.2.3'");
    assert_eq!(row[1], "'QUERY'");
    assert_eq!(row[2], "'Execute CQL3 query'");
    assert!(
        row[3].contains("'query': 'SELECT * FROM t WHERE k = 1'"),
        "{}",
        row[3]
    );
    let ttl: i32 = row[4].parse().unwrap();
    assert!((86_390..=86_400).contains(&ttl), "{ttl}");
    let q = format!("SELECT duration FROM system_traces.sessions WHERE session_id = {read}");
    let duration: i32 = db.rows(&q)[0][0].parse().unwrap();
    assert!(duration > 0);
}

#[test]
fn untraced_statements_write_nothing_to_system_traces() {
    let mut db = Db::new();
    db.ok("CREATE TABLE t (k int PRIMARY KEY, v int)");
    db.ok("INSERT INTO t (k, v) VALUES (1, 1)");
    db.ok("SELECT * FROM t WHERE k = 1");
    assert!(db.rows("SELECT * FROM system_traces.sessions").is_empty());
    assert!(db.rows("SELECT * FROM system_traces.events").is_empty());
}

#[test]
fn describe_lists_multi_cell_columns_after_the_others() {
    let mut db = Db::new();
    db.ok(
        "CREATE TABLE m (k int PRIMARY KEY, a map<int, int>, b int, f frozen<list<int>>, z text)",
    );
    let out = db.rows("DESCRIBE TABLE m");
    let cql = &out[0][3];
    let at = |c: &str| cql.find(c).unwrap_or_else(|| panic!("{c} in {cql}"));
    assert!(at("    b int") < at("    f frozen") && at("    f frozen") < at("    z text"));
    assert!(at("    z text") < at("    a map"), "{cql}");
    let traces = db.rows("DESCRIBE TABLE system_traces.sessions");
    let cql = &traces[0][3];
    assert!(cql.find("started_at").unwrap() < cql.find("parameters").unwrap());
}
