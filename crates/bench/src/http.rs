//! A minimal HTTP/1.1 client for the node's admin port (`GET /metrics`,
//! `POST /nodetool/...`): one request per connection, `Connection: close`,
//! the body read to the end of the stream. No TLS (an `https://` admin
//! URL is refused, naming the limitation), no redirects, no chunked
//! encoding: the admin port answers with a plain body.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::error::{BenchError, Result};

/// Largest response read (a big /metrics page is a few hundred KiB).
pub const RESPONSE_BYTES_MAX: usize = 32 * 1024 * 1024;

/// A parsed `http://host:port` base address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BaseUrl {
    /// `host:port`, as connected to.
    pub authority: String,
}

impl BaseUrl {
    /// Parses `http://host:port` (a trailing `/` allowed) or `host:port`.
    pub fn parse(s: &str) -> Result<BaseUrl> {
        let rest = s.strip_prefix("http://").unwrap_or(s);
        let authority = rest.trim_end_matches('/');
        let valid = !authority.is_empty()
            && !authority.contains('/')
            && authority
                .rsplit_once(':')
                .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok());
        if s.starts_with("https://") {
            return Err(BenchError::config(
                "admin",
                format!("`{s}`: varve bench speaks plain HTTP to the admin port; HTTPS (admin_encryption_options) is not supported"),
            ));
        }
        if !valid {
            return Err(BenchError::config(
                "admin",
                format!("`{s}` (expected http://host:port)"),
            ));
        }
        Ok(BaseUrl {
            authority: authority.to_string(),
        })
    }

    /// The full URL of `path` (for messages).
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.authority)
    }
}

/// A response: status code and body text (lossy UTF-8).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub body: String,
}

/// Sends `method path` to `base` and returns the response, within `timeout`.
pub async fn request(
    base: &BaseUrl,
    method: &str,
    path: &str,
    timeout: Duration,
) -> Result<Response> {
    let url = base.url(path);
    let http_err = |detail: String| BenchError::Http {
        url: url.clone(),
        detail,
    };
    let exchange = async {
        let mut stream = TcpStream::connect(&base.authority)
            .await
            .map_err(|e| http_err(format!("connect: {e}")))?;
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
            base.authority
        );
        stream
            .write_all(head.as_bytes())
            .await
            .map_err(|e| http_err(format!("send: {e}")))?;
        let mut bytes = Vec::new();
        let mut limited = (&mut stream).take(RESPONSE_BYTES_MAX as u64);
        limited
            .read_to_end(&mut bytes)
            .await
            .map_err(|e| http_err(format!("receive: {e}")))?;
        parse_response(&bytes).map_err(http_err)
    };
    tokio::time::timeout(timeout, exchange)
        .await
        .map_err(|_| http_err(format!("no answer within {timeout:?}")))?
}

/// Splits a raw response into status and body.
pub fn parse_response(bytes: &[u8]) -> std::result::Result<Response, String> {
    let text = String::from_utf8_lossy(bytes);
    let (head, body) = match text.split_once("\r\n\r\n") {
        Some(parts) => parts,
        None => text.split_once("\n\n").ok_or("no end of headers")?,
    };
    let status_line = head.lines().next().unwrap_or("");
    let mut parts = status_line.split_whitespace();
    let version = parts.next().unwrap_or("");
    let status = parts
        .next()
        .and_then(|s| s.parse::<u16>().ok())
        .filter(|_| version.starts_with("HTTP/"))
        .ok_or_else(|| format!("bad status line `{status_line}`"))?;
    Ok(Response {
        status,
        body: body.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        assert_eq!(
            BaseUrl::parse("http://127.0.0.1:9180/").unwrap().authority,
            "127.0.0.1:9180"
        );
        assert_eq!(
            BaseUrl::parse("localhost:1").unwrap().url("/x"),
            "http://localhost:1/x"
        );
        for bad in [
            "",
            "http://",
            "https://h:1",
            "h",
            "h:99999",
            "http://h:1/metrics",
            ":80",
        ] {
            assert!(BaseUrl::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn responses() {
        let r = parse_response(b"HTTP/1.1 404 Not Found\r\nContent-Length: 10\r\n\r\nnot found\n")
            .unwrap();
        assert_eq!(
            r,
            Response {
                status: 404,
                body: "not found\n".into()
            }
        );
        assert!(parse_response(b"garbage").is_err());
        assert!(parse_response(b"HTTP/1.1 abc\r\n\r\n").is_err());
        assert!(parse_response(b"\xff\xfe 200\r\n\r\n").is_err());
    }

    #[tokio::test]
    async fn a_request_against_a_local_listener() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = BaseUrl::parse(&listener.local_addr().unwrap().to_string()).unwrap();
        let server = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut buf = vec![0u8; 1024];
            let n = s.read(&mut buf).await.unwrap();
            let head = String::from_utf8_lossy(&buf[..n]).to_string();
            s.write_all(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nm 1\n")
                .await
                .unwrap();
            head
        });
        let r = request(
            &base,
            "POST",
            "/nodetool/garbagecollect?keyspace=k",
            Duration::from_secs(5),
        )
        .await
        .unwrap();
        assert_eq!((r.status, r.body.as_str()), (200, "m 1\n"));
        assert!(server
            .await
            .unwrap()
            .starts_with("POST /nodetool/garbagecollect?keyspace=k HTTP/1.1\r\n"));
    }
}
