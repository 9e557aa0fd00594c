//! Client TLS settings made into a rustls `ServerConfig`: the PEM keystore
//! and truststore read and the protocol versions and cipher suites mapped
//! (both by varve-tls), the client-certificate verifier chosen.
//! Anything rustls cannot honour is a [`TlsError`] naming the key.

use std::sync::Arc;

use rustls::server::WebPkiClientVerifier;
use rustls::ServerConfig;
use varve_tls::{pem, suites};

use super::settings::{ClientAuth, ClientTlsSettings, Result, TlsError};

/// Builds the rustls configuration the settings describe; errors name
/// the settings' section.
pub fn build(s: &ClientTlsSettings) -> Result<Arc<ServerConfig>> {
    let section = s.section;
    let versions = suites::versions(section, &s.protocols)?;
    let provider = Arc::new(suites::provider(section, &s.cipher_suites, &versions)?);
    let (chain, key) = pem::keystore(section, &s.keystore)?;
    let verifier = match s.client_auth {
        ClientAuth::None => WebPkiClientVerifier::no_client_auth(),
        auth => {
            let Some(path) = &s.truststore else {
                return Err(TlsError::Setting {
                    section,
                    key: "truststore",
                    reason: "require_client_auth needs a truststore of the certificates client certificates chain to".into(),
                });
            };
            let builder = WebPkiClientVerifier::builder_with_provider(
                Arc::new(pem::truststore(section, path)?),
                Arc::clone(&provider),
            );
            let builder = if auth == ClientAuth::Optional {
                builder.allow_unauthenticated()
            } else {
                builder
            };
            builder.build().map_err(|e| TlsError::Setting {
                section,
                key: "truststore",
                reason: e.to_string(),
            })?
        }
    };
    let config = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&versions)
        .map_err(|e| TlsError::Setting {
            section,
            key: "cipher_suites",
            reason: e.to_string(),
        })?
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)
        .map_err(|e| TlsError::Pem {
            section,
            key: "keystore",
            path: s.keystore.clone(),
            reason: e.to_string(),
        })?;
    Ok(Arc::new(config))
}
