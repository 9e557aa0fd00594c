//! The `scylla` crate against a real three-node cluster (`varve cluster
//! start`), as issue 18 checks it: from one contact point the driver finds
//! every node, with its data centre and its tokens (those `nodetool ring`
//! shows), and token-aware routing sends each prepared statement to its
//! key's replica: with RF 1, the nodes' counters of coordinated requests
//! (`varve_coordinator_requests_total{placement}`) grow on the replica
//! side only, on more than one node.
//!
//! Failures (a killed node, two of three dead) are in
//! scylla_cluster_failures.rs, two data centres cut apart in
//! scylla_cluster_dcs.rs.

// Its single-node helper (`VarveProcess`) is not used here.
#[allow(dead_code)]
mod support;

use std::collections::HashMap;
use std::time::Instant;

use scylla::client::session::Session;
use scylla::statement::Consistency;
use support::cluster::{fresh_dir, ClusterPorts, VarveCluster};
use support::metrics;
use support::sessions::{
    connected_to_all, create_table, eventually, no_retry_builder, simple_strategy, TestResult,
    EVENTUALLY_TIMEOUT,
};

/// Ports no other test uses.
const PORTS: ClusterPorts = ClusterPorts {
    native: 20442,
    admin: 20580,
    storage: 18400,
};
const NODES: usize = 3;
const COORDINATOR_REQUESTS: &str = "varve_coordinator_requests_total";
/// Statements of each kind (INSERT, SELECT) the test sends.
const ROUTED_STATEMENTS: i32 = 60;

/// The driver, given node 1 alone, knows every node with its data centre
/// and the tokens `nodetool ring` gives it.
fn assert_found_every_node(session: &Session, cluster: &VarveCluster) {
    let state = session.get_cluster_state();
    let mut found: Vec<(String, Option<String>)> = state
        .get_nodes_info()
        .iter()
        .map(|node| (node.address.ip().to_string(), node.datacenter.clone()))
        .collect();
    found.sort();
    let expected: Vec<(String, Option<String>)> = cluster
        .nodes()
        .map(|node| (VarveCluster::address(node), Some("datacenter1".to_string())))
        .collect();
    assert_eq!(found, expected, "the nodes the driver found from node 1");
    assert_eq!(driver_ring(session), cluster.ring(1), "the driver's ring");
}

/// `{address: its tokens, in order}` as the driver's token ring has them.
fn driver_ring(session: &Session) -> HashMap<String, Vec<i64>> {
    let state = session.get_cluster_state();
    let mut tokens: HashMap<String, Vec<i64>> = HashMap::new();
    for (token, node) in state.replica_locator().ring().iter() {
        let address = node.address.ip().to_string();
        tokens.entry(address).or_default().push(token.value());
    }
    for list in tokens.values_mut() {
        list.sort_unstable();
    }
    tokens
}

/// `{node: {placement: count}}` of the coordinator counters.
fn coordinator_requests(cluster: &VarveCluster) -> HashMap<usize, HashMap<String, u64>> {
    cluster
        .nodes()
        .map(|node| {
            let text = metrics::fetch(&cluster.admin_address(node));
            (
                node,
                metrics::by_label(&text, COORDINATOR_REQUESTS, "placement"),
            )
        })
        .collect()
}

/// `{node: (replica, not_replica)}`: how much each counter grew.
fn growth(
    before: &HashMap<usize, HashMap<String, u64>>,
    after: &HashMap<usize, HashMap<String, u64>>,
) -> HashMap<usize, (u64, u64)> {
    let grew = |node: &usize, placement: &str| {
        let count = |side: &HashMap<usize, HashMap<String, u64>>| {
            side.get(node)
                .and_then(|c| c.get(placement))
                .copied()
                .unwrap_or(0)
        };
        count(after) - count(before)
    };
    after
        .keys()
        .map(|node| (*node, (grew(node, "replica"), grew(node, "not_replica"))))
        .collect()
}

/// Prepared INSERTs and SELECTs at ONE of keys `0..ROUTED_STATEMENTS`,
/// each read checked.
async fn run_prepared_statements(session: &Session) -> TestResult {
    let mut insert = session
        .prepare("INSERT INTO ks.t (k, v) VALUES (?, ?)")
        .await?;
    insert.set_consistency(Consistency::One);
    let mut select = session.prepare("SELECT v FROM ks.t WHERE k = ?").await?;
    select.set_consistency(Consistency::One);
    for k in 0..ROUTED_STATEMENTS {
        session
            .execute_unpaged(&insert, (k, format!("v{k}")))
            .await?;
    }
    for k in 0..ROUTED_STATEMENTS {
        let rows = session
            .execute_unpaged(&select, (k,))
            .await?
            .into_rows_result()?;
        let (v,) = rows.single_row::<(String,)>()?;
        assert_eq!(v, format!("v{k}"));
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_contact_point_finds_every_node_and_token_aware_routing_hits_replicas() -> TestResult {
    let started = Instant::now();
    let mut cluster = VarveCluster::start(&fresh_dir("routing"), NODES, PORTS, &[]);
    let session = no_retry_builder()
        .known_node(cluster.contact_point(1))
        .build()
        .await?;
    create_table(&session, &simple_strategy(1)).await?;
    // The keyspace's replication, for the driver's replica computation.
    session.refresh_metadata().await?;

    assert_found_every_node(&session, &cluster);

    // The driver opens its pools to the other nodes in the background;
    // until they are open it sends a statement to whichever node it can.
    assert!(
        eventually(EVENTUALLY_TIMEOUT, || async {
            connected_to_all(&session, NODES)
        })
        .await
    );
    let before = coordinator_requests(&cluster);
    run_prepared_statements(&session).await?;
    let grew = growth(&before, &coordinator_requests(&cluster));

    let replica_total: u64 = grew.values().map(|(replica, _)| replica).sum();
    assert_eq!(replica_total, 2 * ROUTED_STATEMENTS as u64, "{grew:?}");
    assert!(
        grew.values().all(|(_, not_replica)| *not_replica == 0),
        "{grew:?}"
    );
    let nodes_used = grew.values().filter(|(replica, _)| *replica > 0).count();
    assert!(nodes_used >= 2, "keys spread over the nodes: {grew:?}");

    drop(session);
    cluster.stop();
    eprintln!("routing test: {:?}", started.elapsed());
    Ok(())
}
