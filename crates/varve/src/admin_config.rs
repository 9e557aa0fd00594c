//! Where the admin HTTP port listens and whether it needs a token
//! (docs/design/security.md, section 12). Varve's own keys:
//! `admin_address` and `admin_token` (or the `VARVE_ADMIN_TOKEN`
//! environment variable, which keeps the secret out of the file).
//!
//! Default address: the CQL address when that is a loopback address (so
//! nodes of a local cluster on 127.0.0.x keep one admin port each), else
//! 127.0.0.1. An address that is not loopback needs a token of at least
//! `ADMIN_TOKEN_MIN_BYTES`; without one the node refuses to start.

use std::net::{IpAddr, Ipv4Addr};

use anyhow::bail;
use varve_server::admin_token::ADMIN_TOKEN_MIN_BYTES;

/// The environment variable that gives the token (nodetool reads it too).
pub const ADMIN_TOKEN_ENV: &str = "VARVE_ADMIN_TOKEN";

/// The admin address and token.
pub fn resolve(
    rpc_address: IpAddr,
    address: Option<IpAddr>,
    file_token: Option<String>,
    env_token: Option<String>,
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
    if !address.is_loopback() && token.is_none() {
        bail!("admin_address {address} is not a loopback address: set admin_token (or {ADMIN_TOKEN_ENV}) so the admin port is not open to anyone who reaches it");
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
            resolve(ip("127.0.0.3"), None, None, None).unwrap(),
            (ip("127.0.0.3"), None)
        );
        assert_eq!(
            resolve(ip("10.0.0.5"), None, None, None).unwrap(),
            (ip("127.0.0.1"), None)
        );
        let err = resolve(ip("10.0.0.5"), Some(ip("10.0.0.5")), None, None).unwrap_err();
        assert!(err
            .to_string()
            .contains("admin_address 10.0.0.5 is not a loopback address"));
        let token = "t".repeat(ADMIN_TOKEN_MIN_BYTES);
        let (addr, t) = resolve(
            ip("10.0.0.5"),
            Some(ip("0.0.0.0")),
            Some(token.clone()),
            None,
        )
        .unwrap();
        assert_eq!((addr, t), (ip("0.0.0.0"), Some(token.clone())));
        // The environment wins over the file.
        let env = "e".repeat(ADMIN_TOKEN_MIN_BYTES);
        let (_, t) = resolve(ip("127.0.0.1"), None, Some(token), Some(env.clone())).unwrap();
        assert_eq!(t, Some(env));
    }

    #[test]
    fn the_token_is_at_least_its_minimum_length() {
        let at = "t".repeat(ADMIN_TOKEN_MIN_BYTES);
        let under = "t".repeat(ADMIN_TOKEN_MIN_BYTES - 1);
        assert!(resolve(ip("127.0.0.1"), None, Some(at), None).is_ok());
        let err = resolve(ip("127.0.0.1"), None, Some(under), None).unwrap_err();
        assert!(err.to_string().contains("at least 16 bytes"));
    }
}
