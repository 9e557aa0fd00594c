//! The `scylla` crate logging in to a `varve server` with
//! PasswordAuthenticator and CassandraAuthorizer (docs/design/security.md):
//! the default superuser, a wrong password, and a role refused a table
//! until it is granted SELECT; and the same over TLS
//! (`client_encryption_options`, the driver's `rustls-023` feature), where a
//! plain client is refused.

mod support;

use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::errors::{DbError, ExecutionError, RequestAttemptError};
use support::tls::{certificates, client_tls};
use support::VarveProcess;

type TestResult = Result<(), Box<dyn std::error::Error>>;

const SECURED: &str = "authenticator: PasswordAuthenticator\nauthorizer: CassandraAuthorizer\n";

async fn login(node: &VarveProcess, user: &str, password: &str) -> Result<Session, String> {
    SessionBuilder::new()
        .known_node(node.known_node())
        .user(user, password)
        .build()
        .await
        .map_err(|e| e.to_string())
}

/// Whether `e` is the server's Unauthorized answer.
fn is_unauthorized(e: &ExecutionError) -> bool {
    matches!(
        e,
        ExecutionError::LastAttemptError(RequestAttemptError::DbError(DbError::Unauthorized, _))
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn roles_log_in_and_need_their_permissions() -> TestResult {
    let node = VarveProcess::start_with_config(Some(SECURED));
    let wrong = login(&node, "cassandra", "wrong").await;
    let message = wrong.err().unwrap_or_default();
    assert!(
        message.contains("Provided username cassandra and/or password are incorrect"),
        "{message}"
    );
    let admin = login(&node, "cassandra", "cassandra").await?;
    admin
        .query_unpaged(
            "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
            (),
        )
        .await?;
    admin
        .query_unpaged("CREATE TABLE ks.t (k int PRIMARY KEY, v int)", ())
        .await?;
    admin
        .query_unpaged(
            "CREATE ROLE app WITH PASSWORD = 'secret' AND LOGIN = true",
            (),
        )
        .await?;
    let app = login(&node, "app", "secret").await?;
    let denied = app.query_unpaged("SELECT * FROM ks.t", ()).await;
    match denied {
        Err(e) => assert!(is_unauthorized(&e), "{e}"),
        Ok(_) => panic!("a role without SELECT read the table"),
    }
    admin
        .query_unpaged("GRANT SELECT ON KEYSPACE ks TO app", ())
        .await?;
    app.query_unpaged("SELECT * FROM ks.t", ()).await?;
    let prepared = app.prepare("INSERT INTO ks.t (k, v) VALUES (?, ?)").await?;
    let refused = app.execute_unpaged(&prepared, (1, 1)).await;
    assert!(refused.as_ref().is_err_and(is_unauthorized), "{refused:?}");
    drop(app);
    drop(admin);
    let status = {
        let mut node = node;
        node.stop()
    };
    assert!(status.success(), "varve exited with {status}");
    Ok(())
}

async fn login_tls(
    node: &VarveProcess,
    tls: &std::sync::Arc<rustls::ClientConfig>,
    user: &str,
    password: &str,
) -> Result<Session, String> {
    SessionBuilder::new()
        .known_node(node.known_node())
        .tls_context(Some(std::sync::Arc::clone(tls)))
        .user(user, password)
        .build()
        .await
        .map_err(|e| e.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_role_logs_in_over_tls_and_needs_its_permissions() -> TestResult {
    let dir = std::env::temp_dir().join(format!("varve-scylla-tls-{}", std::process::id()));
    let certs = certificates(&dir, &["127.0.0.1"]);
    let config = format!(
        "{SECURED}client_encryption_options:\n  enabled: true\n  keystore: {}\n",
        certs.keystore.display()
    );
    let node = VarveProcess::start_with_config(Some(&config));
    let tls = client_tls(&certs.ca_pem);
    let plain = login(&node, "cassandra", "cassandra").await;
    assert!(plain.is_err(), "a plain client on the TLS-only port");
    let admin = login_tls(&node, &tls, "cassandra", "cassandra").await?;
    for statement in [
        "CREATE KEYSPACE tks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
        "CREATE TABLE tks.t (k int PRIMARY KEY, v int)",
        "CREATE ROLE tls_app WITH PASSWORD = 'secret' AND LOGIN = true",
        "GRANT SELECT ON KEYSPACE tks TO tls_app",
    ] {
        admin.query_unpaged(statement, ()).await?;
    }
    let app = login_tls(&node, &tls, "tls_app", "secret").await?;
    app.query_unpaged("SELECT * FROM tks.t", ()).await?;
    let refused = app
        .query_unpaged("INSERT INTO tks.t (k, v) VALUES (1, 1)", ())
        .await;
    assert!(refused.as_ref().is_err_and(is_unauthorized), "{refused:?}");
    drop(app);
    drop(admin);
    let status = {
        let mut node = node;
        node.stop()
    };
    assert!(status.success(), "varve exited with {status}");
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
