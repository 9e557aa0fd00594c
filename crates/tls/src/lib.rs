//! varve-tls: what the node's two TLS users share (clients in
//! varve-server, other nodes in varve-cluster; docs/design/security.md,
//! section 10): PEM keystores and truststores read the way Cassandra 5.0's
//! `PEMBasedSslContextFactory` reads them, and cassandra.yaml's protocol
//! and cipher-suite names mapped onto rustls's ring provider, and the
//! configuration rebuilt when those files change ([`reload`]).
//!
//! Every error names the cassandra.yaml section and key it comes from; a
//! setting rustls cannot honour is an error, never ignored. No sockets
//! here: this crate only builds rustls values (and looks at files).

pub mod pem;
pub mod reload;
pub mod suites;

use std::path::PathBuf;

/// Why a TLS setting cannot be honoured, naming `section.key`.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("{section}.{key}: cannot read {path}: {source}")]
    Read {
        section: &'static str,
        key: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{section}.{key}: {path}: {reason}")]
    Pem {
        section: &'static str,
        key: &'static str,
        path: PathBuf,
        reason: String,
    },
    #[error("{section}.{key}: {reason}")]
    Setting {
        section: &'static str,
        key: &'static str,
        reason: String,
    },
}

pub type Result<T> = std::result::Result<T, TlsError>;
