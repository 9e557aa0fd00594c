//! A contended partition's conditional statements meet on one node
//! (docs/design/paxos.md, section 7.1). A coordinator whose rounds on a
//! partition lost to another coordinator's within [`CONTENDED_MEMORY`]
//! hands that partition's next conditional statements to its *home*: the
//! first UP replica in ring order (of the local data centre when it has
//! one), where they queue with the others and share rounds, instead of
//! duelling with them. The home runs a forwarded statement as its own and
//! never forwards it again, so views of the ring that differ cannot make
//! a loop. Uncontended statements are never forwarded: they pay no extra
//! hop.
//!
//! What the sender answers: the home's outcome or error as the home
//! found it; "declined" (the home does not know the table, or cannot
//! rebuild the statement: nothing ran) and a statement messaging could
//! not send run here instead; no answer in time, or one that does not
//! decode, is an unknown outcome (the home may have committed it).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use bytes::Bytes;
use varve_types::consistency::Consistency;
use varve_types::data::Slice;
use varve_types::data_error::DataError;

use super::paxos::{Cas, CasResult, DecideFn, PaxosParts, CAS_CONTENTION_TIMEOUT};
use super::service::{Coordinator, Plan};
use crate::net::{Reply, Request, RequestError, Verb};
use crate::paxos::forward::{self, Forward, ForwardAnswer};

/// How long after a lost round a partition's statements go to its home
/// (and every forward renews it: a partition stays forwarded while its
/// statements keep coming).
pub const CONTENDED_MEMORY: Duration = Duration::from_secs(1);
/// The most partitions a coordinator remembers as contended; past it,
/// expired ones are dropped, and with none expired a new one is not
/// remembered (its statements duel as before: slower, never wrong).
pub const MAX_CONTENDED_PARTITIONS: usize = 4096;
/// How long a home that left a forward unanswered gets no more: its
/// partitions' statements run where they arrive meanwhile (gossip usually
/// marks a frozen or cut-off node DOWN within it).
pub const STUCK_HOME_MEMORY: Duration = Duration::from_secs(10);

/// Rebuilds a forwarded statement's decision from its bytes: query's
/// encoding, which the cluster carries without reading. An error means
/// this node cannot run it (the sender then does).
pub type RebuildFn = Arc<dyn Fn(u128, &Bytes) -> Result<DecideFn, String> + Send + Sync>;

/// A partition: its table and key.
type PartitionId = (u128, Bytes);

/// Partitions whose rounds lately lost to another coordinator's, and
/// homes that lately left a forward unanswered.
#[derive(Default)]
pub(super) struct Contended {
    since: parking_lot::Mutex<BTreeMap<PartitionId, Instant>>,
    stuck: parking_lot::Mutex<BTreeMap<SocketAddr, Instant>>,
}

impl Contended {
    /// `key` lost a round (or was forwarded) at `now`.
    pub(super) fn mark(&self, key: &PartitionId, now: Instant) {
        let mut since = self.since.lock();
        if since.len() >= MAX_CONTENDED_PARTITIONS && !since.contains_key(key) {
            since.retain(|_, at| now.saturating_duration_since(*at) < CONTENDED_MEMORY);
            if since.len() >= MAX_CONTENDED_PARTITIONS {
                return;
            }
        }
        since.insert(key.clone(), now);
    }

    /// `key`'s home, at `home`, did not answer by `now`: the partition's
    /// statements run here again, and no statement goes to that home for
    /// [`STUCK_HOME_MEMORY`].
    pub(super) fn home_stuck(&self, key: &PartitionId, home: SocketAddr, now: Instant) {
        self.since.lock().remove(key);
        let mut stuck = self.stuck.lock();
        stuck.retain(|_, at| now.saturating_duration_since(*at) < STUCK_HOME_MEMORY);
        stuck.insert(home, now);
    }

    /// Whether `home` left a forward unanswered within
    /// [`STUCK_HOME_MEMORY`] of `now`.
    pub(super) fn is_stuck(&self, home: SocketAddr, now: Instant) -> bool {
        self.stuck
            .lock()
            .get(&home)
            .is_some_and(|at| now.saturating_duration_since(*at) < STUCK_HOME_MEMORY)
    }

    /// Whether `key` lost a round within [`CONTENDED_MEMORY`] of `now`.
    pub(super) fn recent(&self, key: &PartitionId, now: Instant) -> bool {
        self.since
            .lock()
            .get(key)
            .is_some_and(|at| now.saturating_duration_since(*at) < CONTENDED_MEMORY)
    }
}

/// How long a forwarding coordinator waits for the home's answer: the
/// home's own contention timeout and one write timeout. A home answers in
/// milliseconds unless it is frozen or cut off; then the statement's
/// outcome is unknown (the home may still run it), and that home gets no
/// more statements for [`STUCK_HOME_MEMORY`] ([`Contended::home_stuck`]),
/// so it costs each coordinator one timeout, not one per statement until
/// gossip marks it DOWN.
fn forward_timeout(write: Duration) -> Duration {
    CAS_CONTENTION_TIMEOUT + write
}

/// The partition's home among the plan's replicas: the first natural UP
/// replica in ring order of the local data centre; for SERIAL with none
/// there, the first natural UP replica.
pub(super) fn home(plan: &Plan, serial: Consistency, local_dc: &str) -> Option<usize> {
    let up = |i: &usize| plan.up[*i];
    let local = (0..plan.natural)
        .filter(up)
        .find(|&i| plan.host(i).location.dc == local_dc);
    match (local, serial) {
        (Some(i), _) => Some(i),
        (None, Consistency::LocalSerial) => None,
        (None, _) => (0..plan.natural).find(up),
    }
}

/// What became of a statement offered to its partition's home.
pub(super) enum Forwarded {
    /// Not sent (not contended here, no other home, the home stuck, or
    /// messaging would not take it): run it here.
    NotSent,
    /// The home refused it before running anything (it declined to
    /// rebuild it, or does not know the verb): run it here.
    Refused,
    /// The home's answer (or the unknown outcome of a home that did not
    /// answer).
    Answer(Result<CasResult, DataError>),
}

impl Coordinator {
    /// Hands a conditional statement to its partition's home when the
    /// partition is contended here and the home is another node. `None`:
    /// run it here.
    pub(super) async fn forwarded(&self, parts: &PaxosParts, c: &Cas<'_>) -> Forwarded {
        let Some(decider) = c.portable.as_ref() else {
            return Forwarded::NotSent;
        };
        let key: PartitionId = (c.table, c.key.key.clone());
        let now = self.clock.now();
        if !parts.contended.recent(&key, now) {
            return Forwarded::NotSent;
        }
        let plan = self.write_plan(c.key.token, c.replication);
        let Some(home) = home(&plan, c.serial, &self.local_dc) else {
            return Forwarded::NotSent;
        };
        let address = plan.address(home);
        if plan.is_local(home) || parts.contended.is_stuck(address, now) {
            return Forwarded::NotSent;
        }
        parts.contended.mark(&key, now);
        let payload = forward::encode_forward(&Forward {
            table: c.table,
            key: c.key.clone(),
            serial: c.serial,
            commit: c.commit,
            now_seconds: c.now_seconds,
            decider: decider.clone(),
        });
        let timeout = forward_timeout(self.timeouts.write);
        let Ok(answer) = self
            .messaging
            .request(address, Verb::PAXOS_FORWARD, payload, timeout)
        else {
            return Forwarded::NotSent;
        };
        self.metrics.cas_forwarded.inc();
        let unknown = || {
            self.metrics.cas_unknown_results.inc();
            Forwarded::Answer(Err(self.unknown_outcome(c)))
        };
        let response = match answer.await {
            Ok(response) => response,
            // The home refused the request before running anything (a
            // node that does not know the verb, a payload it cannot read).
            Err(RequestError::Failure(_)) => return Forwarded::Refused,
            Err(RequestError::Timeout | RequestError::Shutdown) => {
                parts.contended.home_stuck(&key, address, self.clock.now());
                return unknown();
            }
        };
        match forward::decode_answer(&response.payload, c.table, &*self.engine) {
            Ok(ForwardAnswer::Done {
                current,
                applied,
                contention,
            }) => Forwarded::Answer(Ok(CasResult {
                current,
                applied,
                complete: true,
                contention,
                forwarded: true,
                home_refused: false,
                path: super::paxos::CasPath::Full,
            })),
            Ok(ForwardAnswer::Failed(e)) => Forwarded::Answer(Err(e)),
            Ok(ForwardAnswer::Declined(_)) => Forwarded::Refused,
            Err(_) => unknown(),
        }
    }

    /// Answers PAXOS_FORWARD: runs other coordinators' statements as this
    /// partition's home, rebuilding each with `rebuild`.
    pub fn serve_forwarded(self: &Arc<Self>, rebuild: RebuildFn) {
        let me = Arc::downgrade(self);
        self.messaging
            .register(Verb::PAXOS_FORWARD, move |req: Request| {
                let me = me.clone();
                let rebuild = Arc::clone(&rebuild);
                async move {
                    let me = me.upgrade()?;
                    Some(me.serve_forward(req.payload, &rebuild).await)
                }
            });
    }

    async fn serve_forward(&self, payload: Bytes, rebuild: &RebuildFn) -> Reply {
        let f = forward::decode_forward(&payload).map_err(|e| e.failure())?;
        let answer = self.run_forwarded(f, rebuild).await;
        Ok(forward::encode_answer(&answer))
    }

    async fn run_forwarded(&self, f: Forward, rebuild: &RebuildFn) -> ForwardAnswer {
        let replication = self.replication_lookup.get().and_then(|l| l(f.table));
        let Some(replication) = replication else {
            return ForwardAnswer::Declined(format!("unknown table {:032x}", f.table));
        };
        let cmp = match self.engine.comparator(f.table) {
            Ok(cmp) => cmp,
            Err(e) => return ForwardAnswer::Declined(e.to_string()),
        };
        let decide = match rebuild(f.table, &f.decider) {
            Ok(decide) => decide,
            Err(e) => return ForwardAnswer::Declined(e),
        };
        self.metrics.cas_forwards_served.inc();
        let slices = [Slice::all(&cmp)];
        let ran = self
            .cas(Cas {
                table: f.table,
                key: &f.key,
                slices: &slices,
                replication: &replication,
                serial: f.serial,
                commit: f.commit,
                now_seconds: f.now_seconds,
                reversed: false,
                row_limit: usize::MAX,
                decide: Some(decide),
                // Never forwarded again.
                portable: None,
            })
            .await;
        match ran {
            Ok(r) => ForwardAnswer::Done {
                current: r.current,
                applied: r.applied,
                contention: r.contention,
            },
            Err(e) => ForwardAnswer::Failed(e),
        }
    }
}

#[cfg(test)]
// The tests take one instant and step it by hand: no clock runs.
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;

    fn key(k: &'static [u8]) -> PartitionId {
        (1, Bytes::from_static(k))
    }

    #[test]
    fn a_partition_is_contended_for_contended_memory_after_its_last_mark() {
        let contended = Contended::default();
        let t0 = Instant::now();
        assert!(!contended.recent(&key(b"a"), t0));
        contended.mark(&key(b"a"), t0);
        assert!(contended.recent(&key(b"a"), t0 + CONTENDED_MEMORY / 2));
        assert!(!contended.recent(&key(b"a"), t0 + CONTENDED_MEMORY));
        assert!(!contended.recent(&key(b"b"), t0));
        // A new mark renews it.
        contended.mark(&key(b"a"), t0 + CONTENDED_MEMORY / 2);
        assert!(contended.recent(&key(b"a"), t0 + CONTENDED_MEMORY));
        // A home that did not answer: the partition forgotten at once, and
        // the home skipped for STUCK_HOME_MEMORY.
        let home: SocketAddr = "127.0.0.3:7000".parse().unwrap();
        let other: SocketAddr = "127.0.0.2:7000".parse().unwrap();
        contended.home_stuck(&key(b"a"), home, t0);
        assert!(!contended.recent(&key(b"a"), t0 + CONTENDED_MEMORY / 2));
        assert!(contended.is_stuck(home, t0 + STUCK_HOME_MEMORY / 2));
        assert!(!contended.is_stuck(home, t0 + STUCK_HOME_MEMORY));
        assert!(!contended.is_stuck(other, t0));
    }

    /// At the limit a new partition is remembered only once an old one
    /// expired; one more than the limit never is.
    #[test]
    fn at_most_max_contended_partitions_are_remembered() {
        let contended = Contended::default();
        let t0 = Instant::now();
        let id = |i: usize| (1u128, Bytes::from(i.to_be_bytes().to_vec()));
        for i in 0..MAX_CONTENDED_PARTITIONS {
            contended.mark(&id(i), t0);
        }
        assert!(contended.recent(&id(MAX_CONTENDED_PARTITIONS - 1), t0));
        contended.mark(&id(MAX_CONTENDED_PARTITIONS), t0);
        assert!(!contended.recent(&id(MAX_CONTENDED_PARTITIONS), t0));
        // A partition already there is renewed at the limit.
        let later = t0 + CONTENDED_MEMORY / 2;
        contended.mark(&id(0), later);
        assert!(contended.recent(&id(0), later + CONTENDED_MEMORY / 2));
        // Once the others expired, a new one fits.
        let much_later = t0 + CONTENDED_MEMORY;
        contended.mark(&id(MAX_CONTENDED_PARTITIONS), much_later);
        assert!(contended.recent(&id(MAX_CONTENDED_PARTITIONS), much_later));
    }
}
