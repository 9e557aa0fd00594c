//! Internode TLS (cassandra.yaml `server_encryption_options`;
//! docs/design/security.md, section 11), always with mutual
//! authentication: each node presents the certificate of its keystore, and
//! accepts only a peer whose certificate chains to its truststore.
//!
//! With `internode_encryption: all`, [`TlsNetwork`] is a [`Network`] that
//! wraps another one and speaks TLS on every connection it opens or
//! accepts. With `dc` or `rack`, the network stays plain and messaging
//! wraps the connections that need it ([`PerPeerTls`]).
//!
//! - [`policy`]: which connections must be TLS (the pure decision);
//! - [`per_peer`]: TLS for some peers and not others, one port for both;
//! - [`config`]: the rustls server and client configurations, rebuilt
//!   when the keystore or truststore changes (varve-tls's `Reloading`,
//!   looked at when a connection opens or is accepted);
//! - [`lazy`]: the accepted stream, whose handshake runs on first use in
//!   the connection's own task (the accept loop never waits on a peer),
//!   bounded by the internode handshake timeout that already bounds HELLO.

mod config;
mod lazy;
pub mod per_peer;
pub mod policy;

use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use rustls::pki_types::ServerName;
use tokio_rustls::{TlsAcceptor, TlsConnector};
use varve_tls::reload::Reloading;

use super::{BoxFuture, BoxStream, Listener, Network};

pub use per_peer::{PeerDirectory, PerPeerTls};
pub use policy::{must_encrypt, InternodeEncryption};

/// The internode TLS settings, as the node's configuration resolved them.
#[derive(Debug, Clone)]
pub struct InternodeTlsSettings {
    /// Which connections are TLS.
    pub mode: InternodeEncryption,
    /// PEM: the node's private key and certificate chain.
    pub keystore: PathBuf,
    /// PEM: the certificates peers' certificates must chain to.
    pub truststore: PathBuf,
    /// `TLSv1.2`, `TLSv1.3`; empty: both.
    pub protocols: Vec<String>,
    /// IANA names; empty: rustls's defaults.
    pub cipher_suites: Vec<String>,
    /// `require_endpoint_verification`: a peer's certificate must also name
    /// the address connected to (an IP subject alternative name).
    pub require_endpoint_verification: bool,
}

/// TLS over `inner`.
pub struct TlsNetwork {
    inner: Arc<dyn Network>,
    /// Both sides' configurations, rebuilt when the files change.
    configs: Arc<Reloading<config::Configs>>,
}

impl TlsNetwork {
    /// Reads the files and builds both configurations; an error names the
    /// cassandra.yaml key, and the node must not start.
    pub fn new(
        inner: Arc<dyn Network>,
        settings: &InternodeTlsSettings,
    ) -> varve_tls::Result<Self> {
        Ok(TlsNetwork {
            inner,
            configs: Arc::new(reloading(settings)?),
        })
    }
}

/// Both sides' configurations, rebuilt when the files change.
fn reloading(settings: &InternodeTlsSettings) -> varve_tls::Result<Reloading<config::Configs>> {
    let files = vec![settings.keystore.clone(), settings.truststore.clone()];
    let for_build = settings.clone();
    Reloading::new(
        "internode TLS",
        files,
        Box::new(move || config::build(&for_build).map(Arc::new)),
    )
}

/// The connecting side's TLS handshake with the node at `addr`.
async fn client_handshake(
    configs: &Reloading<config::Configs>,
    stream: BoxStream,
    addr: SocketAddr,
) -> io::Result<BoxStream> {
    let name = ServerName::IpAddress(addr.ip().into());
    let connector = TlsConnector::from(Arc::clone(&configs.current().client));
    let tls = connector.connect(name, stream).await?;
    Ok(Box::new(tls) as BoxStream)
}

struct TlsListener {
    inner: Box<dyn Listener>,
    configs: Arc<Reloading<config::Configs>>,
}

impl Listener for TlsListener {
    fn accept(&self) -> BoxFuture<'_, io::Result<(BoxStream, SocketAddr)>> {
        Box::pin(async move {
            let (stream, addr) = self.inner.accept().await?;
            let acceptor = TlsAcceptor::from(Arc::clone(&self.configs.current().server));
            let stream = lazy::LazyServerTls::new(acceptor.accept(stream));
            Ok((Box::new(stream) as BoxStream, addr))
        })
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }
}

impl Network for TlsNetwork {
    fn bind(&self, addr: SocketAddr) -> BoxFuture<'_, io::Result<Box<dyn Listener>>> {
        Box::pin(async move {
            let inner = self.inner.bind(addr).await?;
            Ok(Box::new(TlsListener {
                inner,
                configs: Arc::clone(&self.configs),
            }) as Box<dyn Listener>)
        })
    }

    /// Opens the connection and does the TLS handshake (within the
    /// caller's connect timeout).
    fn connect(&self, addr: SocketAddr) -> BoxFuture<'_, io::Result<BoxStream>> {
        Box::pin(async move {
            let stream = self.inner.connect(addr).await?;
            client_handshake(&self.configs, stream, addr).await
        })
    }
}

#[cfg(test)]
mod tests;
