//! Internode TLS (cassandra.yaml `server_encryption_options` with
//! `internode_encryption: all`; docs/design/security.md, section 11): a
//! [`Network`] that wraps another one and speaks TLS on every connection
//! it opens or accepts, with mutual authentication: each node presents the
//! certificate of its keystore, and accepts only a peer whose certificate
//! chains to its truststore.
//!
//! - [`config`]: the rustls server and client configurations, rebuilt
//!   when the keystore or truststore changes (varve-tls's `Reloading`,
//!   looked at when a connection opens or is accepted);
//! - [`lazy`]: the accepted stream, whose handshake runs on first use in
//!   the connection's own task (the accept loop never waits on a peer),
//!   bounded by the internode handshake timeout that already bounds HELLO.

mod config;
mod lazy;

use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use rustls::pki_types::ServerName;
use tokio_rustls::{TlsAcceptor, TlsConnector};
use varve_tls::reload::Reloading;

use super::{BoxFuture, BoxStream, Listener, Network};

/// The internode TLS settings, as the node's configuration resolved them.
#[derive(Debug, Clone)]
pub struct InternodeTlsSettings {
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
        let files = vec![settings.keystore.clone(), settings.truststore.clone()];
        let for_build = settings.clone();
        let configs = Reloading::new(
            "internode TLS",
            files,
            Box::new(move || config::build(&for_build).map(Arc::new)),
        )?;
        Ok(TlsNetwork {
            inner,
            configs: Arc::new(configs),
        })
    }
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
            let name = ServerName::IpAddress(addr.ip().into());
            let connector = TlsConnector::from(Arc::clone(&self.configs.current().client));
            let tls = connector.connect(name, stream).await?;
            Ok(Box::new(tls) as BoxStream)
        })
    }
}

#[cfg(test)]
mod tests;
