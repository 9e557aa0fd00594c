//! The messaging service of one node: listens, keeps two outbound
//! connections per peer, matches responses to requests by request id, and
//! runs each verb's handler (docs/design/cluster.md, section 4).
//!
//! Sending never waits: a frame that does not fit its queue fails at once
//! and is counted. A request's future resolves with the response, the
//! peer's failure, or [`RequestError::Timeout`] when its timeout passes on
//! the node's clock (nothing is resent). Every task stops on
//! [`Messaging::shutdown`].

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;

use super::counters::Counters;
use super::failure::Failure;
use super::frame::{FrameHeader, PayloadTooLarge, MAX_VERSION};
use super::handler::{EchoHandler, Handler};
use super::handshake::{ClusterId, HostId, LocalIdentity};
use super::inbound::accept_loop;
use super::limits::{
    BULK_QUEUE_BYTES_MAX, CONNECT_TIMEOUT, HANDSHAKE_TIMEOUT, MAX_CLUSTER_NAME_BYTES,
    OUTBOUND_BYTES_MAX, RECONNECT_BACKOFF_MAX, RECONNECT_BACKOFF_MIN, SMALL_QUEUE_BYTES_MAX,
    WRITE_TIMEOUT,
};
use super::shared::Shared;
use super::verb::{Flags, Verb};
use crate::env::tls::PerPeerTls;
use crate::env::{BoxFuture, Env};

/// A node's messaging settings. [`MessagingConfig::new`] takes the
/// documented limits; tests may shrink them.
#[derive(Debug, Clone)]
pub struct MessagingConfig {
    pub cluster_name: String,
    pub cluster_id: ClusterId,
    pub host_id: HostId,
    pub generation: i64,
    /// Where to listen (`listen_address`:`storage_port`); port 0 picks one.
    /// Peers send their frames to the address actually bound, so it must
    /// be one they can reach (not a wildcard).
    pub listen: SocketAddr,
    pub small_queue_bytes_max: usize,
    pub bulk_queue_bytes_max: usize,
    pub outbound_bytes_max: usize,
    pub connect_timeout: Duration,
    pub handshake_timeout: Duration,
    /// Longest write of one batch before the connection is closed.
    pub write_timeout: Duration,
    pub backoff_min: Duration,
    pub backoff_max: Duration,
    /// `internode_encryption: dc` or `rack`: which connections are TLS is
    /// decided per peer (the network underneath is plain); `None` leaves
    /// every connection to the network (TLS for all with
    /// [`crate::env::tls::TlsNetwork`]).
    pub per_peer_tls: Option<Arc<PerPeerTls>>,
    /// Every frame waits this long after it is queued before it is sent
    /// (`internode_send_delay_ms`): distance between data centres, for
    /// benchmarks. Zero by default.
    pub send_delay: Duration,
}

impl MessagingConfig {
    pub fn new(cluster_name: &str, host_id: HostId, listen: SocketAddr) -> MessagingConfig {
        MessagingConfig {
            cluster_name: cluster_name.to_string(),
            cluster_id: ClusterId::default(),
            host_id,
            generation: 0,
            listen,
            small_queue_bytes_max: SMALL_QUEUE_BYTES_MAX,
            bulk_queue_bytes_max: BULK_QUEUE_BYTES_MAX,
            outbound_bytes_max: OUTBOUND_BYTES_MAX,
            connect_timeout: CONNECT_TIMEOUT,
            handshake_timeout: HANDSHAKE_TIMEOUT,
            write_timeout: WRITE_TIMEOUT,
            backoff_min: RECONNECT_BACKOFF_MIN,
            backoff_max: RECONNECT_BACKOFF_MAX,
            per_peer_tls: None,
            send_delay: Duration::ZERO,
        }
    }
}

/// A response to one of this node's requests.
#[derive(Debug, Clone)]
pub struct Response {
    /// Where the responder listens.
    pub from: SocketAddr,
    /// The responder's host id and generation, from the HELLO of the
    /// connection the response came on: a node that restarted on the same
    /// address answers with its new generation.
    pub from_host: HostId,
    pub from_generation: i64,
    pub header: FrameHeader,
    pub payload: Bytes,
}

/// Why a request got no response.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    #[error("no response within the timeout")]
    Timeout,
    #[error("the peer failed the request: {0}")]
    Failure(Failure),
    #[error("messaging shut down")]
    Shutdown,
}

/// Why a frame was not queued. Never waits: each is immediate.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    #[error("the peer's queue is full")]
    QueueFull,
    #[error("the node's outbound queues are full")]
    NodeQueuesFull,
    #[error("{0}")]
    PayloadTooLarge(#[from] PayloadTooLarge),
    #[error("{0} cannot be sent as a request")]
    NotARequest(Verb),
    #[error("a node does not send to its own address")]
    ToSelf,
    #[error("messaging shut down")]
    Shutdown,
}

/// Resolves with a request's response, failure, or timeout. Dropping it
/// forgets the request (a late response is then counted and dropped).
pub struct ResponseFuture {
    inner: BoxFuture<'static, Result<Response, RequestError>>,
}

impl Future for ResponseFuture {
    type Output = Result<Response, RequestError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.inner.as_mut().poll(cx)
    }
}

/// A node's messaging service. Cheap to clone; call
/// [`Messaging::shutdown`] to stop it.
#[derive(Clone)]
pub struct Messaging {
    shared: Arc<Shared>,
}

impl Messaging {
    /// Binds `config.listen` and starts accepting. ECHO is answered from
    /// the start; register other handlers with [`Messaging::register`].
    pub async fn start(config: MessagingConfig, env: Env) -> io::Result<Messaging> {
        if config.cluster_name.len() > MAX_CLUSTER_NAME_BYTES {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("cluster_name is over {MAX_CLUSTER_NAME_BYTES} bytes"),
            ));
        }
        let listener = env.net.bind(config.listen).await?;
        let address = listener.local_addr()?;
        let mut identity = LocalIdentity::new(&config.cluster_name, config.host_id, address);
        identity.cluster_id = config.cluster_id;
        identity.generation = config.generation;
        let shared = Arc::new(Shared::new(env, identity, config));
        let messaging = Messaging { shared };
        messaging.register(Verb::ECHO, EchoHandler);
        let accept = accept_loop(messaging.shared.clone(), listener);
        messaging.shared.track(tokio::spawn(accept));
        Ok(messaging)
    }

    /// The address this node listens on, as its peers know it.
    pub fn local_addr(&self) -> SocketAddr {
        self.shared.identity.address
    }

    pub fn identity(&self) -> &LocalIdentity {
        &self.shared.identity
    }

    pub fn counters(&self) -> &Counters {
        &self.shared.counters
    }

    /// Handles request or one-way frames of `verb` (replacing any handler
    /// it had).
    pub fn register(&self, verb: Verb, handler: impl Handler) {
        self.shared.register(verb, Arc::new(handler));
    }

    /// The metadata epoch stamped on every frame sent from now on.
    pub fn set_epoch(&self, epoch: u64) {
        self.shared.set_epoch(epoch);
    }

    /// Requests waiting for a response.
    pub fn pending_requests(&self) -> usize {
        self.shared.pending_len()
    }

    /// Sends a request to the node listening at `to`. Fails at once if it
    /// cannot be queued; otherwise the future resolves with the response,
    /// or times out `timeout` from now.
    pub fn request(
        &self,
        to: SocketAddr,
        verb: Verb,
        payload: Bytes,
        timeout: Duration,
    ) -> Result<ResponseFuture, SendError> {
        if verb.is_response() || verb.is_handshake() {
            return Err(SendError::NotARequest(verb));
        }
        let shared = &self.shared;
        let (id, rx, guard) = shared.expect_answer(to, verb);
        let expires = shared.env.clock.sleep(timeout);
        let header = FrameHeader {
            version: MAX_VERSION,
            flags: Flags::NONE,
            verb,
            request_id: id,
            epoch: shared.epoch(),
            timeout_ms: 0,
        };
        let deadline = shared.env.clock.now() + timeout;
        // On failure the guard, dropped here, forgets the request.
        shared.send(to, header, payload, deadline)?;
        let inner = Box::pin(async move {
            let _guard = guard;
            tokio::select! {
                biased;
                answer = rx => answer.unwrap_or(Err(RequestError::Shutdown)),
                () = expires => Err(RequestError::Timeout),
            }
        });
        Ok(ResponseFuture { inner })
    }

    /// Sends a one-way frame; it is dropped if still queued after
    /// `timeout`.
    pub fn send_one_way(
        &self,
        to: SocketAddr,
        verb: Verb,
        payload: Bytes,
        timeout: Duration,
    ) -> Result<(), SendError> {
        if verb.is_response() || verb.is_handshake() {
            return Err(SendError::NotARequest(verb));
        }
        let header = FrameHeader {
            version: MAX_VERSION,
            flags: Flags::ONE_WAY,
            verb,
            request_id: 0,
            epoch: self.shared.epoch(),
            timeout_ms: 0,
        };
        let deadline = self.shared.env.clock.now() + timeout;
        self.shared.send(to, header, payload, deadline)
    }

    /// Stops accepting, closes every connection, fails every waiting
    /// request with [`RequestError::Shutdown`], and waits for the tasks.
    pub async fn shutdown(&self) {
        for task in self.shared.close() {
            let _ = task.await;
        }
    }
}

impl std::fmt::Debug for Messaging {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Messaging")
            .field("address", &self.shared.identity.address)
            .field("host_id", &self.shared.identity.host_id)
            .finish_non_exhaustive()
    }
}
