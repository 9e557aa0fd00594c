//! A coordinated write (docs/design/cluster.md, section 8.2): the
//! partition's replicas from the ring, Unavailable before anything is sent
//! when too few are UP, the local replica applied first, one MUTATION
//! (encoded once) to every other UP replica, and the answer once the level
//! is met, or WriteTimeout / WriteFailure.
//!
//! The local replica goes first so that a write that would wait on memory
//! in a non-blocking scope gives up (WouldBlock, to run again where it may
//! wait) before any other replica got it. Replicas that are DOWN, that
//! could not be sent the write, or that did not answer in time (or failed
//! it) get a hint ([`crate::hints`]) while hints are on and their
//! `max_hint_window` allows; at ANY a stored hint is an acknowledgement.

use std::sync::Arc;

use bytes::Bytes;
use varve_types::consistency::Consistency;
use varve_types::data::{Partition, PartitionKey};
use varve_types::data_error::{DataError, WriteTimeout, WriteType};

use super::answers::{Deadline, Pending};
use super::replication::Replication;
use super::service::{Coordinator, Plan};
use super::write_acks::{Progress, WriteAcks};
use crate::net::{RequestError, Verb};
use crate::verbs::mutation::{self, TableUpdate};

/// One partition update of one table at a level.
#[derive(Debug)]
pub struct Write<'a> {
    pub table: u128,
    pub key: PartitionKey,
    pub update: Partition,
    pub replication: &'a Replication,
    pub consistency: Consistency,
    pub write_type: WriteType,
}

impl Coordinator {
    /// Whether this node is the only replica of `token` (a node alone, or
    /// RF 1 on a key it owns): [`Coordinator::write_here`] then does all.
    pub fn is_only_here(&self, token: i64, replication: &Replication) -> bool {
        let topology = self.topology();
        matches!(topology.replicas(token, replication)[..], [only] if topology.host(only).is_local)
            && !topology.is_moving()
    }

    /// Stores `w` at once on this node, its only replica
    /// ([`Coordinator::is_only_here`]): no future, no answer counting.
    pub fn write_here(&self, w: Write<'_>) -> Result<(), DataError> {
        self.metrics.replica_requests.inc();
        let factors = w.replication.factors();
        let one = [(self.local_dc.as_str(), 1)];
        w.consistency
            .assure_live(
                &factors,
                &self.local_dc,
                &varve_types::consistency::LiveReplicas { per_dc: &one },
            )
            .map_err(DataError::Unavailable)?;
        self.engine
            .apply(w.table, &w.key, w.update)
            .map_err(varve_storage::Error::on_write)
    }

    /// Stores `w` on its replicas; `Ok` once the level is met.
    pub async fn write(&self, w: Write<'_>) -> Result<(), DataError> {
        let mut expired = Deadline::after(&self.clock, self.timeouts.write);
        let plan = self.write_plan(w.key.token, w.replication);
        self.count_placement(&plan);
        self.assure_live(&plan, w.replication, w.consistency)
            .map_err(DataError::Unavailable)?;
        let factors = w.replication.factors();
        let mut acks = WriteAcks::new(w.consistency, &factors, &self.local_dc, &plan.dcs())
            .with_pending(plan.natural);
        let mut last_failure = None;
        let remote = (0..plan.replicas.len()).any(|i| !plan.is_local(i));
        let payload = remote.then(|| {
            mutation::encode(&[TableUpdate {
                table: w.table,
                key: w.key.clone(),
                update: w.update.clone(),
            }])
        });
        if let Some(i) = plan.local() {
            match self.engine.apply(w.table, &w.key, w.update) {
                Ok(()) => {
                    acks.ack(i);
                }
                Err(e @ varve_storage::Error::WouldBlock { .. }) => {
                    return Err(DataError::WouldBlock(e.to_string()));
                }
                Err(e) => {
                    acks.fail(i);
                    last_failure = Some(e.to_string());
                }
            }
        }
        let mut pending = Pending::default();
        if let Some(payload) = &payload {
            let missed = self.send_mutations(&plan, payload, &mut pending);
            for i in missed {
                if self.hint(&plan, i, payload) {
                    acks.hint_stored();
                }
            }
        }
        let outcome = loop {
            match acks.progress() {
                Progress::Succeeded => break Ok(()),
                Progress::Failed => break Err(failed(&acks, last_failure)),
                Progress::Waiting => {}
            }
            let answer = tokio::select! {
                biased;
                answer = pending.next_answer() => answer,
                () = expired.passed() => None,
            };
            match answer {
                Some((i, Ok(_))) => {
                    acks.ack(i);
                }
                Some((i, Err(RequestError::Failure(f)))) => {
                    acks.fail(i);
                    last_failure = Some(format!("{}: {f}", plan.address(i)));
                }
                // A timeout or a shut-down messaging: no answer from it.
                Some((i, Err(_))) => {
                    if let Some(p) = &payload {
                        self.hint(&plan, i, p);
                    }
                }
                None => break Err(timed_out(&acks, w.consistency, w.write_type)),
            }
        };
        if let (false, Some(p)) = (pending.is_empty(), payload) {
            self.hint_the_silent(plan, pending, p);
        }
        outcome
    }

    /// Sends the MUTATION to every UP replica but this node; returns the
    /// replicas that will not get it now (DOWN, or their queue is full).
    fn send_mutations(&self, plan: &Plan, payload: &Bytes, pending: &mut Pending) -> Vec<usize> {
        let mut missed = Vec::new();
        for i in 0..plan.replicas.len() {
            if plan.is_local(i) {
                continue;
            }
            if !plan.up[i] {
                missed.push(i);
                continue;
            }
            let to = plan.address(i);
            match self
                .messaging
                .request(to, Verb::MUTATION, payload.clone(), self.timeouts.write)
            {
                Ok(answer) => pending.push(i, answer),
                Err(e) => {
                    tracing::debug!("mutation to {to} not sent: {e}");
                    missed.push(i);
                }
            }
        }
        missed
    }

    /// Keeps the mutation for replica `i` when hints are on and its window
    /// allows; whether it was stored.
    fn hint(&self, plan: &Plan, i: usize, payload: &Bytes) -> bool {
        let Some(hints) = self.hints.get() else {
            return false;
        };
        let target = plan.host(i).host_id;
        hints.should_hint(target, self.clock.now())
            && hints.store(target, self.clock.wall_micros(), payload)
    }

    /// After the answer: the replicas still silent get a hint when their
    /// request fails or times out.
    fn hint_the_silent(&self, plan: Plan, mut pending: Pending, payload: Bytes) {
        let Some(hints) = self.hints.get().cloned() else {
            return;
        };
        let clock = Arc::clone(&self.clock);
        tokio::spawn(async move {
            while let Some((i, answer)) = pending.next_answer().await {
                if answer.is_ok() {
                    continue;
                }
                let target = plan.host(i).host_id;
                if hints.should_hint(target, clock.now()) {
                    hints.store(target, clock.wall_micros(), &payload);
                }
            }
        });
    }
}

fn timed_out(acks: &WriteAcks, consistency: Consistency, write_type: WriteType) -> DataError {
    DataError::WriteTimeout(WriteTimeout {
        consistency,
        received: acks.received(),
        block_for: acks.block_for(),
        write_type,
    })
}

fn failed(acks: &WriteAcks, last: Option<String>) -> DataError {
    DataError::WriteFailure(format!(
        "write failed on {} replica(s) ({} of {} acknowledged): {}",
        acks.failures(),
        acks.received(),
        acks.block_for(),
        last.unwrap_or_default()
    ))
}
