//! The data path's contract, checked against the local node: what every
//! implementation of `DataPath` (the local engine now, the cluster's
//! coordinator later) must do with reads, writes, key scans and truncation.
//! Each check is a function of the data path only, so the same checks run
//! against any implementation.

mod common;

use std::sync::Arc;

use bytes::Bytes;
use varve_query::data_path::{DataPath, KeyScan, ReadCommand, WriteCommand, WriteKind};
use varve_types::data::{
    Cell, ClusteringComparator, ClusteringKey, DeletionTime, LivenessInfo, Partition, PartitionKey,
    Row, Slice, TokenBound,
};
use varve_types::data_error::DataError;
use varve_types::{Consistency, CqlType};

const NOW: i32 = 1_700_000_000;

/// A node with table `ks.t (k int, c int, v int, PRIMARY KEY (k, c))`, its
/// data path, the table's id and clustering comparator.
struct Fixture {
    _db: common::Db,
    data: Arc<dyn DataPath>,
    table: u128,
    cmp: Arc<ClusteringComparator>,
}

fn fixture() -> Fixture {
    let mut db = common::Db::new();
    db.ok("CREATE TABLE t (k int, c int, v int, PRIMARY KEY (k, c))");
    let table = db.p.schema().keyspace("ks").expect("ks").tables["t"].id;
    Fixture {
        data: Arc::clone(db.p.data_path()),
        _db: db,
        table,
        cmp: ClusteringComparator::new(vec![(CqlType::Int, false)]),
    }
}

fn int(i: i32) -> Bytes {
    Bytes::copy_from_slice(&i.to_be_bytes())
}

fn key(k: i32) -> PartitionKey {
    PartitionKey::new(int(k))
}

/// Rows `c` in `cs` of partition `k`, each with `v = c`, at `ts`.
fn rows(f: &Fixture, cs: impl IntoIterator<Item = i32>, ts: i64) -> Partition {
    let mut p = Partition::default();
    for c in cs {
        let mut row = Row {
            liveness: Some(LivenessInfo::new(ts, 0, NOW)),
            ..Row::default()
        };
        row.cells.insert((2, None), Cell::live(ts, int(c)));
        p.rows.insert(ClusteringKey::row(vec![int(c)], &f.cmp), row);
    }
    p
}

fn write(f: &Fixture, k: i32, update: Partition) -> Result<(), DataError> {
    common::now(f.data.write(WriteCommand {
        table: f.table,
        key: key(k),
        update,
        consistency: Consistency::One,
        kind: WriteKind::Simple,
    }))
}

/// The clustering values of partition `k`'s live rows, as the read found
/// them, with the read's `complete` flag.
fn read(f: &Fixture, k: i32, reversed: bool, row_limit: usize) -> (Option<Vec<i32>>, bool) {
    let key = key(k);
    let slices = [Slice::all(&f.cmp)];
    let found = common::now(f.data.read(ReadCommand {
        table: f.table,
        key: &key,
        slices: &slices,
        reversed,
        now_seconds: NOW,
        row_limit,
        consistency: Consistency::One,
    }))
    .expect("reads");
    let cs = found.partition.map(|p| {
        p.rows
            .keys()
            .map(|ck| i32::from_be_bytes(ck.values[0][..].try_into().expect("int")))
            .collect()
    });
    (cs, found.complete)
}

fn scan(f: &Fixture, start: &TokenBound, limit: usize) -> Vec<PartitionKey> {
    common::now(f.data.scan_keys(KeyScan {
        table: f.table,
        start,
        end: &TokenBound::Unbounded,
        limit,
        consistency: Consistency::One,
    }))
    .expect("scans")
}

#[test]
fn a_written_partition_reads_back_and_an_absent_one_is_none() {
    let f = fixture();
    write(&f, 1, rows(&f, [1, 2, 3], 10)).expect("writes");
    assert_eq!(read(&f, 1, false, usize::MAX), (Some(vec![1, 2, 3]), true));
    assert_eq!(read(&f, 2, false, usize::MAX), (None, true));
}

#[test]
fn a_row_limit_stops_the_read_from_the_requested_end() {
    let f = fixture();
    write(&f, 1, rows(&f, 1..=5, 10)).expect("writes");
    assert_eq!(read(&f, 1, false, 2), (Some(vec![1, 2]), false));
    assert_eq!(read(&f, 1, true, 2), (Some(vec![4, 5]), false));
    assert_eq!(read(&f, 1, false, 5).0, Some(vec![1, 2, 3, 4, 5]));
}

#[test]
fn a_newer_deletion_shadows_and_an_older_one_does_not() {
    let f = fixture();
    write(&f, 1, rows(&f, [1, 2], 10)).expect("writes");
    let mut delete = Partition::default();
    let old = Row {
        deletion: Some(DeletionTime::new(5, NOW)),
        ..Row::default()
    };
    let new = Row {
        deletion: Some(DeletionTime::new(20, NOW)),
        ..Row::default()
    };
    delete
        .rows
        .insert(ClusteringKey::row(vec![int(1)], &f.cmp), old);
    delete
        .rows
        .insert(ClusteringKey::row(vec![int(2)], &f.cmp), new);
    write(&f, 1, delete).expect("deletes");
    assert_eq!(read(&f, 1, false, usize::MAX).0, Some(vec![1]));
}

#[test]
fn key_scans_go_in_token_order_from_their_start() {
    let f = fixture();
    for k in 0..20 {
        write(&f, k, rows(&f, [0], 10)).expect("writes");
    }
    let all = scan(&f, &TokenBound::Unbounded, 100);
    assert_eq!(all.len(), 20);
    assert!(all.windows(2).all(|w| w[0].token < w[1].token));
    let first = scan(&f, &TokenBound::Unbounded, 7);
    assert_eq!(first, all[..7]);
    let rest = scan(&f, &TokenBound::AfterKey(first[6].clone()), 100);
    assert_eq!(rest, all[7..]);
}

#[test]
fn truncate_removes_every_row() {
    let f = fixture();
    write(&f, 1, rows(&f, [1], 10)).expect("writes");
    common::now(f.data.truncate(f.table)).expect("truncates");
    assert_eq!(read(&f, 1, false, usize::MAX), (None, true));
    assert!(scan(&f, &TokenBound::Unbounded, 10).is_empty());
}

#[test]
fn an_unknown_table_is_an_error_not_an_empty_answer() {
    let f = fixture();
    let missing = Fixture {
        table: f.table + 1,
        ..fixture()
    };
    let err = write(&missing, 1, rows(&f, [1], 10)).unwrap_err();
    assert!(matches!(err, DataError::UnknownTable(_)), "{err:?}");
    let k = key(1);
    let slices = [Slice::all(&f.cmp)];
    let err = common::now(missing.data.read(ReadCommand {
        table: missing.table,
        key: &k,
        slices: &slices,
        reversed: false,
        now_seconds: NOW,
        row_limit: 1,
        consistency: Consistency::One,
    }))
    .unwrap_err();
    assert!(matches!(err, DataError::UnknownTable(_)), "{err:?}");
}

/// Applies rows `c` = 1 of partition `k` when the partition is empty,
/// recording each timestamp it was given.
struct InsertIfEmpty {
    rows: Partition,
    given: std::sync::Mutex<Vec<i64>>,
}

impl varve_query::data_path::CasDecider for InsertIfEmpty {
    fn decide(
        &self,
        current: &Partition,
        timestamp: i64,
    ) -> Result<varve_query::data_path::CasDecision, DataError> {
        self.given.lock().expect("lock").push(timestamp);
        let applied = current.rows.is_empty();
        let update = applied.then(|| {
            let mut u = self.rows.clone();
            u.shift_timestamps(timestamp);
            u
        });
        Ok(varve_query::data_path::CasDecision { applied, update })
    }
}

fn cas(f: &Fixture, k: i32, decider: Arc<InsertIfEmpty>) -> varve_query::data_path::CasOutcome {
    let key = key(k);
    let slices = [Slice::all(&f.cmp)];
    let command = varve_query::data_path::CasCommand {
        table: f.table,
        key: &key,
        slices: &slices,
        serial: Consistency::Serial,
        commit: Consistency::Quorum,
        now_seconds: NOW,
        decider,
    };
    block_on(f.data.cas(command)).expect("cas")
}

/// Runs a future that may wait for a lock (a conditional statement).
fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime")
        .block_on(f)
}

#[test]
fn a_conditional_write_decides_on_the_current_state_and_takes_newer_timestamps() {
    let f = fixture();
    let decider = Arc::new(InsertIfEmpty {
        rows: rows(&f, [1], 0),
        given: std::sync::Mutex::new(Vec::new()),
    });
    let first = cas(&f, 5, Arc::clone(&decider));
    assert!(first.applied && first.current.rows.is_empty());
    let second = cas(&f, 5, Arc::clone(&decider));
    assert!(!second.applied);
    assert_eq!(
        second.current.rows.len(),
        1,
        "decided on the row the first wrote"
    );
    let given = decider.given.lock().expect("lock").clone();
    assert!(
        given[1] > given[0],
        "timestamps only move forward: {given:?}"
    );
    // The row carries the timestamp the decider was given, not one of its own.
    let key = key(5);
    let slices = [Slice::all(&f.cmp)];
    let found = common::now(f.data.read(ReadCommand {
        table: f.table,
        key: &key,
        slices: &slices,
        reversed: false,
        now_seconds: NOW,
        row_limit: usize::MAX,
        consistency: Consistency::One,
    }))
    .expect("read")
    .partition
    .expect("row");
    let row = found.rows.values().next().expect("row");
    assert_eq!(row.liveness.expect("marker").timestamp, given[0]);
}
