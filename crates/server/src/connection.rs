//! One CQL connection: a reader loop that owns the decoding state and the
//! connection's stage, and a writer task that owns the encoding state.
//!
//! Statement requests (QUERY, PREPARE, EXECUTE, BATCH) that only touch
//! memory and the page cache run right in the reader, one after another;
//! their answers gather in a batch that goes to the writer in one message
//! once the bytes read so far hold no further whole frame (or the batch
//! reaches [`REPLY_BATCH_MAX`]), so a burst of pipelined requests costs one
//! socket write, not one per request. Requests that may block (see
//! [`may_block`]) run as their own tasks on the blocking pool, concurrently,
//! and may be answered out of order, as the protocol allows. Both kinds
//! count against [`crate::ServerConfig::max_in_flight_per_connection`].
//! OPTIONS, STARTUP and REGISTER are handled in order by the reader, since
//! they change the connection's state.
//!
//! Cassandra's rules followed here: before STARTUP only OPTIONS and STARTUP
//! are accepted ("Unexpected message X, expecting STARTUP or OPTIONS"); a
//! second STARTUP is refused; both are protocol errors on that stream and
//! the connection stays open. See [`crate::framing`] for which framing
//! errors close the connection.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::BytesMut;
use parking_lot::Mutex;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::TcpStream;
use tokio::sync::{broadcast, mpsc, watch, Semaphore};
use varve_protocol::event::event_type;
use varve_protocol::frame::{opcode, EVENT_STREAM};
use varve_protocol::{
    decode_request, encode_unsupported_version_error, supported_version_strings, Compression,
    ErrorBody, Event, Frame, ProtocolError, Request, Response, MIN_VERSION,
};
use varve_query::ClientState;

use crate::dispatch::{self, Executed};
use crate::errors;
use crate::framing::{FramingError, Inbound, Outbound, Outgoing};
use crate::limits::{READ_CHUNK_BYTES, WRITE_QUEUE_DEPTH};
use crate::Shared;

/// The CQL version of SUPPORTED.
pub const CQL_VERSION: &str = "3.4.7";
/// Lowest CQL major version a client may ask for in STARTUP.
const MIN_CQL_MAJOR: u32 = 3;
/// Answers the reader gathers before handing them to the writer even though
/// more whole frames are waiting: bounds the delay of the first answer of a
/// long burst.
pub const REPLY_BATCH_MAX: usize = 64;
/// Batches the writer gathers into one socket write.
const WRITE_BATCHES_MAX: usize = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Only OPTIONS and STARTUP are accepted.
    Established,
    /// STARTUP done.
    Ready,
}

struct Connection {
    shared: Arc<Shared>,
    out: mpsc::Sender<Vec<Outgoing>>,
    /// Answers produced by the reader, not yet handed to the writer.
    pending: Vec<Outgoing>,
    inbound: Inbound,
    /// Set by the first frame; every later frame must carry it.
    version: Option<u8>,
    stage: Stage,
    /// v4 frame-body compression of incoming frames.
    compression: Compression,
    /// Set once the client REGISTERs for SCHEMA_CHANGE.
    events: Option<broadcast::Receiver<varve_protocol::SchemaChange>>,
    client: Arc<Mutex<ClientState>>,
    in_flight: Arc<Semaphore>,
    /// A fatal error was answered: stop reading.
    closing: bool,
}

/// Serves one accepted connection until the peer closes, a fatal protocol
/// error, or shutdown; then waits (bounded) for its in-flight requests.
pub async fn serve(stream: TcpStream, shared: Arc<Shared>, mut shutdown: watch::Receiver<bool>) {
    let _ = stream.set_nodelay(true);
    let (mut reader, writer) = stream.into_split();
    let (tx, rx) = mpsc::channel(WRITE_QUEUE_DEPTH);
    let writer_task = tokio::spawn(write_loop(writer, rx));
    let max_in_flight = shared.config.max_in_flight_per_connection;
    let mut conn = Connection {
        inbound: Inbound::new(shared.config.max_frame_body_bytes),
        shared,
        out: tx,
        pending: Vec::new(),
        version: None,
        stage: Stage::Established,
        compression: Compression::None,
        events: None,
        client: Arc::new(Mutex::new(ClientState::default())),
        in_flight: Arc::new(Semaphore::new(max_in_flight.min(Semaphore::MAX_PERMITS))),
        closing: false,
    };
    let mut buf = BytesMut::with_capacity(READ_CHUNK_BYTES);
    while !*shutdown.borrow() {
        while !conn.closing {
            match conn.inbound.next_frame(&mut buf) {
                Ok(Some(frame)) => conn.handle_frame(frame),
                Ok(None) => break,
                Err(e) => conn.framing_error(e),
            }
            if conn.pending.len() >= REPLY_BATCH_MAX {
                conn.flush().await;
            }
        }
        conn.flush().await;
        if conn.closing {
            break;
        }
        buf.reserve(READ_CHUNK_BYTES);
        tokio::select! {
            read = reader.read_buf(&mut buf) => match read {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => {
                    tracing::debug!("connection read failed: {e}");
                    break;
                }
            },
            event = next_event(&mut conn.events) => {
                conn.push_event(event);
                conn.flush().await;
            }
            _ = shutdown.changed() => break,
        }
    }
    let grace = conn.shared.config.shutdown_grace;
    let permits = u32::try_from(max_in_flight.min(Semaphore::MAX_PERMITS)).unwrap_or(u32::MAX);
    if tokio::time::timeout(grace, conn.in_flight.acquire_many(permits))
        .await
        .is_err()
    {
        tracing::warn!("closing a connection with requests still running after {grace:?}");
    }
    drop(conn);
    let _ = tokio::time::timeout(grace, writer_task).await;
}

async fn next_event(
    rx: &mut Option<broadcast::Receiver<varve_protocol::SchemaChange>>,
) -> varve_protocol::SchemaChange {
    let Some(rx) = rx else {
        return std::future::pending().await;
    };
    loop {
        match rx.recv().await {
            Ok(ev) => return ev,
            Err(broadcast::error::RecvError::Lagged(n)) => {
                tracing::debug!("a slow connection missed {n} schema events");
            }
            Err(broadcast::error::RecvError::Closed) => return std::future::pending().await,
        }
    }
}

async fn write_loop(mut writer: OwnedWriteHalf, mut rx: mpsc::Receiver<Vec<Outgoing>>) {
    let mut outbound = Outbound::default();
    while let Some(mut batch) = rx.recv().await {
        for _ in 1..WRITE_BATCHES_MAX {
            match rx.try_recv() {
                Ok(more) => batch.extend(more),
                Err(_) => break,
            }
        }
        // Encoding is pure; should it ever panic (a bug, e.g. a row of the
        // wrong width), close this connection rather than leave it hanging.
        let encoded =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| outbound.encode(batch)));
        let Ok(bytes) = encoded else {
            tracing::error!("encoding a response panicked; closing the connection");
            return;
        };
        if let Err(e) = writer.write_all(&bytes).await {
            tracing::debug!("connection write failed: {e}");
            return;
        }
    }
    let _ = writer.shutdown().await;
}

/// The answer given when executing a request panicked (a bug): logged, and
/// the node keeps serving.
fn panicked(stream: i16, what: &dyn std::fmt::Debug) -> Executed {
    tracing::error!("request on stream {stream} failed: {what:?}");
    Executed {
        response: Response::Error(errors::server_error(
            "Internal error while processing the request (see the server log)",
        )),
        warnings: Vec::new(),
        event: None,
    }
}

/// Runs `work` on the blocking pool, for requests that may wait on an
/// fsync or on long file work; a panic becomes a ServerError answer.
async fn run_caught(stream: i16, work: impl FnOnce() -> Executed + Send + 'static) -> Executed {
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|e| panicked(stream, &e))
}

/// Runs `work` right here on the event loop, for requests that only touch
/// memory and the page cache: no thread hand-off per request. A panic
/// becomes a ServerError answer.
fn run_inline(stream: i16, work: impl FnOnce() -> Executed) -> Executed {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(work))
        .unwrap_or_else(|_| panicked(stream, &"panic"))
}

/// Statements that change the schema or drop data files, which may wait on
/// flushes, compactions and fsyncs: first word of the query text.
fn is_schema_or_file_statement(query: &str) -> bool {
    let word: String = query
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_alphabetic())
        .take(9)
        .collect();
    ["create", "alter", "drop", "truncate"]
        .iter()
        .any(|k| word.eq_ignore_ascii_case(k))
}

/// Whether a statement request must run where blocking is allowed.
fn may_block(request: &Request, writes_wait_for_sync: bool) -> bool {
    match request {
        Request::Prepare { .. } => false,
        Request::Query { query, .. } => writes_wait_for_sync || is_schema_or_file_statement(query),
        _ => writes_wait_for_sync,
    }
}

/// Cassandra's name of a request opcode, for error messages.
fn opcode_name(op: u8) -> String {
    match op {
        opcode::STARTUP => "STARTUP".into(),
        opcode::OPTIONS => "OPTIONS".into(),
        opcode::QUERY => "QUERY".into(),
        opcode::PREPARE => "PREPARE".into(),
        opcode::EXECUTE => "EXECUTE".into(),
        opcode::REGISTER => "REGISTER".into(),
        opcode::BATCH => "BATCH".into(),
        opcode::AUTH_RESPONSE => "AUTH_RESPONSE".into(),
        other => format!("0x{other:02x}"),
    }
}

/// The SUPPORTED options.
pub fn supported_options() -> Vec<(String, Vec<String>)> {
    vec![
        ("COMPRESSION".to_string(), vec!["lz4".to_string()]),
        ("CQL_VERSION".to_string(), vec![CQL_VERSION.to_string()]),
        ("PROTOCOL_VERSIONS".to_string(), supported_version_strings()),
    ]
}

/// Checks STARTUP's options; returns the compression asked for.
fn check_startup(options: &HashMap<String, String>) -> Result<Compression, ErrorBody> {
    let Some(cql_version) = options.get("CQL_VERSION") else {
        return Err(errors::protocol_message(
            "Missing value CQL_VERSION in STARTUP message",
        ));
    };
    let major = cql_version
        .split('.')
        .next()
        .and_then(|m| m.trim().parse::<u32>().ok());
    match major {
        Some(m) if m >= MIN_CQL_MAJOR => {}
        Some(_) => {
            return Err(errors::protocol_message(format!(
                "CQL version {cql_version} is not supported by the binary protocol (supported version are >= 3.0.0)"
            )))
        }
        None => return Err(errors::protocol_message(format!("Invalid version value: {cql_version}"))),
    }
    match options.get("COMPRESSION") {
        None => Ok(Compression::None),
        Some(name) => Compression::from_startup_name(name).map_err(|e| errors::protocol_error(&e)),
    }
}

impl Connection {
    fn version(&self) -> u8 {
        self.version.unwrap_or(MIN_VERSION)
    }

    /// Queues an answer for the next [`Connection::flush`].
    fn send(&mut self, stream: i16, warnings: Vec<String>, response: Response) {
        if let Response::Error(_) = response {
            self.shared.metrics.error_response();
        }
        let item = Outgoing::Response {
            version: self.version(),
            stream,
            warnings,
            response: Box::new(response),
        };
        self.pending.push(item);
    }

    fn send_error(&mut self, stream: i16, body: ErrorBody) {
        self.send(stream, Vec::new(), Response::Error(body));
    }

    /// Hands the queued answers to the writer, in order, as one message.
    async fn flush(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let batch = std::mem::take(&mut self.pending);
        // A closed writer means the socket is gone; the reader sees EOF next.
        let _ = self.out.send(batch).await;
    }

    fn framing_error(&mut self, e: FramingError) {
        self.shared.metrics.protocol_error();
        tracing::debug!("framing error (fatal: {}): {}", e.fatal, e.error);
        match &e.error {
            ProtocolError::UnsupportedVersion { version, stream } => {
                let raw = encode_unsupported_version_error(*version, *stream);
                self.pending.push(Outgoing::Raw(raw));
            }
            other => {
                let stream = other.stream().unwrap_or(0);
                self.send_error(stream, errors::protocol_error(other));
            }
        }
        if e.fatal {
            self.closing = true;
        }
    }

    fn handle_frame(&mut self, frame: Frame) {
        let header = frame.header;
        let stream = header.stream;
        self.shared.metrics.request(header.opcode);
        let version = *self.version.get_or_insert(header.version);
        if header.version != version {
            self.shared.metrics.protocol_error();
            let msg = format!(
                "Invalid message version. Got {} but previous messages on this connection had version {version}",
                header.version
            );
            return self.send_error(stream, errors::protocol_message(msg));
        }
        if self.stage == Stage::Established
            && header.opcode != opcode::STARTUP
            && header.opcode != opcode::OPTIONS
        {
            self.shared.metrics.protocol_error();
            let msg = format!(
                "Unexpected message {}, expecting STARTUP or OPTIONS",
                opcode_name(header.opcode)
            );
            return self.send_error(stream, errors::protocol_message(msg));
        }
        let request = match decode_request(&frame, self.compression) {
            Ok(decoded) => decoded.request,
            Err(e) => {
                self.shared.metrics.protocol_error();
                return self.send_error(stream, errors::protocol_error(&e));
            }
        };
        match request {
            Request::Options => {
                self.send(stream, Vec::new(), Response::Supported(supported_options()))
            }
            Request::Startup(options) => self.startup(stream, &options),
            Request::Register(types) => self.register(stream, &types),
            Request::AuthResponse(_) => {
                let msg =
                    "Unexpected message AUTH_RESPONSE, authentication is not enabled on this node";
                self.send_error(stream, errors::protocol_message(msg))
            }
            statement => self.run_statement(stream, statement),
        }
    }

    fn startup(&mut self, stream: i16, options: &HashMap<String, String>) {
        if self.stage == Stage::Ready {
            let msg = "Unexpected message STARTUP, the connection is already initialized";
            return self.send_error(stream, errors::protocol_message(msg));
        }
        let compression = match check_startup(options) {
            Ok(c) => c,
            Err(body) => return self.send_error(stream, body),
        };
        self.send(stream, Vec::new(), Response::Ready);
        let segments = self.version() >= 5;
        self.pending.push(Outgoing::Negotiated {
            compression,
            segments,
        });
        if segments {
            self.inbound.switch_to_segments(compression);
        } else {
            self.compression = compression;
        }
        self.stage = Stage::Ready;
    }

    fn register(&mut self, stream: i16, types: &[String]) {
        let known = [
            event_type::TOPOLOGY_CHANGE,
            event_type::STATUS_CHANGE,
            event_type::SCHEMA_CHANGE,
        ];
        if let Some(bad) = types.iter().find(|t| !known.contains(&t.as_str())) {
            let msg = format!("Invalid value '{bad}' for Type");
            return self.send_error(stream, errors::protocol_message(msg));
        }
        if types.iter().any(|t| t == event_type::SCHEMA_CHANGE) && self.events.is_none() {
            self.events = Some(self.shared.events.subscribe());
        }
        self.send(stream, Vec::new(), Response::Ready);
    }

    fn push_event(&mut self, change: varve_protocol::SchemaChange) {
        let response = Response::Event(Event::SchemaChange(change));
        self.send(EVENT_STREAM, Vec::new(), response);
    }

    /// Runs a statement request: right here, queuing its answer, unless it
    /// may block; then as a task on the blocking pool that answers itself.
    fn run_statement(&mut self, stream: i16, request: Request) {
        let Ok(permit) = Arc::clone(&self.in_flight).try_acquire_owned() else {
            self.shared.metrics.overloaded();
            let msg = format!(
                "Too many requests in flight on this connection (limit {})",
                self.shared.config.max_in_flight_per_connection
            );
            return self.send_error(stream, errors::overloaded(msg));
        };
        let version = self.version();
        if !may_block(&request, self.shared.writes_wait_for_sync) {
            let executed = run_inline(stream, || {
                dispatch::execute(&self.shared.processor, &self.client, request)
            });
            let item = answer(&self.shared, version, stream, executed);
            self.pending.push(item);
            drop(permit);
            return;
        }
        let shared = Arc::clone(&self.shared);
        let client = Arc::clone(&self.client);
        let out = self.out.clone();
        tokio::spawn(async move {
            let processor = Arc::clone(&shared.processor);
            let executed = run_caught(stream, move || {
                dispatch::execute(&processor, &client, request)
            })
            .await;
            let item = answer(&shared, version, stream, executed);
            let _ = out.send(vec![item]).await;
            drop(permit);
        });
    }
}

/// Publishes an executed statement's schema event, counts its error, and
/// frames its answer for the writer.
fn answer(shared: &Shared, version: u8, stream: i16, executed: Executed) -> Outgoing {
    if let Some(change) = executed.event {
        // No subscriber is fine: nobody registered.
        let _ = shared.events.send(change);
    }
    if let Response::Error(e) = &executed.response {
        shared.metrics.error_response();
        if e.code == varve_protocol::ErrorCode::SERVER_ERROR {
            shared.metrics.exception();
        }
    }
    Outgoing::Response {
        version,
        stream,
        warnings: executed.warnings,
        response: Box::new(executed.response),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_panicking_request_becomes_server_error() {
        let executed = run_caught(7, || panic!("boom")).await;
        match executed.response {
            Response::Error(e) => assert_eq!(e.code, varve_protocol::ErrorCode::SERVER_ERROR),
            other => panic!("expected an error, got {other:?}"),
        }
    }

    #[test]
    fn a_panicking_inline_request_becomes_server_error() {
        let executed = run_inline(3, || panic!("boom"));
        match executed.response {
            Response::Error(e) => assert_eq!(e.code, varve_protocol::ErrorCode::SERVER_ERROR),
            other => panic!("expected an error, got {other:?}"),
        }
    }

    #[test]
    fn schema_statements_and_sync_waits_go_to_the_blocking_pool() {
        let query = |q: &str| Request::Query {
            query: q.to_string(),
            params: varve_protocol::QueryParams::new(varve_protocol::Consistency::One),
        };
        assert!(may_block(
            &query("  CREATE TABLE t (k int primary key)"),
            false
        ));
        assert!(may_block(&query("truncate t"), false));
        assert!(may_block(&query("DROP KEYSPACE ks"), false));
        assert!(!may_block(&query("SELECT * FROM t"), false));
        assert!(!may_block(&query("INSERT INTO t (k) VALUES (1)"), false));
        assert!(may_block(&query("INSERT INTO t (k) VALUES (1)"), true));
        assert!(!may_block(
            &Request::Prepare {
                query: "INSERT INTO t (k) VALUES (1)".into(),
                keyspace: None
            },
            true
        ));
    }

    #[test]
    fn startup_options_are_checked() {
        let opts = |pairs: &[(&str, &str)]| -> HashMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        assert_eq!(
            check_startup(&opts(&[("CQL_VERSION", "3.0.0")])),
            Ok(Compression::None)
        );
        assert_eq!(
            check_startup(&opts(&[("CQL_VERSION", "3.4.7"), ("COMPRESSION", "lz4")])),
            Ok(Compression::Lz4)
        );
        assert!(check_startup(&opts(&[])).is_err());
        assert!(check_startup(&opts(&[("CQL_VERSION", "2.0.0")])).is_err());
        assert!(check_startup(&opts(&[("CQL_VERSION", "x")])).is_err());
        assert!(check_startup(&opts(&[
            ("CQL_VERSION", "3.0.0"),
            ("COMPRESSION", "snappy")
        ]))
        .is_err());
    }
}
