//! Connecting, and telling what we connected to: `varve` when
//! `system.local` has a `varve_version` column or the node's admin port
//! answers HTTP, `cassandra` when it reports a `release_version`, else
//! `unknown` (the rule of docs/format/run-directory.md).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::num::NonZeroUsize;
use std::time::Duration;

use scylla::client::execution_profile::ExecutionProfile;
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::client::PoolSize;

use crate::config::StressConfig;
use crate::error::{Result, StressError};
use crate::output::summary::Target;

/// How long the admin port probe may take.
const ADMIN_PROBE_TIMEOUT: Duration = Duration::from_millis(500);

/// A session on `c.hosts` with `c.connections` connections per host, the
/// driver's default (token-aware) load balancing, and `c.request_timeout`.
pub async fn connect(c: &StressConfig) -> Result<Session> {
    let connections = NonZeroUsize::new(c.connections)
        .ok_or_else(|| StressError::config("connections", "must be at least 1"))?;
    let profile = ExecutionProfile::builder()
        .consistency(c.consistency)
        .request_timeout(Some(c.request_timeout))
        .build();
    SessionBuilder::new()
        .known_nodes(&c.hosts)
        .pool_size(PoolSize::PerHost(connections))
        .default_execution_profile_handle(profile.into_handle())
        .build()
        .await
        .map_err(|e| StressError::Connect {
            hosts: c.hosts.join(","),
            message: e.to_string(),
        })
}

/// What the session is connected to.
pub async fn detect(session: &Session, c: &StressConfig) -> Target {
    let release_version = query_text(session, "SELECT release_version FROM system.local").await;
    let has_varve_version = query_text(session, "SELECT varve_version FROM system.local")
        .await
        .is_some();
    let product = if has_varve_version || admin_port_answers(c).await {
        "varve"
    } else if release_version.is_some() {
        "cassandra"
    } else {
        "unknown"
    };
    Target {
        hosts: c.hosts.clone(),
        release_version,
        product: product.to_string(),
    }
}

/// The first text column of the first row, if the query succeeds.
pub(crate) async fn query_text(session: &Session, cql: &str) -> Option<String> {
    let result = session.query_unpaged(cql, ()).await.ok()?;
    let rows = result.into_rows_result().ok()?;
    let (value,) = rows.maybe_first_row::<(Option<String>,)>().ok()??;
    value
}

/// True when `GET /health` on the first host's admin port gets an HTTP answer.
async fn admin_port_answers(c: &StressConfig) -> bool {
    let Some(host) = c.hosts.first() else {
        return false;
    };
    let host = host
        .rsplit_once(':')
        .map_or(host.as_str(), |(h, _)| h)
        .to_string();
    let port = c.admin_port;
    tokio::task::spawn_blocking(move || probe_http(&host, port))
        .await
        .unwrap_or(false)
}

fn probe_http(host: &str, port: u16) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let Ok(mut addrs) = (host, port).to_socket_addrs() else {
        return false;
    };
    let Some(addr): Option<SocketAddr> = addrs.next() else {
        return false;
    };
    let Ok(mut stream) = TcpStream::connect_timeout(&addr, ADMIN_PROBE_TIMEOUT) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(ADMIN_PROBE_TIMEOUT));
    let _ = stream.set_write_timeout(Some(ADMIN_PROBE_TIMEOUT));
    if stream.write_all(b"GET /health HTTP/1.0\r\n\r\n").is_err() {
        return false;
    }
    let mut head = [0u8; 5];
    stream.read_exact(&mut head).is_ok() && &head == b"HTTP/"
}
