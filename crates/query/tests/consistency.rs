//! Consistency levels checked by the processor on one node (the driver
//! tests in tests/python/test_consistency.py cover the rest over the wire;
//! these are the cases a driver refuses to send).

mod common;

use common::Db;
use varve_query::*;
use varve_types::Consistency;

fn run_at(db: &mut Db, q: &str, cl: Consistency, serial: Option<Consistency>) -> Result<Outcome> {
    let opts = QueryOptions {
        consistency: cl.code(),
        serial_consistency: serial.map(Consistency::code),
        ..Default::default()
    };
    common::now(db.p.query(&mut db.state, q, &opts))
}

#[test]
fn a_conditional_write_with_a_plain_serial_level_is_invalid() {
    let mut db = Db::new();
    db.ok("CREATE TABLE t (k int PRIMARY KEY, v int)");
    let q = "INSERT INTO t (k, v) VALUES (1, 1) IF NOT EXISTS";
    let err = run_at(&mut db, q, Consistency::One, Some(Consistency::Quorum)).unwrap_err();
    assert!(
        matches!(&err, QueryError::Invalid(m) if m.contains("Must be one of SERIAL or LOCAL_SERIAL")),
        "{err:?}"
    );
    assert!(db.rows("SELECT v FROM t WHERE k = 1").is_empty());
    run_at(&mut db, q, Consistency::One, Some(Consistency::LocalSerial)).expect("LOCAL_SERIAL");
    assert_eq!(db.rows("SELECT v FROM t WHERE k = 1"), [["1"]]);
}

#[test]
fn an_unknown_level_code_is_invalid() {
    let mut db = Db::new();
    db.ok("CREATE TABLE t (k int PRIMARY KEY, v int)");
    let opts = QueryOptions {
        consistency: 0x000B,
        ..Default::default()
    };
    let err =
        common::now(db.p.query(&mut db.state, "SELECT v FROM t WHERE k = 1", &opts)).unwrap_err();
    assert!(matches!(err, QueryError::Invalid(_)), "{err:?}");
}

#[test]
fn unavailable_names_level_required_and_alive() {
    let mut db = Db::new();
    db.ok("CREATE KEYSPACE k3 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}");
    db.ok("CREATE TABLE k3.t (k int PRIMARY KEY, v int)");
    let err = run_at(
        &mut db,
        "UPDATE k3.t SET v = 1 WHERE k = 1",
        Consistency::All,
        None,
    )
    .unwrap_err();
    let QueryError::Unavailable(u) = err else {
        panic!("{err:?}")
    };
    assert_eq!(
        (u.consistency, u.required, u.alive),
        (Consistency::All, 3, 1)
    );
}

#[test]
fn each_quorum_commits_conditional_updates_only_on_network_topology_keyspaces() {
    let mut db = Db::new();
    db.ok("CREATE TABLE t (k int PRIMARY KEY, v int)");
    let q = "INSERT INTO t (k, v) VALUES (1, 1) IF NOT EXISTS";
    let err = run_at(&mut db, q, Consistency::EachQuorum, None).unwrap_err();
    assert!(
        matches!(&err, QueryError::Invalid(m) if m.contains("not compatible with replication strategy (org.apache.cassandra.locator.SimpleStrategy)")),
        "{err:?}"
    );
    assert!(db.rows("SELECT v FROM t WHERE k = 1").is_empty());
    run_at(&mut db, q, Consistency::LocalQuorum, None).expect("LOCAL_QUORUM commits");
    db.ok("CREATE KEYSPACE nts WITH replication = {'class': 'NetworkTopologyStrategy', 'datacenter1': 1}");
    db.ok("CREATE TABLE nts.t (k int PRIMARY KEY, v int)");
    let q = "INSERT INTO nts.t (k, v) VALUES (1, 1) IF NOT EXISTS";
    run_at(&mut db, q, Consistency::EachQuorum, None).expect("EACH_QUORUM on NTS");
}
