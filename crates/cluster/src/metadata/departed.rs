//! Members of the Raft group whose node left the metadata (a
//! decommission's `Leave`): the leader takes them out of the group, so it
//! stops sending the log to a process that has stopped.
//!
//! A leaving node gives up its vote before it leaves, so what is left of
//! it in the group is a learner; a node replaced while it voted still
//! votes, and the sweep first hands its vote to a member without one. It cannot go from the group before its
//! `Leave` applies everywhere (it waits to apply its own proposal), so
//! the leader sweeps afterwards: every applied metadata is compared with
//! the one before, and a node listed before and not now is departed.
//! Whichever node leads when the sweep runs removes it.

use std::collections::BTreeSet;
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::Mutex;

use super::service::Inner;
use super::state::ClusterMetadata;
use super::MetadataListener;
use crate::net::handshake::HostId;

/// How often the leader looks for departed members.
pub const DEPARTED_SWEEP_INTERVAL: Duration = Duration::from_secs(1);

/// The nodes the metadata listed last, and those it stopped listing.
#[derive(Debug, Default)]
pub(super) struct Departed {
    listed: Mutex<BTreeSet<HostId>>,
    gone: Mutex<BTreeSet<HostId>>,
}

impl Departed {
    /// Notes the nodes `metadata` no longer lists.
    pub fn observe(&self, metadata: &ClusterMetadata) {
        let now: BTreeSet<HostId> = metadata.nodes.keys().copied().collect();
        let mut listed = self.listed.lock();
        let mut gone = self.gone.lock();
        gone.extend(listed.difference(&now).copied());
        gone.retain(|id| !now.contains(id));
        *listed = now;
    }

    fn gone(&self) -> Vec<HostId> {
        self.gone.lock().iter().copied().collect()
    }

    fn forget(&self, id: HostId) {
        self.gone.lock().remove(&id);
    }
}

/// `listener`, after which `departed` observes the metadata.
pub(super) fn observing(
    departed: Arc<Departed>,
    listener: Arc<dyn MetadataListener>,
) -> Arc<dyn MetadataListener> {
    Arc::new(move |metadata: &Arc<ClusterMetadata>| {
        listener.applied(metadata);
        departed.observe(metadata);
    })
}

/// While the service lives: on the leader, removes departed members that
/// no longer vote from the group.
pub(super) async fn sweep(inner: Weak<Inner>, departed: Arc<Departed>) {
    loop {
        let Some(clock) = inner.upgrade().map(|i| i.env.clock.clone()) else {
            return;
        };
        clock.sleep(DEPARTED_SWEEP_INTERVAL).await;
        let Some(inner) = inner.upgrade() else {
            return;
        };
        if !inner.raft.is_leader() {
            continue;
        }
        for id in departed.gone() {
            let voter = inner.raft.voters().iter().any(|(v, _)| *v == id);
            if !inner.raft.has_member(id) {
                departed.forget(id);
            } else if voter {
                // A node removed or replaced while it voted: its vote goes
                // to a listed member that has none (the next sweep takes
                // the learner it becomes out).
                let voters = voters_without(&inner, id);
                if let Err(e) = inner.raft.set_voters(voters).await {
                    tracing::debug!(%id, "metadata log: taking a departed voter's vote: {e:?}");
                }
            } else {
                match inner.raft.remove_learner(id).await {
                    Ok(_) => {
                        tracing::info!(%id, "metadata log: a departed node left the group");
                        departed.forget(id);
                    }
                    Err(e) => tracing::debug!(%id, "metadata log: removing a departed node: {e:?}"),
                }
            }
        }
    }
}

/// The voters without `id`, with a listed non-voting member in its place
/// when there is one.
fn voters_without(inner: &Inner, id: HostId) -> BTreeSet<HostId> {
    let mut voters: BTreeSet<HostId> = inner
        .raft
        .voters()
        .into_iter()
        .map(|(v, _)| v)
        .filter(|v| *v != id)
        .collect();
    let current = inner.applied.current();
    if let Some(next) = current.nodes.values().find(|n| {
        n.state == super::NodeState::Normal
            && !voters.contains(&n.host_id)
            && inner.raft.has_member(n.host_id)
    }) {
        voters.insert(next.host_id);
    }
    voters
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::state::tests::node;

    #[test]
    fn a_node_the_metadata_stops_listing_is_departed() {
        let departed = Departed::default();
        let mut m = ClusterMetadata::default();
        for host in 1..=3 {
            let n = node(host, &[i64::from(host)]);
            m.nodes.insert(n.host_id, n);
        }
        departed.observe(&m);
        assert!(departed.gone().is_empty());
        m.nodes.remove(&HostId([3; 16]));
        departed.observe(&m);
        assert_eq!(departed.gone(), vec![HostId([3; 16])]);
        // Still departed at the next epoch, until forgotten.
        departed.observe(&m);
        assert_eq!(departed.gone(), vec![HostId([3; 16])]);
        departed.forget(HostId([3; 16]));
        assert!(departed.gone().is_empty());
    }
}
