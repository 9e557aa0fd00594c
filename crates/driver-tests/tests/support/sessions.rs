//! `scylla` sessions and statements for the cluster tests: statements that
//! the driver never retries (so the server's own error reaches the test),
//! sessions pinned to one node, the test table, the fields of an
//! Unavailable error, and polling until a condition holds.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use scylla::client::execution_profile::{ExecutionProfile, ExecutionProfileBuilder};
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::errors::{DbError, ExecutionError, RequestAttemptError};
use scylla::policies::host_filter::AllowListHostFilter;
use scylla::policies::retry::FallthroughRetryPolicy;
use scylla::statement::unprepared::Statement;
use scylla::statement::Consistency;

use super::cluster::VarveCluster;

pub type TestResult = Result<(), Box<dyn std::error::Error>>;

/// How long a state the test waits for (a node seen DOWN, a hint
/// delivered) may take to come.
pub const EVENTUALLY_TIMEOUT: Duration = Duration::from_secs(30);
/// How often [`eventually`] checks.
const POLL_INTERVAL: Duration = Duration::from_millis(200);

/// A profile that never retries: every error is the server's answer to
/// the one attempt.
pub fn no_retry_profile() -> ExecutionProfileBuilder {
    ExecutionProfile::builder().retry_policy(Arc::new(FallthroughRetryPolicy::new()))
}

/// A session builder with [`no_retry_profile`] as its default profile.
pub fn no_retry_builder() -> SessionBuilder {
    let profile = no_retry_profile().build();
    SessionBuilder::new().default_execution_profile_handle(profile.into_handle())
}

/// A session that sends everything to node `node` of `cluster` (an
/// allow-list host filter), without retries.
pub async fn pinned(cluster: &VarveCluster, node: usize) -> Session {
    let contact = cluster.contact_point(node);
    let only_this_node =
        AllowListHostFilter::new([contact.as_str()]).expect("a valid node address");
    no_retry_builder()
        .known_node(&contact)
        .host_filter(Arc::new(only_this_node))
        .build()
        .await
        .unwrap_or_else(|e| panic!("connecting to node {node}: {e}"))
}

/// SimpleStrategy replication with `rf` replicas.
pub fn simple_strategy(rf: usize) -> String {
    format!("{{'class': 'SimpleStrategy', 'replication_factor': {rf}}}")
}

/// Keyspace `ks` with `replication` and table `ks.t (k int, v text)`.
pub async fn create_table(session: &Session, replication: &str) -> TestResult {
    session
        .query_unpaged(
            format!("CREATE KEYSPACE ks WITH replication = {replication}"),
            (),
        )
        .await?;
    session
        .query_unpaged("CREATE TABLE ks.t (k int PRIMARY KEY, v text)", ())
        .await?;
    Ok(())
}

/// Whether the driver knows `nodes` nodes and holds open connections to
/// each.
pub fn connected_to_all(session: &Session, nodes: usize) -> bool {
    let state = session.get_cluster_state();
    let known = state.get_nodes_info();
    known.len() == nodes && known.iter().all(|node| node.is_connected())
}

/// `cql` at `consistency`.
pub fn statement(cql: &str, consistency: Consistency) -> Statement {
    let mut statement = Statement::new(cql);
    statement.set_consistency(consistency);
    statement
}

/// `(consistency, required, alive)` of the server's Unavailable, or `None`
/// for any other outcome.
pub fn unavailable_fields(error: &ExecutionError) -> Option<(Consistency, i32, i32)> {
    match error {
        ExecutionError::LastAttemptError(RequestAttemptError::DbError(
            DbError::Unavailable {
                consistency,
                required,
                alive,
            },
            _,
        )) => Some((*consistency, *required, *alive)),
        _ => None,
    }
}

/// Whether `check` holds within `timeout`, checked every
/// [`POLL_INTERVAL`].
pub async fn eventually<F, Fut>(timeout: Duration, mut check: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if check().await {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}
