//! One peer's outbound side: two connections, *small* (an urgent queue
//! drained before a normal one) and *bulk*, each kept open by its own task
//! that connects when frames wait, does the handshake, writes batches,
//! and reconnects with exponential backoff and jitter when the connection
//! fails (docs/design/cluster.md, sections 4.1 to 4.3).
//!
//! Frames written on a connection that then dies are not resent: their
//! requests time out. A batch whose write takes over the write timeout
//! (the peer has stopped reading, or its segments vanish) closes the
//! connection, which the next frame replaces. Frames still queued wait for the next connection
//! until their deadlines.
//!
//! With per-peer TLS (`internode_encryption: dc` or `rack`), each
//! connection is TLS or clear text as the peer's location asks (unknown:
//! TLS); a peer that refuses a clear-text HELLO (`ENCRYPTION_REQUIRED`)
//! gets TLS on the next attempt, and when locations change a connection
//! whose encryption no longer matches is closed cleanly and reopened.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{watch, Notify};
use tokio::time::Instant;
use tracing::{debug, info, warn};

use super::connection::{handshake_outbound, write_batch, ConnectError};
use super::handshake::{AnswerError, ConnectionKind, RejectReason};
use super::limits::{
    BULK_THRESHOLD_BYTES, RECONNECT_JITTER_PERCENT, WRITE_BATCH_BYTES_MAX, WRITE_BATCH_FRAMES_MAX,
};
use super::queue::{Full, LaneQueue, Outbound, Priority};
use super::shared::Shared;
use super::verb::{Flags, Verb};
use crate::env::{timeout, BoxStream, Elapsed};

/// Where a frame goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    Urgent,
    Normal,
    Bulk,
}

/// Payloads over [`BULK_THRESHOLD_BYTES`] and all hint traffic go bulk;
/// gossip, echo, votes, failures and responses without data are urgent;
/// everything else is normal.
pub fn route(verb: Verb, flags: Flags, payload_len: usize) -> Route {
    if payload_len > BULK_THRESHOLD_BYTES || verb == Verb::HINT {
        return Route::Bulk;
    }
    let urgent_verb = matches!(
        verb,
        Verb::GOSSIP | Verb::ECHO | Verb::ECHO_RSP | Verb::RAFT_VOTE | Verb::RAFT_VOTE_RSP
    ) || (Verb::PAXOS_FIRST..=Verb::PAXOS_LAST).contains(&verb);
    let bare_response = verb.is_response() && (payload_len == 0 || flags.contains(Flags::FAILURE));
    if urgent_verb || bare_response {
        Route::Urgent
    } else {
        Route::Normal
    }
}

/// The wait before the next connection attempt.
#[derive(Debug, Clone)]
pub struct Backoff {
    min: Duration,
    max: Duration,
    next: Option<Duration>,
}

impl Backoff {
    pub fn new(min: Duration, max: Duration) -> Backoff {
        Backoff {
            min,
            max,
            next: None,
        }
    }

    /// The wait before the next attempt, before jitter (none after a
    /// success).
    pub fn delay(&self) -> Option<Duration> {
        self.next
    }

    /// A failed attempt: double the wait, from `min` up to `max`.
    pub fn failed(&mut self) {
        let doubled = self.next.map_or(self.min, |d| d.saturating_mul(2));
        self.next = Some(doubled.min(self.max));
    }

    /// A refusal that retrying soon will not change: the longest wait.
    pub fn refused(&mut self) {
        self.next = Some(self.max);
    }

    pub fn succeeded(&mut self) {
        self.next = None;
    }
}

/// One connection's queue and the signal that frames arrived.
pub struct Lane {
    pub kind: ConnectionKind,
    pub queue: Mutex<LaneQueue>,
    pub ready: Notify,
}

/// A peer's two lanes.
pub struct Peer {
    small: Arc<Lane>,
    bulk: Arc<Lane>,
}

impl Peer {
    /// A peer at `addr`, with a task per lane.
    pub fn start(shared: &Arc<Shared>, addr: SocketAddr) -> Arc<Peer> {
        let lane = |kind, max| {
            Arc::new(Lane {
                kind,
                queue: Mutex::new(
                    LaneQueue::new(max, shared.budget.clone()).with_delay(shared.config.send_delay),
                ),
                ready: Notify::new(),
            })
        };
        let peer = Arc::new(Peer {
            small: lane(ConnectionKind::Small, shared.config.small_queue_bytes_max),
            bulk: lane(ConnectionKind::Bulk, shared.config.bulk_queue_bytes_max),
        });
        for lane in [&peer.small, &peer.bulk] {
            let task = run_lane(shared.clone(), addr, lane.clone());
            shared.track(tokio::spawn(task));
        }
        peer
    }

    /// Queues `frame` on its route's lane; never waits.
    pub fn enqueue(
        &self,
        shared: &Shared,
        frame: Outbound,
        route: Route,
        now: Instant,
    ) -> Result<(), Full> {
        let (lane, priority) = match route {
            Route::Urgent => (&self.small, Priority::Urgent),
            Route::Normal => (&self.small, Priority::Normal),
            Route::Bulk => (&self.bulk, Priority::Normal),
        };
        let pushed = lane.queue.lock().push(frame, priority, now);
        match pushed {
            Ok(expired) => {
                shared.count_expired(&expired);
                lane.ready.notify_one();
                Ok(())
            }
            Err((full, _frame)) => Err(full),
        }
    }
}

/// How a connection ended.
enum End {
    Shutdown,
    Closed,
}

/// Keeps one lane's connection open while it has frames to send.
async fn run_lane(shared: Arc<Shared>, addr: SocketAddr, lane: Arc<Lane>) {
    let mut backoff = Backoff::new(shared.config.backoff_min, shared.config.backoff_max);
    // The peer refused this node's last clear-text HELLO: TLS next time.
    let mut force_tls = false;
    loop {
        tokio::select! {
            biased;
            () = shared.until_shutdown() => return,
            () = wait_for_frames(&shared, &lane) => {}
        }
        if let Some(delay) = backoff.delay() {
            let jittered = shared.env.rng.jitter(delay, RECONNECT_JITTER_PERCENT);
            tokio::select! {
                biased;
                () = shared.until_shutdown() => return,
                () = shared.env.clock.sleep(jittered) => {}
            }
        }
        // Subscribed before the choice, so a change during the connect is
        // seen by the connection.
        let relook = shared.config.per_peer_tls.as_ref().map(|t| t.subscribe());
        let tls = encrypt(&shared, addr, force_tls);
        let opened = tokio::select! {
            biased;
            () = shared.until_shutdown() => return,
            opened = open(&shared, addr, lane.kind, tls) => opened,
        };
        match opened {
            Ok((stream, version)) => {
                backoff.succeeded();
                force_tls = false;
                shared.counters.count_connection(lane.kind);
                match tls {
                    Some(tls) => info!(%addr, kind = ?lane.kind, tls, "internode connection open"),
                    None => debug!(%addr, kind = ?lane.kind, "internode connection open"),
                }
                let link = Link {
                    addr,
                    version,
                    tls,
                    relook,
                    changed: false,
                };
                if let End::Shutdown = drive(&shared, &lane, stream, link).await {
                    return;
                }
            }
            Err(error) => {
                shared.counters.count_connect_failure();
                force_tls = on_open_failure(&shared, addr, &error, &mut backoff);
            }
        }
    }
}

/// With per-peer TLS, whether the next connection to `addr` is TLS.
fn encrypt(shared: &Shared, addr: SocketAddr, force_tls: bool) -> Option<bool> {
    let per_peer = shared.config.per_peer_tls.as_ref()?;
    Some(force_tls || per_peer.must_encrypt(addr))
}

/// An open connection as the lane sees it.
struct Link {
    addr: SocketAddr,
    /// The frame version its handshake chose.
    version: u8,
    /// With per-peer TLS, whether it is TLS.
    tls: Option<bool>,
    /// With per-peer TLS, fires when peers' locations may have changed.
    relook: Option<watch::Receiver<u64>>,
    /// A change was seen and not looked at yet.
    changed: bool,
}

impl Link {
    /// Whether peers' locations changed so that this connection's
    /// encryption is no longer what the policy asks (it is then reopened).
    fn is_stale(&mut self, shared: &Shared) -> bool {
        let (Some(relook), Some(tls)) = (self.relook.as_mut(), self.tls) else {
            return false;
        };
        if relook.has_changed().unwrap_or(false) {
            relook.mark_unchanged();
            self.changed = true;
        }
        if !std::mem::take(&mut self.changed) {
            return false;
        }
        encrypt(shared, self.addr, false) != Some(tls)
    }

    /// Resolves when peers' locations may have changed; never without
    /// per-peer TLS.
    async fn relooked(&mut self) {
        let changed = match self.relook.as_mut() {
            Some(relook) => relook.changed().await.is_ok(),
            None => false,
        };
        if !changed {
            return std::future::pending().await;
        }
        self.changed = true;
    }
}

/// Returns once the lane has a live frame queued; drops expired ones.
async fn wait_for_frames(shared: &Shared, lane: &Lane) {
    loop {
        let expired = lane.queue.lock().drop_expired(shared.env.clock.now());
        shared.count_expired(&expired);
        if !lane.queue.lock().is_empty() {
            return;
        }
        lane.ready.notified().await;
    }
}

/// Why a connection could not be opened.
#[derive(Debug, thiserror::Error)]
enum OpenError {
    #[error("connect: {0}")]
    Connect(std::io::Error),
    #[error("connect timed out")]
    ConnectTimeout,
    #[error("handshake: {0}")]
    Handshake(ConnectError),
    #[error("handshake timed out")]
    HandshakeTimeout,
}

/// Connects (in TLS when `tls` says so, per-peer TLS) and does the
/// handshake; the stream and the version chosen.
async fn open(
    shared: &Shared,
    addr: SocketAddr,
    kind: ConnectionKind,
    tls: Option<bool>,
) -> Result<(BoxStream, u8), OpenError> {
    let clock = &*shared.env.clock;
    let connect = async {
        let stream = shared.env.net.connect(addr).await?;
        match (&shared.config.per_peer_tls, tls) {
            (Some(per_peer), Some(true)) => per_peer.connect(stream, addr).await,
            _ => Ok(stream),
        }
    };
    let mut stream = timeout(clock, shared.config.connect_timeout, connect)
        .await
        .map_err(|_| OpenError::ConnectTimeout)?
        .map_err(OpenError::Connect)?;
    let handshake = handshake_outbound(&mut stream, &shared.identity, kind);
    let ack = timeout(clock, shared.config.handshake_timeout, handshake)
        .await
        .map_err(|_| OpenError::HandshakeTimeout)?
        .map_err(OpenError::Handshake)?;
    Ok((stream, ack.version))
}

/// Counts, logs and backs off after a failed attempt; whether the peer
/// asked for TLS (the next attempt is then TLS, soon).
fn on_open_failure(
    shared: &Shared,
    addr: SocketAddr,
    error: &OpenError,
    backoff: &mut Backoff,
) -> bool {
    let rejected = match error {
        OpenError::Handshake(ConnectError::Answer(AnswerError::Rejected(r))) => Some(r.reason),
        _ => None,
    };
    match rejected {
        Some(reason) => {
            shared.counters.count_rejected_by_peer(reason);
            if reason == RejectReason::SHUTTING_DOWN || reason == RejectReason::ENCRYPTION_REQUIRED
            {
                backoff.failed();
            } else {
                backoff.refused();
            }
        }
        None => backoff.failed(),
    }
    let wants_tls = rejected == Some(RejectReason::ENCRYPTION_REQUIRED);
    if wants_tls {
        // Expected while the peer has not heard of this node yet.
        debug!(%addr, "internode: the peer asks for TLS; reconnecting in TLS");
    } else if shared.log_limiter.allow(addr.ip(), shared.env.clock.now()) {
        warn!(%addr, "internode connection failed: {error}");
    }
    wants_tls
}

/// Writes the lane's frames on an open connection until it fails or the
/// node shuts down. The acceptor never writes after its HELLO_ACK, so a
/// read that returns (EOF, an error, or stray bytes) means the connection
/// is gone.
async fn drive(shared: &Shared, lane: &Lane, stream: BoxStream, mut link: Link) -> End {
    let version = link.version;
    let (mut read_half, mut write_half) = tokio::io::split(stream);
    let closed = async move {
        let mut byte = [0u8; 1];
        let _ = read_half.read(&mut byte).await;
    };
    tokio::pin!(closed);
    loop {
        if link.is_stale(shared) {
            // Everything written so far was flushed: a clean close loses
            // nothing, and the next frame opens the right connection.
            debug!(addr = %link.addr, "internode: reopening the connection with the encryption its peer's location asks for");
            let clock = &*shared.env.clock;
            let _ = timeout(clock, shared.config.write_timeout, write_half.shutdown()).await;
            return End::Closed;
        }
        let now = shared.env.clock.now();
        let (batch, expired, next_due) = {
            let mut queue = lane.queue.lock();
            let (batch, expired) =
                queue.take_batch(now, WRITE_BATCH_FRAMES_MAX, WRITE_BATCH_BYTES_MAX);
            (batch, expired, queue.next_due())
        };
        shared.count_expired(&expired);
        if batch.is_empty() {
            // Frames held by the send delay: wake when the first is due.
            let held =
                next_due.map(|due| shared.env.clock.sleep(due.saturating_duration_since(now)));
            tokio::select! {
                biased;
                () = shared.until_shutdown() => return End::Shutdown,
                () = &mut closed => return End::Closed,
                () = lane.ready.notified() => continue,
                () = link.relooked() => continue,
                () = async { match held { Some(h) => h.await, None => std::future::pending().await } } => continue,
            }
        }
        let write = write_batch(&mut write_half, &batch, version, now);
        let written = tokio::select! {
            biased;
            () = shared.until_shutdown() => return End::Shutdown,
            () = &mut closed => return End::Closed,
            written = timeout(&*shared.env.clock, shared.config.write_timeout, write) => written,
        };
        match written {
            Ok(Ok(())) => shared.counters.count_written(lane.kind, batch.len() as u64),
            Ok(Err(error)) => {
                debug!(addr = %shared.identity.address, "internode write failed: {error}");
                return End::Closed;
            }
            Err(Elapsed) => {
                shared.counters.count_write_timeout();
                debug!(
                    addr = %shared.identity.address,
                    "internode write took over {:?}: closing the connection",
                    shared.config.write_timeout
                );
                return End::Closed;
            }
        }
    }
}

#[cfg(test)]
mod tests;
