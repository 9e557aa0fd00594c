//! cassandra.yaml `server_encryption_options` read into the cluster's
//! [`InternodeTlsSettings`] (docs/design/security.md, section 11).
//! `internode_encryption: none` (the default), `dc`, `rack` and `all` are
//! built; plain-and-TLS `optional` mode for everyone and the legacy SSL
//! port are not, and stop the node at start, as does any key Varve cannot
//! honour. Nodes always authenticate each other over TLS (each presents
//! its keystore's certificate and checks the other's against its
//! truststore).

use std::sync::Arc;

use anyhow::{bail, Context};
use serde_yaml::Value;
use varve_cluster::env::tls::{InternodeEncryption, InternodeTlsSettings, TlsNetwork};
use varve_cluster::env::TokioNetwork;

use crate::tls_config::{check_keys, check_stores, flag, list, protocols, text};

const KEY: &str = "server_encryption_options";

/// The keys only server_encryption_options has (besides
/// crate::tls_config::PEM_KEYS), read when internode TLS is on.
const INTERNODE_KEYS: [&str; 4] = [
    "internode_encryption",
    // Varve always asks for the peer's certificate (true or false alike).
    "require_client_auth",
    "require_endpoint_verification",
    // Read to be refused when true.
    "optional",
];

/// The settings when internode TLS is on (`all`, `dc` or `rack`), else
/// `None`.
pub fn resolve(options: Option<&Value>) -> anyhow::Result<Option<InternodeTlsSettings>> {
    let Some(options) = options.filter(|o| !o.is_null()) else {
        return Ok(None);
    };
    if !options.is_mapping() {
        bail!("{KEY} must be a map");
    }
    let mode = text(KEY, options, "internode_encryption")?.unwrap_or_else(|| "none".into());
    let legacy_port = flag(KEY, options, "enable_legacy_ssl_storage_port")?
        || flag(KEY, options, "legacy_ssl_storage_port_enabled")?;
    if legacy_port {
        bail!("{KEY}: the legacy SSL storage port is not supported by Varve; refusing to start");
    }
    if flag(KEY, options, "optional")? {
        bail!("{KEY}.optional: accepting clear text from any node is not supported by Varve (dc or rack lets in clear text only from the nodes they name); refusing to start");
    }
    if mode == "none" {
        return Ok(None);
    }
    let Some(mode) = InternodeEncryption::parse(&mode) else {
        bail!("{KEY}.internode_encryption must be none, dc, rack or all, not '{mode}'");
    };
    check_keys(KEY, options, &INTERNODE_KEYS)?;
    check_stores(KEY, options)?;
    let keystore = text(KEY, options, "keystore")?
        .with_context(|| format!("{KEY}.keystore: a PEM file with the node's private key and certificate chain is needed with internode_encryption: {mode}"))?;
    let truststore = text(KEY, options, "truststore")?
        .with_context(|| format!("{KEY}.truststore: a PEM file of the certificates other nodes' certificates chain to is needed with internode_encryption: {mode}"))?;
    let settings = InternodeTlsSettings {
        mode,
        keystore: keystore.into(),
        truststore: truststore.into(),
        protocols: protocols(KEY, options)?,
        cipher_suites: list(KEY, options, "cipher_suites")?,
        require_endpoint_verification: flag(KEY, options, "require_endpoint_verification")?,
    };
    // Read the files now: an error stops the node before it serves.
    TlsNetwork::new(Arc::new(TokioNetwork::ANY_SOURCE), &settings)?;
    Ok(Some(settings))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(yaml: &str) -> String {
        let v: Value = serde_yaml::from_str(yaml).unwrap();
        format!("{:#}", resolve(Some(&v)).unwrap_err())
    }

    #[test]
    fn none_is_off_and_cassandras_template_is_accepted() {
        let template: Value = serde_yaml::from_str(
            "internode_encryption: none\nkeystore: conf/.keystore\nkeystore_password: cassandra\nrequire_client_auth: false\nalgorithm: SunX509\n",
        )
        .unwrap();
        assert!(resolve(Some(&template)).unwrap().is_none());
        assert!(resolve(None).unwrap().is_none());
    }

    #[test]
    fn what_varve_cannot_honour_is_refused_naming_the_key() {
        assert!(err("internode_encryption: dc")
            .contains("server_encryption_options.keystore: a PEM file with the node's private key and certificate chain is needed with internode_encryption: dc"));
        assert!(err("internode_encryption: rack\nkeystore: k.pem")
            .contains("server_encryption_options.truststore: a PEM file of the certificates other nodes' certificates chain to is needed with internode_encryption: rack"));
        assert!(err("internode_encryption: some").contains("must be none, dc, rack or all"));
        assert!(err("internode_encryption: DC").contains("must be none, dc, rack or all, not 'DC'"));
        assert!(err("internode_encryption: dc\noptional: true").contains("optional"));
        assert!(err("internode_encryption: all").contains("server_encryption_options.keystore"));
        assert!(err("internode_encryption: all\nkeystore: k.pem")
            .contains("server_encryption_options.truststore"));
        assert!(
            err("internode_encryption: all\nkeystore: /nonexistent/k.pem\ntruststore: t.pem")
                .contains("server_encryption_options.truststore: cannot read t.pem")
        );
        assert!(err("internode_encryption: all\nalgorithm: SunX509")
            .contains("server_encryption_options.algorithm is not supported"));
        assert!(
            err("internode_encryption: all\nstore_type: JKS\nkeystore: k\ntruststore: t")
                .contains("server_encryption_options.store_type: JKS")
        );
        assert!(err("internode_encryption: none\noptional: true").contains("optional"));
        assert!(err("legacy_ssl_storage_port_enabled: true").contains("legacy SSL storage port"));
    }
}
