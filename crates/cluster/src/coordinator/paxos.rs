//! A coordinator's Paxos rounds (docs/design/paxos.md, section 5): a
//! prepare that reads, the unfinished round of another coordinator
//! finished first, lagging commits sent to the replicas that miss them,
//! the decision on the merged state, a proposal, and the commit at the
//! statement's level. A round that loses to a newer ballot backs off for a
//! random time that grows with each loss and with the measured round
//! latency, and gives up after [`CAS_CONTENTION_TIMEOUT`].

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use varve_types::consistency::{Consistency, Factors};
use varve_types::data::{ClusteringComparator, Partition, PartitionKey, Slice};
use varve_types::data_error::{DataError, ReadTimeout, WriteTimeout, WriteType};

use super::answers::Deadline;
use super::paxos_forward::Forwarded;
use super::paxos_hints::{finish_in_background, CommitHints};
use super::paxos_two_rounds::TwoRoundsTry;
use super::read::on_local_error;
use super::replication::Replication;
use super::service::{Coordinator, Plan};
use super::write_acks::{Progress, WriteAcks};
use crate::env::BoxFuture;
use crate::net::Verb;
use crate::paxos::codec::{self, Carry, Prepare, PrepareResponse};
use crate::paxos::{Ballot, BallotClock, PaxosReplica, PrepareAnswer, Proposal};

/// `cas_contention_timeout`: how long a statement goes on trying after its
/// rounds lose to other coordinators' (Cassandra's default, 1 s).
pub const CAS_CONTENTION_TIMEOUT: Duration = Duration::from_secs(1);
/// The longest single backoff.
pub const MAX_BACKOFF: Duration = Duration::from_millis(100);
/// The backoff bound before any round was measured.
const FIRST_BACKOFF: Duration = Duration::from_millis(2);

/// This node's acceptor and the ballots its coordinator makes.
pub struct PaxosParts {
    pub replica: Arc<PaxosReplica>,
    pub clock: BallotClock,
    /// A moving average of successful rounds' durations, in micros.
    round_micros: AtomicU64,
    /// Conditional statements waiting for their partition's next round.
    pub(super) queues: super::paxos_queue::CasQueues,
    /// Partitions whose rounds lately lost to other coordinators'.
    pub(super) contended: super::paxos_forward::Contended,
    /// Whether this node, when a replica, takes the two-round path
    /// (docs/design/paxos-two-rounds.md).
    pub(super) two_rounds: AtomicBool,
}

/// Decides a conditional statement on the state a round found, given the
/// timestamp its cells must carry: whether it applies, and its update.
pub type DecideFn =
    Arc<dyn Fn(&Partition, i64) -> Result<(bool, Option<Partition>), DataError> + Send + Sync>;

/// A conditional statement on one partition, or a serial read (no
/// decision).
pub struct Cas<'a> {
    pub table: u128,
    pub key: &'a PartitionKey,
    pub slices: &'a [Slice],
    pub replication: &'a Replication,
    /// SERIAL or LOCAL_SERIAL.
    pub serial: Consistency,
    /// Where the commit must be before the answer.
    pub commit: Consistency,
    pub now_seconds: i32,
    /// A serial read's order and row limit (a conditional statement reads
    /// every row of its slices in order).
    pub reversed: bool,
    pub row_limit: usize,
    /// `None`: a SERIAL read.
    pub decide: Option<DecideFn>,
    /// The decision in a form the partition's home replica rebuilds
    /// (query's bytes): a statement with one may be forwarded there when
    /// the partition is contended (docs/design/paxos.md, section 7.1).
    pub portable: Option<Bytes>,
}

/// What the transaction found and whether it applied.
#[derive(Debug, Clone)]
pub struct CasResult {
    /// The live rows under the slices, as of the latest commit.
    pub current: Partition,
    pub applied: bool,
    /// Whether every row of the slices was visited (a serial read's row
    /// limit may stop it).
    pub complete: bool,
    /// Rounds lost to other coordinators.
    pub contention: u64,
    /// Whether the partition's home replica ran it (section 7.1).
    pub forwarded: bool,
    /// Whether it was handed to the partition's home, which refused it
    /// before running it, so that this node ran it.
    pub home_refused: bool,
    /// Which rounds decided it.
    pub path: CasPath,
}

/// Which rounds decided a statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CasPath {
    /// The round of docs/design/paxos.md section 5 (or, forwarded, the
    /// home's, whichever it took).
    #[default]
    Full,
    /// The two-round path (docs/design/paxos-two-rounds.md).
    TwoRounds,
    /// The two-round path, which fell back to the full round.
    FellBack,
}

/// How a round ended.
enum RoundEnd {
    Done {
        current: Partition,
        complete: bool,
        decided: Vec<Decided>,
    },
    /// Progress was made for others (an unfinished round finished, a
    /// lagging commit sent): prepare again at once.
    Again,
    /// Lost to a newer ballot: back off, then prepare again.
    Contended,
}

/// One statement of a round, decided: the state it saw (the round's, with
/// the updates of the statements before it in the same round), and whether
/// it applied.
#[derive(Debug, Clone)]
pub(super) struct Decided {
    pub seen: Partition,
    pub applied: Result<bool, DataError>,
}

/// What the rounds of a batch of statements ended with.
pub(super) struct Batch {
    pub current: Partition,
    pub complete: bool,
    /// The first statements of the batch, in order (the others had no
    /// room in the round's timestamps: they wait for the next one).
    pub decided: Vec<Decided>,
    pub contention: u64,
    pub path: CasPath,
}

/// One promise of a prepare.
struct Promise {
    index: usize,
    accepted: Option<Proposal>,
    committed: Option<Proposal>,
    data: Option<Partition>,
}

/// How a proposal ended.
enum ProposeEnd {
    Accepted,
    /// Refused by enough replicas that no quorum can accept, or out of
    /// time; `maybe_accepted` counts the replicas that got the proposal
    /// and did not refuse it (a replica that failed or did not answer may
    /// have saved it). Only with none is the proposal surely nowhere.
    Refused {
        maybe_accepted: u32,
    },
    TimedOut {
        maybe_accepted: u32,
    },
}

/// Requests in flight, each with its replica's index.
pub(super) struct Asked<T> {
    waiting: Vec<(usize, BoxFuture<'static, Result<T, String>>)>,
}

impl<T> Asked<T> {
    fn new() -> Self {
        Asked {
            waiting: Vec::new(),
        }
    }

    pub(super) fn push(&mut self, index: usize, f: BoxFuture<'static, Result<T, String>>) {
        self.waiting.push((index, f));
    }

    /// Whether every request was answered.
    pub(super) fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }

    pub(super) async fn next(&mut self) -> Option<(usize, Result<T, String>)> {
        std::future::poll_fn(|cx| {
            if self.waiting.is_empty() {
                return std::task::Poll::Ready(None);
            }
            for k in 0..self.waiting.len() {
                if let std::task::Poll::Ready(answer) = self.waiting[k].1.as_mut().poll(cx) {
                    let (index, _) = self.waiting.swap_remove(k);
                    return std::task::Poll::Ready(Some((index, answer)));
                }
            }
            std::task::Poll::Pending
        })
        .await
    }
}

impl Coordinator {
    /// This node coordinates conditional statements with `replica` as its
    /// own acceptor.
    pub fn set_paxos(&self, replica: Arc<PaxosReplica>) {
        let _ = self.paxos.set(PaxosParts {
            replica,
            clock: BallotClock::new(self.local_host),
            round_micros: AtomicU64::new(0),
            queues: super::paxos_queue::CasQueues::default(),
            contended: super::paxos_forward::Contended::default(),
            two_rounds: AtomicBool::new(true),
        });
    }

    /// Runs a conditional statement (or a serial read) as one linearizable
    /// step on its partition. Conditional statements of one partition that
    /// reach this coordinator while a round of it runs wait, and the next
    /// round decides them all (docs/design/paxos.md, section 7); those of
    /// a partition contended here go to its home replica (section 7.1).
    pub async fn cas(&self, c: Cas<'_>) -> Result<CasResult, DataError> {
        let parts = self
            .paxos
            .get()
            .ok_or_else(|| DataError::Server("Paxos is not set up on this node".into()))?;
        match c.decide.clone() {
            Some(own) => {
                let home_refused = match self.forwarded(parts, &c).await {
                    Forwarded::Answer(answer) => return answer,
                    Forwarded::Refused => {
                        self.metrics.cas_forwards_refused.inc();
                        true
                    }
                    Forwarded::NotSent => false,
                };
                let mut result = self.cas_in_queue(parts, &c, own).await;
                if let Ok(r) = &mut result {
                    r.home_refused = home_refused;
                }
                result
            }
            None => {
                let batch = self.rounds(parts, &c, &[]).await?;
                Ok(CasResult {
                    current: batch.current,
                    applied: false,
                    complete: batch.complete,
                    contention: batch.contention,
                    forwarded: false,
                    home_refused: false,
                    path: batch.path,
                })
            }
        }
    }

    /// Rounds until one decides `decides` (or as many of them as fit), with
    /// backoff while they lose to other coordinators; first the two-round
    /// path where it applies (docs/design/paxos-two-rounds.md).
    pub(super) async fn rounds(
        &self,
        parts: &PaxosParts,
        c: &Cas<'_>,
        decides: &[DecideFn],
    ) -> Result<Batch, DataError> {
        let started = self.clock.now();
        let path = match self.two_rounds(parts, c, decides).await? {
            TwoRoundsTry::Done(batch) => {
                record(&parts.round_micros, self.clock.now() - started);
                self.metrics
                    .paxos_round_statements
                    .record(batch.decided.len() as u64);
                return Ok(batch);
            }
            TwoRoundsTry::FellBack => CasPath::FellBack,
            TwoRoundsTry::NotTried => CasPath::Full,
        };
        let mut contention = 0u64;
        loop {
            let round_started = self.clock.now();
            match self.round(parts, c, decides).await? {
                RoundEnd::Done {
                    current,
                    complete,
                    decided,
                } => {
                    record(&parts.round_micros, self.clock.now() - round_started);
                    if !decided.is_empty() {
                        self.metrics
                            .paxos_round_statements
                            .record(decided.len() as u64);
                    }
                    return Ok(Batch {
                        current,
                        complete,
                        decided,
                        contention,
                        path,
                    });
                }
                RoundEnd::Again if self.clock.now() - started < CAS_CONTENTION_TIMEOUT => {}
                RoundEnd::Again | RoundEnd::Contended => {
                    contention += 1;
                    if self.clock.now() - started >= CAS_CONTENTION_TIMEOUT {
                        return Err(contention_timeout(c));
                    }
                    let wait = backoff(parts, contention);
                    self.metrics.cas_backoff[op_index(c)].record(micros(wait));
                    self.clock.sleep(wait).await;
                }
            }
        }
    }

    async fn round(
        &self,
        parts: &PaxosParts,
        c: &Cas<'_>,
        decides: &[DecideFn],
    ) -> Result<RoundEnd, DataError> {
        // Pending replicas take part, and each raises the quorum by one
        // (docs/design/topology.md, section 2).
        let plan = self.write_plan(c.key.token, c.replication);
        self.assure_live(&plan, c.replication, c.serial)
            .map_err(DataError::Unavailable)?;
        let participants: Vec<usize> = (0..plan.replicas.len())
            .filter(|&i| {
                c.serial != Consistency::LocalSerial || plan.host(i).location.dc == self.local_dc
            })
            .collect();
        let natural = participants.iter().filter(|&&i| i < plan.natural).count();
        let required = natural / 2 + 1 + (participants.len() - natural);
        let ballot = parts.clock.next(self.clock.wall_micros());
        let cmp = self.engine.comparator(c.table).map_err(on_local_error)?;
        let phase = self.clock.now();
        let prepared = self
            .prepare(parts, c, &plan, &participants, required, ballot, &cmp)
            .await;
        self.metrics.paxos_phases[0].record(micros(self.clock.now() - phase));
        let promises = match prepared? {
            Some(promises) => promises,
            None => return Ok(RoundEnd::Contended),
        };
        let latest = promises
            .iter()
            .filter_map(|p| p.committed.as_ref())
            .max_by_key(|p| p.ballot)
            .cloned();
        let latest_ballot = latest.as_ref().map(|p| p.ballot);
        if let Some(latest) = &latest {
            parts.clock.observe(&latest.ballot);
            if latest.ballot.micros() >= ballot.micros() {
                self.saw_rival(parts, c, &latest.ballot);
                // Our cells would not be newer than the latest commit's:
                // again, with a ballot past it.
                return Ok(RoundEnd::Again);
            }
        }
        let unfinished = promises
            .iter()
            .filter_map(|p| p.accepted.as_ref())
            .filter(|a| latest_ballot.is_none_or(|l| a.ballot > l))
            .max_by_key(|a| a.ballot)
            .cloned();
        if let Some(unfinished) = unfinished {
            // Another coordinator's round stopped half-way: finish it under
            // this ballot, then start again.
            self.saw_rival(parts, c, &unfinished.ballot);
            let proposal = Proposal {
                ballot,
                update: unfinished.update,
            };
            return match self
                .propose(parts, c, &plan, &participants, required, &proposal)
                .await
            {
                ProposeEnd::Accepted => {
                    let quorum = serial_quorum(c.serial);
                    self.commit(parts, c, &plan, &proposal, quorum).await?;
                    self.metrics.cas_unfinished_commits[op_index(c)].inc();
                    Ok(RoundEnd::Again)
                }
                _ => Ok(RoundEnd::Contended),
            };
        }
        if let Some(latest) = latest {
            let lagging: Vec<usize> = promises
                .iter()
                .filter(|p| p.committed.as_ref().map(|x| x.ballot) != Some(latest.ballot))
                .map(|p| p.index)
                .collect();
            if !lagging.is_empty() {
                // Their data predates the latest commit: bring it to them,
                // then read again.
                self.commit_to(parts, c, &plan, &lagging, &latest).await?;
                return Ok(RoundEnd::Again);
            }
        }
        let mut merged: Option<Partition> = None;
        for p in promises {
            if let Some(data) = p.data {
                match &mut merged {
                    Some(m) => m.merge(data),
                    None => merged = Some(data),
                }
            }
        }
        let (current, complete) = merged.map_or((Partition::default(), true), |p| {
            let (live, _, complete) =
                p.resolve_slices(c.slices, c.reversed, c.now_seconds, c.row_limit);
            (live, complete)
        });
        let (decided, update) = decide_in_turn(c, decides, &current, ballot, latest_ballot);
        let Some(update) = update else {
            return Ok(RoundEnd::Done {
                current,
                complete,
                decided,
            });
        };
        fits(parts, c, ballot, &update)?;
        let proposal = Proposal { ballot, update };
        let phase = self.clock.now();
        let proposed = self
            .propose(parts, c, &plan, &participants, required, &proposal)
            .await;
        self.metrics.paxos_phases[1].record(micros(self.clock.now() - phase));
        match proposed {
            ProposeEnd::Accepted => {}
            ProposeEnd::Refused { maybe_accepted: 0 } => return Ok(RoundEnd::Contended),
            ProposeEnd::Refused { maybe_accepted } | ProposeEnd::TimedOut { maybe_accepted } => {
                // Some replica may hold our proposal: a later round may
                // still finish it, so the outcome is unknown.
                self.metrics.cas_unknown_results.inc();
                return Err(DataError::CasWriteUnknown(WriteTimeout {
                    consistency: c.serial,
                    received: maybe_accepted,
                    block_for: required as u32,
                    write_type: WriteType::Cas,
                }));
            }
        }
        let phase = self.clock.now();
        let committed = self.commit(parts, c, &plan, &proposal, c.commit).await;
        self.metrics.paxos_phases[2].record(micros(self.clock.now() - phase));
        committed?;
        Ok(RoundEnd::Done {
            current,
            complete,
            decided,
        })
    }

    /// A statement whose outcome this coordinator cannot know (it ran
    /// elsewhere, or in a round that vanished), none of its answers seen:
    /// CAS_WRITE_UNKNOWN with the serial level's quorum (the local data
    /// centre's for LOCAL_SERIAL).
    pub(super) fn unknown_outcome(&self, c: &Cas<'_>) -> DataError {
        unknown_outcome(c.serial, &c.replication.factors(), &self.local_dc)
    }

    /// A ballot of another round on `c`'s partition got in this one's way:
    /// the next ballot is newer than it, and if another coordinator made
    /// it, the partition is contended (its statements go to its home for a
    /// while, docs/design/paxos.md section 7.1). A serial read of this
    /// coordinator's own does not count: forwarding would not help it.
    pub(super) fn saw_rival(&self, parts: &PaxosParts, c: &Cas<'_>, ballot: &Ballot) {
        parts.clock.observe(ballot);
        if !parts.clock.made(ballot) {
            let key = (c.table, c.key.key.clone());
            parts.contended.mark(&key, self.clock.now());
        }
    }

    /// Sends the prepare to every UP participant and waits for a quorum of
    /// promises. `None` when a newer ballot was promised (contention).
    #[allow(clippy::too_many_arguments)]
    async fn prepare(
        &self,
        parts: &PaxosParts,
        c: &Cas<'_>,
        plan: &Plan,
        participants: &[usize],
        required: usize,
        ballot: Ballot,
        cmp: &Arc<ClusteringComparator>,
    ) -> Result<Option<Vec<Promise>>, DataError> {
        let prepare = Prepare {
            ballot,
            table: c.table,
            key: c.key.clone(),
            now_seconds: c.now_seconds,
            slices: c.slices.to_vec(),
        };
        let payload = codec::encode_prepare(&prepare);
        let up: Vec<usize> = participants
            .iter()
            .copied()
            .filter(|&i| plan.up[i])
            .collect();
        let local = {
            let replica = Arc::clone(&parts.replica);
            move || -> BoxFuture<'static, Result<PrepareResponse, String>> {
                let (replica, p) = (Arc::clone(&replica), prepare.clone());
                Box::pin(async move { replica.prepare(p).await.map_err(|f| f.to_string()) })
            }
        };
        let cmp = Arc::clone(cmp);
        let decode =
            move |b: Bytes| codec::decode_prepare_response(&b, &cmp).map_err(|e| e.to_string());
        let (mut asked, not_sent) =
            self.ask_each(plan, &up, Verb::PAXOS_PREPARE, &payload, local, decode);
        // DOWN participants, and those messaging refused, cannot promise.
        let mut failed = participants.len() - up.len() + not_sent.len();
        let mut last_failure = String::new();
        let mut expired = Deadline::after(&self.clock, self.timeouts.write);
        let mut promises = Vec::new();
        let mut rejected = 0usize;
        let mut timed_out = false;
        while promises.len() < required && participants.len() - failed - rejected >= required {
            let answer = tokio::select! {
                biased;
                answer = asked.next() => answer,
                () = expired.passed() => {
                    timed_out = true;
                    None
                }
            };
            let Some((index, answer)) = answer else { break };
            match answer {
                Ok(PrepareResponse {
                    answer:
                        PrepareAnswer::Promise {
                            accepted,
                            committed,
                        },
                    data,
                }) => promises.push(Promise {
                    index,
                    accepted,
                    committed,
                    data,
                }),
                Ok(PrepareResponse {
                    answer: PrepareAnswer::Reject { promised },
                    ..
                }) => {
                    self.saw_rival(parts, c, &promised);
                    rejected += 1;
                }
                Err(e) => {
                    failed += 1;
                    last_failure = e;
                }
            }
        }
        if promises.len() >= required {
            return Ok(Some(promises));
        }
        if rejected > 0 {
            return Ok(None);
        }
        if timed_out || asked.waiting.is_empty() && failed == 0 {
            return Err(phase_timeout(c, promises.len(), required));
        }
        Err(DataError::WriteFailure(format!(
            "Paxos prepare failed on {failed} replica(s): {last_failure}"
        )))
    }

    /// Sends `proposal` to every UP participant and waits for a quorum of
    /// acceptances.
    async fn propose(
        &self,
        parts: &PaxosParts,
        c: &Cas<'_>,
        plan: &Plan,
        participants: &[usize],
        required: usize,
        proposal: &Proposal,
    ) -> ProposeEnd {
        let carry = Carry {
            table: c.table,
            key: c.key.clone(),
            proposal: proposal.clone(),
        };
        let payload = codec::encode_carry(&carry);
        let up: Vec<usize> = participants
            .iter()
            .copied()
            .filter(|&i| plan.up[i])
            .collect();
        let local = {
            let replica = Arc::clone(&parts.replica);
            move || -> BoxFuture<'static, Result<Result<(), Ballot>, String>> {
                let (replica, carry) = (Arc::clone(&replica), carry.clone());
                Box::pin(async move { replica.propose(carry).await.map_err(|f| f.to_string()) })
            }
        };
        let decode = |b: Bytes| codec::decode_propose_response(&b).map_err(|e| e.to_string());
        let (mut asked, refused_by_messaging) =
            self.ask_each(plan, &up, Verb::PAXOS_PROPOSE, &payload, local, decode);
        // DOWN, or refused by messaging: surely without the proposal.
        let not_sent = participants.len() - up.len() + refused_by_messaging.len();
        let sent = participants.len() - not_sent;
        let mut expired = Deadline::after(&self.clock, self.timeouts.write);
        let (mut accepted, mut refused, mut failed) = (0usize, 0usize, 0usize);
        loop {
            let maybe_accepted = (sent - refused) as u32;
            if accepted >= required {
                return ProposeEnd::Accepted;
            }
            if participants.len() - not_sent - refused - failed < required {
                return ProposeEnd::Refused { maybe_accepted };
            }
            let answer = tokio::select! {
                biased;
                answer = asked.next() => answer,
                () = expired.passed() => return ProposeEnd::TimedOut { maybe_accepted },
            };
            match answer {
                None => return ProposeEnd::TimedOut { maybe_accepted },
                Some((_, Ok(Ok(())))) => accepted += 1,
                Some((_, Ok(Err(promised)))) => {
                    self.saw_rival(parts, c, &promised);
                    refused += 1;
                }
                Some((_, Err(_))) => failed += 1,
            }
        }
    }

    /// Sends the commit to every UP replica and waits for `level`.
    pub(super) async fn commit(
        &self,
        parts: &PaxosParts,
        c: &Cas<'_>,
        plan: &Plan,
        proposal: &Proposal,
        level: Consistency,
    ) -> Result<(), DataError> {
        let hints = CommitHints::new(self, plan, c.table, c.key, proposal).map(Arc::new);
        let (all, down): (Vec<usize>, Vec<usize>) =
            (0..plan.replicas.len()).partition(|&i| plan.up[i]);
        if let Some(hints) = &hints {
            for i in down {
                hints.hint(i);
            }
        }
        let mut asked = self.send_commits(parts, c, plan, &all, proposal);
        if level == Consistency::Any {
            // Accepted by a quorum already: the commit goes on by itself.
            finish_in_background(asked, hints);
            return Ok(());
        }
        let factors = c.replication.factors();
        let mut acks =
            WriteAcks::new(level, &factors, &self.local_dc, &plan.dcs()).with_pending(plan.natural);
        let mut expired = Deadline::after(&self.clock, self.timeouts.write);
        loop {
            match acks.progress() {
                Progress::Succeeded => {
                    // The other replicas' commits finish in the background.
                    finish_in_background(asked, hints);
                    return Ok(());
                }
                Progress::Failed => {
                    return Err(DataError::WriteFailure(format!(
                        "the Paxos commit failed on {} replica(s)",
                        acks.failures()
                    )))
                }
                Progress::Waiting => {}
            }
            let answer = tokio::select! {
                biased;
                answer = asked.next() => answer,
                () = expired.passed() => None,
            };
            match answer {
                Some((i, Ok(()))) => {
                    acks.ack(i);
                }
                Some((i, Err(_))) => {
                    acks.fail(i);
                    if let Some(hints) = &hints {
                        hints.hint(i);
                    }
                }
                None => {
                    finish_in_background(asked, hints);
                    return Err(DataError::WriteTimeout(WriteTimeout {
                        consistency: level,
                        received: acks.received(),
                        block_for: acks.block_for(),
                        write_type: WriteType::Cas,
                    }));
                }
            }
        }
    }

    /// Sends the latest commit to the replicas in `targets` that missed it
    /// and waits for all of them.
    async fn commit_to(
        &self,
        parts: &PaxosParts,
        c: &Cas<'_>,
        plan: &Plan,
        targets: &[usize],
        proposal: &Proposal,
    ) -> Result<(), DataError> {
        let mut asked = self.send_commits(parts, c, plan, targets, proposal);
        let mut expired = Deadline::after(&self.clock, self.timeouts.write);
        let mut done = 0;
        while done < targets.len() {
            let answer = tokio::select! {
                biased;
                answer = asked.next() => answer,
                () = expired.passed() => None,
            };
            match answer {
                Some((_, Ok(()))) => done += 1,
                Some((_, Err(e))) => {
                    return Err(DataError::WriteFailure(format!(
                        "repairing a Paxos commit failed: {e}"
                    )))
                }
                None => return Err(phase_timeout(c, done, targets.len())),
            }
        }
        Ok(())
    }

    fn send_commits(
        &self,
        parts: &PaxosParts,
        c: &Cas<'_>,
        plan: &Plan,
        targets: &[usize],
        proposal: &Proposal,
    ) -> Asked<()> {
        let carry = Carry {
            table: c.table,
            key: c.key.clone(),
            proposal: proposal.clone(),
        };
        let payload: Bytes = codec::encode_carry(&carry);
        let local = {
            let replica = Arc::clone(&parts.replica);
            move || -> BoxFuture<'static, Result<(), String>> {
                let (replica, carry) = (Arc::clone(&replica), carry.clone());
                Box::pin(async move { replica.commit(carry).await.map_err(|f| f.to_string()) })
            }
        };
        let (mut asked, not_sent) =
            self.ask_each(plan, targets, Verb::PAXOS_COMMIT, &payload, local, |_| {
                Ok(())
            });
        // A commit messaging refused counts as a failed replica.
        for i in not_sent {
            asked.push(i, Box::pin(async { Err("not sent".to_string()) }));
        }
        asked
    }

    /// Sends one message to each of `targets`: this node's own replica
    /// through `local` (no network), the others as `verb` with `payload`,
    /// each answer decoded by `decode`. The requests in flight, and the
    /// targets messaging refused at once (nothing reached them).
    pub(super) fn ask_each<T: Send + 'static>(
        &self,
        plan: &Plan,
        targets: &[usize],
        verb: Verb,
        payload: &Bytes,
        local: impl Fn() -> BoxFuture<'static, Result<T, String>>,
        decode: impl Fn(Bytes) -> Result<T, String> + Clone + Send + 'static,
    ) -> (Asked<T>, Vec<usize>) {
        let mut asked = Asked::new();
        let mut not_sent = Vec::new();
        for &i in targets {
            if plan.is_local(i) {
                asked.push(i, local());
                continue;
            }
            match self.messaging.request(
                plan.address(i),
                verb,
                payload.clone(),
                self.timeouts.write,
            ) {
                Ok(answer) => {
                    let decode = decode.clone();
                    asked.push(
                        i,
                        Box::pin(async move {
                            let response = answer.await.map_err(|e| e.to_string())?;
                            decode(response.payload)
                        }),
                    );
                }
                Err(_) => not_sent.push(i),
            }
        }
        (asked, not_sent)
    }
}

/// Whether a round of `update` at `ballot` fits the commitlog
/// (`PaxosReplica::check_fits`): when not, the statement fails as a plain
/// write of the same update would, with nothing proposed.
pub(super) fn fits(
    parts: &PaxosParts,
    c: &Cas<'_>,
    ballot: Ballot,
    update: &Partition,
) -> Result<(), DataError> {
    parts
        .replica
        .check_fits(c.table, c.key, ballot, update)
        .map_err(|e| DataError::WriteFailure(format!("conditional update not proposed: {e}")))
}

/// Asks each statement in turn, on the state the ones before it left, as
/// many as the round's timestamps have room for: statement `i` of `n`
/// writes at the ballot's micros minus `n - 1 - i`, all newer than the
/// latest commit. What each saw and decided, and their updates merged
/// (`None` when none applied one).
pub(super) fn decide_in_turn(
    c: &Cas<'_>,
    decides: &[DecideFn],
    current: &Partition,
    ballot: Ballot,
    latest: Option<Ballot>,
) -> (Vec<Decided>, Option<Partition>) {
    let room = latest.map_or(decides.len(), |l| {
        usize::try_from(ballot.micros() - l.micros()).unwrap_or(1)
    });
    let n = decides.len().min(room.max(1));
    let mut state = current.clone();
    let mut merged: Option<Partition> = None;
    let mut decided = Vec::with_capacity(n);
    for (i, decide) in decides[..n].iter().enumerate() {
        let timestamp = ballot.micros() - (n - 1 - i) as i64;
        let seen = state.clone();
        let applied = match decide(&state, timestamp) {
            Ok((applied, Some(update))) if applied => {
                state.merge(update.clone());
                state = state
                    .resolve_slices(c.slices, false, c.now_seconds, usize::MAX)
                    .0;
                match &mut merged {
                    Some(m) => m.merge(update),
                    None => merged = Some(update),
                }
                Ok(true)
            }
            Ok((applied, _)) => Ok(applied),
            Err(e) => Err(e),
        };
        decided.push(Decided { seen, applied });
    }
    (decided, merged)
}

/// The metrics' index of the operation: 0 a SERIAL read, 1 a write.
fn op_index(c: &Cas<'_>) -> usize {
    usize::from(c.decide.is_some())
}

pub(super) fn micros(d: Duration) -> u64 {
    d.as_micros().min(u128::from(u64::MAX)) as u64
}

/// The quorum level of a serial level (a finished round's commit).
fn serial_quorum(serial: Consistency) -> Consistency {
    match serial {
        Consistency::LocalSerial => Consistency::LocalQuorum,
        _ => Consistency::Quorum,
    }
}

/// Out of time in a phase: a write's or a serial read's timeout.
fn phase_timeout(c: &Cas<'_>, received: usize, block_for: usize) -> DataError {
    if c.decide.is_none() {
        return DataError::ReadTimeout(ReadTimeout {
            consistency: c.serial,
            received: received as u32,
            block_for: block_for as u32,
            data_present: false,
        });
    }
    DataError::WriteTimeout(WriteTimeout {
        consistency: c.serial,
        received: received as u32,
        block_for: block_for as u32,
        write_type: WriteType::Cas,
    })
}

/// Rounds kept losing for `cas_contention_timeout`.
fn contention_timeout(c: &Cas<'_>) -> DataError {
    phase_timeout(c, 0, c.replication.factors().total() as usize / 2 + 1)
}

/// Folds a successful round's duration into the moving average.
fn record(average: &AtomicU64, took: Duration) {
    let took = took.as_micros().min(u128::from(u32::MAX)) as u64;
    let _ = average.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |old| {
        Some(if old == 0 { took } else { (old * 7 + took) / 8 })
    });
}

/// A random wait before the next try: up to the measured round time,
/// doubled with each loss, within [`MAX_BACKOFF`].
fn backoff(parts: &PaxosParts, losses: u64) -> Duration {
    let measured = parts.round_micros.load(Ordering::Relaxed);
    let base = if measured == 0 {
        FIRST_BACKOFF
    } else {
        Duration::from_micros(measured)
    };
    let bound = base
        .saturating_mul(1 << losses.min(6))
        .min(MAX_BACKOFF)
        .as_micros()
        .max(1) as u64;
    // A draw from this coordinator's next ballot: distinct per node and
    // per try, and the simulation's clock makes it replayable.
    let ballot = parts.clock.next(0);
    let seed = u64::from_be_bytes(ballot.0[8..16].try_into().unwrap_or_default())
        ^ (ballot.micros() as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    Duration::from_micros(splitmix(seed) % bound)
}

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// The error of a round whose outcome is unknown at `serial`: its
/// `block_for` is the quorum of the replicas that take part (LOCAL_SERIAL:
/// those of `local_dc`).
fn unknown_outcome(serial: Consistency, factors: &Factors<'_>, local_dc: &str) -> DataError {
    let replicas = match serial {
        Consistency::LocalSerial => factors.in_dc(local_dc),
        _ => factors.total(),
    };
    DataError::CasWriteUnknown(WriteTimeout {
        consistency: serial,
        received: 0,
        block_for: replicas / 2 + 1,
        write_type: WriteType::Cas,
    })
}

#[cfg(test)]
mod unknown_tests {
    use super::*;

    fn block_for(e: DataError) -> u32 {
        match e {
            DataError::CasWriteUnknown(t) => t.block_for,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn an_unknown_outcome_names_the_quorum_of_those_who_take_part() {
        let two_dcs = Factors::PerDc(vec![("dc1", 3), ("dc2", 2)]);
        let local = unknown_outcome(Consistency::LocalSerial, &two_dcs, "dc2");
        assert_eq!(block_for(local), 2, "a quorum of dc2's two replicas");
        let local = unknown_outcome(Consistency::LocalSerial, &two_dcs, "dc1");
        assert_eq!(block_for(local), 2, "a quorum of dc1's three replicas");
        let serial = unknown_outcome(Consistency::Serial, &two_dcs, "dc2");
        assert_eq!(block_for(serial), 3, "a quorum of all five");
        let simple = unknown_outcome(Consistency::Serial, &Factors::Simple(3), "dc1");
        assert_eq!(block_for(simple), 2);
    }
}
