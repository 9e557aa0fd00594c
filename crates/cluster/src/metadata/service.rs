//! [`MetadataService`]: the running metadata log of one node, and its
//! [`MetadataLog`] implementation.
//!
//! A proposal is tried on this node's Raft instance; if another node
//! leads, it goes to the leader in a METADATA_PROPOSE (one hop, see
//! [`super::rpc`]), and is retried, after `retry_interval`, while no
//! leader is known, all within `request_timeout`. When that passes the
//! proposal fails with `NoQuorum`, counting the voters that answer an
//! ECHO. A proposal that timed out may still apply later (Raft cannot
//! take an entry back): its outcome is unknown, as a write timeout's is.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Weak};
use std::time::Duration;

use bytes::Bytes;
use parking_lot::Mutex;
use tokio::task::JoinHandle;

use super::applied::AppliedState;
use super::forming::{self, TokenAllocator};
use super::limits::{METADATA_REQUEST_TIMEOUT, METADATA_VOTERS_MAX, SNAPSHOT_EVERY_ENTRIES};
use super::raft_glue::node::RaftTiming;
use super::raft_glue::{ApplyResult, RaftNode, WriteError};
use super::rpc::{self, MetadataRequest, MetadataResponse, Status};
use super::state::{Command, NodeRecord, Outcome};
use super::{ClusterMetadata, MetadataError, MetadataListener, MetadataLog, StoreError};
use crate::env::{timeout, BoxFuture, Env};
use crate::net::handshake::HostId;
use crate::net::{Failure, FailureReason, Messaging, Request, Verb};

/// How long an ECHO to a voter may take when a proposal counts the
/// reachable voters.
const VOTER_ECHO_TIMEOUT: Duration = Duration::from_millis(500);

/// The metadata log's settings. [`MetadataConfig::new`] takes the
/// documented defaults; tests shorten the timings.
#[derive(Debug, Clone)]
pub struct MetadataConfig {
    pub cluster_name: String,
    /// Where the seeds' messaging listens; may include this node.
    pub seeds: Vec<SocketAddr>,
    /// How long a proposal waits for a leader with a quorum.
    pub request_timeout: Duration,
    /// Pause between two tries while no leader is known, and between two
    /// rounds of looking for a cluster.
    pub retry_interval: Duration,
    pub heartbeat_interval: Duration,
    pub election_timeout_min: Duration,
    pub election_timeout_max: Duration,
    pub voters_max: usize,
    pub snapshot_every_entries: u64,
}

impl MetadataConfig {
    pub fn new(cluster_name: &str, seeds: Vec<SocketAddr>) -> MetadataConfig {
        MetadataConfig {
            cluster_name: cluster_name.to_string(),
            seeds,
            request_timeout: METADATA_REQUEST_TIMEOUT,
            retry_interval: Duration::from_millis(200),
            heartbeat_interval: Duration::from_millis(250),
            election_timeout_min: Duration::from_millis(1000),
            election_timeout_max: Duration::from_millis(2000),
            voters_max: METADATA_VOTERS_MAX,
            snapshot_every_entries: SNAPSHOT_EVERY_ENTRIES,
        }
    }

    fn timing(&self) -> RaftTiming {
        RaftTiming {
            heartbeat_interval: self.heartbeat_interval,
            election_timeout_min: self.election_timeout_min,
            election_timeout_max: self.election_timeout_max,
            snapshot_every_entries: self.snapshot_every_entries,
        }
    }
}

pub(super) struct Inner {
    pub config: MetadataConfig,
    pub env: Env,
    pub messaging: Messaging,
    pub own: NodeRecord,
    pub raft: RaftNode,
    pub applied: Arc<AppliedState>,
    forming: Mutex<Option<JoinHandle<()>>>,
    /// Held by the leader while it adds a node.
    pub join_lock: tokio::sync::Mutex<()>,
    pub allocator: Option<Arc<dyn TokenAllocator>>,
    /// Takes departed nodes out of the group (`departed.rs`).
    sweeper: Mutex<Option<JoinHandle<()>>>,
    /// Why the cluster refused this node's join, if it did (forming stops).
    pub refused: Mutex<Option<String>>,
}

/// What the owner plugs into the log at start.
#[derive(Clone, Default)]
pub struct MetadataHooks {
    /// Told of every applied metadata, in order.
    pub listener: Option<Arc<dyn MetadataListener>>,
    /// Computes this node's tokens when it creates or joins a cluster.
    pub allocator: Option<Arc<dyn TokenAllocator>>,
}

impl std::fmt::Debug for MetadataHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetadataHooks")
            .field("listener", &self.listener.is_some())
            .field("allocator", &self.allocator.is_some())
            .finish()
    }
}

/// One node's metadata log. Cheap to clone.
#[derive(Clone)]
pub struct MetadataService {
    inner: Arc<Inner>,
}

impl MetadataService {
    /// Opens (or creates) the log in `dir` and starts it on `messaging`.
    /// A node whose metadata does not list it yet looks for its cluster
    /// through the seeds (or creates it) in the background, and a listed
    /// node that does not vote asks to, while there is room; a restarted
    /// member just recovers. `own` is this node's record: its host id and
    /// storage address must be the messaging's (an `InvalidInput` error
    /// otherwise).
    pub async fn start(
        config: MetadataConfig,
        env: Env,
        messaging: &Messaging,
        dir: &Path,
        own: NodeRecord,
        hooks: MetadataHooks,
    ) -> Result<MetadataService, StoreError> {
        check_own_record(messaging, &own, dir)?;
        let departed = Arc::new(super::departed::Departed::default());
        let listener = super::departed::observing(
            Arc::clone(&departed),
            stamp_epoch(messaging, hooks.listener),
        );
        let applied = Arc::new(AppliedState::new(Some(listener)));
        let timing = config.timing();
        let (raft, empty, committed) = RaftNode::start(
            own.host_id,
            env.rng.clone(),
            messaging,
            dir,
            applied.clone(),
            &timing,
        )
        .await?;
        // The replay of the committed log comes before anything looks at
        // the metadata: forming must not take a half-replayed log for a
        // node that has not joined.
        if let Some(committed) = committed {
            let replay = applied.wait(committed);
            if timeout(&*env.clock, config.request_timeout, replay)
                .await
                .is_err()
            {
                tracing::warn!(committed, "metadata log: the log was not replayed in time");
            }
        }
        tracing::info!(
            host = %own.host_id,
            dir = %dir.display(),
            epoch = applied.current().epoch,
            "metadata log: {}",
            if empty { "new" } else { "recovered" }
        );
        let inner = Arc::new(Inner {
            config,
            env,
            messaging: messaging.clone(),
            own,
            raft,
            applied,
            forming: Mutex::new(None),
            join_lock: tokio::sync::Mutex::new(()),
            allocator: hooks.allocator,
            sweeper: Mutex::new(None),
            refused: Mutex::new(None),
        });
        register_handler(&inner);
        let sweeper = tokio::spawn(super::departed::sweep(Arc::downgrade(&inner), departed));
        *inner.sweeper.lock() = Some(sweeper);
        let service = MetadataService { inner };
        if !forming::is_done(&service.inner) {
            let task = tokio::spawn(forming::run(service.inner.clone()));
            *service.inner.forming.lock() = Some(task);
        }
        Ok(service)
    }

    /// Why the cluster refused this node's join (it will not join), if it
    /// did: the start reports it at once.
    pub fn join_refusal(&self) -> Option<String> {
        self.inner.refused.lock().clone()
    }

    /// Whether the applied metadata lists this node.
    pub fn is_member(&self) -> bool {
        let own = self.inner.own.host_id;
        self.inner.applied.current().nodes.contains_key(&own)
    }

    /// Waits until this node is in the cluster's metadata (created or
    /// joined), at most `limit`.
    pub async fn wait_member(&self, limit: Duration) -> Result<(), MetadataError> {
        let wait = async {
            while !self.is_member() {
                let next = self.inner.applied.current().epoch + 1;
                self.inner.applied.wait(next).await?;
            }
            Ok(())
        };
        timeout(&*self.inner.env.clock, limit, wait)
            .await
            .unwrap_or_else(|_| Err(MetadataError::Other("not a member yet".to_string())))
    }

    /// The leader's address as this node knows it.
    pub fn leader(&self) -> Option<SocketAddr> {
        self.inner.raft.leader().map(|(_, addr)| addr)
    }

    /// Stops looking for a cluster, ends every wait with `Shutdown`, and
    /// stops Raft. The messaging is the caller's to shut down.
    pub async fn shutdown(&self) {
        self.inner.applied.stop.stop();
        if let Some(sweeper) = self.inner.sweeper.lock().take() {
            sweeper.abort();
        }
        let forming = self.inner.forming.lock().take();
        if let Some(task) = forming {
            task.abort();
            let _ = task.await;
        }
        self.inner.raft.shutdown().await;
    }
}

impl MetadataLog for MetadataService {
    fn local_host(&self) -> HostId {
        self.inner.own.host_id
    }

    fn current(&self) -> Arc<ClusterMetadata> {
        self.inner.applied.current()
    }

    fn propose(&self, command: Command) -> BoxFuture<'_, Result<u64, MetadataError>> {
        Box::pin(self.inner.propose(command))
    }

    fn wait_applied(&self, epoch: u64) -> BoxFuture<'_, Result<(), MetadataError>> {
        Box::pin(self.inner.applied.wait(epoch))
    }
}

impl Inner {
    pub(super) async fn propose(&self, command: Command) -> Result<u64, MetadataError> {
        let limit = self.config.request_timeout;
        match timeout(&*self.env.clock, limit, self.propose_loop(command)).await {
            Ok(result) => result,
            Err(_) => {
                let (reachable, voters) = self.reachable_voters().await;
                Err(MetadataError::NoQuorum { reachable, voters })
            }
        }
    }

    async fn propose_loop(&self, command: Command) -> Result<u64, MetadataError> {
        loop {
            if self.applied.stop.is_stopped() {
                return Err(MetadataError::Shutdown);
            }
            let leader = match self.apply_here(command.clone()).await {
                Ok(result) => return self.finish(result).await,
                Err(WriteError::ForwardTo(leader)) => leader,
                Err(WriteError::Busy) => None,
                Err(WriteError::Failed(reason)) => return Err(MetadataError::Other(reason)),
            };
            if let Some(addr) = leader {
                let request = MetadataRequest::Propose(command.clone());
                match self.ask(addr, &request, self.config.request_timeout).await {
                    Some(MetadataResponse::Applied(epoch)) => {
                        return self.finish(applied_at(epoch)).await;
                    }
                    Some(MetadataResponse::Stale(epoch)) => {
                        return self.finish(stale_at(epoch)).await;
                    }
                    Some(MetadataResponse::Rejected(reason)) => {
                        return Err(MetadataError::Rejected(reason));
                    }
                    Some(MetadataResponse::Failed(reason)) => {
                        return Err(MetadataError::Other(reason));
                    }
                    _ => {}
                }
            }
            self.env.clock.sleep(self.config.retry_interval).await;
        }
    }

    /// Waits until this node has applied the result's epoch, then turns
    /// it into the proposal's answer.
    async fn finish(&self, result: ApplyResult) -> Result<u64, MetadataError> {
        self.applied.wait(result.epoch).await?;
        match result.outcome {
            Outcome::Applied => Ok(result.epoch),
            Outcome::Stale { current_epoch } => Err(MetadataError::Stale { current_epoch }),
            Outcome::Rejected(reason) => Err(MetadataError::Rejected(reason)),
        }
    }

    /// Applies `command` through this node's Raft instance, which must
    /// lead. `SetVoters` becomes a membership change.
    pub(super) async fn apply_here(&self, command: Command) -> Result<ApplyResult, WriteError> {
        match command {
            Command::SetVoters { voters } => {
                let epoch = self.raft.set_voters(voters).await?;
                Ok(applied_at(epoch))
            }
            command => self.raft.write(command).await,
        }
    }

    /// Sends a METADATA_PROPOSE to `addr`; `None` if no answer came.
    pub(super) async fn ask(
        &self,
        addr: SocketAddr,
        request: &MetadataRequest,
        limit: Duration,
    ) -> Option<MetadataResponse> {
        let payload = Bytes::from(rpc::encode_request(request));
        let pending = self
            .messaging
            .request(addr, Verb::METADATA_PROPOSE, payload, limit)
            .ok()?;
        let response = pending.await.ok()?;
        rpc::decode_response(&response.payload).ok()
    }

    /// The voters this node knows, and how many answer an ECHO now
    /// (this node counts if it votes).
    async fn reachable_voters(&self) -> (Option<usize>, usize) {
        let voters = self.raft.voters();
        if voters.is_empty() {
            return (None, 0);
        }
        let own = self.own.host_id;
        let pending: Vec<_> = voters
            .iter()
            .filter(|(host, _)| *host != own)
            .map(|(_, addr)| {
                self.messaging
                    .request(*addr, Verb::ECHO, Bytes::new(), VOTER_ECHO_TIMEOUT)
            })
            .collect();
        let mut reachable = usize::from(voters.iter().any(|(host, _)| *host == own));
        for response in pending.into_iter().flatten() {
            reachable += usize::from(response.await.is_ok());
        }
        (Some(reachable), voters.len())
    }

    fn status(&self) -> Status {
        let current = self.applied.current();
        Status {
            host_id: self.own.host_id,
            cluster_id: current.cluster_id,
            epoch: current.epoch,
            leader: self.raft.leader().map(|(_, addr)| addr),
        }
    }

    async fn handle(&self, request: MetadataRequest) -> MetadataResponse {
        match request {
            MetadataRequest::Status => MetadataResponse::Status(self.status()),
            MetadataRequest::Propose(command) => match self.apply_here(command).await {
                Ok(result) => answer(result),
                Err(e) => self.write_failure(e),
            },
            MetadataRequest::Join(node) => forming::add_node(self, node).await,
        }
    }

    pub(super) fn write_failure(&self, e: WriteError) -> MetadataResponse {
        match e {
            WriteError::ForwardTo(leader) => MetadataResponse::NotLeader(leader),
            // Busy with a voter change: ask here again.
            WriteError::Busy => MetadataResponse::NotLeader(Some(self.messaging.local_addr())),
            WriteError::Failed(reason) => MetadataResponse::Failed(reason),
        }
    }
}

fn applied_at(epoch: u64) -> ApplyResult {
    ApplyResult {
        epoch,
        outcome: Outcome::Applied,
    }
}

fn stale_at(epoch: u64) -> ApplyResult {
    ApplyResult {
        epoch,
        outcome: Outcome::Stale {
            current_epoch: epoch,
        },
    }
}

/// The METADATA_PROPOSE_RSP for an applied entry.
fn answer(result: ApplyResult) -> MetadataResponse {
    match result.outcome {
        Outcome::Applied => MetadataResponse::Applied(result.epoch),
        Outcome::Stale { current_epoch } => MetadataResponse::Stale(current_epoch),
        Outcome::Rejected(reason) => MetadataResponse::Rejected(reason),
    }
}

/// The record must name this node as its messaging does: Raft and the
/// peers reach it at that host id and address.
fn check_own_record(messaging: &Messaging, own: &NodeRecord, dir: &Path) -> Result<(), StoreError> {
    let identity = messaging.identity();
    if own.host_id == identity.host_id && own.storage_addr == identity.address {
        return Ok(());
    }
    let message = format!(
        "the node's record ({} at {}) is not its messaging's ({} at {})",
        own.host_id, own.storage_addr, identity.host_id, identity.address
    );
    Err(StoreError::io(
        dir,
        std::io::Error::new(std::io::ErrorKind::InvalidInput, message),
    ))
}

/// The listener given to the state machine: stamps every frame the node
/// sends from now on with the new epoch (design, section 4.4), then tells
/// the owner's listener.
fn stamp_epoch(
    messaging: &Messaging,
    owner: Option<Arc<dyn MetadataListener>>,
) -> Arc<dyn MetadataListener> {
    let messaging = messaging.clone();
    Arc::new(move |metadata: &Arc<ClusterMetadata>| {
        messaging.set_epoch(metadata.epoch);
        if let Some(owner) = &owner {
            owner.applied(metadata);
        }
    })
}

fn register_handler(inner: &Arc<Inner>) {
    let weak: Weak<Inner> = Arc::downgrade(inner);
    inner
        .messaging
        .register(Verb::METADATA_PROPOSE, move |request: Request| {
            let weak = weak.clone();
            async move {
                let Some(inner) = weak.upgrade() else {
                    return Some(Err(Failure::new(
                        FailureReason::UNKNOWN,
                        "metadata log stopped",
                    )));
                };
                let decoded = match rpc::decode_request(&request.payload) {
                    Ok(decoded) => decoded,
                    Err(e) => {
                        return Some(Err(Failure::new(
                            FailureReason::MALFORMED_PAYLOAD,
                            e.to_string(),
                        )))
                    }
                };
                // Bounded by the sender's deadline: a leader without a
                // quorum would otherwise hold the handler for good.
                let clock = inner.env.clock.clone();
                let limit = request.deadline.map_or(inner.config.request_timeout, |d| {
                    d.saturating_duration_since(clock.now())
                });
                let response = timeout(&*clock, limit, inner.handle(decoded)).await.ok()?;
                Some(Ok(Bytes::from(rpc::encode_response(&response))))
            }
        });
}

impl std::fmt::Debug for MetadataService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetadataService")
            .field("host", &self.inner.own.host_id)
            .field("epoch", &self.inner.applied.current().epoch)
            .finish_non_exhaustive()
    }
}
