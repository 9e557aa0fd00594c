//! The `scylla` crate against a real three-node cluster (`varve cluster
//! start`) with PasswordAuthenticator, CassandraAuthorizer and TLS on both
//! sides (client TLS, and `internode_encryption: all` with client
//! certificates between the nodes): a role created on node 1 logs in over
//! TLS through every node at once and is refused a SELECT; once node 1
//! grants it SELECT, every node lets it read, with no wait or retry in
//! between. A client without TLS is refused.
//!
//! Each session talks to one node only (an allow-list host filter), and
//! checks so through `system.local`.

// Its single-node helper (`VarveProcess`) is not used here.
#[allow(dead_code)]
mod support;

use std::ffi::OsString;
use std::net::IpAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::errors::{DbError, ExecutionError, RequestAttemptError};
use scylla::policies::host_filter::AllowListHostFilter;
use support::cluster::{ClusterPorts, VarveCluster};
use support::tls::{certificates, client_tls, Certificates};

type TestResult = Result<(), Box<dyn std::error::Error>>;

/// Ports no other test uses (the Python cluster tests have their own).
const PORTS: ClusterPorts = ClusterPorts {
    native: 19642,
    admin: 19780,
    storage: 17600,
};
const NODES: usize = 3;
const REPLICATION: &str = "{'class': 'SimpleStrategy', 'replication_factor': 3}";
const SUPERUSER: (&str, &str) = ("cassandra", "cassandra");
const APP: (&str, &str) = ("app", "4pp-secret");

/// The nodes' cassandra.yaml: logins, permissions, client TLS, and mutual
/// TLS between the nodes (the shape tests/python/test_cluster_tls.py
/// writes).
fn secured_config(certs: &Certificates) -> String {
    format!(
        "server_encryption_options:\n  internode_encryption: all\n  keystore: {keystore}\n  \
         truststore: {truststore}\n  require_client_auth: true\n\
         authenticator: PasswordAuthenticator\nauthorizer: CassandraAuthorizer\n\
         client_encryption_options:\n  enabled: true\n  keystore: {keystore}\n",
        keystore = certs.keystore.display(),
        truststore = certs.truststore.display(),
    )
}

/// Certificates and config in `dir`, then the cluster in `dir/cluster`.
fn start_secured_cluster(dir: &Path) -> (VarveCluster, Certificates) {
    let addresses: Vec<String> = (1..=NODES).map(VarveCluster::address).collect();
    let addresses: Vec<&str> = addresses.iter().map(String::as_str).collect();
    let certs = certificates(dir, &addresses);
    let config = dir.join("cassandra.yaml");
    std::fs::write(&config, secured_config(&certs)).expect("writing the config");
    let args: [OsString; 2] = ["--config".into(), config.into_os_string()];
    let cluster = VarveCluster::start(&dir.join("cluster"), NODES, PORTS, &args);
    (cluster, certs)
}

/// A session that connects to node `node` only, over TLS when `tls` is
/// given.
async fn login_to(
    cluster: &VarveCluster,
    node: usize,
    tls: Option<&Arc<rustls::ClientConfig>>,
    (user, password): (&str, &str),
) -> Result<Session, String> {
    let contact = cluster.contact_point(node);
    let only_this_node = AllowListHostFilter::new([contact.as_str()]).map_err(|e| e.to_string())?;
    SessionBuilder::new()
        .known_node(&contact)
        .host_filter(Arc::new(only_this_node))
        .tls_context(tls.map(Arc::clone))
        .user(user, password)
        .build()
        .await
        .map_err(|e| format!("logging in to node {node} as {user}: {e}"))
}

/// The node that answered: `rpc_address` of `system.local`.
async fn answering_node(session: &Session) -> Result<IpAddr, Box<dyn std::error::Error>> {
    let result = session
        .query_unpaged("SELECT rpc_address FROM system.local", ())
        .await?;
    let (address,) = result.into_rows_result()?.single_row::<(IpAddr,)>()?;
    Ok(address)
}

/// `v` of the row `k = 1` of `sks.t`.
async fn read_row(session: &Session) -> Result<String, ExecutionError> {
    let result = session
        .query_unpaged("SELECT v FROM sks.t WHERE k = 1", ())
        .await?;
    let rows = result.into_rows_result().expect("a SELECT returns rows");
    let (v,) = rows.single_row::<(String,)>().expect("one text row");
    Ok(v)
}

/// Whether `e` is the server's Unauthorized answer to a SELECT.
fn is_unauthorized_select(e: &ExecutionError) -> bool {
    matches!(
        e,
        ExecutionError::LastAttemptError(RequestAttemptError::DbError(DbError::Unauthorized, message))
            if message.contains("has no SELECT permission")
    )
}

/// On node 1, as the superuser: the keyspace (on every node), its row,
/// and the role `app` without any permission.
async fn create_schema_and_role(admin: &Session) -> TestResult {
    let create_role = format!(
        "CREATE ROLE {} WITH PASSWORD = '{}' AND LOGIN = true",
        APP.0, APP.1
    );
    for statement in [
        format!("CREATE KEYSPACE sks WITH replication = {REPLICATION}"),
        "CREATE TABLE sks.t (k int PRIMARY KEY, v text)".to_string(),
        "INSERT INTO sks.t (k, v) VALUES (1, 'granted')".to_string(),
        create_role,
    ] {
        admin.query_unpaged(statement, ()).await?;
    }
    Ok(())
}

/// `app`'s session on each node, checked to answer from that node.
async fn app_on_every_node(
    cluster: &VarveCluster,
    tls: &Arc<rustls::ClientConfig>,
) -> Result<Vec<Session>, Box<dyn std::error::Error>> {
    let mut sessions = Vec::new();
    for node in cluster.nodes() {
        let app = login_to(cluster, node, Some(tls), APP).await?;
        let answered = answering_node(&app).await?.to_string();
        assert_eq!(answered, VarveCluster::address(node), "node {node}");
        sessions.push(app);
    }
    Ok(sessions)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_role_made_on_one_node_is_refused_then_granted_on_every_node_at_once() -> TestResult {
    let started = Instant::now();
    let dir = std::env::temp_dir().join(format!("varve-scylla-cluster-{}", std::process::id()));
    let (mut cluster, certs) = start_secured_cluster(&dir);
    let tls = client_tls(&certs.ca_pem);
    eprintln!("cluster started in {:?}", started.elapsed());

    let plain = login_to(&cluster, 2, None, SUPERUSER).await;
    assert!(plain.is_err(), "a client without TLS logged in to node 2");

    let admin = login_to(&cluster, 1, Some(&tls), SUPERUSER).await?;
    create_schema_and_role(&admin).await?;
    // No wait: each statement returned once every node applied it.
    let apps = app_on_every_node(&cluster, &tls).await?;
    for (node, app) in cluster.nodes().zip(&apps) {
        match read_row(app).await {
            Err(e) => assert!(is_unauthorized_select(&e), "node {node}: {e}"),
            Ok(v) => panic!("node {node}: app read {v:?} before any grant"),
        }
    }
    admin
        .query_unpaged(format!("GRANT SELECT ON TABLE sks.t TO {}", APP.0), ())
        .await?;
    for (node, app) in cluster.nodes().zip(&apps) {
        let read = read_row(app).await;
        assert!(
            matches!(&read, Ok(v) if v == "granted"),
            "node {node} after the grant: {read:?}\n{}",
            cluster.logs()
        );
    }

    drop(apps);
    drop(admin);
    cluster.stop();
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!("whole test: {:?}", started.elapsed());
    Ok(())
}
