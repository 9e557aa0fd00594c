//! `nodetool decommission`: this node gives its ranges away and leaves
//! the cluster (docs/design/topology.md, section 5).
//!
//! In order: refuse what would leave a keyspace short of replicas (unless
//! forced), hand this node's vote to a node that has none, become
//! `Leaving` (the nodes that take its ranges over now receive their
//! writes), send every range to them once every node has applied that,
//! propose `Leave`, and stop the process. A decommission that fails part
//! way leaves the node `Leaving` and serving; running it again starts the
//! sending over.

use std::collections::BTreeSet;
use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::sync::Notify;
use tracing::info;
use varve_cluster::coordinator::Coordinator;
use varve_cluster::metadata::{
    ClusterMetadata, Command, MetadataError, MetadataLog, MetadataService, NodeState,
};
use varve_cluster::net::handshake::HostId;
use varve_cluster::paxos::PaxosReplica;
use varve_cluster::streaming::{self, FileSource, Puller, Streams};
use varve_query::Processor;

use crate::bootstrap::tables_to_move;
use crate::cluster_path::replication;

/// How many stale epochs each proposal rides out.
pub(crate) const PROPOSE_ATTEMPTS: usize = 16;

/// How long the process waits, once done, before it stops (the nodetool
/// call gets its answer first).
const STOP_DELAY: Duration = Duration::from_millis(300);

/// What a decommission needs, and the signal that stops the process.
pub struct Decommission {
    pub service: Arc<MetadataService>,
    pub coordinator: Arc<Coordinator>,
    pub processor: Weak<Processor>,
    pub throughput: u64,
    /// What this node streams (metrics, `nodetool netstats`).
    pub streams: Arc<Streams>,
    /// This node's Paxos acceptor (streamed Paxos state merges into it).
    pub paxos: Arc<PaxosReplica>,
    /// This node's whole sstables, offered when it gives ranges away.
    pub files: Arc<FileSource>,
    /// Notified once this node has left.
    pub left: Arc<Notify>,
    running: tokio::sync::Mutex<()>,
}

impl Decommission {
    pub fn new(
        service: Arc<MetadataService>,
        coordinator: Arc<Coordinator>,
        processor: Weak<Processor>,
        throughput: u64,
        streams: Arc<Streams>,
        paxos: Arc<PaxosReplica>,
        files: Arc<FileSource>,
    ) -> Decommission {
        Decommission {
            service,
            coordinator,
            processor,
            throughput,
            streams,
            paxos,
            files,
            left: Arc::new(Notify::new()),
            running: tokio::sync::Mutex::new(()),
        }
    }

    /// Runs the decommission; its report, or why it was refused or failed.
    pub async fn run(&self, force: bool) -> Result<String, String> {
        let Ok(_one) = self.running.try_lock() else {
            return Err("a decommission is already running on this node".into());
        };
        let processor = self.processor.upgrade().ok_or("the node is stopping")?;
        let own = self.service.local_host();
        let current = self.service.current();
        let record = current.nodes.get(&own).ok_or("this node is not listed")?;
        match record.state {
            NodeState::Normal => {
                refusal(&current, own, &processor, force).map_or(Ok(()), Err)?;
                self.give_up_vote(own).await?;
                self.set_state(own, NodeState::Leaving).await?;
            }
            NodeState::Leaving => info!("decommission: already leaving; sending the ranges again"),
            NodeState::Joining => return Err("this node is still joining".into()),
        }
        let streamer = self.puller();
        let epoch = self.service.current().epoch;
        let tables = tables_to_move(&processor);
        let report = streaming::decommission(&self.coordinator, &streamer, &tables, epoch)
            .await
            .map_err(|e| format!("decommission failed (this node stays Leaving): {e}"))?;
        self.leave(own).await?;
        let left = Arc::clone(&self.left);
        tokio::spawn(async move {
            tokio::time::sleep(STOP_DELAY).await;
            left.notify_one();
        });
        Ok(format!(
            "Decommissioned: sent {} ranges of {} tables ({} bytes, {} whole sstables); this \
             node has left the cluster and stops\n",
            report.ranges, report.tables, report.moved.bytes, report.moved.files
        ))
    }

    /// A puller that counts what it moves in this node's streams.
    pub fn puller(&self) -> Puller {
        let (messaging, engine, clock) = self.coordinator.parts();
        Puller::new(engine, messaging, clock, self.throughput)
            .with_streams(Arc::clone(&self.streams))
            .with_paxos(Arc::clone(&self.paxos))
            .with_file_source(Arc::clone(&self.files))
    }

    /// Hands this node's vote on the metadata log to a node that has none
    /// (the voters stay as many, and none of them is leaving).
    pub(crate) async fn give_up_vote(&self, own: HostId) -> Result<(), String> {
        let current = self.service.current();
        if !current.voters.contains(&own) {
            return Ok(());
        }
        let mut voters: BTreeSet<HostId> = current.voters.clone();
        voters.remove(&own);
        if let Some(next) = current
            .nodes
            .values()
            .find(|n| n.state == NodeState::Normal && !current.voters.contains(&n.host_id))
        {
            voters.insert(next.host_id);
        }
        if voters.is_empty() {
            return Err("this node is the cluster's only voter".into());
        }
        self.service
            .propose(Command::SetVoters { voters })
            .await
            .map(|_| ())
            .map_err(|e| format!("handing the vote over failed: {e}"))
    }

    pub(crate) async fn set_state(&self, own: HostId, state: NodeState) -> Result<(), String> {
        for _ in 0..PROPOSE_ATTEMPTS {
            let current = self.service.current();
            let mut record = current
                .nodes
                .get(&own)
                .ok_or("this node is not listed")?
                .clone();
            record.state = state;
            let command = Command::Join {
                node: record,
                expected_epoch: current.epoch,
            };
            match self.service.propose(command).await {
                Ok(epoch) => {
                    info!("{own} is {state:?} at epoch {epoch}");
                    return Ok(());
                }
                Err(MetadataError::Stale { .. }) => continue,
                Err(e) => return Err(format!("becoming {state:?} failed: {e}")),
            }
        }
        Err(format!(
            "becoming {state:?} failed: the metadata kept moving"
        ))
    }

    pub(crate) async fn leave(&self, own: HostId) -> Result<(), String> {
        for _ in 0..PROPOSE_ATTEMPTS {
            let command = Command::Leave {
                host: own,
                expected_epoch: self.service.current().epoch,
            };
            match self.service.propose(command).await {
                Ok(epoch) => {
                    info!("{own} left the cluster at epoch {epoch}");
                    return Ok(());
                }
                Err(MetadataError::Stale { .. }) => continue,
                Err(e) => return Err(format!("leaving failed (this node stays Leaving): {e}")),
            }
        }
        Err("leaving failed: the metadata kept moving".into())
    }
}

/// Why this node may not leave: another node is moving ranges, or a
/// keyspace would keep fewer nodes in a data centre than its replication
/// factor there (allowed with `force`, as Cassandra's `--force`, except
/// for the last node of a data centre that keeps replicas).
fn refusal(
    metadata: &ClusterMetadata,
    own: HostId,
    processor: &Processor,
    force: bool,
) -> Option<String> {
    if let Some(other) = metadata
        .nodes
        .values()
        .find(|n| n.host_id != own && n.state.is_moving())
    {
        return Some(format!(
            "{} is {:?}; one node moves ranges at a time: wait for it to finish",
            other.host_id, other.state
        ));
    }
    let own_dc = metadata
        .nodes
        .get(&own)
        .map(|n| n.dc.clone())
        .unwrap_or_default();
    let left_in = |dc: &str| {
        metadata
            .nodes
            .values()
            .filter(|n| n.host_id != own && (dc.is_empty() || n.dc == dc))
            .count() as u32
    };
    let schema = processor.schema();
    for ks in schema.keyspaces.values().filter(|k| !k.is_system) {
        let factors = match replication(&ks.replication) {
            varve_cluster::coordinator::Replication::Simple(rf) => vec![(String::new(), rf)],
            varve_cluster::coordinator::Replication::PerDc(dcs) => dcs,
            varve_cluster::coordinator::Replication::Local => Vec::new(),
        };
        for (dc, rf) in factors {
            if rf == 0 || !(dc.is_empty() || dc == own_dc) {
                continue;
            }
            let left = left_in(&dc);
            let place = if dc.is_empty() {
                "the cluster".to_string()
            } else {
                format!("data centre {dc}")
            };
            if left == 0 {
                return Some(format!(
                    "this is the last node of {place}, where keyspace {} keeps {rf} replicas: \
                     ALTER KEYSPACE {} to replicate elsewhere first",
                    ks.name, ks.name
                ));
            }
            if left < rf && !force {
                return Some(format!(
                    "keyspace {} keeps {rf} replicas in {place}, and only {left} nodes would be \
                     left: add a node or lower its replication first (or decommission --force)",
                    ks.name
                ));
            }
        }
    }
    None
}
