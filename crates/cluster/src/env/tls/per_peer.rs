//! TLS chosen per peer (`internode_encryption: dc` or `rack`): the
//! network underneath stays plain TCP, and messaging asks this module
//! which connections to wrap (docs/design/security.md, section 11).
//!
//! - Outbound: [`PerPeerTls::must_encrypt`] on the address connected to
//!   decides; TLS is then done by [`PerPeerTls::connect`].
//! - Inbound: one port takes both. [`PerPeerTls::accept`] reads the first
//!   byte: `0x16` opens every TLS record of a handshake (a ClientHello), a
//!   plain internode connection opens with its frame magic (`V`), so the
//!   choice is never wrong. A plain connection is then held to the same
//!   rule on the address its HELLO names: messaging refuses it
//!   (HELLO_REJECT `ENCRYPTION_REQUIRED`) unless that peer's known
//!   location allows clear text.
//! - Where peers are comes from a [`PeerDirectory`] set once membership
//!   runs (gossip's DC and RACK keys); until then, and for every peer it
//!   does not know, TLS is required. [`PerPeerTls::locations_changed`]
//!   tells open connections to look again: a connection opened in TLS to
//!   a peer not known yet is reopened in clear once it is known to be
//!   near, and one opened in clear is reopened in TLS if the peer turns
//!   out to be far.

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use parking_lot::RwLock;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;
use varve_tls::reload::Reloading;

use super::policy::{must_encrypt, InternodeEncryption};
use super::{client_handshake, config, InternodeTlsSettings};
use crate::env::BoxStream;
use crate::ring::Location;

/// The first byte of every TLS handshake record (content type 22).
pub const TLS_HANDSHAKE_RECORD: u8 = 0x16;

/// Where the node listening at an internode address is, as far as this
/// node knows.
pub trait PeerDirectory: Send + Sync {
    fn location(&self, addr: SocketAddr) -> Option<Location>;
}

/// Per-peer internode TLS for one node.
pub struct PerPeerTls {
    mode: InternodeEncryption,
    local: Location,
    configs: Arc<Reloading<config::Configs>>,
    directory: RwLock<Option<Arc<dyn PeerDirectory>>>,
    /// Bumped when what the directory knows changed. A watch, though the
    /// order its waiters wake in is not seeded: per-peer TLS runs over real
    /// TCP only (never in the simulation), and each connection only looks
    /// again, in any order.
    #[allow(clippy::disallowed_types)]
    changes: watch::Sender<u64>,
}

impl fmt::Debug for PerPeerTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PerPeerTls")
            .field("mode", &self.mode)
            .field("local", &self.local)
            .finish_non_exhaustive()
    }
}

impl PerPeerTls {
    /// Reads the files and builds both configurations, as
    /// [`super::TlsNetwork::new`] does; `local` is this node's location.
    #[allow(clippy::disallowed_methods)] // the watch of `changes`
    pub fn new(settings: &InternodeTlsSettings, local: Location) -> varve_tls::Result<PerPeerTls> {
        Ok(PerPeerTls {
            mode: settings.mode,
            local,
            configs: Arc::new(super::reloading(settings)?),
            directory: RwLock::new(None),
            changes: watch::channel(0).0,
        })
    }

    pub fn mode(&self) -> InternodeEncryption {
        self.mode
    }

    /// Where peers' locations come from from now on.
    pub fn set_directory(&self, directory: Arc<dyn PeerDirectory>) {
        *self.directory.write() = Some(directory);
        self.locations_changed();
    }

    /// Tells open connections that peers' locations may have changed.
    pub fn locations_changed(&self) {
        self.changes.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Resolves at each [`PerPeerTls::locations_changed`].
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// Whether a connection with the node listening at `addr` must be TLS.
    pub fn must_encrypt(&self, addr: SocketAddr) -> bool {
        let directory = self.directory.read().clone();
        let peer = directory.and_then(|d| d.location(addr));
        must_encrypt(self.mode, &self.local, peer.as_ref())
    }

    /// The TLS handshake on an outbound connection to `addr`.
    pub async fn connect(&self, stream: BoxStream, addr: SocketAddr) -> io::Result<BoxStream> {
        client_handshake(&self.configs, stream, addr).await
    }

    /// Looks at an accepted connection's first byte: a TLS handshake is
    /// completed (the stream returned is TLS, `true`), anything else is
    /// handed back as it came (`false`). The caller bounds it in time.
    pub async fn accept(&self, mut stream: BoxStream) -> io::Result<(BoxStream, bool)> {
        let mut first = [0u8; 1];
        stream.read_exact(&mut first).await?;
        let rewound = Rewind {
            first: Some(first[0]),
            inner: stream,
        };
        if first[0] != TLS_HANDSHAKE_RECORD {
            return Ok((Box::new(rewound), false));
        }
        let acceptor = TlsAcceptor::from(Arc::clone(&self.configs.current().server));
        let boxed: BoxStream = Box::new(rewound);
        let tls = acceptor.accept(boxed).await?;
        Ok((Box::new(tls), true))
    }
}

/// A stream with one byte already read put back in front.
struct Rewind {
    first: Option<u8>,
    inner: BoxStream,
}

impl AsyncRead for Rewind {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if let Some(byte) = this.first {
            if buf.remaining() == 0 {
                return Poll::Ready(Ok(()));
            }
            buf.put_slice(&[byte]);
            this.first = None;
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for Rewind {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}
