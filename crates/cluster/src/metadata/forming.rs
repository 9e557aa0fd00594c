//! Forming and joining (docs/design/cluster.md, section 6).
//!
//! A node whose metadata does not list it asks each seed for its status,
//! every `retry_interval`, until it is listed:
//!
//! - if a seed belongs to a cluster, the node asks it (or the leader it
//!   names) to add it: the leader adds it as a learner, applies its
//!   `Join` (retrying a stale epoch), and makes it a voter while there
//!   are fewer than `voters_max`;
//! - if no seed has a cluster, the node creates one (`CreateCluster`,
//!   with itself the only voter) only if it is a seed itself, every other
//!   seed answered, and its host id is the smallest of them: two halves
//!   of a partitioned seed list never both start a cluster, and a single
//!   seed starts alone.
//!
//! Every step is safe to repeat, so a node that stopped halfway (added
//! as a learner, or its group initialised but the cluster not created)
//! just goes on at its next start.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::Arc;

use super::rpc::{MetadataRequest, MetadataResponse, Status};
use super::service::{answer, Inner};
use super::state::{Command, NodeRecord, Outcome};
use super::MetadataError;
use crate::net::handshake::{ClusterId, HostId};

/// How many times the leader retries a `Join` whose epoch went stale.
const JOIN_STALE_RETRIES: usize = 16;

/// The background task of a node that is not a member yet.
pub(super) async fn run(inner: Arc<Inner>) {
    let own = inner.own.host_id;
    while !inner.applied.current().nodes.contains_key(&own) {
        if inner.applied.stop.is_stopped() {
            return;
        }
        if let Err(e) = round(&inner).await {
            tracing::debug!(error = %e, "metadata log: forming round failed");
        }
        if inner.applied.current().nodes.contains_key(&own) {
            break;
        }
        inner.env.clock.sleep(inner.config.retry_interval).await;
    }
    tracing::info!(
        host = %own,
        epoch = inner.applied.current().epoch,
        "metadata log: this node is a member of the cluster"
    );
}

/// One round: ask the seeds, then join or create.
async fn round(inner: &Inner) -> Result<(), MetadataError> {
    let own_addr = inner.messaging.local_addr();
    let others: Vec<SocketAddr> = inner
        .config
        .seeds
        .iter()
        .copied()
        .filter(|seed| *seed != own_addr)
        .collect();
    let mut answers = Vec::new();
    for seed in &others {
        let limit = inner.config.retry_interval * 5;
        if let Some(MetadataResponse::Status(status)) =
            inner.ask(*seed, &MetadataRequest::Status, limit).await
        {
            answers.push((*seed, status));
        }
    }
    if let Some((seed, status)) = answers.iter().find(|(_, s)| !s.cluster_id.is_zero()) {
        return join_through(inner, status.leader.unwrap_or(*seed)).await;
    }
    if may_create(inner.own.host_id, own_addr, &inner.config.seeds, &answers) {
        return create(inner).await;
    }
    Ok(())
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

async fn create(inner: &Inner) -> Result<(), MetadataError> {
    inner
        .raft
        .initialize(inner.messaging.local_addr())
        .await
        .map_err(|e| MetadataError::Other(format!("{e:?}")))?;
    let command = Command::CreateCluster {
        cluster_name: inner.config.cluster_name.clone(),
        cluster_id: new_cluster_id(inner),
        node: inner.own.clone(),
    };
    match inner.propose(command).await {
        Ok(epoch) => {
            tracing::info!(epoch, "metadata log: created the cluster");
            Ok(())
        }
        // Created already (by this node before a restart).
        Err(MetadataError::Rejected(_)) => Ok(()),
        Err(e) => Err(e),
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

/// Asks `target` (a seed, or the leader) to add this node; follows one
/// `NotLeader` answer.
async fn join_through(inner: &Inner, target: SocketAddr) -> Result<(), MetadataError> {
    let request = MetadataRequest::Join(inner.own.clone());
    let limit = inner.config.request_timeout;
    let mut target = target;
    for _ in 0..2 {
        match inner.ask(target, &request, limit).await {
            Some(MetadataResponse::Applied(epoch)) => return inner.applied.wait(epoch).await,
            Some(MetadataResponse::NotLeader(Some(leader))) if leader != target => target = leader,
            Some(MetadataResponse::Rejected(reason)) => {
                tracing::warn!(%reason, "metadata log: the cluster refused this node's join");
                return Err(MetadataError::Rejected(reason));
            }
            other => return Err(MetadataError::Other(format!("join answered {other:?}"))),
        }
    }
    Ok(())
}

/// The leader's side of a join: learner, `Join`, then voter if there is
/// room.
pub(super) async fn add_node(inner: &Inner, node: NodeRecord) -> MetadataResponse {
    if !inner.raft.is_leader() {
        return MetadataResponse::NotLeader(inner.raft.leader().map(|(_, addr)| addr));
    }
    // One join at a time, so the voter count read below stays true.
    let _one_at_a_time = inner.join_lock.lock().await;
    if let Err(e) = inner
        .raft
        .add_learner(node.host_id, node.storage_addr)
        .await
    {
        return inner.write_failure(e);
    }
    let mut response = MetadataResponse::Failed("join kept going stale".to_string());
    for _ in 0..JOIN_STALE_RETRIES {
        let command = Command::Join {
            node: node.clone(),
            expected_epoch: inner.applied.current().epoch,
        };
        match inner.raft.write(command).await {
            Ok(result) if matches!(result.outcome, Outcome::Stale { .. }) => continue,
            Ok(result) => {
                response = answer(result);
                break;
            }
            Err(e) => return inner.write_failure(e),
        }
    }
    if !matches!(response, MetadataResponse::Applied(_)) {
        return response;
    }
    promote(inner, &node).await.unwrap_or(response)
}

/// Makes `node` a voter while there are fewer than `voters_max`; the
/// answer to give if that failed.
async fn promote(inner: &Inner, node: &NodeRecord) -> Option<MetadataResponse> {
    let voters: BTreeSet<_> = inner.raft.voters().into_iter().map(|(h, _)| h).collect();
    if voters.contains(&node.host_id) || voters.len() >= inner.config.voters_max {
        return None;
    }
    for _ in 0..JOIN_STALE_RETRIES {
        match inner.raft.add_voter(node.host_id).await {
            Ok(epoch) => return Some(MetadataResponse::Applied(epoch)),
            Err(super::raft_glue::WriteError::Busy) => {
                inner.env.clock.sleep(inner.config.retry_interval).await;
            }
            Err(e) => return Some(inner.write_failure(e)),
        }
    }
    None
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
