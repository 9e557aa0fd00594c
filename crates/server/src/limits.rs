//! Every limit of the server, named; the defaults of [`crate::ServerConfig`].

use std::time::Duration;

/// Open CQL connections at once (cassandra.yaml
/// `native_transport_max_concurrent_connections`; Cassandra's default is
/// unlimited, ours is bounded so a client leak cannot exhaust file handles).
pub const MAX_CONNECTIONS: usize = 1024;
/// What `native_transport_max_concurrent_connections: -1` maps to.
pub const MAX_CONNECTIONS_UNLIMITED: usize = 1 << 20;
/// Requests of one connection being processed at once; one more is
/// answered with Overloaded on its stream.
pub const MAX_IN_FLIGHT_PER_CONNECTION: usize = 1024;
/// Largest frame body accepted (`native_transport_max_frame_size`, 16 MiB).
pub const MAX_FRAME_BODY_BYTES: usize = varve_protocol::frame::MAX_FRAME_BODY_BYTES;
/// Statements that need the disk running at once on the read stage
/// (cassandra.yaml `concurrent_reads`, Cassandra's default): the reads the
/// disk sees in flight. The disk here answers 3.4x more random reads with 16
/// in flight than with one.
pub const CONCURRENT_READS: usize = 32;
/// How long shutdown waits for in-flight requests before closing anyway.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// Bytes read from a socket per read call.
pub const READ_CHUNK_BYTES: usize = 64 * 1024;
/// Responses queued to one connection's writer before request tasks wait.
pub const WRITE_QUEUE_DEPTH: usize = 1024;
/// Schema-change events buffered for slow subscribers; a subscriber that
/// falls further behind loses events (drivers re-read the schema anyway).
pub const EVENT_QUEUE_DEPTH: usize = 256;
/// Largest admin HTTP request head.
pub const MAX_HTTP_REQUEST_BYTES: usize = 8 * 1024;
/// An admin HTTP client must send its request within this time.
pub const HTTP_REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// How long an over-limit connection may take to send its first request
/// before it is closed without an answer.
pub const REJECTED_CONNECTION_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a failed login waits before its AuthenticationError: the same
/// for an unknown role, a wrong password and a garbled token, so guessing
/// is slow and the timing tells nothing (docs/design/security.md).
pub const LOGIN_FAILURE_DELAY: Duration = Duration::from_millis(500);
/// Password checks (bcrypt, tens of milliseconds of CPU each) running at
/// once on the node; more logins wait their turn, so a flood of password
/// guesses cannot take every core from the clients already logged in.
pub const LOGIN_CHECKS_MAX: usize = 4;
