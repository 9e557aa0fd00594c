//! Certificates for TLS tests, made with `rcgen`: a CA and one node
//! certificate it signed for the given IP addresses, written as PEM files;
//! and a rustls client configuration (ring's provider, passed explicitly)
//! that trusts the CA.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;

/// The PEM files [`certificates`] wrote, and the CA certificate's text.
pub struct Certificates {
    /// The node's private key followed by its certificate (a Varve
    /// `keystore`).
    pub keystore: PathBuf,
    /// The CA certificate (a Varve `truststore`).
    pub truststore: PathBuf,
    pub ca_pem: String,
}

/// A fresh CA and a certificate for `addresses` it signed, as PEM files in
/// `dir` (created if missing).
pub fn certificates(dir: &Path, addresses: &[&str]) -> Certificates {
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_key = KeyPair::generate().expect("CA key");
    let ca = ca_params.self_signed(&ca_key).expect("CA");
    let key = KeyPair::generate().expect("node key");
    let names = addresses.iter().map(|a| a.to_string()).collect::<Vec<_>>();
    let cert = CertificateParams::new(names)
        .expect("node params")
        .signed_by(&key, &ca, &ca_key)
        .expect("node certificate");
    std::fs::create_dir_all(dir).expect("creating the certificate directory");
    let keystore = dir.join("node.pem");
    std::fs::write(&keystore, format!("{}{}", key.serialize_pem(), cert.pem()))
        .expect("writing the keystore");
    let truststore = dir.join("ca.pem");
    std::fs::write(&truststore, ca.pem()).expect("writing the truststore");
    Certificates {
        keystore,
        truststore,
        ca_pem: ca.pem(),
    }
}

/// A rustls client configuration (ring's provider) trusting `ca_pem`.
pub fn client_tls(ca_pem: &str) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    let ca = CertificateDer::from_pem_slice(ca_pem.as_bytes()).expect("CA pem");
    roots.add(ca).expect("CA");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("protocols")
        .with_root_certificates(roots)
        .with_no_client_auth();
    Arc::new(config)
}
