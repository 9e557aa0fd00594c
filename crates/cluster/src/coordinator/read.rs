//! A coordinated read of one partition (docs/design/cluster.md, section
//! 8.3): the UP replicas in order of preference (this node, then its data
//! centre, then the rest, each in ring order), as many of them as the
//! level needs; a data READ to the first, a digest READ to the others;
//! one more replica asked when the table's `speculative_retry` wait passes
//! without enough answers; and, when a digest differs from the data's,
//! the full data of every replica that answered, merged (the newest cell
//! and any deletion win whichever replica holds them) and, with
//! `read_repair` BLOCKING, written back to the replicas that lacked part
//! of it before the answer ([`super::read_repair`]).
//!
//! When this node alone is enough (ONE or LOCAL_ONE with a local replica)
//! the read is the one-node read, resolved by storage with its row limit.
//! Otherwise each replica covers the slices up to its `row_limit`-th live
//! row and says whether it stopped there; what the merge can trust, and
//! reading on past it when deletions on some replicas leave too few rows,
//! is [`super::short_read`].

use varve_storage::ReadCost;
use varve_types::consistency::Consistency;
use varve_types::data::{Partition, PartitionKey, Slice};
use varve_types::data_error::{DataError, ReadTimeout};

use super::answers::{Deadline, Pending};
use super::replication::Replication;
use super::service::{Coordinator, Plan};
use super::speculate::Speculation;
use super::write_acks::{Progress, WriteAcks};
use crate::env::BoxFuture;
use crate::net::{RequestError, Verb};
use crate::verbs::read::{self, ReadKind, ReadResponse};

/// One partition's rows at a level.
#[derive(Debug, Clone, Copy)]
pub struct Read<'a> {
    pub table: u128,
    pub key: &'a PartitionKey,
    pub slices: &'a [Slice],
    pub reversed: bool,
    pub now_seconds: i32,
    pub row_limit: usize,
    pub replication: &'a Replication,
    pub consistency: Consistency,
    /// The table's `speculative_retry`.
    pub speculation: Speculation,
    /// The table's `read_repair`: BLOCKING (true) or NONE.
    pub blocking_repair: bool,
}

/// A read's answer: the live rows (with the static row), tombstones met,
/// whether every row of the slices was visited, sstables touched here.
#[derive(Debug, Clone)]
pub struct ReadResult {
    pub partition: Option<Partition>,
    pub tombstones: u64,
    pub complete: bool,
    pub sstables: u32,
}

/// One replica's data answer.
#[derive(Debug, Clone)]
pub(super) struct Version {
    pub replica: usize,
    pub partition: Option<Partition>,
    /// It stopped at the row limit: it covers the slices only up to its
    /// last live row in the read's direction.
    pub stopped: bool,
}

impl Read<'_> {
    /// What a replica is asked.
    pub(super) fn of(&self) -> read::ReadOf<'_> {
        read::ReadOf {
            table: self.table,
            key: self.key,
            slices: self.slices,
            reversed: self.reversed,
            now_seconds: self.now_seconds,
            row_limit: self.row_limit,
        }
    }
}

impl Version {
    /// The digest of this answer, as the replica would send it.
    pub(super) fn digest(&self) -> [u8; 16] {
        read::digest(self.partition.as_ref(), self.stopped)
    }
}

/// What the replicas answered in the first round.
pub(super) struct Answers {
    /// The data response.
    pub data: Option<Version>,
    /// Digest responses.
    pub digests: Vec<(usize, [u8; 16])>,
    pub sstables: u32,
}

/// The state of one read while it waits.
pub(super) struct Round<'a> {
    pub r: &'a Read<'a>,
    pub plan: Plan,
    pub acks: WriteAcks,
    /// Replicas asked so far.
    pub asked: Vec<usize>,
    pub pending: Pending,
    pub expired: Deadline,
    pub started: tokio::time::Instant,
}

impl Coordinator {
    /// Reads `r` at its level.
    pub async fn read(&self, r: Read<'_>) -> Result<ReadResult, DataError> {
        let expired = Deadline::after(&self.clock, self.timeouts.read);
        let started = self.clock.now();
        let plan = self.plan(r.key.token, r.replication);
        self.count_placement(&plan);
        self.assure_live(&plan, r.replication, r.consistency)
            .map_err(DataError::Unavailable)?;
        let factors = r.replication.factors();
        let acks = WriteAcks::new(r.consistency, &factors, &self.local_dc, &plan.dcs());
        let order = self.preference(&plan, &acks);
        let contacts = needed(&order, &acks);
        if let [only] = contacts[..] {
            if plan.is_local(only) && r.speculation != Speculation::Always {
                return self.read_here(&r);
            }
        }
        let mut round = Round {
            r: &r,
            plan,
            acks,
            asked: Vec::new(),
            pending: Pending::default(),
            expired,
            started,
        };
        let answers = self.first_round(&mut round, &order, &contacts).await?;
        let reconciled = self.reconcile(&mut round, answers).await?;
        self.finish(&r, reconciled).await
    }

    /// Data from the first contact, digests from the others, one more
    /// replica after the speculation wait, until the level is met with the
    /// data in hand.
    async fn first_round(
        &self,
        round: &mut Round<'_>,
        order: &[usize],
        contacts: &[usize],
    ) -> Result<Answers, DataError> {
        let mut answers = Answers {
            data: None,
            digests: Vec::new(),
            sstables: 0,
        };
        // This node first: a read that would wait on the disk gives up
        // before anything was sent.
        for (n, &i) in contacts.iter().enumerate() {
            if round.plan.is_local(i) {
                let (version, cost) = self.read_stored(round.r, i)?;
                answers.sstables = cost;
                match n {
                    0 => answers.data = Some(version),
                    _ => answers.digests.push((i, version.digest())),
                }
                round.asked.push(i);
                round.acks.ack(i);
            }
        }
        for (n, &i) in contacts.iter().enumerate() {
            if !round.plan.is_local(i) {
                let kind = if n == 0 {
                    ReadKind::Data
                } else {
                    ReadKind::Digest
                };
                self.ask(round, i, kind);
            }
        }
        let latencies = self.latencies.of(round.r.table, round.started);
        let mut speculate: Option<BoxFuture<'static, ()>> = round
            .r
            .speculation
            .delay(&latencies, round.started, self.timeouts.read)
            .filter(|_| order.len() > contacts.len())
            .map(|d| self.clock.sleep(d));
        let cmp = self.comparator(round.r.table)?;
        let mut last_failure = None;
        loop {
            match round.acks.progress() {
                Progress::Succeeded if answers.data.is_some() => return Ok(answers),
                Progress::Failed => return Err(read_failure(&round.acks, last_failure)),
                _ => {}
            }
            let event = tokio::select! {
                biased;
                answer = round.pending.next_answer() => Event::Answer(answer),
                () = wait(&mut speculate) => Event::Speculate,
                () = round.expired.passed() => Event::Expired,
            };
            match event {
                Event::Speculate => {
                    speculate = None;
                    self.speculate(round, order, answers.data.is_none());
                }
                Event::Answer(Some((i, Ok(response)))) => {
                    latencies.record(self.clock.now() - round.started, self.clock.now());
                    match read::decode_response(&response.payload, &cmp) {
                        Ok(ReadResponse::Data(partition, stopped)) => {
                            let version = Version {
                                replica: i,
                                partition,
                                stopped,
                            };
                            if answers.data.is_none() {
                                answers.data = Some(version);
                            } else {
                                answers.digests.push((i, version.digest()));
                            }
                            round.acks.ack(i);
                        }
                        Ok(ReadResponse::Digest(d)) => {
                            answers.digests.push((i, d));
                            round.acks.ack(i);
                        }
                        Err(e) => {
                            round.acks.fail(i);
                            last_failure = Some(format!("{}: {e}", round.plan.address(i)));
                        }
                    }
                }
                Event::Answer(Some((i, Err(RequestError::Failure(f))))) => {
                    round.acks.fail(i);
                    last_failure = Some(format!("{}: {f}", round.plan.address(i)));
                }
                // A timeout or a shut-down messaging: no answer from it.
                Event::Answer(Some((_, Err(_)))) => {}
                Event::Answer(None) | Event::Expired => {
                    if matches!(event, Event::Answer(None)) && speculate.is_some() {
                        // Nothing in flight: the speculation is all that
                        // is left to try.
                        speculate = None;
                        if self.speculate(round, order, answers.data.is_none()) {
                            continue;
                        }
                    }
                    return Err(read_timeout(round, answers.data.is_some()));
                }
            }
        }
    }

    /// Asks the next UP replica not asked yet (for data when the data has
    /// not come); whether there was one.
    fn speculate(&self, round: &mut Round<'_>, order: &[usize], need_data: bool) -> bool {
        let Some(&next) = order.iter().find(|i| !round.asked.contains(i)) else {
            return false;
        };
        self.metrics.speculative_retries.inc();
        let kind = if need_data {
            ReadKind::Data
        } else {
            ReadKind::Digest
        };
        self.ask(round, next, kind);
        true
    }

    /// Sends a READ of `kind` to replica `i` (never this node).
    pub(super) fn ask(&self, round: &mut Round<'_>, i: usize, kind: ReadKind) {
        let payload = read::encode_request(&round.r.of(), kind);
        let to = round.plan.address(i);
        round.asked.push(i);
        match self
            .messaging
            .request(to, Verb::READ, payload, self.timeouts.read)
        {
            Ok(answer) => round.pending.push(i, answer),
            Err(e) => tracing::debug!("read from {to} not sent: {e}"),
        }
    }

    /// The UP replicas that count at the level, by preference: this node,
    /// then its data centre, then the others, each in ring order.
    pub(super) fn preference(&self, plan: &Plan, acks: &WriteAcks) -> Vec<usize> {
        let mut order: Vec<usize> = (0..plan.replicas.len())
            .filter(|&i| plan.up[i] && acks.counts(i))
            .collect();
        order.sort_by_key(|&i| {
            let here = plan.host(i).location.dc == self.local_dc;
            (!plan.is_local(i), !here)
        });
        order
    }

    /// This node's answer as replica `i` of `r` (the stored partition,
    /// unresolved, cut at the row limit) and the sstables it touched.
    pub(super) fn read_stored(&self, r: &Read<'_>, i: usize) -> Result<(Version, u32), DataError> {
        let mut cost = ReadCost::default();
        let (partition, stopped) = self
            .engine
            .read_stored_limited(
                r.table,
                r.key,
                r.slices,
                r.reversed,
                r.now_seconds,
                r.row_limit,
                &mut cost,
            )
            .map_err(on_local_error)?;
        let version = Version {
            replica: i,
            partition,
            stopped,
        };
        Ok((version, cost.sstables))
    }

    /// The read on this node alone, resolved by storage.
    fn read_here(&self, r: &Read<'_>) -> Result<ReadResult, DataError> {
        let mut cost = ReadCost::default();
        let found = self
            .engine
            .read_live_costed(
                r.table,
                r.key,
                r.slices,
                r.reversed,
                r.now_seconds,
                r.row_limit,
                &mut cost,
            )
            .map_err(on_local_error)?;
        Ok(match found {
            Some((partition, stats, complete)) => ReadResult {
                partition: Some(partition),
                tombstones: stats.tombstones,
                complete,
                sstables: cost.sstables,
            },
            None => ReadResult {
                partition: None,
                tombstones: 0,
                complete: true,
                sstables: cost.sstables,
            },
        })
    }
}

enum Event {
    Answer(Option<(usize, Result<crate::net::Response, RequestError>)>),
    Speculate,
    Expired,
}

/// Resolves when the speculation timer fires; never without one.
async fn wait(timer: &mut Option<BoxFuture<'static, ()>>) {
    match timer {
        Some(t) => t.await,
        None => std::future::pending().await,
    }
}

/// The first replicas of `order` whose answers meet the level.
pub(super) fn needed(order: &[usize], acks: &WriteAcks) -> Vec<usize> {
    let mut enough = acks.clone();
    let mut out = Vec::new();
    for &i in order {
        if enough.progress() == Progress::Succeeded {
            break;
        }
        enough.ack(i);
        out.push(i);
    }
    out
}

pub(super) fn read_timeout(round: &Round<'_>, data_present: bool) -> DataError {
    DataError::ReadTimeout(ReadTimeout {
        consistency: round.r.consistency,
        received: round.acks.received(),
        block_for: round.acks.block_for(),
        data_present,
    })
}

fn read_failure(acks: &WriteAcks, last: Option<String>) -> DataError {
    DataError::ReadFailure(format!(
        "read failed on {} replica(s): {}",
        acks.failures(),
        last.unwrap_or_default()
    ))
}

/// A storage error on this node as the data path reports it.
pub(super) fn on_local_error(e: varve_storage::Error) -> DataError {
    e.on_read()
}
