//! Hints for a Paxos commit (docs/design/paxos.md, section 5): a replica
//! that is DOWN when a round commits, or whose commit fails or times out,
//! is kept the committed update as an ordinary hint, as Cassandra hints a
//! commit it could not deliver. The hint carries the update at the
//! ballot's timestamps, so replaying it writes exactly what the commit
//! would have; the replica's Paxos state learns of the commit at the next
//! round's repair of lagging commits, which does not depend on the hint.

use std::sync::Arc;

use bytes::Bytes;
use varve_types::data::PartitionKey;

use super::paxos::Asked;
use super::service::{Coordinator, Plan};
use crate::env::Clock;
use crate::hints::HintStore;
use crate::net::HostId;
use crate::paxos::Proposal;
use crate::verbs::mutation::{self, TableUpdate};

/// What a coordinator needs to hint one commit to the replicas of a plan.
pub(super) struct CommitHints {
    store: Arc<HintStore>,
    clock: Arc<dyn Clock>,
    /// The committed update as a MUTATION payload.
    mutation: Bytes,
    /// Each replica of the plan, by its index there (`None`: this node,
    /// which is never hinted).
    hosts: Vec<Option<HostId>>,
}

impl CommitHints {
    /// `None` when hints are off.
    pub(super) fn new(
        coordinator: &Coordinator,
        plan: &Plan,
        table: u128,
        key: &PartitionKey,
        proposal: &Proposal,
    ) -> Option<CommitHints> {
        let store = coordinator.hints.get()?;
        if !store.config().enabled {
            return None;
        }
        let mutation = mutation::encode(&[TableUpdate {
            table,
            key: key.clone(),
            update: proposal.update.clone(),
        }]);
        Some(CommitHints {
            store: Arc::clone(store),
            clock: Arc::clone(&coordinator.clock),
            mutation,
            hosts: (0..plan.replicas.len())
                .map(|i| (!plan.is_local(i)).then(|| plan.host(i).host_id))
                .collect(),
        })
    }

    /// Keeps the commit for replica `i` if it is another node and its hint
    /// window allows; whether it was stored.
    pub(super) fn hint(&self, i: usize) -> bool {
        let Some(target) = self.hosts[i] else {
            return false;
        };
        self.store.should_hint(target, self.clock.now())
            && self
                .store
                .store(target, self.clock.wall_micros(), &self.mutation)
    }
}

/// Lets the commits still in flight finish after the answer, hinting each
/// replica whose commit fails or times out.
pub(super) fn finish_in_background(mut asked: Asked<()>, hints: Option<Arc<CommitHints>>) {
    tokio::spawn(async move {
        while let Some((i, answer)) = asked.next().await {
            if let (Err(_), Some(hints)) = (answer, &hints) {
                hints.hint(i);
            }
        }
    });
}
