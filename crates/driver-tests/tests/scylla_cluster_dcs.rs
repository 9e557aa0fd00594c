//! The `scylla` crate against two data centres of three real nodes each
//! (`varve cluster start --nodes 6 --dcs 2`: dc1 is nodes 1-3, dc2 nodes
//! 4-6; NetworkTopologyStrategy 3 + 3), cut apart by a real network cut
//! (support/netcut.rs: the storage port's traffic between the two sides is
//! dropped; clients still reach every node).
//!
//! A session from one contact point, token-aware and DC-aware (prefers
//! dc1, never fails over to dc2): while dc1 is cut off, LOCAL_QUORUM writes
//! and reads go on promptly, coordinated by dc1 only; once dc1 sees dc2
//! DOWN, EACH_QUORUM and QUORUM are Unavailable with the server's counts.
//! After the cut heals and dc1 sees dc2 UP, the hints dc1 kept bring every
//! write made during the cut to each dc2 node (read at LOCAL_ONE through
//! a session pinned to it).
//!
//! Needs root for the cut (`ip rule`), as the tests have here and in CI;
//! without it the test says so and does nothing.

// Its single-node helper (`VarveProcess`) is not used here.
#[allow(dead_code)]
mod support;

use std::ops::RangeInclusive;
use std::time::{Duration, Instant};

use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::errors::ExecutionError;
use scylla::policies::load_balancing::DefaultPolicy;
use scylla::response::query_result::QueryResult;
use scylla::serialize::row::SerializeRow;
use scylla::statement::prepared::PreparedStatement;
use scylla::statement::Consistency;
use support::cluster::{fresh_dir, ClusterPorts, VarveCluster};
use support::metrics;
use support::netcut::{self, Cuts};
use support::sessions::{
    connected_to_all, create_table, eventually, no_retry_profile, pinned, unavailable_fields,
    TestResult, EVENTUALLY_TIMEOUT,
};

/// Ports no other test uses.
const PORTS: ClusterPorts = ClusterPorts {
    native: 20642,
    admin: 20780,
    storage: 18600,
};
const NODES: usize = 6;
const DCS: usize = 2;
const DC1: [usize; 3] = [1, 2, 3];
const DC2: [usize; 3] = [4, 5, 6];
const REPLICATION: &str = "{'class': 'NetworkTopologyStrategy', 'dc1': 3, 'dc2': 3}";
/// The longest a request that must not wait for the cut-off side may
/// take: well under write_request_timeout (2 s).
const PROMPT: Duration = Duration::from_millis(1500);
/// Written at LOCAL_QUORUM before dc1 convicts dc2 (sent to dc2 into the
/// cut), and after (never sent: hints only).
const KEYS_BEFORE_CONVICTION: RangeInclusive<i32> = 1..=20;
const KEYS_AFTER_CONVICTION: RangeInclusive<i32> = 21..=30;
const COORDINATOR_REQUESTS: &str = "varve_coordinator_requests_total";
const HINTS_REPLAYED: &str = "varve_hints_replayed_total";

fn addresses(nodes: &[usize]) -> Vec<String> {
    nodes.iter().map(|&n| VarveCluster::address(n)).collect()
}

/// From node 1 alone: token-aware, prefers dc1, never sends to dc2.
async fn dc1_session(cluster: &VarveCluster) -> Result<Session, Box<dyn std::error::Error>> {
    let policy = DefaultPolicy::builder()
        .prefer_datacenter("dc1".to_string())
        .token_aware(true)
        .permit_dc_failover(false)
        .build();
    let profile = no_retry_profile().load_balancing_policy(policy).build();
    let session = SessionBuilder::new()
        .known_node(cluster.contact_point(1))
        .default_execution_profile_handle(profile.into_handle())
        .build()
        .await?;
    Ok(session)
}

/// The table's prepared INSERT and SELECT.
struct Table {
    insert: PreparedStatement,
    select: PreparedStatement,
}

impl Table {
    async fn prepare(session: &Session) -> Result<Table, Box<dyn std::error::Error>> {
        Ok(Table {
            insert: session
                .prepare("INSERT INTO ks.t (k, v) VALUES (?, ?)")
                .await?,
            select: session.prepare("SELECT v FROM ks.t WHERE k = ?").await?,
        })
    }
}

/// `prepared` at `level`, run once; panics if it took longer than
/// [`PROMPT`], whatever its outcome.
async fn prompt(
    session: &Session,
    prepared: &PreparedStatement,
    level: Consistency,
    values: impl SerializeRow,
) -> Result<QueryResult, ExecutionError> {
    let mut statement = prepared.clone();
    statement.set_consistency(level);
    let started = Instant::now();
    let outcome = session.execute_unpaged(&statement, values).await;
    let took = started.elapsed();
    assert!(
        took < PROMPT,
        "{} at {level:?} took {took:?}: it waited for the cut-off side",
        prepared.get_statement()
    );
    outcome
}

/// `v` of row `k` as `session` reads it at `level` (`None` if absent or
/// failed).
async fn read(session: &Session, table: &Table, level: Consistency, k: i32) -> Option<String> {
    let mut select = table.select.clone();
    select.set_consistency(level);
    let rows = session.execute_unpaged(&select, (k,)).await.ok()?;
    let row = rows.into_rows_result().ok()?.maybe_first_row::<(String,)>();
    row.ok().flatten().map(|(v,)| v)
}

/// The value key `k` was written with.
fn written(k: i32) -> String {
    if k == 0 {
        "both".to_string()
    } else {
        format!("cut-{k}")
    }
}

/// Every key written, from the one before the cut to the last.
fn all_keys() -> RangeInclusive<i32> {
    0..=*KEYS_AFTER_CONVICTION.end()
}

/// The sum over `nodes` of a counter (all its labels summed).
fn counter_sum(cluster: &VarveCluster, nodes: &[usize], name: &str) -> u64 {
    let sample = |text: &str| {
        let labelled: u64 = metrics::by_label(text, name, "placement").values().sum();
        labelled + metrics::value(text, name)
    };
    nodes
        .iter()
        .map(|&node| sample(&metrics::fetch(&cluster.admin_address(node))))
        .sum()
}

/// Whether every node of `observers` shows every node of `observed` in
/// `state`.
fn all_see(cluster: &VarveCluster, observers: &[usize], observed: &[usize], state: &str) -> bool {
    observers.iter().all(|&n| cluster.sees(n, observed, state))
}

/// Writes and reads at LOCAL_QUORUM through dc1 while the cut is fresh.
async fn local_quorum_goes_on(session: &Session, table: &Table) -> TestResult {
    for k in KEYS_BEFORE_CONVICTION {
        prompt(
            session,
            &table.insert,
            Consistency::LocalQuorum,
            (k, written(k)),
        )
        .await?;
    }
    for k in 0..=*KEYS_BEFORE_CONVICTION.end() {
        let rows = prompt(session, &table.select, Consistency::LocalQuorum, (k,)).await?;
        let (v,) = rows.into_rows_result()?.single_row::<(String,)>()?;
        assert_eq!(v, written(k), "LOCAL_QUORUM read of {k} during the cut");
    }
    Ok(())
}

/// Once dc1 has convicted dc2: the levels that need dc2 are Unavailable
/// at once, LOCAL_QUORUM still goes on.
async fn levels_needing_dc2_are_unavailable(session: &Session, table: &Table) -> TestResult {
    for (level, required, alive) in [(Consistency::EachQuorum, 2, 0), (Consistency::Quorum, 4, 3)] {
        let outcome = prompt(session, &table.insert, level, (99, "x")).await;
        let error = outcome
            .err()
            .unwrap_or_else(|| panic!("{level:?} succeeded"));
        assert_eq!(
            unavailable_fields(&error),
            Some((level, required, alive)),
            "{level:?}: {error}"
        );
    }
    for k in KEYS_AFTER_CONVICTION {
        prompt(
            session,
            &table.insert,
            Consistency::LocalQuorum,
            (k, written(k)),
        )
        .await?;
    }
    Ok(())
}

/// Whether node `node` (of dc2) reads every key as written, at LOCAL_ONE.
async fn holds_every_write(cluster: &VarveCluster, node: usize, table: &Table) -> bool {
    let session = pinned(cluster, node).await;
    for k in all_keys() {
        if read(&session, table, Consistency::LocalOne, k).await != Some(written(k)) {
            return false;
        }
    }
    true
}

/// Once the cut healed: dc1 sees dc2 UP again, every dc2 node comes to
/// read every write, and dc1 replayed a hint per write made during the
/// cut and dc2 replica (`replayed_before_heal`: the count at the heal).
async fn dc2_catches_up_by_hints(cluster: &VarveCluster, table: &Table, replayed_before_heal: u64) {
    let back = eventually(EVENTUALLY_TIMEOUT, || async {
        all_see(cluster, &DC1, &DC2, "UN")
    });
    assert!(
        back.await,
        "dc2 not UP again for dc1: node 1 sees {:?}",
        cluster.node_states(1)
    );
    for node in DC2 {
        let caught_up = eventually(EVENTUALLY_TIMEOUT, || {
            holds_every_write(cluster, node, table)
        });
        assert!(
            caught_up.await,
            "node {node} misses writes made during the cut"
        );
    }
    // Each write made during the cut, hinted for each of dc2's three
    // replicas (those before the conviction once they timed out).
    let hinted = 3 * (KEYS_BEFORE_CONVICTION.count() + KEYS_AFTER_CONVICTION.count()) as u64;
    let replayed = || counter_sum(cluster, &DC1, HINTS_REPLAYED) - replayed_before_heal;
    let all_replayed = eventually(EVENTUALLY_TIMEOUT, || async { replayed() >= hinted });
    assert!(
        all_replayed.await,
        "{} hints replayed, {hinted} expected",
        replayed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_quorum_goes_on_while_the_other_dc_is_cut_off_and_hints_catch_it_up() -> TestResult {
    if !netcut::available() {
        eprintln!("skipped: network cuts need root (ip rule)");
        return Ok(());
    }
    let started = Instant::now();
    let dir = fresh_dir("dcs");
    let mut cluster = VarveCluster::start_in_dcs(&dir, NODES, DCS, PORTS, &[]);
    eprintln!("six nodes started in {:?}", started.elapsed());
    let session = dc1_session(&cluster).await?;
    create_table(&session, REPLICATION).await?;
    session.refresh_metadata().await?;
    let table = Table::prepare(&session).await?;
    assert!(
        eventually(EVENTUALLY_TIMEOUT, || async {
            connected_to_all(&session, NODES)
        })
        .await
    );
    let both = (0, written(0));
    prompt(&session, &table.insert, Consistency::EachQuorum, both).await?;

    let mut cuts = Cuts::new(PORTS.storage);
    cuts.cut(&addresses(&DC1), &addresses(&DC2));
    let dc2_coordinated = counter_sum(&cluster, &DC2, COORDINATOR_REQUESTS);
    local_quorum_goes_on(&session, &table).await?;
    let convicted = eventually(EVENTUALLY_TIMEOUT, || async {
        all_see(&cluster, &DC1, &DC2, "DN")
    });
    assert!(
        convicted.await,
        "dc2 not DOWN for dc1: node 1 sees {:?}",
        cluster.node_states(1)
    );
    levels_needing_dc2_are_unavailable(&session, &table).await?;
    let grew = counter_sum(&cluster, &DC2, COORDINATOR_REQUESTS) - dc2_coordinated;
    assert_eq!(
        grew, 0,
        "dc2 coordinated requests of a session that prefers dc1"
    );
    let replayed_before_heal = counter_sum(&cluster, &DC1, HINTS_REPLAYED);

    drop(cuts);
    dc2_catches_up_by_hints(&cluster, &table, replayed_before_heal).await;

    drop(session);
    cluster.stop();
    eprintln!("two-DC test: {:?}", started.elapsed());
    Ok(())
}
