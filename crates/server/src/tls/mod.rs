//! TLS for CQL clients (cassandra.yaml `client_encryption_options`; see
//! docs/design/security.md, "TLS"). rustls through tokio-rustls, behind
//! this module: the rest of the server sees [`ClientTls`] and the byte
//! streams [`accept::accept`] hands back, never a rustls type.
//!
//! - [`settings`]: what the operator asked for, already parsed;
//! - [`context`]: those settings made into a rustls `ServerConfig` (PEM
//!   files read, protocols and cipher suites checked, client certificates
//!   verified against the truststore);
//! - [`reload`]: the current `ServerConfig`, rebuilt when a file changes;
//! - [`accept`]: one accepted socket made into a plain or TLS stream (the
//!   first-byte peek of `optional` mode, the handshake bounded by
//!   [`ClientTlsSettings::handshake_timeout`]);
//! - [`drain`]: a TLS stream's reader that hands over every record it
//!   already decrypted in one read, so requests are answered in bursts.
//!
//! Invariant: a setting rustls cannot honour is an error when the node
//! starts ([`ClientTls::new`]), never ignored.

pub mod accept;
mod context;
mod drain;
mod reload;
mod settings;

pub use reload::ClientTls;
pub use settings::{ClientAuth, ClientTlsSettings, TlsError, CLIENT_SECTION};

use std::time::Duration;

/// How long a client has to finish its TLS handshake (and, in `optional`
/// mode, to send its first byte) before the node closes the connection.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

pub use varve_tls::reload::RELOAD_CHECK_INTERVAL;

/// The first byte of a TLS record carrying a handshake message (a
/// ClientHello opens with one); never the first byte of a CQL frame,
/// which is a protocol version.
pub const TLS_HANDSHAKE_RECORD: u8 = 0x16;
