//! PEM files: a keystore (the private key, unencrypted, and the
//! certificate chain, the node's certificate first) and a truststore
//! (certificates).

use std::path::Path;

use rustls::RootCertStore;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use crate::{Result, TlsError};

/// The PEM label of a password-protected PKCS#8 key, which rustls cannot
/// read.
const ENCRYPTED_KEY_LABEL: &str = "-----BEGIN ENCRYPTED PRIVATE KEY-----";

/// A keystore's certificate chain and private key.
pub type Keystore = (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>);

fn read(section: &'static str, key: &'static str, path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|source| TlsError::Read {
        section,
        key,
        path: path.to_path_buf(),
        source,
    })
}

fn pem_error(
    section: &'static str,
    key: &'static str,
    path: &Path,
    reason: impl Into<String>,
) -> TlsError {
    TlsError::Pem {
        section,
        key,
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

/// The certificates of a PEM file, in order (none is an error).
fn certificates(
    section: &'static str,
    key: &'static str,
    path: &Path,
    pem: &[u8],
) -> Result<Vec<CertificateDer<'static>>> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| pem_error(section, key, path, e.to_string()))?;
    if certs.is_empty() {
        return Err(pem_error(section, key, path, "no CERTIFICATE in the file"));
    }
    Ok(certs)
}

/// The private key and certificate chain of `section.keystore`.
pub fn keystore(section: &'static str, path: &Path) -> Result<Keystore> {
    let pem = read(section, "keystore", path)?;
    if pem
        .windows(ENCRYPTED_KEY_LABEL.len())
        .any(|w| w == ENCRYPTED_KEY_LABEL.as_bytes())
    {
        return Err(pem_error(
            section,
            "keystore",
            path,
            "an encrypted private key (keystore_password) is not supported; store the key unencrypted, readable only by the node",
        ));
    }
    let key = PrivateKeyDer::from_pem_slice(&pem).map_err(|e| {
        pem_error(
            section,
            "keystore",
            path,
            format!("no usable PRIVATE KEY: {e}"),
        )
    })?;
    Ok((certificates(section, "keystore", path, &pem)?, key))
}

/// The trusted certificates of `section.truststore`.
pub fn truststore(section: &'static str, path: &Path) -> Result<RootCertStore> {
    let pem = read(section, "truststore", path)?;
    let mut roots = RootCertStore::empty();
    for cert in certificates(section, "truststore", path, &pem)? {
        roots
            .add(cert)
            .map_err(|e| pem_error(section, "truststore", path, e.to_string()))?;
    }
    Ok(roots)
}
