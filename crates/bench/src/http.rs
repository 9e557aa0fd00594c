//! A minimal HTTP/1.1 client for the node's admin port (`GET /metrics`,
//! `POST /nodetool/...`) and for a Jolokia agent (`POST /jolokia/` with a
//! JSON body, [`crate::jolokia`]): one request per connection,
//! `Connection: close`, the body read to the end of the stream and decoded
//! when it comes chunked (Jolokia's does). No TLS (an `https://` admin URL
//! is refused, naming the limitation), no redirects.

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
    request_with_body(base, method, path, None, timeout).await
}

/// A request body: its content type and text.
#[derive(Debug, Clone, Copy)]
pub struct Body<'a> {
    pub content_type: &'a str,
    pub text: &'a str,
}

/// Sends `method path` with `body` (if any) to `base` and returns the
/// response, within `timeout`.
pub async fn request_with_body(
    base: &BaseUrl,
    method: &str,
    path: &str,
    body: Option<Body<'_>>,
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
        let (content_type, text) = match body {
            Some(b) => (format!("Content-Type: {}\r\n", b.content_type), b.text),
            None => (String::new(), ""),
        };
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n{content_type}Content-Length: {}\r\n\r\n{text}",
            base.authority,
            text.len()
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
    let (head, body) = split_head(bytes).ok_or("no end of headers")?;
    let head = String::from_utf8_lossy(head);
    let status_line = head.lines().next().unwrap_or("");
    let mut parts = status_line.split_whitespace();
    let version = parts.next().unwrap_or("");
    let status = parts
        .next()
        .and_then(|s| s.parse::<u16>().ok())
        .filter(|_| version.starts_with("HTTP/"))
        .ok_or_else(|| format!("bad status line `{status_line}`"))?;
    let chunked = head.lines().skip(1).any(|l| {
        l.split_once(':').is_some_and(|(name, value)| {
            name.trim().eq_ignore_ascii_case("transfer-encoding")
                && value.trim().eq_ignore_ascii_case("chunked")
        })
    });
    let body = match chunked {
        true => String::from_utf8_lossy(&decode_chunked(body)?).into_owned(),
        false => String::from_utf8_lossy(body).into_owned(),
    };
    Ok(Response { status, body })
}

/// The head and body of a response, split at the first blank line.
fn split_head(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    for sep in [&b"\r\n\r\n"[..], &b"\n\n"[..]] {
        if let Some(at) = bytes.windows(sep.len()).position(|w| w == sep) {
            return Some((&bytes[..at], &bytes[at + sep.len()..]));
        }
    }
    None
}

/// The body of a `Transfer-Encoding: chunked` response: each chunk's size
/// in hex on a line, its bytes, a line end; a chunk of size 0 ends it.
pub fn decode_chunked(mut rest: &[u8]) -> std::result::Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(rest.len());
    loop {
        let eol = rest
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or("chunk size line cut short")?;
        let line = String::from_utf8_lossy(&rest[..eol]);
        let hex = line.split(';').next().unwrap_or("").trim();
        let size =
            usize::from_str_radix(hex, 16).map_err(|_| format!("bad chunk size `{line}`"))?;
        if size == 0 {
            return Ok(out);
        }
        let after = &rest[eol + 2..];
        let chunk = after.get(..size).ok_or("chunk cut short")?;
        out.extend_from_slice(chunk);
        rest = after[size..]
            .strip_prefix(b"\r\n")
            .ok_or("no line end after a chunk")?;
    }
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
        let chunked = parse_response(
            b"HTTP/1.1 200 OK\r\nTransfer-encoding: chunked\r\n\r\n5\r\n[1,2,\r\n2;x=y\r\n3]\r\n0\r\n\r\n",
        )
        .unwrap();
        assert_eq!(chunked.body, "[1,2,3]");
        for cut in [
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n[1,",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n[1",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n[1]x\r\n0\r\n",
        ] {
            assert!(parse_response(cut.as_bytes()).is_err(), "{cut:?}");
        }
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
