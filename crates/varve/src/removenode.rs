//! `nodetool removenode <host id>`: a dead node's ranges are brought back
//! to their replication factor from the surviving replicas, then the node
//! leaves the metadata (docs/design/topology.md, section 5).
//!
//! Refused for this node itself and for a node that is UP (both go with
//! `decommission`), and while another node moves. In order: the dead
//! node's vote goes to a node without one, its record becomes `Leaving`
//! (the nodes that gain its ranges receive their writes from then on),
//! each gaining node fetches its ranges from a live replica, and `Leave`
//! removes the record. A removal that fails part way leaves the dead node
//! `Leaving`; running it again goes on from there.

use tracing::info;
use varve_cluster::metadata::{ClusterMetadata, MetadataLog, NodeState};
use varve_cluster::net::handshake::HostId;
use varve_cluster::streaming::removenode;

use crate::bootstrap::tables_to_move;
use crate::decommission::Decommission;

/// Removes the node `target` names (its host id, or its address).
pub async fn run(ops: &Decommission, target: &str) -> Result<String, String> {
    let processor = ops.processor.upgrade().ok_or("the node is stopping")?;
    let current = ops.service.current();
    let removed = find(&current, target)?;
    if removed == ops.service.local_host() {
        return Err("this is the node itself: use decommission".into());
    }
    let record = &current.nodes[&removed];
    let host = ops.coordinator.topology();
    let alive = host
        .hosts()
        .iter()
        .find(|h| h.host_id == removed)
        .is_some_and(|h| ops.coordinator.is_up(h));
    if alive {
        return Err(format!(
            "node {removed} is alive: use decommission on it to remove it from the ring"
        ));
    }
    match record.state {
        NodeState::Normal => {
            if let Some(other) = current
                .nodes
                .values()
                .find(|n| n.host_id != removed && n.state.is_moving())
            {
                return Err(format!(
                    "{} is {:?}; one node moves ranges at a time",
                    other.host_id, other.state
                ));
            }
            ops.give_up_vote(removed).await?;
            ops.set_state(removed, NodeState::Leaving).await?;
        }
        NodeState::Leaving => info!("removenode: {removed} is already leaving; restoring again"),
        NodeState::Joining => {
            return Err(format!(
                "{removed} is joining; it cannot be removed before it joins"
            ))
        }
    }
    let puller = ops.puller();
    let epoch = ops.service.current().epoch;
    let report = removenode::restore(
        &ops.coordinator,
        &puller,
        &tables_to_move(&processor),
        removed,
        epoch,
    )
    .await
    .map_err(|e| format!("removenode failed ({removed} stays Leaving; run it again): {e}"))?;
    ops.leave(removed).await?;
    Ok(format!(
        "Removed {removed}: {} ranges of {} tables restored from the surviving replicas\n",
        report.ranges, report.tables
    ))
}

/// The listed node `target` names: a host id, or an address it listens on.
fn find(metadata: &ClusterMetadata, target: &str) -> Result<HostId, String> {
    metadata
        .nodes
        .values()
        .find(|n| {
            n.host_id.to_string() == target.to_ascii_lowercase()
                || n.storage_addr.ip().to_string() == target
        })
        .map(|n| n.host_id)
        .ok_or_else(|| format!("no node {target} in the cluster"))
}
