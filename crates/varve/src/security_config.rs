//! The security settings of cassandra.yaml (docs/design/security.md,
//! section 1): `authenticator`, `authorizer`, `role_manager`,
//! `network_authorizer`, `cidr_authorizer`, `credentials_validity`, and
//! (TLS: crate::tls_config and crate::internode_tls_config). What Varve does not provide is an error at start,
//! never a warning: a copied production file must not look protected when
//! it is not.

use std::time::Duration;

use anyhow::{bail, Context};
use serde_yaml::Value;
use varve_query::auth::{AuthSettings, CREDENTIALS_VALIDITY_DEFAULT};

use crate::hints_config::duration_ms;

/// The package Cassandra's class names may carry.
const AUTH_PACKAGE: &str = "org.apache.cassandra.auth.";

/// The security keys as the file gives them.
#[derive(Debug, Default, Clone)]
pub struct SecurityFile {
    pub authenticator: Option<Value>,
    pub authorizer: Option<Value>,
    pub role_manager: Option<Value>,
    pub network_authorizer: Option<Value>,
    pub cidr_authorizer: Option<Value>,
    pub credentials_validity: Option<Value>,
    pub credentials_validity_in_ms: Option<u64>,
}

/// The class a key names (a string, or a map with `class_name`), without
/// Cassandra's package; `None` when absent.
fn class(key: &str, v: &Option<Value>) -> anyhow::Result<Option<String>> {
    let name = match v {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Mapping(m)) => match m.get("class_name") {
            Some(Value::String(s)) => s.clone(),
            _ => bail!("{key} must name a class (class_name)"),
        },
        Some(_) => bail!("{key} must name a class"),
    };
    Ok(Some(name.trim_start_matches(AUTH_PACKAGE).to_string()))
}

/// Which of `choices` the key names (the first when absent).
fn choose(key: &str, v: &Option<Value>, choices: &[&str]) -> anyhow::Result<usize> {
    let Some(name) = class(key, v)? else {
        return Ok(0);
    };
    choices.iter().position(|c| *c == name).with_context(|| {
        format!(
            "{key}: {name} is not supported by Varve (supported: {}); refusing to start rather than run without the security it asks for",
            choices.join(", ")
        )
    })
}

/// The node's authentication settings.
pub fn resolve(file: &SecurityFile) -> anyhow::Result<AuthSettings> {
    let password = choose(
        "authenticator",
        &file.authenticator,
        &["AllowAllAuthenticator", "PasswordAuthenticator"],
    )? == 1;
    let authorizer = choose(
        "authorizer",
        &file.authorizer,
        &["AllowAllAuthorizer", "CassandraAuthorizer"],
    )? == 1;
    choose(
        "role_manager",
        &file.role_manager,
        &["CassandraRoleManager"],
    )?;
    choose(
        "network_authorizer",
        &file.network_authorizer,
        &["AllowAllNetworkAuthorizer"],
    )?;
    choose(
        "cidr_authorizer",
        &file.cidr_authorizer,
        &["AllowAllCIDRAuthorizer"],
    )?;
    if authorizer && !password {
        bail!("authorizer: CassandraAuthorizer needs authenticator: PasswordAuthenticator (permissions belong to roles that log in)");
    }
    let credentials_validity = match (&file.credentials_validity, file.credentials_validity_in_ms) {
        (Some(v), _) => Duration::from_millis(duration_ms("credentials_validity", v)?),
        (None, Some(ms)) => Duration::from_millis(ms),
        (None, None) => CREDENTIALS_VALIDITY_DEFAULT,
    };
    Ok(AuthSettings {
        password_authenticator: password,
        cassandra_authorizer: authorizer,
        credentials_validity,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(yaml: &str) -> SecurityFile {
        let v: Value = serde_yaml::from_str(yaml).unwrap();
        let get = |k: &str| v.get(k).cloned();
        SecurityFile {
            authenticator: get("authenticator"),
            authorizer: get("authorizer"),
            role_manager: get("role_manager"),
            network_authorizer: get("network_authorizer"),
            cidr_authorizer: get("cidr_authorizer"),
            credentials_validity: get("credentials_validity"),
            credentials_validity_in_ms: get("credentials_validity_in_ms").and_then(|v| v.as_u64()),
        }
    }

    fn err(yaml: &str) -> String {
        format!("{:#}", resolve(&file(yaml)).unwrap_err())
    }

    #[test]
    fn the_defaults_allow_all() {
        assert_eq!(resolve(&file("{}")).unwrap(), AuthSettings::default());
        let cassandras = "authenticator: AllowAllAuthenticator\nauthorizer: AllowAllAuthorizer\nrole_manager: CassandraRoleManager\nnetwork_authorizer: AllowAllNetworkAuthorizer\ncidr_authorizer:\n  class_name: AllowAllCIDRAuthorizer\nclient_encryption_options:\n  enabled: false\nserver_encryption_options:\n  internode_encryption: none\n";
        assert_eq!(resolve(&file(cassandras)).unwrap(), AuthSettings::default());
    }

    #[test]
    fn password_authentication_and_authorization_in_every_spelling() {
        for (a, z) in [
            ("PasswordAuthenticator", "CassandraAuthorizer"),
            (
                "org.apache.cassandra.auth.PasswordAuthenticator",
                "org.apache.cassandra.auth.CassandraAuthorizer",
            ),
            ("{class_name: PasswordAuthenticator}", "CassandraAuthorizer"),
        ] {
            let s = resolve(&file(&format!(
                "authenticator: {a}\nauthorizer: {z}\ncredentials_validity: 5s"
            )))
            .unwrap();
            assert!(s.password_authenticator && s.cassandra_authorizer);
            assert_eq!(s.credentials_validity, Duration::from_secs(5));
        }
        let s = resolve(&file(
            "authenticator: PasswordAuthenticator\ncredentials_validity_in_ms: 0",
        ))
        .unwrap();
        assert!(s.password_authenticator && !s.cassandra_authorizer);
        assert_eq!(s.credentials_validity, Duration::ZERO);
    }

    #[test]
    fn security_varve_does_not_provide_is_an_error() {
        assert!(err("authenticator: MutualTlsAuthenticator")
            .contains("authenticator: MutualTlsAuthenticator is not supported"));
        assert!(err("authorizer: com.example.Custom").contains("authorizer"));
        assert!(err("role_manager: LDAPRoleManager").contains("role_manager"));
        assert!(
            err("network_authorizer: CassandraNetworkAuthorizer").contains("network_authorizer")
        );
        assert!(err("authorizer: CassandraAuthorizer")
            .contains("needs authenticator: PasswordAuthenticator"));
        assert!(err("authenticator: [a]").contains("must name a class"));
    }
}
