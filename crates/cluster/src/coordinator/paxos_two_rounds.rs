//! The two-round path of a conditional statement
//! (docs/design/paxos-two-rounds.md). A coordinator that is one of the
//! partition's replicas, where a quorum of the serial level's replicas is
//! two, promises on its own replica (a durable prepare without the
//! network), decides on what that replica holds, and sends the proposal to
//! the other replicas with what the decision was based on. Each accepts
//! only if its own state shows the same; this node's own acceptance is
//! saved only after another replica's, so every stored copy was checked
//! by two replicas. Two acceptances: commit. A condition not met needs one
//! other replica's check and writes nothing. When no replica may hold the
//! proposal, the statement falls back to the round of
//! docs/design/paxos.md section 5; when one may, its outcome is unknown,
//! as for a proposal that round's replicas accepted too few times.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;
use varve_types::consistency::Consistency;
use varve_types::data::Partition;
use varve_types::data_error::{DataError, WriteTimeout, WriteType};

use super::answers::Deadline;
use super::paxos::{
    decide_in_turn, fits, micros, Asked, Batch, Cas, CasPath, DecideFn, PaxosParts,
};
use super::service::{Coordinator, Plan};
use crate::env::BoxFuture;
use crate::net::Verb;
use crate::paxos::checked::{self, CheckAnswer, Checked, Refusal};
use crate::paxos::codec::{Prepare, PrepareResponse};
use crate::paxos::{PrepareAnswer, Proposal};

/// The only quorum the path runs with: a stored copy of a proposal is
/// checked by two replicas, which every quorum of two meets (section 3).
const CHECKED_QUORUM: usize = 2;

/// The indexes of `cas_two_round`'s outcomes.
const APPLIED: usize = 0;
const CHECKED: usize = 1;
const FALLBACK: usize = 2;
const UNKNOWN: usize = 3;

/// What the two-round path did with a batch of statements.
#[allow(clippy::large_enum_variant)] // moved once, straight into the answer
pub(super) enum TwoRoundsTry {
    /// It does not apply (or is off): the full round decides them.
    NotTried,
    /// It decided them.
    Done(Batch),
    /// It fell back: the full round decides them, no proposal of this
    /// path stored anywhere.
    FellBack,
}

/// How the path ended, short of an error.
#[allow(clippy::large_enum_variant)] // moved once, straight into the answer
enum TwoRounds {
    /// Chosen and committed.
    Applied(Batch),
    /// Nothing to write, and another replica confirmed the read.
    Checked(Batch),
    /// No replica holds a proposal of this path: run the full round.
    Fallback,
}

/// Where the path runs: this node's replica and the other UP replicas.
struct Shape {
    plan: Plan,
    local: usize,
    remotes: Vec<usize>,
}

impl Coordinator {
    /// Whether a coordinator that is a replica takes the two-round path
    /// (`paxos_two_round_path`, on unless set to false).
    pub fn set_paxos_two_rounds(&self, on: bool) {
        if let Some(parts) = self.paxos.get() {
            parts.two_rounds.store(on, Ordering::Relaxed);
        }
    }

    /// Decides `decides` in two rounds when the path applies.
    pub(super) async fn two_rounds(
        &self,
        parts: &PaxosParts,
        c: &Cas<'_>,
        decides: &[DecideFn],
    ) -> Result<TwoRoundsTry, DataError> {
        if !parts.two_rounds.load(Ordering::Relaxed) || decides.is_empty() {
            return Ok(TwoRoundsTry::NotTried);
        }
        let Some(shape) = self.two_round_shape(c) else {
            return Ok(TwoRoundsTry::NotTried);
        };
        let outcome = self.two_rounds_on(parts, c, decides, &shape).await;
        let (index, tried) = match outcome {
            Ok(TwoRounds::Applied(batch)) => (APPLIED, TwoRoundsTry::Done(batch)),
            Ok(TwoRounds::Checked(batch)) => (CHECKED, TwoRoundsTry::Done(batch)),
            Ok(TwoRounds::Fallback) => (FALLBACK, TwoRoundsTry::FellBack),
            Err(e) => {
                if matches!(e, DataError::CasWriteUnknown(_)) {
                    self.metrics.cas_two_round[UNKNOWN].inc();
                }
                return Err(e);
            }
        };
        self.metrics.cas_two_round[index].inc();
        Ok(tried)
    }

    /// The replicas when the path applies to `c`: every participant a
    /// natural replica (no pending one raises the quorum), a quorum of
    /// two, this node one of them, another one UP.
    fn two_round_shape(&self, c: &Cas<'_>) -> Option<Shape> {
        let plan = self.write_plan(c.key.token, c.replication);
        // Too few alive: the full round says so (Unavailable).
        self.assure_live(&plan, c.replication, c.serial).ok()?;
        let participants: Vec<usize> = (0..plan.replicas.len())
            .filter(|&i| {
                c.serial != Consistency::LocalSerial || plan.host(i).location.dc == self.local_dc
            })
            .collect();
        let natural = participants.iter().filter(|&&i| i < plan.natural).count();
        if natural != participants.len() || natural / 2 + 1 != CHECKED_QUORUM {
            return None;
        }
        let local = participants.iter().copied().find(|&i| plan.is_local(i))?;
        let remotes: Vec<usize> = participants
            .iter()
            .copied()
            .filter(|&i| i != local && plan.up[i])
            .collect();
        if remotes.is_empty() {
            return None;
        }
        Some(Shape {
            plan,
            local,
            remotes,
        })
    }

    async fn two_rounds_on(
        &self,
        parts: &PaxosParts,
        c: &Cas<'_>,
        decides: &[DecideFn],
        shape: &Shape,
    ) -> Result<TwoRounds, DataError> {
        let ballot = parts.clock.next(self.clock.wall_micros());
        let prepare = Prepare {
            ballot,
            table: c.table,
            key: c.key.clone(),
            now_seconds: c.now_seconds,
            slices: c.slices.to_vec(),
        };
        let phase = self.clock.now();
        let prepared = Arc::clone(&parts.replica).prepare(prepare.clone()).await;
        self.metrics.paxos_phases[0].record(micros(self.clock.now() - phase));
        let (committed, data) = match prepared {
            Ok(PrepareResponse {
                answer:
                    PrepareAnswer::Promise {
                        accepted: None,
                        committed,
                    },
                data,
            }) => (committed, data),
            Ok(PrepareResponse {
                answer: PrepareAnswer::Reject { promised },
                ..
            }) => {
                self.saw_rival(parts, c, &promised);
                return Ok(TwoRounds::Fallback);
            }
            // An unfinished round here, or a local failure: the full round
            // finishes it, or reports it.
            _ => return Ok(TwoRounds::Fallback),
        };
        let based_on = committed.map(|p| p.ballot);
        if let Some(latest) = based_on {
            parts.clock.observe(&latest);
            if latest.micros() >= ballot.micros() {
                return Ok(TwoRounds::Fallback);
            }
        }
        let digest = checked::data_digest(data.as_ref(), c.slices, c.now_seconds);
        let (current, complete) = data.map_or((Partition::default(), true), |p| {
            let (live, _, complete) =
                p.resolve_slices(c.slices, c.reversed, c.now_seconds, c.row_limit);
            (live, complete)
        });
        let (decided, update) = decide_in_turn(c, decides, &current, ballot, based_on);
        let batch = Batch {
            current,
            complete,
            decided,
            contention: 0,
            path: CasPath::TwoRounds,
        };
        let message = Checked {
            read: prepare,
            based_on,
            digest,
            update,
        };
        if message.update.is_none() {
            return Ok(
                match self.checked_elsewhere(parts, c, shape, &message).await {
                    true => TwoRounds::Checked(batch),
                    false => TwoRounds::Fallback,
                },
            );
        }
        if let Some(update) = &message.update {
            fits(parts, c, ballot, update)?;
        }
        let phase = self.clock.now();
        let (accepted, maybe_held) = self.propose_checked(parts, c, shape, &message).await;
        self.metrics.paxos_phases[1].record(micros(self.clock.now() - phase));
        if accepted < CHECKED_QUORUM {
            if !maybe_held {
                return Ok(TwoRounds::Fallback);
            }
            // A replica may hold it, and a later round may finish it.
            self.metrics.cas_unknown_results.inc();
            return Err(DataError::CasWriteUnknown(WriteTimeout {
                consistency: c.serial,
                received: accepted as u32,
                block_for: CHECKED_QUORUM as u32,
                write_type: WriteType::Cas,
            }));
        }
        let proposal = Proposal {
            ballot,
            update: message.update.unwrap_or_default(),
        };
        let phase = self.clock.now();
        let committed = self
            .commit(parts, c, &shape.plan, &proposal, c.commit)
            .await;
        self.metrics.paxos_phases[2].record(micros(self.clock.now() - phase));
        committed?;
        Ok(TwoRounds::Applied(batch))
    }

    /// Sends the checked proposal to the other replicas and saves this
    /// node's own acceptance once one of them accepted. The acceptances
    /// counted (up to the quorum), and whether any replica may hold the
    /// proposal (one accepted, failed or did not answer in time).
    async fn propose_checked(
        &self,
        parts: &PaxosParts,
        c: &Cas<'_>,
        shape: &Shape,
        message: &Checked,
    ) -> (usize, bool) {
        let mut asked = self.ask_checked(shape, message);
        let mut expired = Deadline::after(&self.clock, self.timeouts.write);
        let (mut accepted, mut maybe_held, mut own_asked) = (0, false, false);
        while accepted < CHECKED_QUORUM {
            let answer = tokio::select! {
                biased;
                answer = asked.next() => answer,
                () = expired.passed() => {
                    maybe_held |= !asked.is_empty();
                    break;
                }
            };
            let Some((index, answer)) = answer else { break };
            match answer {
                Ok(Ok(())) => {
                    accepted += 1;
                    maybe_held = true;
                    if !own_asked {
                        // Checked by another replica now: this node's copy
                        // may be stored.
                        own_asked = true;
                        let replica = Arc::clone(&parts.replica);
                        let own = message.clone();
                        asked.push(
                            shape.local,
                            Box::pin(async move {
                                replica
                                    .propose_checked(own)
                                    .await
                                    .map_err(|f| f.to_string())
                            }),
                        );
                    }
                }
                Ok(Err(refusal)) => self.refused(parts, c, message, index != shape.local, refusal),
                Err(_) => maybe_held = true,
            }
        }
        (accepted, maybe_held)
    }

    /// Sends a check (no update) to the other replicas: whether one passed
    /// it.
    async fn checked_elsewhere(
        &self,
        parts: &PaxosParts,
        c: &Cas<'_>,
        shape: &Shape,
        message: &Checked,
    ) -> bool {
        let mut asked = self.ask_checked(shape, message);
        let mut expired = Deadline::after(&self.clock, self.timeouts.write);
        loop {
            let answer = tokio::select! {
                biased;
                answer = asked.next() => answer,
                () = expired.passed() => return false,
            };
            match answer {
                None => return false,
                Some((_, Ok(Ok(())))) => return true,
                Some((_, Ok(Err(refusal)))) => self.refused(parts, c, message, true, refusal),
                Some((_, Err(_))) => {}
            }
        }
    }

    fn ask_checked(&self, shape: &Shape, message: &Checked) -> Asked<CheckAnswer> {
        let payload: Bytes = checked::encode_checked(message);
        // The remotes only: this node's replica is asked apart.
        let local = || -> BoxFuture<'static, Result<CheckAnswer, String>> {
            Box::pin(async { Err("this node is asked apart".to_string()) })
        };
        let decode = |b: Bytes| checked::decode_check_answer(&b).map_err(|e| e.to_string());
        let (asked, _not_sent) = self.ask_each(
            &shape.plan,
            &shape.remotes,
            Verb::PAXOS_PROPOSE_CHECKED,
            &payload,
            local,
            decode,
        );
        asked
    }

    fn refused(
        &self,
        parts: &PaxosParts,
        c: &Cas<'_>,
        message: &Checked,
        remote: bool,
        refusal: Refusal,
    ) {
        if remote {
            self.metrics.cas_check_refusals[refusal.index()].inc();
        }
        // A newer promise, or a newer commit, of another coordinator's: the
        // partition is contended, and its statements go to its home for a
        // while. (An older commit is a lagging replica, not a rival.)
        match refusal {
            Refusal::Promise(ballot) => self.saw_rival(parts, c, &ballot),
            Refusal::Commit(Some(ballot)) if message.based_on.is_none_or(|b| ballot > b) => {
                self.saw_rival(parts, c, &ballot)
            }
            Refusal::Commit(_) | Refusal::Unfinished | Refusal::Data => {}
        }
    }
}
