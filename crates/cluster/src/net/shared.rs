//! The state a node's messaging handle shares with its tasks: identity
//! and settings, peers, requests waiting for responses, handlers, inbound
//! budgets, counters, and the shutdown signal; and the three things every
//! part does with it: queue a frame, answer a request, complete one.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::{Mutex, RwLock};
use tokio::sync::{oneshot, Semaphore};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::counters::{Counters, DropReason};
use super::failure::{Failure, FailureReason};
use super::frame::{Frame, FrameHeader, MAX_VERSION};
use super::handler::{Handler, Reply};
use super::handshake::{HostId, LocalIdentity};
use super::limits::{INBOUND_BYTES_MAX_PER_PEER, LOG_INTERVAL};
use super::log_limit::LogLimiter;
use super::messaging::{MessagingConfig, RequestError, Response, SendError};
use super::peer::{route, Peer};
use super::queue::{Full, Outbound, OutboundBudget};
use super::verb::{Flags, Verb};
use crate::env::{Env, StopSignal};

type Answer = Result<Response, RequestError>;

/// A request waiting for its response.
struct Pending {
    to: SocketAddr,
    verb: Verb,
    tx: oneshot::Sender<Answer>,
}

/// Removes a request's callback when its future goes away.
pub struct PendingGuard {
    shared: Arc<Shared>,
    id: u64,
}

impl Drop for PendingGuard {
    fn drop(&mut self) {
        self.shared.pending.lock().remove(&self.id);
    }
}

/// Who sent the frames of an accepted connection, as its HELLO said.
#[derive(Debug, Clone, Copy)]
pub struct Origin {
    /// Where it listens: responses go there.
    pub addr: SocketAddr,
    pub host_id: HostId,
    pub generation: i64,
}

/// State shared by the service's handle and its tasks.
pub struct Shared {
    pub env: Env,
    pub identity: LocalIdentity,
    pub config: MessagingConfig,
    pub counters: Counters,
    pub budget: Arc<OutboundBudget>,
    pub log_limiter: LogLimiter,
    peers: Mutex<BTreeMap<SocketAddr, Arc<Peer>>>,
    pending: Mutex<BTreeMap<u64, Pending>>,
    handlers: RwLock<BTreeMap<Verb, Arc<dyn Handler>>>,
    inbound_budgets: Mutex<BTreeMap<SocketAddr, Arc<Semaphore>>>,
    next_request_id: AtomicU64,
    epoch: AtomicU64,
    closing: AtomicBool,
    shutdown: StopSignal,
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

impl Shared {
    pub fn new(env: Env, identity: LocalIdentity, config: MessagingConfig) -> Shared {
        Shared {
            budget: Arc::new(OutboundBudget::new(config.outbound_bytes_max)),
            log_limiter: LogLimiter::new(LOG_INTERVAL),
            counters: Counters::default(),
            peers: Mutex::new(BTreeMap::new()),
            pending: Mutex::new(BTreeMap::new()),
            handlers: RwLock::new(BTreeMap::new()),
            inbound_budgets: Mutex::new(BTreeMap::new()),
            next_request_id: AtomicU64::new(1),
            epoch: AtomicU64::new(0),
            closing: AtomicBool::new(false),
            shutdown: StopSignal::new(),
            tasks: Mutex::new(Vec::new()),
            env,
            identity,
            config,
        }
    }

    /// Resolves once shutdown is signalled.
    pub async fn until_shutdown(&self) {
        self.shutdown.wait().await;
    }

    pub fn is_closing(&self) -> bool {
        self.closing.load(Ordering::Acquire)
    }

    /// Keeps a task's handle so shutdown can wait for it.
    pub fn track(&self, task: JoinHandle<()>) {
        let mut tasks = self.tasks.lock();
        tasks.retain(|t| !t.is_finished());
        tasks.push(task);
    }

    /// Signals shutdown, fails every waiting request, and hands back the
    /// tasks to wait for.
    pub fn close(&self) -> Vec<JoinHandle<()>> {
        self.closing.store(true, Ordering::Release);
        self.shutdown.stop();
        let waiting = std::mem::take(&mut *self.pending.lock());
        for (_, pending) in waiting {
            let _ = pending.tx.send(Err(RequestError::Shutdown));
        }
        std::mem::take(&mut *self.tasks.lock())
    }

    pub fn register(&self, verb: Verb, handler: Arc<dyn Handler>) {
        self.handlers.write().insert(verb, handler);
    }

    pub fn handler(&self, verb: Verb) -> Option<Arc<dyn Handler>> {
        self.handlers.read().get(&verb).cloned()
    }

    pub fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    pub fn set_epoch(&self, epoch: u64) {
        self.epoch.store(epoch, Ordering::Release);
    }

    pub fn pending_len(&self) -> usize {
        self.pending.lock().len()
    }

    /// Registers a request to `to`: its id, where its answer will come,
    /// and the guard that forgets it when dropped.
    pub fn expect_answer(
        self: &Arc<Self>,
        to: SocketAddr,
        verb: Verb,
    ) -> (u64, oneshot::Receiver<Answer>, PendingGuard) {
        let id = self.next_request_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending.lock().insert(id, Pending { to, verb, tx });
        let guard = PendingGuard {
            shared: self.clone(),
            id,
        };
        (id, rx, guard)
    }

    /// The bytes of frames from `peer` being handled, bounded by
    /// [`INBOUND_BYTES_MAX_PER_PEER`] over all its connections.
    pub fn inbound_budget(&self, peer: SocketAddr) -> Arc<Semaphore> {
        let mut budgets = self.inbound_budgets.lock();
        let budget = budgets
            .entry(peer)
            .or_insert_with(|| Arc::new(inbound_semaphore()));
        budget.clone()
    }

    pub fn count_expired(&self, expired: &[Outbound]) {
        for frame in expired {
            self.counters
                .count_dropped(frame.header.verb, DropReason::Expired, 1);
        }
    }

    fn peer(self: &Arc<Self>, addr: SocketAddr) -> Arc<Peer> {
        let mut peers = self.peers.lock();
        peers
            .entry(addr)
            .or_insert_with(|| Peer::start(self, addr))
            .clone()
    }

    /// Queues a frame for `to`; counts it dropped if it does not fit.
    pub fn send(
        self: &Arc<Self>,
        to: SocketAddr,
        header: FrameHeader,
        payload: Bytes,
        deadline: Instant,
    ) -> Result<(), SendError> {
        if self.is_closing() {
            return Err(SendError::Shutdown);
        }
        if to == self.identity.address {
            return Err(SendError::ToSelf);
        }
        let lane = route(header.verb, header.flags, payload.len());
        let frame = Outbound::new(header, payload, deadline)?;
        let now = self.env.clock.now();
        self.peer(to)
            .enqueue(self, frame, lane, now)
            .map_err(|full| {
                self.counters
                    .count_dropped(header.verb, DropReason::QueueFull, 1);
                match full {
                    Full::Lane => SendError::QueueFull,
                    Full::Node => SendError::NodeQueuesFull,
                }
            })
    }

    /// Answers a request: its response verb, its request id.
    pub fn reply(
        self: &Arc<Self>,
        to: SocketAddr,
        request: &FrameHeader,
        reply: Reply,
        deadline: Option<Instant>,
    ) {
        let (flags, payload) = match reply {
            Ok(payload) => (Flags::NONE, payload),
            Err(failure) => (Flags::FAILURE, Bytes::from(failure.encode())),
        };
        let header = FrameHeader {
            version: MAX_VERSION,
            flags,
            verb: request.verb.response(),
            request_id: request.request_id,
            epoch: self.epoch(),
            timeout_ms: 0,
        };
        let deadline = deadline.unwrap_or_else(|| self.env.clock.now());
        // A response that does not fit is dropped (and counted): its
        // requester times out.
        let _ = self.send(to, header, payload, deadline);
    }

    /// Hands a response to the request waiting for it, if it still waits
    /// and `from` is the node it was sent to.
    pub fn complete(&self, from: Origin, frame: Frame) {
        let header = frame.header;
        let pending = {
            let mut pending = self.pending.lock();
            match pending.get(&header.request_id) {
                Some(p) if p.to == from.addr => pending.remove(&header.request_id),
                _ => None,
            }
        };
        let Some(pending) = pending else {
            self.counters
                .count_dropped(header.verb, DropReason::LateResponse, 1);
            return;
        };
        let _ = pending.tx.send(outcome(pending.verb, from, frame));
    }
}

/// One peer's inbound budget: a permit per byte of frames being handled.
fn inbound_semaphore() -> Semaphore {
    Semaphore::new(INBOUND_BYTES_MAX_PER_PEER)
}

/// What a response frame means for the request of `verb`.
fn outcome(verb: Verb, from: Origin, frame: Frame) -> Answer {
    let header = frame.header;
    if header.verb != verb.response() {
        let message = format!("{} answered with {}", verb, header.verb);
        return Err(RequestError::Failure(Failure::new(
            FailureReason::MALFORMED_PAYLOAD,
            message,
        )));
    }
    if header.flags.contains(Flags::FAILURE) {
        let failure = Failure::decode(&frame.payload).unwrap_or_else(|e| {
            Failure::new(
                FailureReason::MALFORMED_PAYLOAD,
                format!("failure body: {e}"),
            )
        });
        return Err(RequestError::Failure(failure));
    }
    Ok(Response {
        from: from.addr,
        from_host: from.host_id,
        from_generation: from.generation,
        header,
        payload: frame.payload,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inbound_budget_at_n_and_n_plus_one() {
        let budget = inbound_semaphore();
        let n = u32::try_from(INBOUND_BYTES_MAX_PER_PEER).expect("fits");
        assert!(budget.try_acquire_many(n + 1).is_err(), "N + 1 waits");
        let all = budget.try_acquire_many(n).expect("N is granted");
        assert!(budget.try_acquire().is_err(), "nothing left past N");
        drop(all);
        assert_eq!(budget.available_permits(), INBOUND_BYTES_MAX_PER_PEER);
    }
}
