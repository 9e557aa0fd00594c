//! Where the admin HTTP port listens and whether it needs a token
//! (docs/design/security.md, section 12). Varve's own keys:
//! `admin_address` and `admin_token` (or the `VARVE_ADMIN_TOKEN`
//! environment variable, which keeps the secret out of the file).
//!
//! Default address: the CQL address when that is a loopback address (so
//! nodes of a local cluster on 127.0.0.x keep one admin port each), else
//! 127.0.0.1. An address that is not loopback needs a token of at least
//! `ADMIN_TOKEN_MIN_BYTES`, or `admin_encryption_options` with
//! `require_client_auth: true` (mutual TLS authenticates the caller);
//! with neither the node refuses to start.
//!
//! `admin_encryption_options` is shaped like `client_encryption_options`
//! and read by the same code (crate::tls_config); with it the admin port
//! speaks HTTPS only (varve_server's `admin_tls`), so `optional` is
//! refused: the port is either plain HTTP or HTTPS, never both. Errors
//! name `admin_encryption_options`, not the client section.

use std::net::{IpAddr, Ipv4Addr};

use anyhow::{bail, Context};
use serde_yaml::Value;
use varve_server::admin_token::ADMIN_TOKEN_MIN_BYTES;
use varve_server::tls::{ClientAuth, ClientTlsSettings};

/// The cassandra.yaml-style section for the admin port's TLS.
pub const ADMIN_TLS_KEY: &str = "admin_encryption_options";

/// The keys the admin section has beside the PEM ones.
const ADMIN_TLS_KEYS: [&str; 2] = ["enabled", "require_client_auth"];

/// The admin TLS settings, or `None` when the section is absent or off.
/// Every error (an unknown key, missing or bad PEM files) stops the start.
pub fn resolve_tls(options: Option<&Value>) -> anyhow::Result<Option<ClientTlsSettings>> {
    if let Some(o) = options.filter(|o| o.is_mapping()) {
        if crate::tls_config::flag(ADMIN_TLS_KEY, o, "optional")? {
            bail!("{ADMIN_TLS_KEY}.optional is not supported: the admin port speaks either plain HTTP or HTTPS only");
        }
    }
    crate::tls_config::resolve_section(ADMIN_TLS_KEY, options, &ADMIN_TLS_KEYS)
        .with_context(|| format!("{ADMIN_TLS_KEY} is invalid"))
}

/// Whether admin TLS authenticates its callers (a client certificate
/// signed by the truststore is required).
fn tls_authenticates(tls: Option<&ClientTlsSettings>) -> bool {
    tls.is_some_and(|t| t.client_auth == ClientAuth::Required)
}

/// Whether the config file at `path` turns admin TLS on (its
/// `admin_encryption_options.enabled`), for the commands that start nodes
/// and then talk to their admin port in plain HTTP (`varve cluster`).
pub fn tls_enabled_in(path: &std::path::Path) -> anyhow::Result<bool> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let file: Value =
        serde_yaml::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    match file.get(ADMIN_TLS_KEY).filter(|o| o.is_mapping()) {
        Some(o) => crate::tls_config::flag(ADMIN_TLS_KEY, o, "enabled"),
        None => Ok(false),
    }
}

/// The environment variable that gives the token (nodetool reads it too).
pub const ADMIN_TOKEN_ENV: &str = "VARVE_ADMIN_TOKEN";

/// The admin address and token.
pub fn resolve(
    rpc_address: IpAddr,
    address: Option<IpAddr>,
    file_token: Option<String>,
    env_token: Option<String>,
    tls: Option<&ClientTlsSettings>,
) -> anyhow::Result<(IpAddr, Option<String>)> {
    let address = address.unwrap_or(if rpc_address.is_loopback() {
        rpc_address
    } else {
        IpAddr::V4(Ipv4Addr::LOCALHOST)
    });
    let token = env_token.or(file_token).filter(|t| !t.is_empty());
    if let Some(t) = &token {
        if t.len() < ADMIN_TOKEN_MIN_BYTES {
            bail!("admin_token must be at least {ADMIN_TOKEN_MIN_BYTES} bytes long");
        }
    }
    if !address.is_loopback() && token.is_none() && !tls_authenticates(tls) {
        bail!("admin_address {address} is not a loopback address: set admin_token (or {ADMIN_TOKEN_ENV}), or {ADMIN_TLS_KEY} with require_client_auth: true, so the admin port is not open to anyone who reaches it");
    }
    Ok((address, token))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn loopback_by_default_and_a_token_elsewhere() {
        assert_eq!(
            resolve(ip("127.0.0.3"), None, None, None, None).unwrap(),
            (ip("127.0.0.3"), None)
        );
        assert_eq!(
            resolve(ip("10.0.0.5"), None, None, None, None).unwrap(),
            (ip("127.0.0.1"), None)
        );
        let err = resolve(ip("10.0.0.5"), Some(ip("10.0.0.5")), None, None, None).unwrap_err();
        assert!(err
            .to_string()
            .contains("admin_address 10.0.0.5 is not a loopback address"));
        let token = "t".repeat(ADMIN_TOKEN_MIN_BYTES);
        let (addr, t) = resolve(
            ip("10.0.0.5"),
            Some(ip("0.0.0.0")),
            Some(token.clone()),
            None,
            None,
        )
        .unwrap();
        assert_eq!((addr, t), (ip("0.0.0.0"), Some(token.clone())));
        // The environment wins over the file.
        let env = "e".repeat(ADMIN_TOKEN_MIN_BYTES);
        let (_, t) = resolve(ip("127.0.0.1"), None, Some(token), Some(env.clone()), None).unwrap();
        assert_eq!(t, Some(env));
    }

    #[test]
    fn the_token_is_at_least_its_minimum_length() {
        let at = "t".repeat(ADMIN_TOKEN_MIN_BYTES);
        let under = "t".repeat(ADMIN_TOKEN_MIN_BYTES - 1);
        assert!(resolve(ip("127.0.0.1"), None, Some(at), None, None).is_ok());
        let err = resolve(ip("127.0.0.1"), None, Some(under), None, None).unwrap_err();
        assert!(err.to_string().contains("at least 16 bytes"));
    }

    fn tls_with(client_auth: ClientAuth) -> ClientTlsSettings {
        let mut t = ClientTlsSettings::new("k.pem".to_string());
        t.client_auth = client_auth;
        t
    }

    #[test]
    fn mutual_tls_may_replace_the_token_elsewhere_but_plain_tls_may_not() {
        let mutual = tls_with(ClientAuth::Required);
        let (addr, t) = resolve(
            ip("10.0.0.5"),
            Some(ip("0.0.0.0")),
            None,
            None,
            Some(&mutual),
        )
        .unwrap();
        assert_eq!((addr, t), (ip("0.0.0.0"), None));
        for weak in [ClientAuth::None, ClientAuth::Optional] {
            let tls = tls_with(weak);
            let err =
                resolve(ip("10.0.0.5"), Some(ip("0.0.0.0")), None, None, Some(&tls)).unwrap_err();
            assert!(err.to_string().contains("require_client_auth: true"));
        }
    }

    #[test]
    fn a_config_file_tells_whether_admin_tls_is_on() {
        let dir = std::env::temp_dir().join(format!("varve-admin-cfg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = |name: &str, yaml: &str| {
            let path = dir.join(name);
            std::fs::write(&path, yaml).unwrap();
            path
        };
        let on = file("on.yaml", "admin_encryption_options:\n  enabled: true\n");
        let off = file("off.yaml", "admin_encryption_options:\n  enabled: false\n");
        let none = file("none.yaml", "cluster_name: x\n");
        assert!(tls_enabled_in(&on).unwrap());
        assert!(!tls_enabled_in(&off).unwrap());
        assert!(!tls_enabled_in(&none).unwrap());
        assert!(tls_enabled_in(&dir.join("missing.yaml")).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn tls_yaml(yaml: &str) -> anyhow::Result<Option<ClientTlsSettings>> {
        let v: Value = serde_yaml::from_str(yaml).unwrap();
        resolve_tls(Some(&v))
    }

    #[test]
    fn admin_tls_config_is_read_like_the_clients_and_errors_stop_the_start() {
        assert!(resolve_tls(None).unwrap().is_none());
        assert!(tls_yaml("enabled: false\nkeystore: x.pem")
            .unwrap()
            .is_none());
        let err = |y: &str| format!("{:#}", tls_yaml(y).unwrap_err());
        assert!(err("enabled: true").contains("admin_encryption_options.keystore"));
        assert!(err("optional: true\nkeystore: k.pem").contains("optional is not supported"));
        assert!(err("enabled: true\nkeystore: k.pem\nalgorithm: SunX509")
            .contains("admin_encryption_options.algorithm is not supported"));
        assert!(
            err("enabled: true\nkeystore: k.pem\nrequire_client_auth: maybe")
                .contains("admin_encryption_options.require_client_auth")
        );
        assert!(err("enabled: true\nkeystore: /nonexistent/k.pem")
            .contains("admin_encryption_options.keystore: cannot read /nonexistent/k.pem"));
    }
}
