//! The client side of a node's admin port for `varve nodetool`: one
//! HTTP/1.1 request per connection, in plain HTTP or, with `--ssl`, in
//! HTTPS (rustls with the ring provider, blocking; no OpenSSL).
//!
//! HTTPS flags (docs/design/security.md, section 12):
//! - `--ssl`: speak HTTPS; needs `--cafile`;
//! - `--cafile PATH`: PEM certificates the node's certificate must chain
//!   to. The node's name is checked against `-h` (an IP address or a DNS
//!   name), as a browser would;
//! - `--certfile PATH` (mutual TLS, `require_client_auth: true`): the
//!   client's certificate chain, PEM; its private key is read from
//!   `--keyfile PATH`, or from the certfile itself when `--keyfile` is not
//!   given (one PEM holding both, shaped like the node's keystore).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use clap::Args;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};

/// How to reach the admin port over HTTPS (flattened into nodetool's flags).
#[derive(Args, Debug, Clone, Default)]
pub struct AdminTlsArgs {
    /// Speak HTTPS to the admin port (the node has admin_encryption_options).
    #[arg(long = "ssl", requires = "cafile")]
    pub ssl: bool,
    /// PEM file of the CA certificates the node's certificate must chain to.
    #[arg(long = "cafile", value_name = "PATH", requires = "ssl")]
    pub cafile: Option<PathBuf>,
    /// PEM file with this client's certificate chain, for a node that
    /// requires client certificates; holds the private key too unless
    /// --keyfile is given.
    #[arg(long = "certfile", value_name = "PATH", requires = "ssl")]
    pub certfile: Option<PathBuf>,
    /// PEM file with the private key of --certfile.
    #[arg(long = "keyfile", value_name = "PATH", requires = "certfile")]
    pub keyfile: Option<PathBuf>,
}

impl AdminTlsArgs {
    /// The rustls configuration the flags ask for; `None` without `--ssl`.
    pub fn client_config(&self) -> anyhow::Result<Option<Arc<ClientConfig>>> {
        if !self.ssl {
            return Ok(None);
        }
        let cafile = self.cafile.as_deref().context("--ssl needs --cafile")?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .context("TLS protocol versions")?
            .with_root_certificates(roots(cafile)?);
        let config = match &self.certfile {
            None => builder.with_no_client_auth(),
            Some(certfile) => {
                let keyfile = self.keyfile.as_deref().unwrap_or(certfile);
                builder
                    .with_client_auth_cert(certificates("--certfile", certfile)?, key(keyfile)?)
                    .context("the client certificate and key do not go together")?
            }
        };
        Ok(Some(Arc::new(config)))
    }
}

/// The certificates of a PEM file (none is an error).
fn certificates(flag: &str, path: &Path) -> anyhow::Result<Vec<CertificateDer<'static>>> {
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .with_context(|| format!("{flag} {}", path.display()))?;
    if certs.is_empty() {
        bail!("{flag} {}: no CERTIFICATE in the file", path.display());
    }
    Ok(certs)
}

fn roots(cafile: &Path) -> anyhow::Result<RootCertStore> {
    let mut roots = RootCertStore::empty();
    for cert in certificates("--cafile", cafile)? {
        roots
            .add(cert)
            .with_context(|| format!("--cafile {}", cafile.display()))?;
    }
    Ok(roots)
}

fn key(path: &Path) -> anyhow::Result<PrivateKeyDer<'static>> {
    PrivateKeyDer::from_pem_file(path)
        .with_context(|| format!("no usable PRIVATE KEY in {}", path.display()))
}

/// Where a request goes.
pub struct Endpoint<'a> {
    pub host: &'a str,
    pub port: u16,
    /// HTTPS when set.
    pub tls: Option<Arc<ClientConfig>>,
    /// `Authorization: Bearer` (the node's admin token), when set.
    pub token: Option<String>,
}

/// One HTTP/1.1 request; returns the status and the body. `timeout`
/// bounds each read (`None`: wait as long as the node works).
pub fn request(
    to: &Endpoint,
    method: &str,
    target: &str,
    timeout: Option<Duration>,
) -> anyhow::Result<(u16, String)> {
    let (host, port) = (to.host, to.port);
    let tcp =
        TcpStream::connect((host, port)).with_context(|| format!("connecting to {host}:{port}"))?;
    tcp.set_read_timeout(timeout)?;
    let auth = to
        .token
        .as_ref()
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let head = format!("{method} {target} HTTP/1.1\r\nHost: {host}\r\n{auth}Content-Length: 0\r\nConnection: close\r\n\r\n");
    let response = match &to.tls {
        None => exchange(tcp, &head),
        Some(config) => exchange(handshake(tcp, host, port, config)?, &head),
    }?;
    parse(&response)
}

/// The TLS session with the node, its certificate checked against `host`.
fn handshake(
    mut tcp: TcpStream,
    host: &str,
    port: u16,
    config: &Arc<ClientConfig>,
) -> anyhow::Result<StreamOwned<ClientConnection, TcpStream>> {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let name = ServerName::try_from(bare.to_string())
        .with_context(|| format!("{host} is neither an IP address nor a DNS name"))?;
    let mut conn = ClientConnection::new(Arc::clone(config), name)?;
    while conn.is_handshaking() {
        conn.complete_io(&mut tcp).with_context(|| {
            format!("TLS handshake with {host}:{port} failed (is its admin port plain HTTP?)")
        })?;
    }
    Ok(StreamOwned::new(conn, tcp))
}

/// Sends the request head and reads the response to the end (lossy
/// UTF-8: a TLS alert is not text).
fn exchange(mut stream: impl Read + Write, head: &str) -> anyhow::Result<String> {
    stream.write_all(head.as_bytes())?;
    stream.flush()?;
    let mut response = Vec::new();
    stream
        .read_to_end(&mut response)
        .context("reading the response")?;
    Ok(String::from_utf8_lossy(&response).into_owned())
}

/// The status and body of a response.
fn parse(response: &str) -> anyhow::Result<(u16, String)> {
    // An HTTPS port answers plain HTTP with a TLS alert, or nothing.
    if !response.starts_with("HTTP/") {
        bail!("no HTTP answer from the node (if its admin port speaks HTTPS, use --ssl --cafile PATH)");
    }
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((response, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .context("malformed HTTP response")?;
    Ok((status, body.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser, Debug)]
    struct Cli {
        #[command(flatten)]
        tls: AdminTlsArgs,
    }

    fn parse_flags(args: &[&str]) -> Result<AdminTlsArgs, clap::Error> {
        Cli::try_parse_from(std::iter::once("t").chain(args.iter().copied())).map(|c| c.tls)
    }

    #[test]
    fn ssl_needs_a_ca_file_and_the_files_need_ssl() {
        assert!(parse_flags(&["--ssl"]).is_err());
        assert!(parse_flags(&["--cafile", "ca.pem"]).is_err());
        assert!(parse_flags(&["--ssl", "--cafile", "ca.pem", "--keyfile", "k.pem"]).is_err());
        let both = ["--ssl", "--cafile", "ca.pem", "--certfile", "c.pem"];
        assert!(parse_flags(&both).is_ok());
        assert!(!parse_flags(&[]).unwrap().ssl);
        assert!(AdminTlsArgs::default().client_config().unwrap().is_none());
    }

    #[test]
    fn unreadable_files_are_named() {
        let args = parse_flags(&["--ssl", "--cafile", "/nonexistent/ca.pem"]).unwrap();
        let err = format!("{:#}", args.client_config().unwrap_err());
        assert!(err.contains("--cafile /nonexistent/ca.pem"), "{err}");
    }

    #[test]
    fn responses_are_parsed_and_a_silent_close_is_explained() {
        let ok = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n";
        assert_eq!(parse(ok).unwrap(), (200, "ok\n".to_string()));
        assert!(parse("").unwrap_err().to_string().contains("--ssl"));
        let alert = "\u{15}\u{3}\u{3}\u{0}\u{2}\u{2}\u{32}";
        assert!(parse(alert).unwrap_err().to_string().contains("--ssl"));
        assert!(parse("HTTP/1.1 x").is_err());
    }
}
