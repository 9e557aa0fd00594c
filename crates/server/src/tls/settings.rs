//! The client TLS settings, as the node's configuration resolved them from
//! `client_encryption_options`, and the errors a bad one gives at start.

use std::path::PathBuf;
use std::time::Duration;

/// Whether clients must present a certificate (`require_client_auth`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClientAuth {
    /// `false`: no certificate is asked for.
    #[default]
    None,
    /// `optional`: asked for; a client without one is let in, a client
    /// with one not signed by the truststore is refused.
    Optional,
    /// `true`: a certificate signed by the truststore is required.
    Required,
}

/// The section of the CQL port's TLS settings.
pub const CLIENT_SECTION: &str = "client_encryption_options";

/// What the operator asked for.
#[derive(Debug, Clone)]
pub struct ClientTlsSettings {
    /// The configuration section these settings come from, which errors
    /// and log lines name (`client_encryption_options`, or
    /// `admin_encryption_options` for the admin port).
    pub section: &'static str,
    /// `optional`: plain and TLS clients on the one port.
    pub optional: bool,
    /// `keystore`: a PEM file holding the private key and the certificate
    /// chain (the node's certificate first).
    pub keystore: PathBuf,
    /// `truststore`: a PEM file of the certificates client certificates
    /// must chain to.
    pub truststore: Option<PathBuf>,
    pub client_auth: ClientAuth,
    /// `accepted_protocols` (or `protocol`): `TLSv1.2`, `TLSv1.3`; empty:
    /// both.
    pub protocols: Vec<String>,
    /// `cipher_suites`, by their IANA names; empty: rustls's defaults.
    pub cipher_suites: Vec<String>,
    /// See [`super::HANDSHAKE_TIMEOUT`].
    pub handshake_timeout: Duration,
}

impl ClientTlsSettings {
    /// TLS-only settings with the key and chain in `keystore`, every other
    /// setting at its default.
    pub fn new(keystore: impl Into<PathBuf>) -> Self {
        ClientTlsSettings {
            section: CLIENT_SECTION,
            optional: false,
            keystore: keystore.into(),
            truststore: None,
            client_auth: ClientAuth::None,
            protocols: Vec::new(),
            cipher_suites: Vec::new(),
            handshake_timeout: super::HANDSHAKE_TIMEOUT,
        }
    }
}

pub use varve_tls::{Result, TlsError};
