//! Client TLS over real TCP, in-process (docs/design/security.md, "TLS"):
//! the handshake timeout at its limit and past it, `optional` mode's
//! first-byte peek, a plain client on a TLS-only port, and the settings
//! rustls cannot honour. Certificates are made here (rcgen); none is
//! checked in. The real-driver tests are tests/python/test_tls.py.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::ServerName;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use varve_query::{NodeInfo, Processor};
use varve_server::tls::{ClientAuth, ClientTls, ClientTlsSettings, TlsError};
use varve_server::{Server, ServerConfig};

const TIMEOUT: Duration = Duration::from_secs(5);
/// An OPTIONS request, protocol v4, stream 1.
const OPTIONS_V4: [u8; 9] = [0x04, 0, 0, 1, 0x05, 0, 0, 0, 0];
/// The opcode of SUPPORTED.
const SUPPORTED: u8 = 0x06;

struct Pki {
    _dir: TempDir,
    keystore: PathBuf,
    ca_pem: String,
}

/// A directory removed when dropped.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn pki(name: &str) -> Pki {
    let dir = std::env::temp_dir().join(format!("varve-tls-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let certified =
        rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).expect("certificate");
    let ca_pem = certified.cert.pem();
    let keystore = dir.join("node.pem");
    std::fs::write(
        &keystore,
        format!("{}{}", certified.key_pair.serialize_pem(), ca_pem),
    )
    .expect("write keystore");
    Pki {
        _dir: TempDir(dir),
        keystore,
        ca_pem,
    }
}

async fn start(tls: ClientTlsSettings) -> (std::net::SocketAddr, oneshot::Sender<()>) {
    start_limited(tls, ServerConfig::default().max_connections).await
}

async fn start_limited(
    tls: ClientTlsSettings,
    max_connections: usize,
) -> (std::net::SocketAddr, oneshot::Sender<()>) {
    let config = ServerConfig {
        max_connections,
        cql_addr: "127.0.0.1:0".parse().expect("addr"),
        admin_addr: "127.0.0.1:0".parse().expect("addr"),
        shutdown_grace: Duration::from_secs(1),
        client_tls: Some(tls),
        ..ServerConfig::default()
    };
    let server = Server::bind(config).await.expect("binds");
    let addr = server.cql_addr();
    let (tx, rx) = oneshot::channel::<()>();
    tokio::spawn(
        server.run(Processor::new(NodeInfo::single_local()), async move {
            let _ = rx.await;
        }),
    );
    (addr, tx)
}

fn connector(ca_pem: &str) -> tokio_rustls::TlsConnector {
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls::pki_types::CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(cert.expect("pem")).expect("root");
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("versions")
    .with_root_certificates(roots)
    .with_no_client_auth();
    tokio_rustls::TlsConnector::from(Arc::new(config))
}

/// A TLS connection to `addr`, checking the node's certificate.
async fn tls_connect(
    addr: std::net::SocketAddr,
    pki: &Pki,
) -> tokio_rustls::client::TlsStream<TcpStream> {
    let tcp = TcpStream::connect(addr).await.expect("connect");
    connector(&pki.ca_pem)
        .connect(ServerName::try_from("localhost").expect("name"), tcp)
        .await
        .expect("handshake")
}

/// Sends OPTIONS and returns the opcode of the answer.
async fn options<S: AsyncReadExt + AsyncWriteExt + Unpin>(s: &mut S) -> u8 {
    s.write_all(&OPTIONS_V4).await.expect("write");
    let mut header = [0u8; 9];
    tokio::time::timeout(TIMEOUT, s.read_exact(&mut header))
        .await
        .expect("answer in time")
        .expect("read");
    assert_eq!(header[0], 0x84, "a v4 response");
    let length = u32::from_be_bytes([header[5], header[6], header[7], header[8]]);
    let mut body = vec![0u8; length as usize];
    s.read_exact(&mut body).await.expect("body");
    header[4]
}

/// Whether the node closed `s` (end of stream or reset) within `wait`.
async fn closed_within(s: &mut TcpStream, wait: Duration) -> bool {
    let mut byte = [0u8; 64];
    loop {
        match tokio::time::timeout(wait, s.read(&mut byte)).await {
            Err(_) => return false,
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            // A TLS alert may come first.
            Ok(Ok(_)) => {}
        }
    }
}

#[tokio::test]
async fn a_tls_client_is_served() {
    let pki = pki("served");
    let (addr, _stop) = start(ClientTlsSettings::new(&pki.keystore)).await;
    assert_eq!(options(&mut tls_connect(addr, &pki).await).await, SUPPORTED);
}

#[tokio::test]
async fn a_plain_client_on_a_tls_only_port_gets_no_cql_and_is_closed() {
    let pki = pki("plain");
    let (addr, _stop) = start(ClientTlsSettings::new(&pki.keystore)).await;
    let mut s = TcpStream::connect(addr).await.expect("connect");
    s.write_all(&OPTIONS_V4).await.expect("write");
    let mut got = Vec::new();
    let _ = tokio::time::timeout(TIMEOUT, s.read_to_end(&mut got)).await;
    assert!(got.first() != Some(&0x84), "no CQL answer in clear text");
    assert!(closed_within(&mut s, TIMEOUT).await);
}

#[tokio::test]
async fn optional_mode_serves_plain_and_tls_on_one_port() {
    let pki = pki("optional");
    let mut settings = ClientTlsSettings::new(&pki.keystore);
    settings.optional = true;
    let (addr, _stop) = start(settings).await;
    let mut plain = TcpStream::connect(addr).await.expect("connect");
    assert_eq!(options(&mut plain).await, SUPPORTED);
    assert_eq!(options(&mut tls_connect(addr, &pki).await).await, SUPPORTED);
}

/// Past the connection limit a TLS client gets no clear-text answer to
/// its ClientHello: the connection is closed without a byte.
#[tokio::test]
async fn an_over_limit_tls_client_is_closed_without_a_clear_text_answer() {
    let pki = pki("limit");
    let (addr, _stop) = start_limited(ClientTlsSettings::new(&pki.keystore), 1).await;
    let mut first = tls_connect(addr, &pki).await;
    assert_eq!(options(&mut first).await, SUPPORTED);
    let mut second = TcpStream::connect(addr).await.expect("connect");
    // A ClientHello's record header and a little of its body.
    second
        .write_all(&[0x16, 0x03, 0x01, 0x00, 0x04, 0x01, 0x00, 0x00, 0x00])
        .await
        .expect("write");
    let mut got = Vec::new();
    let _ = tokio::time::timeout(TIMEOUT, second.read_to_end(&mut got)).await;
    assert!(got.is_empty(), "answered {got:?}");
    // The connection within the limit is unaffected.
    assert_eq!(options(&mut first).await, SUPPORTED);
}

/// A client that stops half-way through its handshake (or, in optional
/// mode, sends nothing) is still open a margin before the timeout and
/// closed a margin after it.
#[tokio::test]
async fn a_stalled_handshake_is_closed_after_the_handshake_timeout() {
    const TIMEOUT_UNDER_TEST: Duration = Duration::from_millis(600);
    const MARGIN: Duration = Duration::from_millis(250);
    let pki = pki("stalled");
    for optional in [false, true] {
        let mut settings = ClientTlsSettings::new(&pki.keystore);
        settings.handshake_timeout = TIMEOUT_UNDER_TEST;
        settings.optional = optional;
        let (addr, _stop) = start(settings).await;
        let mut s = TcpStream::connect(addr).await.expect("connect");
        if !optional {
            // A record header promising more than is ever sent.
            s.write_all(&[0x16, 0x03, 0x01, 0x02, 0x00])
                .await
                .expect("write");
        }
        assert!(
            !closed_within(&mut s, TIMEOUT_UNDER_TEST - MARGIN).await,
            "closed before the timeout (optional: {optional})"
        );
        assert!(
            closed_within(&mut s, MARGIN * 2).await,
            "still open past the timeout (optional: {optional})"
        );
    }
}

fn error(settings: ClientTlsSettings) -> String {
    match ClientTls::new(settings) {
        Ok(_) => panic!("accepted"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn settings_rustls_cannot_honour_are_errors_naming_the_key() {
    let pki = pki("refused");
    let base = || ClientTlsSettings::new(&pki.keystore);
    let mut s = base();
    s.protocols = vec!["TLSv1.1".into()];
    assert!(error(s).contains("client_encryption_options.accepted_protocols: TLSv1.1"));
    let mut s = base();
    s.cipher_suites = vec!["TLS_RSA_WITH_RC4_128_MD5".into()];
    assert!(error(s).contains("client_encryption_options.cipher_suites: TLS_RSA_WITH_RC4_128_MD5"));
    // A TLS 1.2 suite only, with TLS 1.3 allowed: 1.3 would have none.
    let mut s = base();
    s.cipher_suites = vec!["TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256".into()];
    assert!(error(s).contains("TLSv1_3"));
    let mut s = base();
    s.client_auth = ClientAuth::Required;
    assert!(error(s).contains("client_encryption_options.truststore"));
    let s = ClientTlsSettings::new(Path::new("/nonexistent/keystore.pem"));
    assert!(matches!(
        ClientTls::new(s),
        Err(TlsError::Read {
            key: "keystore",
            ..
        })
    ));
    let encrypted = pki.keystore.with_file_name("encrypted.pem");
    std::fs::write(
        &encrypted,
        "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n",
    )
    .expect("write");
    assert!(error(ClientTlsSettings::new(&encrypted)).contains("encrypted private key"));
    let no_key = pki.keystore.with_file_name("chain-only.pem");
    std::fs::write(&no_key, &pki.ca_pem).expect("write");
    assert!(error(ClientTlsSettings::new(&no_key)).contains("PRIVATE KEY"));
    // The suites and protocols that are supported are accepted.
    let mut s = base();
    s.protocols = vec!["TLSv1.3".into()];
    s.cipher_suites = vec!["TLS_AES_128_GCM_SHA256".into()];
    assert!(ClientTls::new(s).is_ok());
}

/// Garbage after a TLS record header, of many lengths and contents
/// (a fixed-seed generator: the seed is in the message of any failure),
/// closes only its own connection: a real client is served after each.
#[tokio::test]
async fn garbage_handshakes_close_only_their_connection() {
    const SEED: u64 = 0x5eed_7153;
    let pki = pki("garbage");
    let (addr, _stop) = start(ClientTlsSettings::new(&pki.keystore)).await;
    let mut state = SEED;
    let mut next = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) as u8
    };
    for round in 0..32 {
        let len = 1 + usize::from(next()) * 4;
        let mut bytes = vec![0x16, 0x03, 0x01];
        bytes.extend((0..len).map(|_| next()));
        let mut s = TcpStream::connect(addr).await.expect("connect");
        let _ = s.write_all(&bytes).await;
        let _ = s.shutdown().await;
        assert!(
            closed_within(&mut s, TIMEOUT).await,
            "round {round} (seed {SEED:#x}) left open"
        );
        if round % 8 == 7 {
            assert_eq!(options(&mut tls_connect(addr, &pki).await).await, SUPPORTED);
        }
    }
}
