//! Internode TLS over real TCP: two nodes of one CA talk; a node whose
//! certificate another CA signed is refused on either side; per-peer TLS
//! tells TLS from clear text on one port and asks its directory.

use std::path::PathBuf;
use std::time::Duration;

use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::*;
use crate::env::{Clock, SystemClock, TokioNetwork};

struct Ca {
    cert: rcgen::Certificate,
    key: KeyPair,
}

fn ca() -> Ca {
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let key = KeyPair::generate().expect("key");
    let cert = params.self_signed(&key).expect("ca");
    Ca { cert, key }
}

/// Writes a keystore signed by `ca` and `trusted` as truststore.
fn settings(dir: &std::path::Path, name: &str, ca: &Ca, trusted: &Ca) -> InternodeTlsSettings {
    std::fs::create_dir_all(dir).expect("dir");
    let key = KeyPair::generate().expect("key");
    let cert = CertificateParams::new(vec![name.to_string()])
        .expect("params")
        .signed_by(&key, &ca.cert, &ca.key)
        .expect("cert");
    let keystore = dir.join(format!("{name}.pem"));
    std::fs::write(&keystore, format!("{}{}", key.serialize_pem(), cert.pem())).expect("write");
    let truststore = dir.join(format!("{name}-trust.pem"));
    std::fs::write(&truststore, trusted.cert.pem()).expect("write");
    InternodeTlsSettings {
        mode: InternodeEncryption::All,
        keystore,
        truststore,
        protocols: Vec::new(),
        cipher_suites: Vec::new(),
        require_endpoint_verification: false,
    }
}

fn temp_dir(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("varve-internode-tls-{name}-{}", std::process::id()))
}

fn network(s: &InternodeTlsSettings) -> TlsNetwork {
    TlsNetwork::new(Arc::new(TokioNetwork::ANY_SOURCE), s).expect("network")
}

/// Whether `hello` sent by `client` arrives at `server`.
async fn talks(server: &TlsNetwork, client: &TlsNetwork) -> bool {
    let listener = server
        .bind("127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let accept = async {
        let (mut stream, _) = listener.accept().await.ok()?;
        let mut got = [0u8; 5];
        stream.read_exact(&mut got).await.ok()?;
        Some(got)
    };
    let send = async {
        let mut stream = client.connect(addr).await.ok()?;
        stream.write_all(b"hello").await.ok()?;
        stream.flush().await.ok()?;
        // Held open until the acceptor has read (or failed).
        SystemClock.sleep(Duration::from_millis(300)).await;
        Some(())
    };
    let timed = crate::env::timeout(&SystemClock, Duration::from_secs(5), async {
        tokio::join!(accept, send)
    });
    matches!(timed.await, Ok((Some(got), Some(()))) if &got == b"hello")
}

#[tokio::test]
async fn nodes_of_one_ca_talk_and_a_stranger_is_refused_both_ways() {
    let dir = temp_dir("mutual");
    let (ours, theirs) = (ca(), ca());
    let a = network(&settings(&dir, "a", &ours, &ours));
    let b = network(&settings(&dir, "b", &ours, &ours));
    assert!(talks(&a, &b).await);
    assert!(talks(&b, &a).await);
    // Signed by another CA, though it trusts ours.
    let stranger = network(&settings(&dir, "stranger", &theirs, &ours));
    assert!(!talks(&a, &stranger).await, "a stranger connecting");
    assert!(!talks(&stranger, &a).await, "connecting to a stranger");
    // With endpoint verification, a certificate naming no address fails.
    let mut strict = settings(&dir, "strict", &ours, &ours);
    strict.require_endpoint_verification = true;
    assert!(!talks(&a, &network(&strict)).await);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_missing_truststore_names_the_key() {
    let dir = temp_dir("missing");
    let ours = ca();
    let mut s = settings(&dir, "a", &ours, &ours);
    s.truststore = dir.join("nope.pem");
    let err = TlsNetwork::new(Arc::new(TokioNetwork::ANY_SOURCE), &s)
        .err()
        .expect("refused");
    assert!(
        err.to_string()
            .starts_with("server_encryption_options.truststore"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A truststore that comes to trust another CA is used by the next
/// connection after [`RELOAD_CHECK_INTERVAL`], without a new network.
#[tokio::test]
async fn a_changed_truststore_is_used_without_a_restart() {
    use varve_tls::reload::RELOAD_CHECK_INTERVAL;
    let dir = temp_dir("reload");
    let (ours, theirs) = (ca(), ca());
    let a_settings = settings(&dir, "a", &ours, &ours);
    let a = network(&a_settings);
    let stranger = network(&settings(&dir, "stranger", &theirs, &ours));
    assert!(!talks(&a, &stranger).await);
    std::fs::write(
        &a_settings.truststore,
        format!("{}{}", ours.cert.pem(), theirs.cert.pem()),
    )
    .expect("write");
    SystemClock
        .sleep(RELOAD_CHECK_INTERVAL + Duration::from_millis(200))
        .await;
    assert!(talks(&a, &stranger).await);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A directory of fixed locations.
struct Fixed(Vec<(SocketAddr, crate::ring::Location)>);

impl PeerDirectory for Fixed {
    fn location(&self, addr: SocketAddr) -> Option<crate::ring::Location> {
        self.0
            .iter()
            .find(|(a, _)| *a == addr)
            .map(|(_, l)| l.clone())
    }
}

fn dc(name: &str) -> crate::ring::Location {
    crate::ring::Location {
        dc: name.to_string(),
        rack: "rack1".to_string(),
    }
}

/// What one accepted connection of `tls`'s reads: its first five bytes and
/// whether it came in TLS; `client` connects and sends `hello`.
async fn accepted(tls: &PerPeerTls, client: Arc<dyn Network>) -> ([u8; 5], bool) {
    let listener = TokioNetwork::ANY_SOURCE
        .bind("127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let accept = async {
        let (stream, _) = listener.accept().await.expect("accept");
        let (mut stream, encrypted) = tls.accept(stream).await.expect("sniffed");
        let mut got = [0u8; 5];
        stream.read_exact(&mut got).await.expect("read");
        (got, encrypted)
    };
    let send = async {
        let mut stream = client.connect(addr).await.expect("connect");
        stream.write_all(b"hello").await.expect("write");
        stream.flush().await.expect("flush");
        SystemClock.sleep(Duration::from_millis(300)).await;
    };
    let (got, ()) = tokio::join!(accept, send);
    got
}

#[tokio::test]
async fn one_port_takes_tls_and_clear_text_and_tells_them_apart() {
    let dir = temp_dir("per-peer");
    let ours = ca();
    let mut s = settings(&dir, "a", &ours, &ours);
    s.mode = InternodeEncryption::Dc;
    let tls = PerPeerTls::new(&s, dc("dc1")).expect("per peer");
    let tls_client = Arc::new(network(&settings(&dir, "b", &ours, &ours)));
    assert_eq!(accepted(&tls, tls_client).await, (*b"hello", true));
    assert_eq!(
        accepted(&tls, Arc::new(TokioNetwork::ANY_SOURCE)).await,
        (*b"hello", false)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn per_peer_tls_asks_the_directory_and_needs_tls_until_it_knows() {
    let dir = temp_dir("directory");
    let ours = ca();
    let mut s = settings(&dir, "a", &ours, &ours);
    s.mode = InternodeEncryption::Dc;
    let tls = PerPeerTls::new(&s, dc("dc1")).expect("per peer");
    let near: SocketAddr = "127.0.0.2:7000".parse().expect("addr");
    let far: SocketAddr = "127.0.0.3:7000".parse().expect("addr");
    let unknown: SocketAddr = "127.0.0.4:7000".parse().expect("addr");
    assert!(tls.must_encrypt(near), "no directory yet");
    let changes = tls.subscribe();
    tls.set_directory(Arc::new(Fixed(vec![(near, dc("dc1")), (far, dc("dc2"))])));
    assert!(changes.has_changed().expect("open"), "connections are told");
    assert!(!tls.must_encrypt(near));
    assert!(tls.must_encrypt(far));
    assert!(tls.must_encrypt(unknown));
    let _ = std::fs::remove_dir_all(&dir);
}
