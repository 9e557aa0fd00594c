//! Forming and joining (docs/design/cluster.md, section 6).
//!
//! A node that is not done (its record is not in the applied metadata,
//! or it does not vote while there are fewer than `voters_max` voters)
//! goes on, every `retry_interval`, from where it is:
//!
//! - no cluster known: it asks each seed for its status. If a seed
//!   belongs to a cluster, the node asks it (or the leader it names) to
//!   add it as a learner; the leader waits until the node has caught up.
//!   If no seed has a cluster, the node creates one (`CreateCluster`,
//!   with itself the only voter) only if it is a seed itself, every other
//!   seed answered, and its host id is the smallest of them: two halves
//!   of a partitioned seed list never both start a cluster, and a single
//!   seed starts alone;
//! - a learner of a cluster: it proposes its own `Join`, with tokens the
//!   [`TokenAllocator`] (if the owner gave one) computes on the metadata
//!   it has applied, and computes them again when the epoch went stale,
//!   so concurrent joins take turns;
//! - listed but not voting: it asks the leader again, which makes it a
//!   voter while there are fewer than `voters_max`.
//!
//! Every step is safe to repeat, so a node stopped halfway goes on at its
//! next start. An allocator that refuses, or a `Join` the metadata
//! rejects, ends the forming with an error in the log: the node stays a
//! learner until it is restarted.

use std::net::SocketAddr;
use std::sync::Arc;

use super::rpc::{MetadataRequest, MetadataResponse, Status};
use super::service::Inner;
use super::state::{ClusterMetadata, Command, NodeRecord, NodeState};
use super::MetadataError;
use crate::net::handshake::{ClusterId, HostId};

/// How many times a node computes its tokens again after a stale epoch,
/// in one round.
const JOIN_STALE_RETRIES: usize = 16;

/// Computes a joining node's tokens on the metadata it has applied, or
/// refuses the join, and says whether the node bootstraps (joins as
/// `Joining` to have its ranges streamed: docs/design/topology.md).
/// Without one, a node joins with the tokens of its record, `Normal`.
pub trait TokenAllocator: Send + Sync + 'static {
    fn allocate(&self, metadata: &ClusterMetadata, own: &NodeRecord) -> Result<Vec<i64>, String>;

    /// The state the node joins in.
    fn state(&self, _metadata: &ClusterMetadata) -> NodeState {
        NodeState::Normal
    }
}

impl<F> TokenAllocator for F
where
    F: Fn(&ClusterMetadata, &NodeRecord) -> Result<Vec<i64>, String> + Send + Sync + 'static,
{
    fn allocate(&self, metadata: &ClusterMetadata, own: &NodeRecord) -> Result<Vec<i64>, String> {
        self(metadata, own)
    }
}

/// Why a round did not finish.
#[derive(Debug)]
enum RoundError {
    /// Try again next round.
    Retry(MetadataError),
    /// Stop: the node cannot join as it is.
    Refused(String),
}

impl From<MetadataError> for RoundError {
    fn from(e: MetadataError) -> RoundError {
        RoundError::Retry(e)
    }
}

fn is_listed(inner: &Inner) -> bool {
    let own = inner.own.host_id;
    inner.applied.current().nodes.contains_key(&own)
}

/// Whether the node is listed, and votes unless the voters are full.
pub(super) fn is_done(inner: &Inner) -> bool {
    let current = inner.applied.current();
    let own = inner.own.host_id;
    current.nodes.contains_key(&own)
        && (current.voters.contains(&own) || current.voters.len() >= inner.config.voters_max)
}

/// The background task of a node that is not done.
pub(super) async fn run(inner: Arc<Inner>) {
    while !is_done(&inner) {
        if inner.applied.stop.is_stopped() {
            return;
        }
        match round(&inner).await {
            Ok(()) => {}
            Err(RoundError::Retry(e)) => {
                tracing::debug!(error = %e, "metadata log: forming round failed");
            }
            Err(RoundError::Refused(reason)) => {
                tracing::error!(%reason, "metadata log: this node cannot join the cluster");
                *inner.refused.lock() = Some(reason);
                return;
            }
        }
        if is_done(&inner) {
            break;
        }
        inner.env.clock.sleep(inner.config.retry_interval).await;
    }
    tracing::info!(
        host = %inner.own.host_id,
        epoch = inner.applied.current().epoch,
        "metadata log: this node is a member of the cluster"
    );
}

/// One round, from where the node is.
async fn round(inner: &Inner) -> Result<(), RoundError> {
    let current = inner.applied.current();
    if current.nodes.contains_key(&inner.own.host_id) {
        return promote(inner).await;
    }
    if current.has_cluster() {
        return propose_join(inner).await;
    }
    let own_addr = inner.messaging.local_addr();
    let answers = statuses(inner, own_addr).await;
    if let Some((seed, status)) = answers.iter().find(|(_, s)| !s.cluster_id.is_zero()) {
        let epoch = ask_to_add(inner, status.leader.unwrap_or(*seed)).await?;
        let limit = inner.config.request_timeout;
        crate::env::timeout(&*inner.env.clock, limit, inner.applied.wait(epoch))
            .await
            .map_err(|_| MetadataError::Other("the log did not reach this node".to_string()))??;
        return propose_join(inner).await;
    }
    if may_create(inner.own.host_id, own_addr, &inner.config.seeds, &answers) {
        return create(inner).await;
    }
    Ok(())
}

/// The statuses of the other seeds that answered.
async fn statuses(inner: &Inner, own_addr: SocketAddr) -> Vec<(SocketAddr, Status)> {
    let mut answers = Vec::new();
    for seed in inner.config.seeds.iter().filter(|s| **s != own_addr) {
        let limit = inner.config.retry_interval * 5;
        if let Some(MetadataResponse::Status(status)) =
            inner.ask(*seed, &MetadataRequest::Status, limit).await
        {
            answers.push((*seed, status));
        }
    }
    answers
}

/// Whether a node with `own` host id listening at `own_addr` creates the
/// cluster, given `seeds` and the statuses of the other seeds that
/// answered (see the module's rule; none of them has a cluster).
fn may_create(
    own: HostId,
    own_addr: SocketAddr,
    seeds: &[SocketAddr],
    answers: &[(SocketAddr, Status)],
) -> bool {
    let is_seed = seeds.is_empty() || seeds.contains(&own_addr);
    let others = seeds.iter().filter(|seed| **seed != own_addr).count();
    is_seed && answers.len() == others && answers.iter().all(|(_, s)| s.host_id > own)
}

async fn create(inner: &Inner) -> Result<(), RoundError> {
    inner
        .raft
        .initialize(inner.messaging.local_addr())
        .await
        .map_err(|e| MetadataError::Other(format!("{e:?}")))?;
    let node = NodeRecord {
        tokens: tokens(inner, &ClusterMetadata::default())?,
        ..inner.own.clone()
    };
    let command = Command::CreateCluster {
        cluster_name: inner.config.cluster_name.clone(),
        cluster_id: new_cluster_id(inner),
        node,
    };
    match inner.propose(command).await {
        Ok(epoch) => {
            tracing::info!(epoch, "metadata log: created the cluster");
            Ok(())
        }
        // Created already (by this node before a restart).
        Err(MetadataError::Rejected(_)) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// A random version 4 UUID from the node's generator.
fn new_cluster_id(inner: &Inner) -> ClusterId {
    let mut id = [0u8; 16];
    id[..8].copy_from_slice(&inner.env.rng.next_u64().to_be_bytes());
    id[8..].copy_from_slice(&inner.env.rng.next_u64().to_be_bytes());
    id[6] = (id[6] & 0x0f) | 0x40;
    id[8] = (id[8] & 0x3f) | 0x80;
    ClusterId(id)
}

/// This node's tokens for `metadata`.
fn tokens(inner: &Inner, metadata: &ClusterMetadata) -> Result<Vec<i64>, RoundError> {
    match &inner.allocator {
        Some(allocator) => allocator
            .allocate(metadata, &inner.own)
            .map_err(RoundError::Refused),
        None => Ok(inner.own.tokens.clone()),
    }
}

/// Proposes this node's `Join`, computing its tokens again while the
/// epoch goes stale.
async fn propose_join(inner: &Inner) -> Result<(), RoundError> {
    for _ in 0..JOIN_STALE_RETRIES {
        let current = inner.applied.current();
        let state = inner
            .allocator
            .as_ref()
            .map_or(NodeState::Normal, |a| a.state(&current));
        if let Some(moving) = moving_node(&current, inner.own.host_id).filter(|_| state.is_moving())
        {
            // One movement at a time: wait for it to end.
            return Err(RoundError::Retry(MetadataError::Other(format!(
                "waiting for {moving} to finish joining before this node bootstraps"
            ))));
        }
        let node = NodeRecord {
            tokens: tokens(inner, &current)?,
            state,
            ..inner.own.clone()
        };
        let command = Command::Join {
            node,
            expected_epoch: current.epoch,
        };
        match inner.propose(command).await {
            Ok(epoch) => {
                tracing::info!(epoch, "metadata log: joined the cluster");
                return promote(inner).await;
            }
            Err(MetadataError::Stale { .. }) => continue,
            // Listed meanwhile (a join that applied before a restart).
            Err(MetadataError::Rejected(_)) if is_listed(inner) => return promote(inner).await,
            // Another node began to move first: wait for it.
            Err(MetadataError::Rejected(reason))
                if moving_node(&inner.applied.current(), inner.own.host_id).is_some() =>
            {
                return Err(RoundError::Retry(MetadataError::Other(reason)))
            }
            Err(MetadataError::Rejected(reason)) => return Err(RoundError::Refused(reason)),
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Another node that moves ranges now, if any.
fn moving_node(metadata: &ClusterMetadata, own: HostId) -> Option<HostId> {
    metadata
        .nodes
        .values()
        .find(|n| n.host_id != own && n.state.is_moving())
        .map(|n| n.host_id)
}

/// Asks the leader (through the seeds if it is not known) to make this
/// listed node a voter, if there is room.
async fn promote(inner: &Inner) -> Result<(), RoundError> {
    if is_done(inner) {
        return Ok(());
    }
    let target = match inner.raft.leader() {
        Some((_, addr)) => addr,
        None => return Err(MetadataError::Other("no leader known".to_string()).into()),
    };
    ask_to_add(inner, target).await.map(|_| ())
}

/// Asks `target` (a seed, or the leader) to add this node, as a learner
/// or, once listed, as a voter; follows one `NotLeader` answer. The log
/// index of the change.
async fn ask_to_add(inner: &Inner, target: SocketAddr) -> Result<u64, RoundError> {
    let request = MetadataRequest::Join(inner.own.clone());
    let limit = inner.config.request_timeout;
    let mut target = target;
    for _ in 0..2 {
        match inner.ask(target, &request, limit).await {
            Some(MetadataResponse::Applied(index)) => return Ok(index),
            Some(MetadataResponse::NotLeader(Some(leader))) if leader != target => target = leader,
            Some(MetadataResponse::Rejected(reason)) => return Err(RoundError::Refused(reason)),
            other => {
                let e = MetadataError::Other(format!("join answered {other:?}"));
                return Err(e.into());
            }
        }
    }
    Err(MetadataError::Other("no leader answered".to_string()).into())
}

/// The leader's side of JOIN: the node becomes a learner (the answer
/// waits until it has caught up) and, once its record is listed, a voter
/// while there are fewer than `voters_max`. One at a time, so the voter
/// count read here stays true.
pub(super) async fn add_node(inner: &Inner, node: NodeRecord) -> MetadataResponse {
    if !inner.raft.is_leader() {
        return MetadataResponse::NotLeader(inner.raft.leader().map(|(_, addr)| addr));
    }
    let _one_at_a_time = inner.join_lock.lock().await;
    let mut index = inner.applied.current().epoch;
    if !inner.raft.has_member(node.host_id) {
        match inner
            .raft
            .add_learner(node.host_id, node.storage_addr)
            .await
        {
            Ok(at) => index = at,
            Err(e) => return inner.write_failure(e),
        }
    }
    let listed = inner.applied.current().nodes.contains_key(&node.host_id);
    let voters = inner.raft.voters();
    let room = voters.len() < inner.config.voters_max;
    if listed && room && !voters.iter().any(|(h, _)| *h == node.host_id) {
        match inner.raft.add_voter(node.host_id).await {
            Ok(at) => index = at,
            Err(e) => return inner.write_failure(e),
        }
    }
    MetadataResponse::Applied(index)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(n: u8) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, n], 7000))
    }

    fn answer(n: u8) -> (SocketAddr, Status) {
        let status = Status {
            host_id: HostId([n; 16]),
            cluster_id: ClusterId::default(),
            epoch: 0,
            leader: None,
        };
        (addr(n), status)
    }

    #[test]
    fn a_single_seed_starts_alone() {
        assert!(may_create(HostId([1; 16]), addr(1), &[addr(1)], &[]));
        assert!(may_create(HostId([1; 16]), addr(1), &[], &[]));
    }

    #[test]
    fn the_smallest_seed_creates_once_every_seed_answered() {
        let seeds = [addr(1), addr(2), addr(3)];
        let all = [answer(2), answer(3)];
        assert!(may_create(HostId([1; 16]), addr(1), &seeds, &all));
        // A seed that did not answer: a partition may hide a cluster.
        assert!(!may_create(HostId([1; 16]), addr(1), &seeds, &all[..1]));
        // Not the smallest host id.
        let from_two = [answer(1), answer(3)];
        assert!(!may_create(HostId([2; 16]), addr(2), &seeds, &from_two));
    }

    #[test]
    fn a_node_that_is_not_a_seed_never_creates() {
        let seeds = [addr(2), addr(3)];
        let all = [answer(2), answer(3)];
        assert!(!may_create(HostId([1; 16]), addr(1), &seeds, &all));
    }
}
