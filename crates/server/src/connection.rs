//! One CQL connection: one task that reads the socket, runs requests and
//! writes the answers (no hand-off to a writer task, so an answer costs no
//! wake-up of another thread).
//!
//! The task decodes every whole frame the bytes read so far hold. It queues
//! statement requests (QUERY, PREPARE, EXECUTE, BATCH) into a burst, run
//! once those bytes hold no further whole frame or the burst reaches
//! [`REPLY_BATCH_MAX`] (see [`crate::statements`] for where they run); the
//! answers it produces go out in one socket write, so a burst of pipelined
//! requests costs one write, not one per request. Statements run as tasks
//! send their answers through a channel the same task writes out.
//! Statements count against
//! [`crate::ServerConfig::max_in_flight_per_connection`] until answered.
//! OPTIONS, STARTUP and REGISTER are handled in order by the reader, after
//! the statements read before them, since they change the connection's
//! state.
//!
//! Cassandra's rules followed here: before STARTUP only OPTIONS and STARTUP
//! are accepted ("Unexpected message X, expecting STARTUP or OPTIONS"); a
//! second STARTUP is refused; both are protocol errors on that stream and
//! the connection stays open. Under PasswordAuthenticator STARTUP answers
//! AUTHENTICATE, and until an AUTH_RESPONSE succeeds only AUTH_RESPONSE is
//! accepted ("Unexpected message X, expecting SASL_RESPONSE", OPTIONS too,
//! as Cassandra 5.0.4 answers); an AUTH_RESPONSE once logged in logs in
//! again, as in Cassandra. See [`crate::authenticate`]. See [`crate::framing`] for which framing
//! errors close the connection.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::BytesMut;
use parking_lot::Mutex;
use tokio::io::{AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{broadcast, mpsc, watch, Semaphore};
use varve_protocol::event::event_type;
use varve_protocol::frame::{opcode, EVENT_STREAM};
use varve_protocol::{
    decode_request, encode_unsupported_version_error, supported_version_strings, Compression,
    ErrorBody, Event, Frame, ProtocolError, Request, Response,
};
use varve_query::ClientState;

use crate::errors;
use crate::framing::{FramingError, Inbound, Outbound, Outgoing};
use crate::limits::{READ_CHUNK_BYTES, WRITE_QUEUE_DEPTH};
use crate::statements::{self, Context, Queued};
use crate::tls::accept::Halves;
use crate::Shared;

/// The CQL version of SUPPORTED.
pub const CQL_VERSION: &str = "3.4.7";
/// Lowest CQL major version a client may ask for in STARTUP.
const MIN_CQL_MAJOR: u32 = 3;
/// Answers the reader gathers before handing them to the writer even though
/// more whole frames are waiting: bounds the delay of the first answer of a
/// long burst.
pub const REPLY_BATCH_MAX: usize = 64;

/// Whether the answers and statements queued so far make a full burst, to
/// run and write before decoding further frames.
fn burst_is_full(pending: usize, queued: usize) -> bool {
    pending + queued >= REPLY_BATCH_MAX
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Only OPTIONS and STARTUP are accepted.
    Established,
    /// STARTUP answered AUTHENTICATE: only AUTH_RESPONSE.
    Authenticating,
    /// STARTUP done.
    Ready,
}

struct Connection {
    shared: Arc<Shared>,
    /// Where statements run as tasks send their answers.
    out: mpsc::Sender<Vec<Outgoing>>,
    writer: Writer,
    /// Answers produced by the reader, not yet handed to the writer.
    pending: Vec<Outgoing>,
    /// Statements read but not yet run.
    burst: Vec<Queued>,
    /// Worker threads of the runtime: how far a burst may be split.
    workers: usize,
    inbound: Inbound,
    /// Set by the first frame; every later frame must carry it.
    version: Option<u8>,
    stage: Stage,
    /// v4 frame-body compression of incoming frames.
    compression: Compression,
    /// Set once the client REGISTERs for events, with the types it asked
    /// for (SCHEMA_CHANGE, STATUS_CHANGE, TOPOLOGY_CHANGE).
    events: Option<Registered>,
    client: Arc<Mutex<ClientState>>,
    in_flight: Arc<Semaphore>,
    /// A fatal error was answered: stop reading.
    closing: bool,
    /// An AUTH_RESPONSE to check before reading on: its stream and token.
    login: Option<(i16, Option<bytes::Bytes>)>,
    /// The client's address, for the log of a failed login.
    peer: Option<std::net::SocketAddr>,
}

/// Serves one accepted connection (plain or TLS, see [`crate::tls`])
/// until the peer closes, a fatal protocol error, or shutdown; then waits
/// (bounded) for its in-flight requests.
pub async fn serve(
    stream: Halves,
    peer: Option<std::net::SocketAddr>,
    shared: Arc<Shared>,
    mut shutdown: watch::Receiver<bool>,
) {
    let Halves { mut reader, writer } = stream;
    let (tx, mut answers) = mpsc::channel(WRITE_QUEUE_DEPTH);
    let max_in_flight = shared.config.max_in_flight_per_connection;
    let mut conn = Connection {
        inbound: Inbound::new(shared.config.max_frame_body_bytes),
        shared,
        out: tx,
        writer: Writer::new(writer),
        pending: Vec::new(),
        burst: Vec::new(),
        workers: tokio::runtime::Handle::current().metrics().num_workers(),
        version: None,
        stage: Stage::Established,
        compression: Compression::None,
        events: None,
        client: Arc::new(Mutex::new(ClientState {
            address: peer.map(|p| p.ip()),
            ..ClientState::default()
        })),
        in_flight: Arc::new(Semaphore::new(max_in_flight.min(Semaphore::MAX_PERMITS))),
        closing: false,
        login: None,
        peer,
    };
    let mut buf = BytesMut::with_capacity(READ_CHUNK_BYTES);
    while !*shutdown.borrow() {
        while !conn.closing {
            match conn.inbound.next_frame(&mut buf) {
                Ok(Some(frame)) => {
                    conn.handle_frame(frame);
                    conn.log_in().await;
                }
                Ok(None) => break,
                Err(e) => conn.framing_error(e),
            }
            if burst_is_full(conn.pending.len(), conn.burst.len()) {
                conn.flush().await;
            }
        }
        conn.flush().await;
        if conn.closing || conn.writer.broken {
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
            Some(batch) = answers.recv() => conn.writer.send(batch, &mut answers).await,
            event = next_event(&mut conn.events) => {
                conn.push_event(event);
                conn.flush().await;
            }
            _ = shutdown.changed() => break,
        }
    }
    conn.run_burst();
    conn.flush().await;
    // Requests still running answer as they finish, within the grace.
    let grace = conn.shared.config.shutdown_grace;
    let permits = u32::try_from(max_in_flight.min(Semaphore::MAX_PERMITS)).unwrap_or(u32::MAX);
    let in_flight = Arc::clone(&conn.in_flight);
    let drained = tokio::time::timeout(grace, async {
        let all_done = in_flight.acquire_many(permits);
        tokio::pin!(all_done);
        loop {
            tokio::select! {
                _ = &mut all_done => break,
                Some(batch) = answers.recv() => conn.writer.send(batch, &mut answers).await,
            }
        }
    })
    .await;
    if drained.is_err() {
        tracing::warn!("closing a connection with requests still running after {grace:?}");
    }
    while let Ok(batch) = answers.try_recv() {
        conn.writer.send(batch, &mut answers).await;
    }
    conn.writer.close().await;
}

/// The socket's write half and the encoding state.
struct Writer {
    half: Box<dyn AsyncWrite + Send + Unpin>,
    outbound: Outbound,
    /// A write failed or encoding panicked: nothing more is sent.
    broken: bool,
}

impl Writer {
    fn new(half: Box<dyn AsyncWrite + Send + Unpin>) -> Self {
        Writer {
            half,
            outbound: Outbound::default(),
            broken: false,
        }
    }

    /// Writes `batch`, with the batches already waiting in `more` (at most
    /// the channel's `WRITE_QUEUE_DEPTH`), in one socket write.
    async fn send(&mut self, mut batch: Vec<Outgoing>, more: &mut mpsc::Receiver<Vec<Outgoing>>) {
        while let Ok(next) = more.try_recv() {
            batch.extend(next);
        }
        self.write(batch).await;
    }

    async fn write(&mut self, batch: Vec<Outgoing>) {
        if self.broken || batch.is_empty() {
            return;
        }
        // Encoding is pure; should it ever panic (a bug, e.g. a row of the
        // wrong width), close this connection rather than leave it hanging.
        let outbound = &mut self.outbound;
        let encoded =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| outbound.encode(batch)));
        let Ok(frames) = encoded else {
            tracing::error!("encoding a response panicked; closing the connection");
            self.broken = true;
            return;
        };
        if let Err(e) = crate::vectored::write_spliced(&mut self.half, &frames).await {
            tracing::debug!("connection write failed: {e}");
            self.broken = true;
        }
    }

    async fn close(&mut self) {
        if !self.broken {
            let _ = self.half.shutdown().await;
        }
    }
}

/// A connection's subscription to the node's events.
struct Registered {
    rx: broadcast::Receiver<Event>,
    types: Vec<String>,
}

/// The next event of a type the connection registered for.
async fn next_event(registered: &mut Option<Registered>) -> Event {
    let Some(r) = registered else {
        return std::future::pending().await;
    };
    loop {
        match r.rx.recv().await {
            Ok(ev) if r.types.iter().any(|t| t == event_kind(&ev)) => return ev,
            Ok(_) => {}
            Err(broadcast::error::RecvError::Lagged(n)) => {
                tracing::debug!("a slow connection missed {n} events");
            }
            Err(broadcast::error::RecvError::Closed) => return std::future::pending().await,
        }
    }
}

/// The REGISTER type an event belongs to.
fn event_kind(ev: &Event) -> &'static str {
    match ev {
        Event::SchemaChange(_) => event_type::SCHEMA_CHANGE,
        Event::StatusChange { .. } => event_type::STATUS_CHANGE,
        Event::TopologyChange { .. } => event_type::TOPOLOGY_CHANGE,
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

/// The version of replies sent before the first frame fixed the
/// connection's version.
const PRE_FRAME_REPLY_VERSION: u8 = 4;

/// ScyllaDB's protocol extension that marks conditional statements in
/// PREPARED, so that its drivers send every LWT of a partition to the same
/// replica, where they queue instead of duelling (docs/design/paxos.md).
pub const SCYLLA_LWT_ADD_METADATA_MARK: &str = "SCYLLA_LWT_ADD_METADATA_MARK";

/// The SUPPORTED options.
pub fn supported_options() -> Vec<(String, Vec<String>)> {
    let lwt_mask = varve_protocol::result::metadata_flags::SCYLLA_LWT_MARK as u32;
    vec![
        ("COMPRESSION".to_string(), vec!["lz4".to_string()]),
        ("CQL_VERSION".to_string(), vec![CQL_VERSION.to_string()]),
        ("PROTOCOL_VERSIONS".to_string(), supported_version_strings()),
        (
            SCYLLA_LWT_ADD_METADATA_MARK.to_string(),
            vec![format!("LWT_OPTIMIZATION_META_BIT_MASK={lwt_mask}")],
        ),
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
    /// The connection's version, fixed by its first frame; before that
    /// (an error framing the first frame) replies go out in v4, which every
    /// driver reads.
    fn version(&self) -> u8 {
        self.version.unwrap_or(PRE_FRAME_REPLY_VERSION)
    }

    /// Queues an answer for the next [`Connection::flush`].
    fn send(&mut self, stream: i16, warnings: Vec<String>, response: Response) {
        if let Response::Error(_) = response {
            self.shared.metrics.error_response();
        }
        let item = Outgoing::Response {
            version: self.version(),
            stream,
            tracing_id: None,
            warnings,
            response: Box::new(response),
        };
        self.pending.push(item);
    }

    fn send_error(&mut self, stream: i16, body: ErrorBody) {
        self.send(stream, Vec::new(), Response::Error(body));
    }

    /// Runs the queued statements, then writes the answers queued here,
    /// in order, in one socket write.
    async fn flush(&mut self) {
        self.run_burst();
        let batch = std::mem::take(&mut self.pending);
        self.writer.write(batch).await;
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
        if self.stage == Stage::Authenticating && header.opcode != opcode::AUTH_RESPONSE {
            self.shared.metrics.protocol_error();
            let msg = format!(
                "Unexpected message {}, expecting SASL_RESPONSE",
                opcode_name(header.opcode)
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
        let (request, tracing) = match decode_request(&frame, self.compression) {
            Ok(decoded) => (decoded.request, decoded.tracing),
            Err(e) => {
                self.shared.metrics.protocol_error();
                return self.send_error(stream, errors::protocol_error(&e));
            }
        };
        if !request.is_statement() {
            // Requests that change the connection's state wait for the
            // statements read before them.
            self.run_burst();
        }
        match request {
            Request::Options => {
                self.send(stream, Vec::new(), Response::Supported(supported_options()))
            }
            Request::Startup(options) => self.startup(stream, &options),
            Request::Register(types) => self.register(stream, &types),
            Request::AuthResponse(token) if self.password_authenticator() => {
                self.login = Some((stream, token));
            }
            Request::AuthResponse(_) => {
                let msg =
                    "Unexpected message AUTH_RESPONSE, authentication is not enabled on this node";
                self.send_error(stream, errors::protocol_message(msg))
            }
            statement => self.queue_statement(stream, statement, tracing),
        }
    }

    fn startup(&mut self, stream: i16, options: &HashMap<String, String>) {
        if self.stage != Stage::Established {
            let msg = "Unexpected message STARTUP, the connection is already initialized";
            return self.send_error(stream, errors::protocol_message(msg));
        }
        let compression = match check_startup(options) {
            Ok(c) => c,
            Err(body) => return self.send_error(stream, body),
        };
        self.client.lock().lwt_metadata_mark = options.contains_key(SCYLLA_LWT_ADD_METADATA_MARK);
        let (answer, stage) = if self.password_authenticator() {
            let class = crate::authenticate::PASSWORD_AUTHENTICATOR.to_string();
            (Response::Authenticate(class), Stage::Authenticating)
        } else {
            (Response::Ready, Stage::Ready)
        };
        self.send(stream, Vec::new(), answer);
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
        self.stage = stage;
    }

    fn password_authenticator(&self) -> bool {
        self.shared.processor.auth().settings.password_authenticator
    }

    /// Checks the AUTH_RESPONSE just read, if any: AUTH_SUCCESS and the
    /// role in the client state, or AuthenticationError after the failure
    /// delay (the connection stays open for another try, and a connection
    /// already logged in keeps its role). Nothing else is read meanwhile:
    /// the client waits for this answer anyway.
    async fn log_in(&mut self) {
        let Some((stream, token)) = self.login.take() else {
            return;
        };
        self.flush().await;
        match crate::authenticate::check_token(&self.shared.processor, token, self.peer).await {
            Ok(role) => {
                self.client.lock().user = Some(role);
                self.stage = Stage::Ready;
                self.send(stream, Vec::new(), Response::AuthSuccess(None));
            }
            Err(body) => self.send_error(stream, body),
        }
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
        match &mut self.events {
            Some(r) => r.types.extend(types.iter().cloned()),
            None if types.is_empty() => {}
            None => {
                self.events = Some(Registered {
                    rx: self.shared.events.subscribe(),
                    types: types.to_vec(),
                })
            }
        }
        self.send(stream, Vec::new(), Response::Ready);
    }

    fn push_event(&mut self, event: Event) {
        self.send(EVENT_STREAM, Vec::new(), Response::Event(event));
    }

    /// Queues a statement request for the burst being read.
    fn queue_statement(&mut self, stream: i16, request: Request, tracing: bool) {
        let Ok(permit) = Arc::clone(&self.in_flight).try_acquire_owned() else {
            self.shared.metrics.overloaded();
            let msg = format!(
                "Too many requests in flight on this connection (limit {})",
                self.shared.config.max_in_flight_per_connection
            );
            return self.send_error(stream, errors::overloaded(msg));
        };
        self.burst.push(Queued {
            stream,
            request,
            tracing,
            permit,
        });
    }

    /// Runs the queued statements (see [`crate::statements`]).
    fn run_burst(&mut self) {
        if self.burst.is_empty() {
            return;
        }
        let ctx = Context {
            shared: Arc::clone(&self.shared),
            client: Arc::clone(&self.client),
            out: self.out.clone(),
            version: self.version(),
        };
        let burst = std::mem::take(&mut self.burst);
        statements::run_burst(&ctx, burst, self.workers, &mut self.pending);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A connection gets only the event types it registered for, in order.
    #[tokio::test]
    async fn only_registered_event_types_reach_a_connection() {
        let (tx, _) = broadcast::channel(8);
        let mut registered = Some(Registered {
            rx: tx.subscribe(),
            types: vec![event_type::STATUS_CHANGE.to_string()],
        });
        let schema = Event::SchemaChange(varve_protocol::SchemaChange {
            change: varve_protocol::SchemaChangeType::Created,
            target: varve_protocol::SchemaChangeTarget::Keyspace("ks".into()),
        });
        let down = Event::StatusChange {
            change: varve_protocol::StatusChangeType::Down,
            addr: "127.0.0.2:9042".parse().expect("address"),
        };
        tx.send(schema).expect("a receiver");
        tx.send(down.clone()).expect("a receiver");
        assert_eq!(next_event(&mut registered).await, down);
        let mut none: Option<Registered> = None;
        let wait = std::time::Duration::from_millis(20);
        let waited = tokio::time::timeout(wait, next_event(&mut none)).await;
        assert!(waited.is_err(), "no registration, no event");
    }

    #[test]
    fn a_burst_is_full_at_reply_batch_max() {
        assert!(!burst_is_full(0, REPLY_BATCH_MAX - 1));
        assert!(!burst_is_full(REPLY_BATCH_MAX - 2, 1));
        assert!(burst_is_full(0, REPLY_BATCH_MAX));
        assert!(burst_is_full(REPLY_BATCH_MAX - 1, 1));
        assert!(burst_is_full(REPLY_BATCH_MAX, 1));
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
