//! The admin HTTP port: a small HTTP/1.1 responder, one request per
//! connection (`Connection: close`).
//!
//! - `GET /health` → 200 `ok`
//! - `GET /metrics` → 200, Prometheus text of the node's registry
//!   ([`crate::metrics`]), table and compaction metrics synced first
//! - `GET /nodetool/info` → `nodetool info`'s text ([`crate::info`])
//! - `POST /nodetool/flush?keyspace=K&tables=a,b` → flushes memtables
//! - `POST /nodetool/drain` → flushes everything, syncs the commitlog
//! - `POST /nodetool/compact?keyspace=K&tables=a,b` → major compaction
//! - `GET /nodetool/tablestats?keyspace=K&table=T` → nodetool's text
//! - `POST /nodetool/garbagecollect?granularity=ROW|CELL&jobs=N&keyspace=K&tables=a,b`
//!   → rewrites each sstable without what other sstables shadow; answers
//!   when done
//! - `GET /nodetool/compactionstats` → pending and running compactions
//! - `GET /nodetool/status` → every node of the cluster, up or down
//! - `GET /nodetool/describecluster` → name, snitch, partitioner, schema versions
//! - `GET /nodetool/ring` → every node's tokens in order
//! - `GET /nodetool/gossipinfo` → what gossip knows of every node
//! - `POST /nodetool/decommission?force=true|false` → this node gives its
//!   ranges away and leaves the cluster; answers when done (the node then
//!   stops)
//! - `POST /nodetool/cleanup?keyspace=K&tables=a,b` → drops what this node
//!   no longer replicates; answers when done
//! - `POST /nodetool/repair?pr=B&full=B&keyspace=K&tables=a,b` → Merkle
//!   comparison of this node's ranges with their replicas, differences
//!   exchanged; answers when done
//! - `GET /nodetool/netstats` → streams in flight, bytes in and out
//! - `GET /nodetool/getendpoints?keyspace=K&table=T&key=KEY` → the
//!   addresses of the nodes that replicate KEY's partition
//! - `POST /nodetool/removenode?host=ID` → a dead node's ranges restored
//!   from the survivors, then it leaves; answers when done
//! - `POST /nodetool/pausehandoff`, `resumehandoff`, `truncatehints`,
//!   `GET /nodetool/statushandoff` → hint delivery
//! - `POST /nodetool/snapshot?tag=T&keyspaces=a,b&table=X` → flushes and
//!   snapshots (hard links) the tables; `tag` defaults to the time in ms
//! - `GET /nodetool/listsnapshots` → every snapshot on this node's disk
//! - `POST /nodetool/clearsnapshot?tag=T|all=true&keyspaces=a,b` → removes them
//! - `POST /nodetool/import?keyspace=K&table=T&dir=D&copy_data=true` →
//!   checks the sstables of `D` and makes them live in the table
//!   ([`crate::admin_snapshots`])
//!
//! With a token ([`crate::admin_token`]), a request without it is answered
//! 401 before anything else is looked at. With `admin_encryption_options`
//! the port speaks HTTPS only ([`crate::admin_tls`]): the handshake comes
//! before the request, and a client that fails it gets no answer.
//!
//! Query parameters are percent-decoded. Errors of nodetool operations
//! come back as 400 with the message.
//! - any other path → 404; any other method → 405; a malformed or too
//!   large request head → 400.

use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use crate::limits::{HTTP_REQUEST_TIMEOUT, MAX_HTTP_REQUEST_BYTES};
use crate::metrics::Metrics;
use crate::tls::ClientTls;
use varve_query::{Processor, QueryError};

/// What every admin connection shares.
pub struct AdminPort {
    pub metrics: Arc<Metrics>,
    pub processor: Arc<Processor>,
    /// The token every request must carry ([`crate::admin_token`]).
    pub token: Option<Arc<str>>,
    /// HTTPS (`admin_encryption_options`, [`crate::admin_tls`]); `None`:
    /// plain HTTP.
    pub tls: Option<Arc<ClientTls>>,
}

/// Serves the admin port until `shutdown` turns true.
pub async fn serve(
    listener: TcpListener,
    port: Arc<AdminPort>,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    tokio::spawn(connection(stream, peer, Arc::clone(&port)));
                }
                Err(e) => {
                    tracing::warn!("admin accept failed: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
            },
            _ = shutdown.changed() => return,
        }
    }
}

/// One connection: the TLS handshake first when the port is HTTPS, then
/// one request.
async fn connection(stream: TcpStream, peer: std::net::SocketAddr, port: Arc<AdminPort>) {
    let result = match &port.tls {
        None => handle(stream, &port).await,
        Some(tls) => match crate::admin_tls::accept(stream, tls, peer).await {
            Some(stream) => handle(stream, &port).await,
            None => Ok(()),
        },
    };
    if let Err(e) = result {
        tracing::debug!("admin connection: {e}");
    }
}

async fn handle<S>(mut stream: S, port: &AdminPort) -> std::io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin + Send,
{
    let head = match tokio::time::timeout(HTTP_REQUEST_TIMEOUT, read_head(&mut stream)).await {
        Ok(r) => r?,
        Err(_) => return Ok(()),
    };
    let refused = match (&head, &port.token) {
        (Some(head), Some(token)) => !crate::admin_token::authorized(head, token),
        _ => false,
    };
    let metrics = Arc::clone(&port.metrics);
    let processor = Arc::clone(&port.processor);
    let (status, content_type, body) = match head {
        Some(_) if refused => (
            401,
            "text/plain",
            "admin token required (Authorization: Bearer ...)\n".to_string(),
        ),
        // Syncing storage's table and compaction stats reads sstable
        // metadata under locks: off the event loop.
        Some(head) if head.starts_with("GET /metrics") => tokio::task::spawn_blocking(move || {
            processor.sync_metrics();
            respond(&head, &metrics)
        })
        .await
        .unwrap_or((500, "text/plain", "metrics failed\n".to_string())),
        Some(head) if head.starts_with("GET /nodetool/info") => {
            tokio::task::spawn_blocking(move || {
                let text = crate::info::info_text(&processor, &metrics, true);
                (200, "text/plain", text)
            })
            .await
            .unwrap_or((500, "text/plain", "nodetool info failed\n".to_string()))
        }
        Some(head) if head.contains(" /nodetool/") => {
            let head = head.clone();
            tokio::task::spawn_blocking(move || nodetool(&head, &processor))
                .await
                .unwrap_or((500, "text/plain", "nodetool operation failed\n".to_string()))
        }
        Some(head) => respond(&head, &metrics),
        None => (400, "text/plain", "bad request\n".to_string()),
    };
    let reason = match status {
        200 => "OK",
        401 => "Unauthorized",
        404 => "Not Found",
        405 => "Method Not Allowed",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Bad Request",
    };
    let response = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await
}

/// Reads up to the blank line ending the head; `None` when it is too long
/// or the peer closes first.
async fn read_head<S: AsyncRead + Unpin>(stream: &mut S) -> std::io::Result<Option<String>> {
    let mut buf = Vec::with_capacity(512);
    let mut chunk = [0u8; 512];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            buf.truncate(end);
            return Ok(String::from_utf8(buf).ok());
        }
        if buf.len() > MAX_HTTP_REQUEST_BYTES {
            return Ok(None);
        }
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// Status, content type and body for a request head.
fn respond(head: &str, metrics: &Metrics) -> (u16, &'static str, String) {
    let mut parts = head.lines().next().unwrap_or("").split_whitespace();
    let (Some(method), Some(target)) = (parts.next(), parts.next()) else {
        return (400, "text/plain", "bad request\n".to_string());
    };
    let path = target.split('?').next().unwrap_or(target);
    if method != "GET" && method != "HEAD" {
        return (405, "text/plain", "only GET\n".to_string());
    }
    match path {
        "/health" => (200, "text/plain", "ok\n".to_string()),
        // 200 once the node serves CQL; 503 while it joins its cluster.
        "/ready" if metrics.serving() => (200, "text/plain", "ready\n".to_string()),
        "/ready" => (503, "text/plain", "joining\n".to_string()),
        "/metrics" => (200, varve_metrics::CONTENT_TYPE, metrics.render()),
        _ => (404, "text/plain", "not found\n".to_string()),
    }
}

/// The query parameters of a request target.
fn params(target: &str) -> Vec<(String, String)> {
    let Some((_, query)) = target.split_once('?') else {
        return Vec::new();
    };
    query
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| {
            use crate::admin_snapshots::percent_decode;
            (percent_decode(k), percent_decode(v))
        })
        .collect()
}

/// Runs a nodetool operation (blocking: flushes write files).
fn nodetool(head: &str, processor: &Processor) -> (u16, &'static str, String) {
    let mut parts = head.lines().next().unwrap_or("").split_whitespace();
    let (Some(method), Some(target)) = (parts.next(), parts.next()) else {
        return (400, "text/plain", "bad request\n".to_string());
    };
    let path = target.split('?').next().unwrap_or(target);
    let p = params(target);
    let get = |name: &str| {
        p.iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .filter(|v| !v.is_empty())
    };
    if let Some(answer) = crate::admin_snapshots::route(method, path, &get, processor) {
        return answer;
    }
    let result = match (method, path) {
        ("POST", "/nodetool/flush") => {
            let tables: Vec<String> = get("tables")
                .map(|t| t.split(',').map(str::to_string).collect())
                .unwrap_or_default();
            processor
                .flush(get("keyspace").as_deref(), &tables)
                .map(|n| format!("flushed {n} tables\n"))
        }
        ("POST", "/nodetool/drain") => processor.drain().map(|_| "drained\n".to_string()),
        ("POST", "/nodetool/compact") => {
            let tables: Vec<String> = get("tables")
                .map(|t| t.split(',').map(str::to_string).collect())
                .unwrap_or_default();
            processor
                .compact(get("keyspace").as_deref(), &tables)
                .map(|n| format!("compacted {n} tables\n"))
        }
        ("GET", "/nodetool/compactionthroughput") => Ok(format!(
            "Current compaction throughput: {} MiB/s\n",
            processor.compaction_throughput()
        )),
        ("POST", "/nodetool/compactionthroughput") => {
            match get("value").and_then(|v| v.parse::<u64>().ok()) {
                Some(v) => {
                    processor.set_compaction_throughput(v);
                    Ok(String::new())
                }
                None => {
                    return (
                        400,
                        "text/plain",
                        "setcompactionthroughput needs a number of MiB/s\n".to_string(),
                    )
                }
            }
        }
        ("POST", "/nodetool/garbagecollect") => {
            let tables: Vec<String> = get("tables")
                .map(|t| t.split(',').map(str::to_string).collect())
                .unwrap_or_default();
            let granularity = get("granularity").unwrap_or_else(|| "ROW".to_string());
            match get("jobs").map_or(Some(1), |j| j.parse::<usize>().ok()) {
                Some(jobs) => processor
                    .garbage_collect(get("keyspace").as_deref(), &tables, &granularity, jobs)
                    .map(|_| String::new()),
                None => {
                    return (
                        400,
                        "text/plain",
                        "garbagecollect: jobs must be a number\n".to_string(),
                    )
                }
            }
        }
        ("GET", "/nodetool/compactionstats") => Ok(processor.compaction_stats_text()),
        ("GET", "/nodetool/status") => Ok(crate::status::status_text(processor)),
        ("GET", "/nodetool/describecluster") => Ok(crate::status::describe_cluster_text(processor)),
        ("GET", "/nodetool/ring") => Ok(crate::status::ring_text(processor)),
        ("GET", "/nodetool/gossipinfo") => Ok(processor
            .cluster_view()
            .gossip_info()
            .unwrap_or_else(|| "gossip is not running on this node\n".to_string())),
        ("POST", "/nodetool/decommission") => {
            let name = match get("force").as_deref() {
                Some("true") => "decommission-force",
                _ => "decommission",
            };
            processor
                .cluster_view()
                .command(name, &[])
                .unwrap_or_else(|| Err("decommission: this node is not in a cluster".to_string()))
                .map_err(QueryError::Invalid)
        }
        ("POST", "/nodetool/cleanup") => {
            let mut args: Vec<String> = get("keyspace").into_iter().collect();
            args.extend(
                get("tables")
                    .into_iter()
                    .flat_map(|t| t.split(',').map(str::to_string).collect::<Vec<_>>()),
            );
            processor
                .cluster_view()
                .command("cleanup", &args)
                .unwrap_or_else(|| Err("cleanup: this node is not in a cluster".to_string()))
                .map_err(QueryError::Invalid)
        }
        ("POST", "/nodetool/repair") => {
            let flag = |name: &str, yes: &str, no: &str| {
                match get(name).as_deref() {
                    Some("true") => yes,
                    _ => no,
                }
                .to_string()
            };
            let mut args = vec![
                flag("pr", "pr", "all"),
                flag("full", "full", "incremental"),
                get("keyspace").unwrap_or_default(),
            ];
            args.extend(
                get("tables")
                    .into_iter()
                    .flat_map(|t| t.split(',').map(str::to_string).collect::<Vec<_>>()),
            );
            processor
                .cluster_view()
                .command("repair", &args)
                .unwrap_or_else(|| Err("repair: this node is not in a cluster".to_string()))
                .map_err(QueryError::Invalid)
        }
        ("GET", "/nodetool/getendpoints") => {
            let args: Vec<String> = ["keyspace", "table", "key"]
                .iter()
                .map(|name| get(name).unwrap_or_default())
                .collect();
            processor
                .cluster_view()
                .command("getendpoints", &args)
                .unwrap_or_else(|| Err("getendpoints: this node is not in a cluster".to_string()))
                .map_err(QueryError::Invalid)
        }
        ("GET", "/nodetool/netstats") => processor
            .cluster_view()
            .command("netstats", &[])
            .unwrap_or_else(|| Ok("Not sending or receiving any streams.\n".to_string()))
            .map_err(QueryError::Invalid),
        ("POST", "/nodetool/removenode") => processor
            .cluster_view()
            .command("removenode", &get("host").into_iter().collect::<Vec<_>>())
            .unwrap_or_else(|| Err("removenode: this node is not in a cluster".to_string()))
            .map_err(QueryError::Invalid),
        ("POST", "/nodetool/pausehandoff")
        | ("POST", "/nodetool/resumehandoff")
        | ("POST", "/nodetool/truncatehints")
        | ("GET", "/nodetool/statushandoff") => {
            let name = path.trim_start_matches("/nodetool/");
            processor
                .cluster_view()
                .command(name, &[])
                .unwrap_or_else(|| Err(format!("{name}: no hints on a node without a cluster")))
                .map_err(QueryError::Invalid)
        }
        ("GET", "/nodetool/tablestats") => {
            processor.table_stats_text(get("keyspace").as_deref(), get("table").as_deref())
        }
        (
            _,
            "/nodetool/flush"
            | "/nodetool/drain"
            | "/nodetool/compact"
            | "/nodetool/tablestats"
            | "/nodetool/garbagecollect"
            | "/nodetool/compactionstats"
            | "/nodetool/status"
            | "/nodetool/describecluster"
            | "/nodetool/ring"
            | "/nodetool/gossipinfo"
            | "/nodetool/decommission"
            | "/nodetool/cleanup"
            | "/nodetool/removenode"
            | "/nodetool/repair"
            | "/nodetool/netstats"
            | "/nodetool/getendpoints"
            | "/nodetool/pausehandoff"
            | "/nodetool/resumehandoff"
            | "/nodetool/truncatehints"
            | "/nodetool/statushandoff",
        ) => return (405, "text/plain", "wrong method\n".to_string()),
        _ => return (404, "text/plain", "not found\n".to_string()),
    };
    match result {
        Ok(text) => (200, "text/plain", text),
        Err(e) => (400, "text/plain", format!("{e}\n")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes() {
        let m = Metrics::default();
        assert_eq!(respond("GET /health HTTP/1.1\r\nHost: x", &m).0, 200);
        assert_eq!(respond("GET /metrics?x=1 HTTP/1.1", &m).0, 200);
        assert_eq!(respond("GET /nope HTTP/1.1", &m).0, 404);
        assert_eq!(respond("POST /health HTTP/1.1", &m).0, 405);
        assert_eq!(respond("", &m).0, 400);
        assert_eq!(respond("GARBAGE", &m).0, 400);
    }
}
