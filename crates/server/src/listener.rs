//! The accept loop: one task per connection, at most
//! [`crate::ServerConfig::max_connections`] at once.
//!
//! Past the limit Cassandra closes the new connection at once
//! (`ConnectionLimitHandler`), which drivers report as a bare connection
//! reset. Varve instead reads the connection's first frame (bounded by
//! [`REJECTED_CONNECTION_TIMEOUT`]), answers it with an Overloaded error
//! that names the limit, and closes: drivers see the same failure, with a
//! reason. (A TLS client's first bytes are a ClientHello, which is no
//! frame: its connection is closed without a clear-text answer.)
//!
//! With client TLS on, the handshake (see [`crate::tls`]) runs in the
//! connection's own task, holding its slot, so a slow handshake never
//! holds up the accept loop.

use std::sync::Arc;

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch, Semaphore};
use varve_protocol::{encode_frame, Compression, Response};

use crate::errors;
use crate::limits::REJECTED_CONNECTION_TIMEOUT;
use crate::Shared;

/// Accepts until shutdown; every connection task holds a clone of `done`,
/// so the caller learns when all have finished.
pub async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    shutdown: watch::Receiver<bool>,
    done: mpsc::Sender<()>,
) {
    let slots = Arc::new(Semaphore::new(
        shared.config.max_connections.min(Semaphore::MAX_PERMITS),
    ));
    let mut stop = shutdown.clone();
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = stop.changed() => return,
        };
        let (stream, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                // EMFILE and friends: back off instead of spinning.
                tracing::warn!("accept failed: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                continue;
            }
        };
        match Arc::clone(&slots).try_acquire_owned() {
            Ok(permit) => {
                let shared = Arc::clone(&shared);
                let shutdown = shutdown.clone();
                let done = done.clone();
                tokio::spawn(async move {
                    shared.metrics.connection_opened();
                    tracing::debug!("connection from {peer}");
                    let _ = stream.set_nodelay(true);
                    let halves = match &shared.tls {
                        None => Some(crate::tls::accept::plain(stream)),
                        Some(tls) => crate::tls::accept::accept(stream, tls, peer).await,
                    };
                    if let Some(halves) = halves {
                        crate::connection::serve(halves, Some(peer), Arc::clone(&shared), shutdown)
                            .await;
                    }
                    shared.metrics.connection_closed();
                    drop(permit);
                    drop(done);
                });
            }
            Err(_) => {
                shared.metrics.connection_rejected();
                shared.metrics.overloaded();
                tracing::warn!(
                    "refusing connection from {peer}: limit of {} connections reached",
                    shared.config.max_connections
                );
                let limit = shared.config.max_connections;
                tokio::spawn(reject(stream, limit));
            }
        }
    }
}

/// Answers the first frame of an over-limit connection, then closes it.
async fn reject(mut stream: TcpStream, limit: usize) {
    let answer = async {
        let mut buf = BytesMut::with_capacity(64);
        while buf.len() < varve_protocol::HEADER_LEN {
            if stream.read_buf(&mut buf).await.ok()? == 0 {
                return None;
            }
        }
        // A TLS client's ClientHello: no frame to answer in clear text.
        if buf.first() == Some(&crate::tls::TLS_HANDSHAKE_RECORD) {
            return None;
        }
        // Header only; the body is never read.
        let header = varve_protocol::FrameHeader::decode(&buf).ok()?;
        if !varve_protocol::is_supported_version(header.version) {
            // v1/v2 headers carry a one-byte stream id at offset 2.
            let id = if header.version <= 2 {
                buf.get(2).map_or(0, |b| i16::from(*b as i8))
            } else {
                header.stream
            };
            return Some(varve_protocol::encode_unsupported_version_error(
                header.version,
                id,
            ));
        }
        let body = errors::overloaded(format!("Too many connections to this node (limit {limit})"));
        Some(encode_frame(
            header.version,
            header.stream,
            &[],
            &Response::Error(body),
            Compression::None,
        ))
    };
    if let Ok(Some(bytes)) = tokio::time::timeout(REJECTED_CONNECTION_TIMEOUT, answer).await {
        let _ = stream.write_all(&bytes).await;
    }
    let _ = stream.shutdown().await;
}
