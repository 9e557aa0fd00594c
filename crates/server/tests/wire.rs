//! The server over real TCP, in-process on ephemeral ports: handshakes,
//! framing, limits and bad input. Only requests the server answers itself
//! (OPTIONS, STARTUP, REGISTER, framing errors) are checked here; statement
//! results belong to the query layer's tests and the driver tests.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::BytesMut;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use varve_protocol::{
    decode_envelope, decode_response, encode_request_frame, Compression, ErrorCode, Request,
    Response, SegmentCodec,
};

use varve_query::{NodeInfo, Processor};
use varve_server::{Server, ServerConfig};

const TIMEOUT: Duration = Duration::from_secs(5);

struct Running {
    addr: SocketAddr,
    admin: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Running {
    async fn stop(mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        tokio::time::timeout(TIMEOUT, self.task)
            .await
            .expect("stops in time")
            .expect("joins")
            .expect("ok");
    }
}

async fn start(tweak: impl FnOnce(&mut ServerConfig)) -> Running {
    let mut config = ServerConfig {
        cql_addr: "127.0.0.1:0".parse().expect("addr"),
        admin_addr: "127.0.0.1:0".parse().expect("addr"),
        shutdown_grace: Duration::from_secs(2),
        ..ServerConfig::default()
    };
    tweak(&mut config);
    let server = Server::bind(config).await.expect("binds");
    let (addr, admin) = (server.cql_addr(), server.admin_addr());
    let (tx, rx) = oneshot::channel::<()>();
    let task = tokio::spawn(
        server.run(Processor::new(NodeInfo::single_local()), async move {
            let _ = rx.await;
        }),
    );
    Running {
        addr,
        admin,
        stop: Some(tx),
        task,
    }
}

/// Reads one legacy frame and decodes it.
async fn read_response(
    s: &mut TcpStream,
    buf: &mut BytesMut,
) -> Option<varve_protocol::DecodedResponse> {
    loop {
        if let Some(frame) = decode_envelope(buf, 1 << 24).expect("valid frame") {
            return Some(decode_response(&frame, Compression::None).expect("valid response"));
        }
        let n = tokio::time::timeout(TIMEOUT, s.read_buf(buf))
            .await
            .expect("answer in time")
            .ok()?;
        if n == 0 {
            return None;
        }
    }
}

async fn request(
    s: &mut TcpStream,
    buf: &mut BytesMut,
    version: u8,
    stream: i16,
    req: &Request,
) -> Response {
    s.write_all(&encode_request_frame(
        version,
        stream,
        req,
        None,
        Compression::None,
    ))
    .await
    .expect("write");
    let r = read_response(s, buf).await.expect("a response");
    r.response
}

fn error_code(r: &Response) -> ErrorCode {
    match r {
        Response::Error(e) => e.code,
        other => panic!("expected an ERROR, got {other:?}"),
    }
}

fn startup(compression: Option<&str>) -> Request {
    let mut opts = std::collections::HashMap::new();
    opts.insert("CQL_VERSION".to_string(), "3.0.0".to_string());
    if let Some(c) = compression {
        opts.insert("COMPRESSION".to_string(), c.to_string());
    }
    Request::Startup(opts)
}

#[tokio::test]
async fn options_then_startup_v4() {
    let srv = start(|_| {}).await;
    let mut s = TcpStream::connect(srv.addr).await.expect("connect");
    let mut buf = BytesMut::new();
    match request(&mut s, &mut buf, 4, 1, &Request::Options).await {
        Response::Supported(opts) => {
            let get = |k: &str| opts.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
            assert_eq!(get("CQL_VERSION"), Some(vec!["3.4.7".to_string()]));
            assert_eq!(get("COMPRESSION"), Some(vec!["lz4".to_string()]));
            assert_eq!(
                get("PROTOCOL_VERSIONS"),
                Some(vec![
                    "3/v3".to_string(),
                    "4/v4".to_string(),
                    "5/v5".to_string()
                ])
            );
        }
        other => panic!("expected SUPPORTED, got {other:?}"),
    }
    assert_eq!(
        request(&mut s, &mut buf, 4, 2, &startup(None)).await,
        Response::Ready
    );
    let again = request(&mut s, &mut buf, 4, 3, &startup(None)).await;
    assert_eq!(error_code(&again), ErrorCode::PROTOCOL_ERROR);
    let reg = Request::Register(vec!["SCHEMA_CHANGE".into(), "STATUS_CHANGE".into()]);
    assert_eq!(request(&mut s, &mut buf, 4, 4, &reg).await, Response::Ready);
    let bad = Request::Register(vec!["NOPE".into()]);
    assert_eq!(
        error_code(&request(&mut s, &mut buf, 4, 5, &bad).await),
        ErrorCode::PROTOCOL_ERROR
    );
    srv.stop().await;
}

#[tokio::test]
async fn query_before_startup_is_a_protocol_error_and_the_connection_survives() {
    let srv = start(|_| {}).await;
    let mut s = TcpStream::connect(srv.addr).await.expect("connect");
    let mut buf = BytesMut::new();
    let q = Request::Query {
        query: "SELECT * FROM system.local".into(),
        params: varve_protocol::QueryParams::new(varve_protocol::Consistency::One),
    };
    match request(&mut s, &mut buf, 4, 9, &q).await {
        Response::Error(e) => {
            assert_eq!(e.code, ErrorCode::PROTOCOL_ERROR);
            assert!(
                e.message.contains("expecting STARTUP or OPTIONS"),
                "{}",
                e.message
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        request(&mut s, &mut buf, 4, 10, &startup(None)).await,
        Response::Ready
    );
    srv.stop().await;
}

#[tokio::test]
async fn unsupported_versions_get_the_downgrade_error_and_a_close() {
    let srv = start(|_| {}).await;
    for version in [2u8, 6, 0x41] {
        let mut s = TcpStream::connect(srv.addr).await.expect("connect");
        // v1/v2 headers are 8 bytes (a one-byte stream id).
        let header: &[u8] = if version == 2 {
            &[version, 0, 1, 0x05, 0, 0, 0, 0]
        } else {
            &[version, 0, 0, 1, 0x05, 0, 0, 0, 0]
        };
        s.write_all(header).await.expect("write");
        let mut bytes = Vec::new();
        tokio::time::timeout(TIMEOUT, s.read_to_end(&mut bytes))
            .await
            .expect("closed in time")
            .expect("read");
        let expected_version = if version == 2 { 2 } else { 5 };
        assert_eq!(bytes[0], 0x80 | expected_version, "version {version}");
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            text.contains("Invalid or unsupported protocol version"),
            "{text}"
        );
    }
    srv.stop().await;
}

#[tokio::test]
async fn garbage_does_not_hurt_other_connections() {
    let srv = start(|_| {}).await;
    let mut g = TcpStream::connect(srv.addr).await.expect("connect");
    g.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n\xff\xfe\x00\x01")
        .await
        .expect("write");
    let mut sink = Vec::new();
    let _ = tokio::time::timeout(TIMEOUT, g.read_to_end(&mut sink))
        .await
        .expect("closed");
    // A v4 frame whose body is not a valid STARTUP.
    let mut s = TcpStream::connect(srv.addr).await.expect("connect");
    s.write_all(&[4, 0, 0, 1, 0x01, 0, 0, 0, 3, 0xff, 0xff, 0xff])
        .await
        .expect("write");
    let mut buf = BytesMut::new();
    let r = read_response(&mut s, &mut buf).await.expect("answer");
    assert_eq!(error_code(&r.response), ErrorCode::PROTOCOL_ERROR);
    // Unknown opcode after STARTUP.
    assert_eq!(
        request(&mut s, &mut buf, 4, 2, &startup(None)).await,
        Response::Ready
    );
    s.write_all(&[4, 0, 0, 3, 0x33, 0, 0, 0, 0])
        .await
        .expect("write");
    let r = read_response(&mut s, &mut buf).await.expect("answer");
    assert_eq!(error_code(&r.response), ErrorCode::PROTOCOL_ERROR);
    let mut other = TcpStream::connect(srv.addr).await.expect("connect");
    let mut buf2 = BytesMut::new();
    assert!(matches!(
        request(&mut other, &mut buf2, 5, 1, &Request::Options).await,
        Response::Supported(_)
    ));
    srv.stop().await;
}

#[tokio::test]
async fn oversized_frame_is_refused_without_reading_it_and_the_connection_goes_on() {
    let srv = start(|c| c.max_frame_body_bytes = 1024).await;
    let mut s = TcpStream::connect(srv.addr).await.expect("connect");
    let mut buf = BytesMut::new();
    // Announces 2 GiB; only the header is ever sent.
    s.write_all(&[4, 0, 0, 5, 0x07, 0x7f, 0xff, 0xff, 0xff])
        .await
        .expect("write");
    let r = read_response(&mut s, &mut buf).await.expect("answer");
    match r.response {
        Response::Error(e) => {
            assert_eq!(e.code, ErrorCode::INVALID);
            assert!(e.message.contains("too big"), "{}", e.message);
        }
        other => panic!("{other:?}"),
    }
    // Exactly at the limit is fine: an OPTIONS with a 1024-byte body.
    let mut at_limit = vec![5u8, 0, 0, 6, 0x05, 0, 0, 4, 0];
    at_limit.resize(at_limit.len() + 1024, 0);
    let mut s2 = TcpStream::connect(srv.addr).await.expect("connect");
    s2.write_all(&at_limit).await.expect("write");
    let mut buf2 = BytesMut::new();
    assert!(matches!(
        read_response(&mut s2, &mut buf2)
            .await
            .expect("answer")
            .response,
        Response::Supported(_)
    ));
    srv.stop().await;
}

#[tokio::test]
async fn v5_with_lz4_switches_to_segments_after_ready() {
    let srv = start(|_| {}).await;
    let mut s = TcpStream::connect(srv.addr).await.expect("connect");
    let mut buf = BytesMut::new();
    assert_eq!(
        request(&mut s, &mut buf, 5, 1, &startup(Some("lz4"))).await,
        Response::Ready
    );
    let codec = SegmentCodec::new(Compression::Lz4);
    let frame = encode_request_frame(5, 2, &Request::Options, None, Compression::None);
    s.write_all(&codec.encode_frames(&[&frame]))
        .await
        .expect("write");
    let segment = loop {
        if let Some(seg) = codec.decode(&mut buf).expect("valid segment") {
            break seg;
        }
        tokio::time::timeout(TIMEOUT, s.read_buf(&mut buf))
            .await
            .expect("in time")
            .expect("read");
    };
    let mut payload = BytesMut::from(&segment.payload[..]);
    let frame = decode_envelope(&mut payload, 1 << 24)
        .expect("valid")
        .expect("whole frame");
    assert_eq!(frame.header.stream, 2);
    assert!(matches!(
        decode_response(&frame, Compression::None)
            .expect("ok")
            .response,
        Response::Supported(_)
    ));
    // A corrupted segment closes the connection.
    s.write_all(&[0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 0, 0, 0, 0, 0])
        .await
        .expect("write");
    let mut rest = Vec::new();
    tokio::time::timeout(TIMEOUT, s.read_to_end(&mut rest))
        .await
        .expect("closed in time")
        .expect("read");
    srv.stop().await;
}

#[tokio::test]
async fn connections_past_the_limit_get_overloaded() {
    let srv = start(|c| c.max_connections = 1).await;
    let mut first = TcpStream::connect(srv.addr).await.expect("connect");
    let mut buf = BytesMut::new();
    assert!(matches!(
        request(&mut first, &mut buf, 4, 1, &Request::Options).await,
        Response::Supported(_)
    ));
    let mut second = TcpStream::connect(srv.addr).await.expect("connect");
    let mut buf2 = BytesMut::new();
    let r = request(&mut second, &mut buf2, 4, 1, &Request::Options).await;
    assert_eq!(error_code(&r), ErrorCode::OVERLOADED);
    drop(first);
    // Once the first is gone, a new connection is served again.
    let mut third = None;
    for _ in 0..50 {
        let mut c = TcpStream::connect(srv.addr).await.expect("connect");
        let mut b = BytesMut::new();
        if let Response::Supported(_) = request(&mut c, &mut b, 4, 1, &Request::Options).await {
            third = Some(c);
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(third.is_some(), "a slot frees when a connection closes");
    srv.stop().await;
}

#[tokio::test]
async fn admin_health_and_metrics() {
    let srv = start(|_| {}).await;
    let get = |path: &'static str| async move {
        let mut s = TcpStream::connect(srv.admin).await.expect("connect");
        s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
            .await
            .expect("write");
        let mut out = String::new();
        tokio::time::timeout(TIMEOUT, s.read_to_string(&mut out))
            .await
            .expect("in time")
            .expect("read");
        out
    };
    let health = get("/health").await;
    assert!(
        health.starts_with("HTTP/1.1 200") && health.ends_with("ok\n"),
        "{health}"
    );
    // A serving node is ready (a joining one answers 503: the launcher
    // test of `varve cluster add`).
    let ready = get("/ready").await;
    assert!(
        ready.starts_with("HTTP/1.1 200") && ready.ends_with("ready\n"),
        "{ready}"
    );
    let mut c = TcpStream::connect(srv.addr).await.expect("connect");
    let mut buf = BytesMut::new();
    request(&mut c, &mut buf, 4, 1, &Request::Options).await;
    let metrics = get("/metrics").await;
    assert!(metrics.contains("varve_connections_open 1"), "{metrics}");
    assert!(
        metrics.contains("varve_requests_total{opcode=\"OPTIONS\"} 1"),
        "{metrics}"
    );
    assert!(get("/nope").await.starts_with("HTTP/1.1 404"));
    srv.stop().await;
}

#[tokio::test]
async fn shutdown_with_an_idle_connection_is_prompt() {
    let srv = start(|_| {}).await;
    let mut c = TcpStream::connect(srv.addr).await.expect("connect");
    let mut buf = BytesMut::new();
    request(&mut c, &mut buf, 4, 1, &Request::Options).await;
    let t = std::time::Instant::now();
    srv.stop().await;
    assert!(
        t.elapsed() < Duration::from_secs(1),
        "took {:?}",
        t.elapsed()
    );
}

#[tokio::test]
async fn requests_past_the_in_flight_limit_get_overloaded() {
    let srv = start(|c| c.max_in_flight_per_connection = 0).await;
    let mut s = TcpStream::connect(srv.addr).await.expect("connect");
    let mut buf = BytesMut::new();
    assert_eq!(
        request(&mut s, &mut buf, 4, 1, &startup(None)).await,
        Response::Ready
    );
    let q = Request::Query {
        query: "SELECT * FROM system.local".into(),
        params: varve_protocol::QueryParams::new(varve_protocol::Consistency::One),
    };
    match request(&mut s, &mut buf, 4, 2, &q).await {
        Response::Error(e) => {
            assert_eq!(e.code, ErrorCode::OVERLOADED);
            assert!(e.message.contains("in flight"), "{}", e.message);
        }
        other => panic!("{other:?}"),
    }
    // Control messages are not statements and still work.
    assert!(matches!(
        request(&mut s, &mut buf, 4, 3, &Request::Options).await,
        Response::Supported(_)
    ));
    srv.stop().await;
}

/// Deterministic xorshift, so a failure names its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[tokio::test]
async fn random_request_bodies_get_answers_and_the_server_survives() {
    let seed = 0x5eed_u64;
    let srv = start(|_| {}).await;
    let mut rng = Rng(seed);
    for version in [3u8, 4, 5] {
        let mut s = TcpStream::connect(srv.addr).await.expect("connect");
        let mut buf = BytesMut::new();
        // v3 and v4 only: after STARTUP a v5 connection speaks segments.
        if version < 5 {
            assert_eq!(
                request(&mut s, &mut buf, version, 0, &startup(None)).await,
                Response::Ready
            );
        }
        for i in 1..200i16 {
            let opcodes = [0x01u8, 0x05, 0x07, 0x09, 0x0A, 0x0B, 0x0D, 0x0F, 0x02, 0x42];
            let op = opcodes[(rng.next() % opcodes.len() as u64) as usize];
            let len = (rng.next() % 64) as usize;
            let body: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
            let mut frame = vec![version, 0];
            frame.extend_from_slice(&i.to_be_bytes());
            frame.push(op);
            frame.extend_from_slice(&(len as u32).to_be_bytes());
            frame.extend_from_slice(&body);
            s.write_all(&frame).await.expect("write");
            let r = read_response(&mut s, &mut buf)
                .await
                .unwrap_or_else(|| panic!("seed {seed}: closed"));
            let _ = r.response;
        }
    }
    let mut check = TcpStream::connect(srv.addr).await.expect("connect");
    let mut buf = BytesMut::new();
    assert!(matches!(
        request(&mut check, &mut buf, 4, 1, &Request::Options).await,
        Response::Supported(_)
    ));
    srv.stop().await;
}
