//! [`RaftNode`]: one node's openraft instance, driven in our types only
//! (commands, host ids, addresses, epochs), and its RAFT_* handlers.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use openraft::error::{ClientWriteError, InitializeError, RaftError};
use openraft::{ChangeMembers, Config, Raft, ServerState, SnapshotPolicy};

use super::codec::{
    decode_request, encode_append_response, encode_snapshot_answer, encode_vote_response,
    read_append_request, read_snapshot_request, read_vote_request,
};
use super::log_store::LogStore;
use super::network::Network;
use super::runtime::with_node_rng;
use super::state_machine::StateMachine;
use super::{ApplyResult, Peer, TypeConfig};
use crate::env::SeededRng;
use crate::metadata::applied::AppliedState;
use crate::metadata::limits::{MAX_ENTRIES_PER_APPEND, SNAPSHOT_CHUNK_BYTES};
use crate::metadata::state::Command;
use crate::metadata::store::StoreResult;
use crate::net::handshake::HostId;
use crate::net::wire::{Reader, WireError};
use crate::net::{Failure, FailureReason, Messaging, Request, Verb};

/// openraft's timing and snapshot settings, in our words.
#[derive(Debug, Clone)]
pub struct RaftTiming {
    pub heartbeat_interval: Duration,
    pub election_timeout_min: Duration,
    pub election_timeout_max: Duration,
    pub snapshot_every_entries: u64,
}

/// Why a write did not happen here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteError {
    /// This node is not the leader; the leader's address if known.
    ForwardTo(Option<SocketAddr>),
    /// A voter change is already under way: try again shortly.
    Busy,
    /// The Raft instance stopped, or refused the change for good.
    Failed(String),
}

fn write_error(e: RaftError<HostId, ClientWriteError<HostId, Peer>>) -> WriteError {
    match e {
        RaftError::APIError(ClientWriteError::ForwardToLeader(f)) => {
            WriteError::ForwardTo(f.leader_node.map(|p| p.addr))
        }
        RaftError::APIError(ClientWriteError::ChangeMembershipError(e)) => {
            if matches!(e, openraft::error::ChangeMembershipError::InProgress(_)) {
                WriteError::Busy
            } else {
                WriteError::Failed(e.to_string())
            }
        }
        RaftError::Fatal(e) => WriteError::Failed(e.to_string()),
    }
}

/// One node's openraft instance.
#[derive(Clone)]
pub struct RaftNode {
    raft: Raft<TypeConfig>,
    host: HostId,
}

impl RaftNode {
    /// Opens the files in `dir` and starts openraft on them. Returns the
    /// node, whether the log was empty (a node never started before), and
    /// the index of the last entry known committed (openraft applies the
    /// log up to it again at start).
    pub async fn start(
        host: HostId,
        rng: Arc<SeededRng>,
        messaging: &Messaging,
        dir: &Path,
        applied: Arc<AppliedState>,
        timing: &RaftTiming,
    ) -> StoreResult<(RaftNode, bool, Option<u64>)> {
        std::fs::create_dir_all(dir).map_err(|e| crate::metadata::StoreError::io(dir, e))?;
        let log = LogStore::open(dir)?;
        let empty = log.is_empty()?;
        let committed = super::log_store::read_committed_file(dir)?.map(|id| id.index);
        let machine = StateMachine::open(dir, applied)?;
        let network = Network {
            messaging: messaging.clone(),
        };
        let config = Arc::new(raft_config(timing));
        let raft = with_node_rng(rng, Raft::new(host, config, network, log, machine))
            .await
            .map_err(|e| {
                crate::metadata::StoreError::io(dir, std::io::Error::other(e.to_string()))
            })?;
        let node = RaftNode { raft, host };
        node.register_handlers(messaging);
        Ok((node, empty, committed))
    }

    /// Makes this node the only voter of a new group (nothing if it
    /// already is in one).
    pub async fn initialize(&self, addr: SocketAddr) -> Result<(), WriteError> {
        let members = BTreeMap::from([(self.host, Peer { addr })]);
        match self.raft.initialize(members).await {
            Ok(()) => Ok(()),
            Err(RaftError::APIError(InitializeError::NotAllowed(_))) => Ok(()),
            Err(e) => Err(WriteError::Failed(e.to_string())),
        }
    }

    /// Proposes `command` on this node, which must be the leader; returns
    /// once it is applied here.
    pub async fn write(&self, command: Command) -> Result<ApplyResult, WriteError> {
        let response = self.raft.client_write(command).await.map_err(write_error)?;
        Ok(response.data)
    }

    /// Adds a learner and waits until it has caught up.
    pub async fn add_learner(&self, host: HostId, addr: SocketAddr) -> Result<u64, WriteError> {
        let response = self
            .raft
            .add_learner(host, Peer { addr }, true)
            .await
            .map_err(write_error)?;
        Ok(response.log_id.index)
    }

    /// Makes `voters` the voter set (learners stay learners).
    pub async fn set_voters(&self, voters: BTreeSet<HostId>) -> Result<u64, WriteError> {
        let response = self
            .raft
            .change_membership(ChangeMembers::ReplaceAllVoters(voters), true)
            .await
            .map_err(write_error)?;
        Ok(response.log_id.index)
    }

    /// Takes `host`, a learner, out of the group.
    pub async fn remove_learner(&self, host: HostId) -> Result<u64, WriteError> {
        let response = self
            .raft
            .change_membership(ChangeMembers::RemoveNodes(BTreeSet::from([host])), false)
            .await
            .map_err(write_error)?;
        Ok(response.log_id.index)
    }

    /// Makes the learner `host` a voter too.
    pub async fn add_voter(&self, host: HostId) -> Result<u64, WriteError> {
        let response = self
            .raft
            .change_membership(ChangeMembers::AddVoterIds(BTreeSet::from([host])), true)
            .await
            .map_err(write_error)?;
        Ok(response.log_id.index)
    }

    /// The leader's host id and address, as this node knows them.
    pub fn leader(&self) -> Option<(HostId, SocketAddr)> {
        let metrics = self.raft.metrics();
        let metrics = metrics.borrow();
        let leader = metrics.current_leader?;
        let peer = metrics.membership_config.membership().get_node(&leader)?;
        Some((leader, peer.addr))
    }

    /// Whether `host` is a voter or a learner of the group.
    pub fn has_member(&self, host: HostId) -> bool {
        let metrics = self.raft.metrics();
        let metrics = metrics.borrow();
        metrics
            .membership_config
            .membership()
            .get_node(&host)
            .is_some()
    }

    pub fn is_leader(&self) -> bool {
        self.raft.metrics().borrow().state == ServerState::Leader
    }

    /// The voters of the membership this node knows, with their addresses.
    pub fn voters(&self) -> Vec<(HostId, SocketAddr)> {
        let metrics = self.raft.metrics();
        let metrics = metrics.borrow();
        let membership = metrics.membership_config.membership();
        membership
            .voter_ids()
            .map(|id| {
                (
                    id,
                    membership
                        .get_node(&id)
                        .map_or(Peer::default().addr, |p| p.addr),
                )
            })
            .collect()
    }

    /// Stops openraft's tasks.
    pub async fn shutdown(&self) {
        if let Err(e) = self.raft.shutdown().await {
            tracing::warn!(error = %e, "metadata log: openraft did not stop cleanly");
        }
    }

    fn register_handlers(&self, messaging: &Messaging) {
        let own = messaging.identity().host_id;
        let raft = self.raft.clone();
        messaging.register(Verb::RAFT_VOTE, move |request: Request| {
            let raft = raft.clone();
            async move { Some(handle_vote(&raft, own, request.payload).await) }
        });
        let raft = self.raft.clone();
        messaging.register(Verb::RAFT_APPEND, move |request: Request| {
            let raft = raft.clone();
            async move { Some(handle_append(&raft, own, request.payload).await) }
        });
        let raft = self.raft.clone();
        messaging.register(Verb::RAFT_SNAPSHOT, move |request: Request| {
            let raft = raft.clone();
            async move { Some(handle_snapshot(&raft, own, request.payload).await) }
        });
    }
}

fn raft_config(timing: &RaftTiming) -> Config {
    let millis = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
    Config {
        cluster_name: "varve-metadata".to_string(),
        heartbeat_interval: millis(timing.heartbeat_interval),
        election_timeout_min: millis(timing.election_timeout_min),
        election_timeout_max: millis(timing.election_timeout_max),
        max_payload_entries: MAX_ENTRIES_PER_APPEND as u64,
        snapshot_policy: SnapshotPolicy::LogsSinceLast(timing.snapshot_every_entries),
        snapshot_max_chunk_size: SNAPSHOT_CHUNK_BYTES as u64,
        max_in_snapshot_log_to_keep: 0,
        ..Config::default()
    }
}

fn malformed(e: impl std::fmt::Display) -> Failure {
    Failure::new(FailureReason::MALFORMED_PAYLOAD, e.to_string())
}

fn refused(e: impl std::fmt::Display) -> Failure {
    Failure::new(FailureReason::UNKNOWN, e.to_string())
}

/// Decodes a RAFT_* request with `read` and keeps it if it is meant for
/// `own`: one for another host id (the dead node this one replaced at the
/// same address) is refused, so that nothing answers in that node's name.
fn request_for<T>(
    own: HostId,
    payload: &[u8],
    read: impl FnOnce(&mut Reader<'_>) -> Result<T, WireError>,
) -> Result<T, Failure> {
    let addressed = decode_request(payload, read).map_err(malformed)?;
    match addressed.to {
        Some(to) if to != own => Err(Failure::new(
            FailureReason::NOT_ADDRESSEE,
            format!("this node is {own}, not {to}: that node no longer listens here"),
        )),
        _ => Ok(addressed.rpc),
    }
}

async fn handle_vote(
    raft: &Raft<TypeConfig>,
    own: HostId,
    payload: Bytes,
) -> Result<Bytes, Failure> {
    let rpc = request_for(own, &payload, read_vote_request)?;
    let response = raft.vote(rpc).await.map_err(refused)?;
    Ok(Bytes::from(encode_vote_response(&response)))
}

async fn handle_append(
    raft: &Raft<TypeConfig>,
    own: HostId,
    payload: Bytes,
) -> Result<Bytes, Failure> {
    let rpc = request_for(own, &payload, read_append_request)?;
    let response = raft.append_entries(rpc).await.map_err(refused)?;
    Ok(Bytes::from(encode_append_response(&response)))
}

async fn handle_snapshot(
    raft: &Raft<TypeConfig>,
    own: HostId,
    payload: Bytes,
) -> Result<Bytes, Failure> {
    let rpc = request_for(own, &payload, read_snapshot_request)?;
    let answer = match raft.install_snapshot(rpc).await {
        Ok(response) => Ok(response),
        Err(RaftError::APIError(e)) => Err(e),
        Err(RaftError::Fatal(e)) => return Err(refused(e)),
    };
    Ok(Bytes::from(encode_snapshot_answer(&answer)))
}
