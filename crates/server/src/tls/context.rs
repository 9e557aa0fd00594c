//! Client TLS settings made into a rustls `ServerConfig`: the PEM keystore
//! and truststore read, the protocol versions and cipher suites mapped
//! onto rustls's (ring provider), the client-certificate verifier chosen.
//! Anything rustls cannot honour is a [`TlsError`] naming the key.

use std::path::Path;
use std::sync::Arc;

use rustls::crypto::{ring, CryptoProvider};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig, SupportedCipherSuite, SupportedProtocolVersion};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use super::settings::{ClientAuth, ClientTlsSettings, Result, TlsError};

/// The protocol names accepted, as Cassandra (and Java) spell them.
const PROTOCOLS: [(&str, &SupportedProtocolVersion); 2] = [
    ("TLSv1.2", &rustls::version::TLS12),
    ("TLSv1.3", &rustls::version::TLS13),
];

/// The PEM label of a password-protected PKCS#8 key, which rustls cannot
/// read.
const ENCRYPTED_KEY_LABEL: &str = "-----BEGIN ENCRYPTED PRIVATE KEY-----";

/// Builds the rustls configuration the settings describe.
pub fn build(s: &ClientTlsSettings) -> Result<Arc<ServerConfig>> {
    let versions = versions(&s.protocols)?;
    let provider = Arc::new(provider(&s.cipher_suites, &versions)?);
    let (chain, key) = keystore(&s.keystore)?;
    let verifier = match s.client_auth {
        ClientAuth::None => WebPkiClientVerifier::no_client_auth(),
        auth => {
            let Some(path) = &s.truststore else {
                return Err(TlsError::Setting {
                    key: "truststore",
                    reason: "require_client_auth needs a truststore of the certificates client certificates chain to".into(),
                });
            };
            let builder = WebPkiClientVerifier::builder_with_provider(
                Arc::new(truststore(path)?),
                Arc::clone(&provider),
            );
            let builder = if auth == ClientAuth::Optional {
                builder.allow_unauthenticated()
            } else {
                builder
            };
            builder.build().map_err(|e| TlsError::Setting {
                key: "truststore",
                reason: e.to_string(),
            })?
        }
    };
    let config = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&versions)
        .map_err(|e| TlsError::Setting {
            key: "cipher_suites",
            reason: e.to_string(),
        })?
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)
        .map_err(|e| TlsError::Pem {
            key: "keystore",
            path: s.keystore.clone(),
            reason: e.to_string(),
        })?;
    Ok(Arc::new(config))
}

/// The versions named (both when none is).
fn versions(names: &[String]) -> Result<Vec<&'static SupportedProtocolVersion>> {
    if names.is_empty() {
        return Ok(PROTOCOLS.iter().map(|(_, v)| *v).collect());
    }
    names
        .iter()
        .map(|name| {
            PROTOCOLS
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| *v)
                .ok_or_else(|| TlsError::Setting {
                    key: "accepted_protocols",
                    reason: format!("{name} is not supported (supported: TLSv1.2, TLSv1.3)"),
                })
        })
        .collect()
}

/// A suite's IANA name (rustls spells the TLS 1.3 ones `TLS13_...`).
pub fn iana_name(suite: &SupportedCipherSuite) -> String {
    let name = format!("{:?}", suite.suite());
    match name.strip_prefix("TLS13_") {
        Some(rest) => format!("TLS_{rest}"),
        None => name,
    }
}

/// The ring provider with only the suites named (all its defaults when
/// none is); every version asked for must keep at least one suite.
fn provider(
    names: &[String],
    versions: &[&'static SupportedProtocolVersion],
) -> Result<CryptoProvider> {
    let mut provider = ring::default_provider();
    if names.is_empty() {
        return Ok(provider);
    }
    let all = provider.cipher_suites.clone();
    let mut chosen = Vec::new();
    for name in names {
        let Some(suite) = all.iter().find(|s| iana_name(s) == *name) else {
            let known: Vec<String> = all.iter().map(iana_name).collect();
            return Err(TlsError::Setting {
                key: "cipher_suites",
                reason: format!("{name} is not supported (supported: {})", known.join(", ")),
            });
        };
        chosen.push(*suite);
    }
    for version in versions {
        if !chosen.iter().any(|s| s.version() == *version) {
            return Err(TlsError::Setting {
                key: "cipher_suites",
                reason: format!(
                    "none of the suites listed can be used with {:?}, which accepted_protocols allows",
                    version.version
                ),
            });
        }
    }
    provider.cipher_suites = chosen;
    Ok(provider)
}

fn read(key: &'static str, path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|source| TlsError::Read {
        key,
        path: path.to_path_buf(),
        source,
    })
}

fn pem_error(key: &'static str, path: &Path, reason: impl Into<String>) -> TlsError {
    TlsError::Pem {
        key,
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

/// The certificates of a PEM file, in order (none is an error).
fn certificates(
    key: &'static str,
    path: &Path,
    pem: &[u8],
) -> Result<Vec<CertificateDer<'static>>> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| pem_error(key, path, e.to_string()))?;
    if certs.is_empty() {
        return Err(pem_error(key, path, "no CERTIFICATE in the file"));
    }
    Ok(certs)
}

/// The private key and certificate chain of the keystore.
fn keystore(path: &Path) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)> {
    let pem = read("keystore", path)?;
    if pem
        .windows(ENCRYPTED_KEY_LABEL.len())
        .any(|w| w == ENCRYPTED_KEY_LABEL.as_bytes())
    {
        return Err(pem_error(
            "keystore",
            path,
            "an encrypted private key (keystore_password) is not supported; store the key unencrypted, readable only by the node",
        ));
    }
    let key = PrivateKeyDer::from_pem_slice(&pem)
        .map_err(|e| pem_error("keystore", path, format!("no usable PRIVATE KEY: {e}")))?;
    Ok((certificates("keystore", path, &pem)?, key))
}

/// The trusted certificates of the truststore.
fn truststore(path: &Path) -> Result<RootCertStore> {
    let pem = read("truststore", path)?;
    let mut roots = RootCertStore::empty();
    for cert in certificates("truststore", path, &pem)? {
        roots
            .add(cert)
            .map_err(|e| pem_error("truststore", path, e.to_string()))?;
    }
    Ok(roots)
}
