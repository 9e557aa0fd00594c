//! The rustls configurations of internode TLS: the server side requires a
//! client certificate chaining to the truststore; the client side presents
//! the node's certificate and checks the peer's chain against the same
//! truststore, and its address too when `require_endpoint_verification`.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, ServerConfig, SignatureScheme,
};
use varve_tls::{pem, suites, TlsError};

use super::InternodeTlsSettings;

/// The cassandra.yaml section errors name.
const SECTION: &str = "server_encryption_options";

fn setting(key: &'static str, e: impl std::fmt::Display) -> TlsError {
    TlsError::Setting {
        section: SECTION,
        key,
        reason: e.to_string(),
    }
}

/// Both sides' configurations.
pub struct Configs {
    pub server: Arc<ServerConfig>,
    pub client: Arc<ClientConfig>,
}

/// Both sides' configurations.
pub fn build(s: &InternodeTlsSettings) -> varve_tls::Result<Configs> {
    let versions = suites::versions(SECTION, &s.protocols)?;
    let provider = Arc::new(suites::provider(SECTION, &s.cipher_suites, &versions)?);
    let roots = Arc::new(pem::truststore(SECTION, &s.truststore)?);
    let (chain, key) = pem::keystore(SECTION, &s.keystore)?;
    let peers =
        WebPkiClientVerifier::builder_with_provider(Arc::clone(&roots), Arc::clone(&provider))
            .build()
            .map_err(|e| setting("truststore", e))?;
    let server = ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_protocol_versions(&versions)
        .map_err(|e| setting("cipher_suites", e))?
        .with_client_cert_verifier(peers)
        .with_single_cert(chain.clone(), key.clone_key())
        .map_err(|e| setting("keystore", e))?;
    let webpki = WebPkiServerVerifier::builder_with_provider(roots, Arc::clone(&provider))
        .build()
        .map_err(|e| setting("truststore", e))?;
    let verifier: Arc<dyn ServerCertVerifier> = if s.require_endpoint_verification {
        webpki
    } else {
        Arc::new(ChainOnly(webpki))
    };
    let client = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&versions)
        .map_err(|e| setting("cipher_suites", e))?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_client_auth_cert(chain, key)
        .map_err(|e| setting("keystore", e))?;
    Ok(Configs {
        server: Arc::new(server),
        client: Arc::new(client),
    })
}

/// Checks a peer's certificate chain against the truststore but not the
/// name in it, as Cassandra does without `require_endpoint_verification`
/// (nodes are often certified by a common name, not their addresses).
/// The chain is checked before the name, so a name error means the chain
/// was good.
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}
