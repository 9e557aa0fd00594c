//! The `scylla` crate against real three-node clusters (`varve cluster
//! start`, SimpleStrategy RF 3) whose nodes die (`varve cluster kill N`:
//! SIGKILL), as issue 18 checks it:
//!
//! - QUORUM writes go on through a SIGKILL of one node (a writer runs
//!   before, during and after it), and every acknowledged write is read
//!   back at QUORUM through another node;
//! - with two of three nodes dead, QUORUM is Unavailable with the
//!   server's counts (QUORUM, required 2, alive 1) and ONE goes on.
//!
//! The driver never retries (so the server's own answer reaches the test).
//! Each test has its own cluster on its own ports; they run one at a time
//! (two cores: six debug nodes at once slow the failure detectors the tests
//! wait on).

// Its single-node helper (`VarveProcess`) is not used here.
#[allow(dead_code)]
mod support;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use scylla::client::session::Session;
use scylla::statement::Consistency;
use support::cluster::{fresh_dir, ClusterPorts, VarveCluster};
use support::sessions::{
    create_table, eventually, pinned, simple_strategy, statement, unavailable_fields, TestResult,
    EVENTUALLY_TIMEOUT,
};

/// Ports of their own per test (no other test uses them).
const KILL_PORTS: ClusterPorts = ClusterPorts {
    native: 20542,
    admin: 20680,
    storage: 18500,
};
const UNAVAILABLE_PORTS: ClusterPorts = ClusterPorts {
    native: 20842,
    admin: 20980,
    storage: 18700,
};
const NODES: usize = 3;
/// QUORUM writes attempted before the kill, then after it.
const WRITES_EACH_SIDE_OF_KILL: usize = 50;

/// One test at a time (see the file's note).
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Each write's key and outcome (the error's text), in order.
type History = Vec<(i32, Result<(), String>)>;

/// QUORUM writes of keys 0, 1, ... through `session` until `stop`; counts
/// the attempts in `attempts`.
async fn write_until_stopped(
    session: Arc<Session>,
    attempts: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
) -> History {
    let insert = statement("INSERT INTO ks.t (k, v) VALUES (?, ?)", Consistency::Quorum);
    let mut history = Vec::new();
    let mut k = 0;
    while !stop.load(Ordering::SeqCst) {
        let outcome = session
            .query_unpaged(insert.clone(), (k, format!("v{k}")))
            .await;
        history.push((k, outcome.map(|_| ()).map_err(|e| e.to_string())));
        attempts.fetch_add(1, Ordering::SeqCst);
        k += 1;
    }
    history
}

/// A QUORUM writer on `session` (a [`History`]); node 2 is killed once
/// it attempted [`WRITES_EACH_SIDE_OF_KILL`] writes, and it stops after as
/// many more (or a timeout). Returns its history and the attempts made
/// when the kill returned.
async fn write_through_a_kill(
    cluster: &VarveCluster,
    session: Arc<Session>,
) -> Result<(History, usize), tokio::task::JoinError> {
    let attempts = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let writer = tokio::spawn(write_until_stopped(
        session,
        Arc::clone(&attempts),
        Arc::clone(&stop),
    ));
    let reached = |count: usize| {
        let attempts = Arc::clone(&attempts);
        move || {
            let attempts = Arc::clone(&attempts);
            async move { attempts.load(Ordering::SeqCst) >= count }
        }
    };
    eventually(EVENTUALLY_TIMEOUT, reached(WRITES_EACH_SIDE_OF_KILL)).await;
    cluster.kill(2);
    let at_kill = attempts.load(Ordering::SeqCst);
    eventually(
        EVENTUALLY_TIMEOUT,
        reached(at_kill + WRITES_EACH_SIDE_OF_KILL),
    )
    .await;
    stop.store(true, Ordering::SeqCst);
    Ok((writer.await?, at_kill))
}

/// The keys of `acknowledged` that a QUORUM read through `session` does
/// not return as written.
async fn missing_at_quorum(session: &Session, acknowledged: &[i32]) -> Vec<i32> {
    let select = statement("SELECT v FROM ks.t WHERE k = ?", Consistency::Quorum);
    let mut missing = Vec::new();
    for &k in acknowledged {
        let read = session.query_unpaged(select.clone(), (k,)).await;
        let value = read
            .ok()
            .and_then(|r| r.into_rows_result().ok())
            .and_then(|rows| rows.maybe_first_row::<(String,)>().ok().flatten());
        if value != Some((format!("v{k}"),)) {
            missing.push(k);
        }
    }
    missing
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quorum_writes_go_on_through_a_sigkill_and_none_acknowledged_is_lost() -> TestResult {
    let _serial = ONE_AT_A_TIME.lock().await;
    let started = Instant::now();
    let mut cluster = VarveCluster::start(&fresh_dir("kill"), NODES, KILL_PORTS, &[]);
    let on_1 = Arc::new(pinned(&cluster, 1).await);
    create_table(&on_1, &simple_strategy(3)).await?;

    let (history, at_kill) = write_through_a_kill(&cluster, Arc::clone(&on_1)).await?;
    assert!(
        history.len() >= at_kill + WRITES_EACH_SIDE_OF_KILL,
        "writes stalled after the kill: {} attempted",
        history.len()
    );

    let failed: Vec<_> = history
        .iter()
        .filter(|(_, outcome)| outcome.is_err())
        .collect();
    assert!(
        failed.is_empty(),
        "QUORUM writes failed with one node of three dead: {failed:?}"
    );
    let acknowledged: Vec<i32> = history
        .iter()
        .filter(|(_, outcome)| outcome.is_ok())
        .map(|(k, _)| *k)
        .collect();
    // Reads wait for node 3 to convict node 2: until then a QUORUM read
    // may pick the dead replica and time out.
    let convicted = eventually(EVENTUALLY_TIMEOUT, || async { cluster.sees(3, &[2], "DN") });
    assert!(convicted.await, "node 3 sees {:?}", cluster.node_states(3));
    let on_3 = pinned(&cluster, 3).await;
    let missing = missing_at_quorum(&on_3, &acknowledged).await;
    assert!(
        missing.is_empty(),
        "acknowledged at QUORUM, not read at QUORUM: {missing:?}"
    );

    eprintln!(
        "{} writes, {at_kill} when the kill returned",
        acknowledged.len()
    );
    drop((on_1, on_3));
    cluster.stop();
    eprintln!("kill test: {:?}", started.elapsed());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_of_three_dead_is_unavailable_at_quorum_and_one_goes_on() -> TestResult {
    let _serial = ONE_AT_A_TIME.lock().await;
    let started = Instant::now();
    let mut cluster = VarveCluster::start(&fresh_dir("unavailable"), NODES, UNAVAILABLE_PORTS, &[]);
    let on_1 = pinned(&cluster, 1).await;
    create_table(&on_1, &simple_strategy(3)).await?;

    cluster.kill(2);
    cluster.kill(3);
    let both_down = eventually(EVENTUALLY_TIMEOUT, || async {
        cluster.sees(1, &[2, 3], "DN")
    });
    assert!(both_down.await, "node 1 sees {:?}", cluster.node_states(1));

    let insert = "INSERT INTO ks.t (k, v) VALUES (1, 'x')";
    let select = "SELECT v FROM ks.t WHERE k = 1";
    for cql in [insert, select] {
        let error = on_1
            .query_unpaged(statement(cql, Consistency::Quorum), ())
            .await
            .err()
            .unwrap_or_else(|| panic!("{cql} succeeded at QUORUM with one node of three"));
        let fields = unavailable_fields(&error);
        assert_eq!(fields, Some((Consistency::Quorum, 2, 1)), "{cql}: {error}");
    }
    let insert_one = "INSERT INTO ks.t (k, v) VALUES (1, 'one')";
    on_1.query_unpaged(statement(insert_one, Consistency::One), ())
        .await?;
    let rows = on_1
        .query_unpaged(statement(select, Consistency::One), ())
        .await?
        .into_rows_result()?;
    assert_eq!(rows.single_row::<(String,)>()?, ("one".to_string(),));

    drop(on_1);
    cluster.stop();
    eprintln!("unavailable test: {:?}", started.elapsed());
    Ok(())
}
