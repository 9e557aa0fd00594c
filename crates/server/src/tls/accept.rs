//! One accepted socket made into the byte stream a CQL connection reads
//! and writes: plain, or TLS after a handshake bounded by the settings'
//! `handshake_timeout`.
//!
//! In `optional` mode the first byte decides: a TLS record carrying a
//! handshake starts with [`TLS_HANDSHAKE_RECORD`] (0x16), a CQL frame with
//! its protocol version (0x03 to 0x05, or a higher one the node answers
//! with its supported versions), so the byte is peeked, not consumed, and
//! the connection goes the one way or the other. A client that sends
//! nothing within the timeout is closed.

use std::net::SocketAddr;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_rustls::TlsAcceptor;

use super::drain::Drain;
use super::{ClientTls, TLS_HANDSHAKE_RECORD};

/// The two halves of a client's byte stream.
pub struct Halves {
    pub reader: Box<dyn AsyncRead + Send + Unpin>,
    pub writer: Box<dyn AsyncWrite + Send + Unpin>,
}

/// A plain socket's halves.
pub fn plain(stream: TcpStream) -> Halves {
    let (reader, writer) = stream.into_split();
    Halves {
        reader: Box::new(reader),
        writer: Box::new(writer),
    }
}

/// The stream to serve, or `None` when the connection was closed: the
/// handshake failed or took too long (logged once, without secrets), or
/// the client left.
pub async fn accept(stream: TcpStream, tls: &ClientTls, peer: SocketAddr) -> Option<Halves> {
    let timeout = tls.settings().handshake_timeout;
    let deadline = tokio::time::Instant::now() + timeout;
    if tls.settings().optional {
        let mut first = [0u8; 1];
        match tokio::time::timeout_at(deadline, stream.peek(&mut first)).await {
            Ok(Ok(1)) if first[0] != TLS_HANDSHAKE_RECORD => return Some(plain(stream)),
            Ok(Ok(1)) => {}
            Ok(_) => return None,
            Err(_) => {
                tracing::info!("closing a connection from {peer}: nothing sent within {timeout:?}");
                return None;
            }
        }
    }
    let acceptor = TlsAcceptor::from(tls.config());
    match tokio::time::timeout_at(deadline, acceptor.accept(stream)).await {
        Ok(Ok(stream)) => {
            let (reader, writer) = tokio::io::split(stream);
            Some(Halves {
                reader: Box::new(Drain::new(reader)),
                writer: Box::new(writer),
            })
        }
        Ok(Err(e)) => {
            tracing::info!("TLS handshake with {peer} failed: {e}");
            None
        }
        Err(_) => {
            tracing::info!(
                "closing a connection from {peer}: TLS handshake not done within {timeout:?}"
            );
            None
        }
    }
}
