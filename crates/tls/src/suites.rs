//! Protocol versions and cipher suites by the names cassandra.yaml uses
//! (`TLSv1.2`, `TLSv1.3`; IANA suite names), mapped onto rustls's ring
//! provider.

use rustls::crypto::{ring, CryptoProvider};
use rustls::{SupportedCipherSuite, SupportedProtocolVersion};

use crate::{Result, TlsError};

/// The protocol names accepted, as Cassandra (and Java) spell them.
const PROTOCOLS: [(&str, &SupportedProtocolVersion); 2] = [
    ("TLSv1.2", &rustls::version::TLS12),
    ("TLSv1.3", &rustls::version::TLS13),
];

/// The versions named in `section.accepted_protocols` (both when none is).
pub fn versions(
    section: &'static str,
    names: &[String],
) -> Result<Vec<&'static SupportedProtocolVersion>> {
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
                    section,
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

/// The ring provider with only the suites named in `section.cipher_suites`
/// (all its defaults when none is); every version asked for must keep at
/// least one suite.
pub fn provider(
    section: &'static str,
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
                section,
                key: "cipher_suites",
                reason: format!("{name} is not supported (supported: {})", known.join(", ")),
            });
        };
        chosen.push(*suite);
    }
    for version in versions {
        if !chosen.iter().any(|s| s.version() == *version) {
            return Err(TlsError::Setting {
                section,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iana_names_of_both_versions() {
        let names: Vec<String> = ring::default_provider()
            .cipher_suites
            .iter()
            .map(iana_name)
            .collect();
        assert!(names.contains(&"TLS_AES_128_GCM_SHA256".to_string()));
        assert!(names.contains(&"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384".to_string()));
    }
}
