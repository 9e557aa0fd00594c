//! In-process tests of the statement families against the processor.

mod common;
use common::Db;

#[test]
fn insert_select_update_delete() {
    let mut db = Db::new();
    db.ok("CREATE TABLE t (k int, c int, v text, s int static, PRIMARY KEY (k, c))");
    for c in 0..5 {
        db.ok(&format!("INSERT INTO t (k, c, v) VALUES (1, {c}, 'v{c}')"));
    }
    assert_eq!(
        db.rows("SELECT c, v FROM t WHERE k = 1 AND c >= 3"),
        vec![vec!["3", "'v3'"], vec!["4", "'v4'"]]
    );
    assert_eq!(
        db.rows("SELECT c FROM t WHERE k = 1 ORDER BY c DESC LIMIT 2"),
        vec![vec!["4"], vec!["3"]]
    );
    db.ok("UPDATE t SET v = 'x' WHERE k = 1 AND c = 0");
    db.ok("UPDATE t SET s = 9 WHERE k = 1");
    assert_eq!(
        db.rows("SELECT v, s FROM t WHERE k = 1 AND c = 0"),
        vec![vec!["'x'", "9"]]
    );
    db.ok("DELETE FROM t WHERE k = 1 AND c > 0 AND c < 3");
    assert_eq!(
        db.rows("SELECT c FROM t WHERE k = 1"),
        vec![vec!["0"], vec!["3"], vec!["4"]]
    );
    db.ok("DELETE v FROM t WHERE k = 1 AND c = 0");
    assert_eq!(
        db.rows("SELECT v FROM t WHERE k = 1 AND c = 0"),
        vec![vec!["null"]]
    );
    db.ok("DELETE FROM t WHERE k = 1");
    assert!(db.rows("SELECT * FROM t WHERE k = 1").is_empty());
    assert_eq!(db.rows("SELECT count(*) FROM t"), vec![vec!["0"]]);
}

#[test]
fn collections() {
    let mut db = Db::new();
    db.ok("CREATE TABLE c (k int PRIMARY KEY, l list<int>, s set<text>, m map<text, int>)");
    db.ok("INSERT INTO c (k, l, s, m) VALUES (1, [3, 1], {'b', 'a'}, {'x': 1})");
    db.ok("UPDATE c SET l = l + [5], s = s + {'c'}, m['y'] = 2 WHERE k = 1");
    db.ok("UPDATE c SET l = [0] + l WHERE k = 1");
    assert_eq!(
        db.rows("SELECT l, s, m FROM c WHERE k = 1"),
        vec![vec!["[0, 3, 1, 5]", "{'a', 'b', 'c'}", "{'x': 1, 'y': 2}"]]
    );
    db.ok("UPDATE c SET l = l - [3], s = s - {'a'} WHERE k = 1");
    db.ok("DELETE m['x'] FROM c WHERE k = 1");
    db.ok("UPDATE c SET l[0] = 9 WHERE k = 1");
    assert_eq!(
        db.rows("SELECT l, s, m FROM c WHERE k = 1"),
        vec![vec!["[9, 1, 5]", "{'b', 'c'}", "{'y': 2}"]]
    );
}

#[test]
fn conditional_updates() {
    let mut db = Db::new();
    db.ok("CREATE TABLE l (k int PRIMARY KEY, v int)");
    assert_eq!(
        db.rows("INSERT INTO l (k, v) VALUES (1, 1) IF NOT EXISTS"),
        vec![vec!["true"]]
    );
    assert_eq!(
        db.rows("INSERT INTO l (k, v) VALUES (1, 2) IF NOT EXISTS"),
        vec![vec!["false", "1", "1"]]
    );
    assert_eq!(
        db.rows("UPDATE l SET v = 3 WHERE k = 1 IF v = 2"),
        vec![vec!["false", "1"]]
    );
    assert_eq!(
        db.rows("UPDATE l SET v = 3 WHERE k = 1 IF v = 1"),
        vec![vec!["true"]]
    );
    assert_eq!(
        db.rows("DELETE FROM l WHERE k = 1 IF EXISTS"),
        vec![vec!["true"]]
    );
    assert_eq!(
        db.rows("DELETE FROM l WHERE k = 1 IF EXISTS"),
        vec![vec!["false"]]
    );
}

#[test]
fn ttl_and_writetime() {
    let mut db = Db::new();
    db.ok("CREATE TABLE w (k int PRIMARY KEY, v int)");
    db.ok("INSERT INTO w (k, v) VALUES (1, 1) USING TTL 100 AND TIMESTAMP 42");
    let r = db.rows("SELECT writetime(v), ttl(v) FROM w WHERE k = 1");
    assert_eq!(r[0][0], "42");
    let ttl: i32 = r[0][1].parse().unwrap();
    assert!(ttl > 90 && ttl <= 100, "{ttl}");
}

#[test]
fn errors_have_cassandra_meaning() {
    use varve_query::QueryError;
    let mut db = Db::new();
    db.ok("CREATE TABLE e (k int PRIMARY KEY, v int)");
    assert!(matches!(db.err("SELEC * FROM e"), QueryError::Syntax(_)));
    assert!(matches!(
        db.err("CREATE TABLE e (k int PRIMARY KEY)"),
        QueryError::AlreadyExists { .. }
    ));
    assert!(matches!(
        db.err("SELECT * FROM e WHERE v = 1"),
        QueryError::Invalid(_)
    ));
    assert!(matches!(
        db.err("INSERT INTO e (k, v) VALUES ('a', 1)"),
        QueryError::Invalid(_)
    ));
    assert!(matches!(
        db.err("CREATE TABLE x (k int PRIMARY KEY) WITH compaction = {'class': 'Nope'}"),
        QueryError::Config(_)
    ));
    assert_eq!(
        db.rows("SELECT * FROM e WHERE v = 1 ALLOW FILTERING").len(),
        0
    );
}

#[test]
fn system_tables_and_describe() {
    let mut db = Db::new();
    db.ok("CREATE TABLE d (k int, c text, v blob, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (c DESC)");
    let r = db.rows("SELECT release_version FROM system.local WHERE key = 'local'");
    assert_eq!(r, vec![vec!["'5.0.4'"]]);
    let cols = db.rows("SELECT column_name, kind FROM system_schema.columns WHERE keyspace_name = 'ks' AND table_name = 'd'");
    assert_eq!(cols.len(), 3);
    let out = db.rows("DESCRIBE TABLE ks.d");
    assert!(
        out[0][3].contains("CLUSTERING ORDER BY (c DESC)"),
        "{}",
        out[0][3]
    );
}

#[test]
fn paging_walks_all_rows() {
    use varve_query::{QueryOptions, QueryResult};
    let mut db = Db::new();
    db.ok("CREATE TABLE p (k int, c int, PRIMARY KEY (k, c))");
    for k in 0..7 {
        for c in 0..5 {
            db.ok(&format!("INSERT INTO p (k, c) VALUES ({k}, {c})"));
        }
    }
    let mut seen = 0;
    let mut state = None;
    let mut pages = 0;
    loop {
        let opts = QueryOptions {
            page_size: Some(4),
            paging_state: state.clone(),
            ..Default::default()
        };
        let out = common::now(db.p.query(&mut db.state, "SELECT * FROM p", &opts)).unwrap();
        let QueryResult::Rows(r) = out.result else {
            panic!()
        };
        seen += r.rows.len();
        pages += 1;
        match r.paging_state {
            Some(s) => state = Some(s),
            None => break,
        }
        assert!(pages < 100);
    }
    assert_eq!(seen, 35);
}

#[test]
fn decimal_literals_keep_every_digit() {
    let mut db = Db::new();
    db.ok("CREATE TABLE dec (k int PRIMARY KEY, d decimal, v varint)");
    db.ok("INSERT INTO dec (k, d, v) VALUES (1, -123456789012345678901234567890.000000000987654321, 123456789012345678901234567890)");
    assert_eq!(
        db.rows("SELECT d, v FROM dec WHERE k = 1"),
        vec![vec![
            "-123456789012345678901234567890.000000000987654321",
            "123456789012345678901234567890"
        ]]
    );
}

/// Two peers as a cluster's membership would describe them.
struct TwoPeers;

impl varve_query::cluster_view::ClusterView for TwoPeers {
    fn peers(&self) -> Vec<varve_query::cluster_view::PeerInfo> {
        (2..=3u8)
            .map(|i| varve_query::cluster_view::PeerInfo {
                listen_address: [127, 0, 0, i].into(),
                listen_port: 7000,
                rpc_address: [127, 0, 1, i].into(),
                native_port: 9042,
                data_center: format!("dc{i}"),
                rack: "rack1".into(),
                host_id: [i; 16],
                release_version: "5.0.4".into(),
                schema_version: [9; 16],
                tokens: vec![i64::from(i) * 100, -i64::from(i)],
                up: true,
                load_bytes: None,
                joining: false,
            })
            .collect()
    }
}

#[test]
fn the_peers_tables_show_what_the_cluster_view_knows() {
    let mut db = Db::new();
    assert!(db.rows("SELECT peer FROM system.peers").is_empty(), "alone");
    db.p.set_cluster_view(std::sync::Arc::new(TwoPeers));
    let sorted = |mut rows: Vec<Vec<String>>| {
        rows.sort();
        rows
    };
    assert_eq!(
        sorted(db.rows("SELECT peer, data_center, rpc_address, tokens FROM system.peers")),
        [
            ["'127.0.0.2'", "'dc2'", "'127.0.1.2'", "{'-2', '200'}"],
            ["'127.0.0.3'", "'dc3'", "'127.0.1.3'", "{'-3', '300'}"],
        ]
    );
    assert_eq!(
        sorted(db.rows("SELECT peer, peer_port, native_address, native_port FROM system.peers_v2")),
        [
            ["'127.0.0.2'", "7000", "'127.0.1.2'", "9042"],
            ["'127.0.0.3'", "7000", "'127.0.1.3'", "9042"],
        ]
    );
}
