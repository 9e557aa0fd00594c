//! HTTPS on the admin port (`admin_encryption_options`;
//! docs/design/security.md, section 12): an accepted socket made into a
//! TLS stream before [`crate::admin`] reads the request.
//!
//! The admin port is either plain HTTP or HTTPS only, never both: there is
//! no first-byte peek as in the CQL port's `optional` mode. A client that
//! speaks plain HTTP to an HTTPS port fails the handshake and is closed
//! without an HTTP answer; so is one without a certificate the truststore
//! signed when `require_client_auth` is true. The handshake has the
//! settings' `handshake_timeout`. A failure is logged at debug level only:
//! the port may be reachable by anyone, and a scanner must not fill the log.
//!
//! The configuration comes from [`ClientTls`], so new certificate files
//! are used by the next handshake without a restart, as on the CQL port.

use std::net::SocketAddr;

use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

use crate::tls::ClientTls;

/// The TLS stream to serve, or `None` when the handshake failed or took
/// longer than the settings allow (the socket is then dropped: closed).
pub async fn accept(
    stream: TcpStream,
    tls: &ClientTls,
    peer: SocketAddr,
) -> Option<TlsStream<TcpStream>> {
    let timeout = tls.settings().handshake_timeout;
    let acceptor = TlsAcceptor::from(tls.config());
    match tokio::time::timeout(timeout, acceptor.accept(stream)).await {
        Ok(Ok(stream)) => Some(stream),
        Ok(Err(e)) => {
            tracing::debug!("admin port: TLS handshake with {peer} failed: {e}");
            None
        }
        Err(_) => {
            tracing::debug!("admin port: TLS handshake with {peer} not done within {timeout:?}");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, ServerName};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    use super::*;
    use crate::tls::ClientTlsSettings;

    /// A self-signed keystore for `localhost` in a fresh directory, and the
    /// certificate's PEM (the client trusts it).
    fn keystore(name: &str) -> (std::path::PathBuf, String) {
        let dir =
            std::env::temp_dir().join(format!("varve-admin-tls-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let certified =
            rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).expect("cert");
        let cert_pem = certified.cert.pem();
        let path = dir.join("admin.pem");
        let pem = format!("{}{cert_pem}", certified.key_pair.serialize_pem());
        std::fs::write(&path, pem).expect("write keystore");
        (path, cert_pem)
    }

    fn connector(ca_pem: &str) -> tokio_rustls::TlsConnector {
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
            roots.add(cert.expect("pem")).expect("root");
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
        tokio_rustls::TlsConnector::from(Arc::new(config))
    }

    /// Accepts one connection on `listener`; whether TLS was set up.
    async fn accept_one(listener: &TcpListener, tls: &ClientTls) -> bool {
        let (stream, peer) = listener.accept().await.expect("accept");
        match accept(stream, tls, peer).await {
            Some(mut s) => {
                let mut buf = [0u8; 4];
                s.read_exact(&mut buf).await.expect("read");
                s.write_all(&buf).await.expect("echo");
                s.shutdown().await.expect("close");
                true
            }
            None => false,
        }
    }

    #[tokio::test]
    async fn a_plain_client_is_closed_and_a_tls_client_is_served_after_it() {
        let (path, ca_pem) = keystore("plain-then-tls");
        let tls = ClientTls::new(ClientTlsSettings::new(&path)).expect("tls");
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");

        let plain = tokio::spawn(async move {
            let mut s = TcpStream::connect(addr).await.expect("connect");
            s.write_all(b"GET /health HTTP/1.1\r\n\r\n")
                .await
                .expect("send");
            let mut answer = Vec::new();
            let _ = s.read_to_end(&mut answer).await;
            answer
        });
        assert!(
            !accept_one(&listener, &tls).await,
            "plain HTTP is no handshake"
        );
        let answer = plain.await.expect("plain client");
        assert!(!answer.starts_with(b"HTTP/"), "no HTTP answer: {answer:?}");

        let client = tokio::spawn(async move {
            let tcp = TcpStream::connect(addr).await.expect("connect");
            let name = ServerName::try_from("localhost").expect("name");
            let mut s = connector(&ca_pem)
                .connect(name, tcp)
                .await
                .expect("handshake");
            s.write_all(b"ping").await.expect("send");
            let mut echo = Vec::new();
            s.read_to_end(&mut echo).await.expect("read");
            echo
        });
        assert!(accept_one(&listener, &tls).await);
        assert_eq!(client.await.expect("tls client"), b"ping");
        let _ = std::fs::remove_dir_all(path.parent().expect("dir"));
    }
}
