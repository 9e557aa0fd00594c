//! cassandra.yaml `client_encryption_options` read into the server's
//! [`ClientTlsSettings`] (docs/design/security.md, "TLS"). Keys are
//! Cassandra 5.0's, with the meaning its `PEMBasedSslContextFactory` gives
//! them: `keystore` is a PEM file with the private key and the certificate
//! chain, `truststore` a PEM file of trusted certificates. A key Varve
//! cannot honour is an error at start, naming the key.

use anyhow::{bail, Context};
use serde_yaml::Value;
use varve_server::tls::{ClientAuth, ClientTlsSettings};

/// The only context factory whose files Varve reads.
const PEM_FACTORY: &str = "PEMBasedSslContextFactory";

/// The keys both encryption sections read the same way (the files, the
/// protocols and suites). The passwords are moot: a PEM truststore needs
/// none, an unencrypted PEM key none either (an encrypted one is refused
/// when the keystore is read).
pub(crate) const PEM_KEYS: [&str; 9] = [
    "keystore",
    "truststore",
    "protocol",
    "accepted_protocols",
    "cipher_suites",
    "store_type",
    "ssl_context_factory",
    "keystore_password",
    "truststore_password",
];

/// The keys only client_encryption_options has.
const CLIENT_KEYS: [&str; 3] = ["enabled", "optional", "require_client_auth"];

/// Refuses any key of `options` outside `PEM_KEYS` and `own`.
pub(crate) fn check_keys(section: &str, options: &Value, own: &[&str]) -> anyhow::Result<()> {
    for (k, _) in options.as_mapping().into_iter().flatten() {
        let k = k.as_str().unwrap_or("");
        if !PEM_KEYS.contains(&k) && !own.contains(&k) {
            bail!(
                "{section}.{k} is not supported by Varve; refusing to start rather than ignore it"
            );
        }
    }
    Ok(())
}

const KEY: &str = "client_encryption_options";

pub(crate) fn flag(section: &str, options: &Value, key: &str) -> anyhow::Result<bool> {
    match options.get(key) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(Value::String(s)) if s == "true" || s == "false" => Ok(s == "true"),
        Some(_) => bail!("{section}.{key} must be true or false"),
    }
}

pub(crate) fn text(section: &str, options: &Value, key: &str) -> anyhow::Result<Option<String>> {
    match options.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => bail!("{section}.{key} must be a string"),
    }
}

/// A list given as a YAML sequence or a comma-separated string.
pub(crate) fn list(section: &str, options: &Value, key: &str) -> anyhow::Result<Vec<String>> {
    match options.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::String(s)) => Ok(s
            .split(',')
            .map(|p| p.trim().to_string())
            .filter(|p| !p.is_empty())
            .collect()),
        Some(Value::Sequence(items)) => items
            .iter()
            .map(|i| match i {
                Value::String(s) => Ok(s.trim().to_string()),
                _ => bail!("{section}.{key} must be a list of names"),
            })
            .collect(),
        Some(_) => bail!("{section}.{key} must be a list of names"),
    }
}

/// `require_client_auth`: `true`, `false` or `optional`.
fn client_auth(section: &str, options: &Value) -> anyhow::Result<ClientAuth> {
    match options.get("require_client_auth") {
        None | Some(Value::Null) | Some(Value::Bool(false)) => Ok(ClientAuth::None),
        Some(Value::Bool(true)) => Ok(ClientAuth::Required),
        Some(Value::String(s)) => {
            match s.as_str() {
                "false" => Ok(ClientAuth::None),
                "true" => Ok(ClientAuth::Required),
                "optional" => Ok(ClientAuth::Optional),
                other => {
                    bail!("{section}.require_client_auth must be true, false or optional, not '{other}'")
                }
            }
        }
        Some(_) => bail!("{section}.require_client_auth must be true, false or optional"),
    }
}

/// `accepted_protocols`, else `protocol` (`TLS`: any version rustls has).
pub(crate) fn protocols(section: &str, options: &Value) -> anyhow::Result<Vec<String>> {
    let accepted = list(section, options, "accepted_protocols")?;
    if !accepted.is_empty() {
        return Ok(accepted);
    }
    Ok(match text(section, options, "protocol")?.as_deref() {
        None | Some("TLS") => Vec::new(),
        Some(one) => vec![one.to_string()],
    })
}

pub(crate) fn check_factory(section: &str, options: &Value) -> anyhow::Result<()> {
    let Some(factory) = options.get("ssl_context_factory") else {
        return Ok(());
    };
    let Some(map) = factory.as_mapping() else {
        bail!("{section}.ssl_context_factory must be a map with class_name");
    };
    for (k, _) in map {
        if k.as_str() != Some("class_name") {
            bail!("{section}.ssl_context_factory: only class_name is supported (inline PEM parameters are not); give the files in keystore and truststore");
        }
    }
    let class = map.get("class_name").and_then(Value::as_str).unwrap_or("");
    if class.rsplit('.').next() != Some(PEM_FACTORY) {
        bail!("{section}.ssl_context_factory: {class} is not supported; Varve reads PEM files ({PEM_FACTORY})");
    }
    Ok(())
}

/// `ssl_context_factory` and `store_type`: PEM files only.
pub(crate) fn check_stores(section: &str, options: &Value) -> anyhow::Result<()> {
    check_factory(section, options)?;
    if let Some(store_type) = text(section, options, "store_type")? {
        if store_type != "PEM" {
            bail!("{section}.store_type: {store_type} is not supported; Varve reads PEM files (store_type: PEM)");
        }
    }
    Ok(())
}

/// The client TLS settings, or `None` when TLS is off (`enabled` and
/// `optional` both false or absent; the other keys are then not read, so
/// Cassandra's template block with `enabled: false` is accepted as is).
pub fn resolve(options: Option<&Value>) -> anyhow::Result<Option<ClientTlsSettings>> {
    resolve_section(KEY, options, &CLIENT_KEYS)
}

/// [`resolve`] for any section shaped like `client_encryption_options`
/// (the admin port's too), accepting `own` keys beside `PEM_KEYS`.
pub(crate) fn resolve_section(
    section: &'static str,
    options: Option<&Value>,
    own: &[&str],
) -> anyhow::Result<Option<ClientTlsSettings>> {
    let Some(options) = options.filter(|o| !o.is_null()) else {
        return Ok(None);
    };
    if !options.is_mapping() {
        bail!("{section} must be a map");
    }
    let enabled = flag(section, options, "enabled")?;
    let optional = flag(section, options, "optional")?;
    if !enabled && !optional {
        return Ok(None);
    }
    check_keys(section, options, own)?;
    check_stores(section, options)?;
    let keystore = text(section, options, "keystore")?
        .with_context(|| format!("{section}.keystore: a PEM file with the private key and certificate chain is needed when TLS is on"))?;
    let mut settings = ClientTlsSettings::new(keystore);
    settings.section = section;
    settings.optional = optional;
    settings.truststore = text(section, options, "truststore")?.map(Into::into);
    settings.client_auth = client_auth(section, options)?;
    settings.protocols = protocols(section, options)?;
    settings.cipher_suites = list(section, options, "cipher_suites")?;
    // Read the files now: an error stops the node before it serves.
    varve_server::tls::ClientTls::new(settings.clone())?;
    Ok(Some(settings))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve_yaml(yaml: &str) -> anyhow::Result<Option<ClientTlsSettings>> {
        let v: Value = serde_yaml::from_str(yaml).unwrap();
        resolve(Some(&v))
    }

    fn err(yaml: &str) -> String {
        format!("{:#}", resolve_yaml(yaml).unwrap_err())
    }

    #[test]
    fn cassandras_template_with_tls_off_is_accepted_as_is() {
        let template = "enabled: false\nkeystore: conf/.keystore\nkeystore_password: cassandra\nrequire_client_auth: false\nalgorithm: SunX509\nstore_type: JKS\n";
        assert!(resolve_yaml(template).unwrap().is_none());
        assert!(resolve(None).unwrap().is_none());
    }

    #[test]
    fn what_varve_cannot_honour_is_refused_naming_the_key() {
        assert!(err("enabled: true").contains("client_encryption_options.keystore"));
        assert!(err("optional: true").contains("client_encryption_options.keystore"));
        assert!(err("enabled: true\nkeystore: k.pem\nalgorithm: SunX509")
            .contains("client_encryption_options.algorithm is not supported"));
        assert!(err("enabled: true\nkeystore: k.pem\nstore_type: PKCS12")
            .contains("client_encryption_options.store_type: PKCS12"));
        assert!(err("enabled: true\nkeystore: k.pem\nssl_context_factory:\n  class_name: org.apache.cassandra.security.DefaultSslContextFactory")
            .contains("DefaultSslContextFactory is not supported"));
        assert!(err("enabled: true\nkeystore: k.pem\nssl_context_factory:\n  class_name: PEMBasedSslContextFactory\n  parameters:\n    private_key: x")
            .contains("only class_name"));
        assert!(
            err("enabled: true\nkeystore: k.pem\nrequire_client_auth: maybe")
                .contains("require_client_auth must be true, false or optional")
        );
        assert!(err("enabled: yes-please").contains("enabled must be true or false"));
        // Every key read is then checked against the files: a missing one
        // names the keystore.
        assert!(err("enabled: true\nkeystore: /nonexistent/k.pem\nstore_type: PEM\nssl_context_factory:\n  class_name: org.apache.cassandra.security.PEMBasedSslContextFactory")
            .contains("client_encryption_options.keystore: cannot read /nonexistent/k.pem"));
    }

    #[test]
    fn lists_and_protocols_in_every_spelling() {
        let v: Value = serde_yaml::from_str(
            "accepted_protocols: TLSv1.2, TLSv1.3\ncipher_suites: [TLS_AES_128_GCM_SHA256]\nrequire_client_auth: optional",
        )
        .unwrap();
        assert_eq!(protocols(KEY, &v).unwrap(), ["TLSv1.2", "TLSv1.3"]);
        assert_eq!(
            list(KEY, &v, "cipher_suites").unwrap(),
            ["TLS_AES_128_GCM_SHA256"]
        );
        assert_eq!(client_auth(KEY, &v).unwrap(), ClientAuth::Optional);
        let v: Value = serde_yaml::from_str("protocol: TLS\nrequire_client_auth: true").unwrap();
        assert!(protocols(KEY, &v).unwrap().is_empty());
        assert_eq!(client_auth(KEY, &v).unwrap(), ClientAuth::Required);
        let v: Value = serde_yaml::from_str("protocol: TLSv1.3").unwrap();
        assert_eq!(protocols(KEY, &v).unwrap(), ["TLSv1.3"]);
    }
}
