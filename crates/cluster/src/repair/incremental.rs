//! Incremental repair's messages (docs/design/topology.md, section 6;
//! docs/format/internode.md): REPAIR_PREPARE takes a replica's unrepaired
//! data of some ranges into a session (storage's anticompaction), and
//! REPAIR_FINALIZE ends the session there, its sstables repaired at the
//! session's time or unrepaired again when it failed.
//!
//! PREPARE: session u128; table u128; `count` varint (at most
//! [`MAX_PREPARE_RANGES`]); `count` × (start i64, end i64). FINALIZE:
//! session u128; table u128; outcome u8 (1: repaired, 0: failed); repaired
//! at i64 (milliseconds; 0 when failed). Both answer with a varint: the
//! sstables the session holds on that replica.
//!
//! A replica forgets a session that has not ended after
//! [`PENDING_SESSION_LIFETIME`] (its sstables unrepaired again, released
//! at the next PREPARE it receives), so a coordinator that died mid-repair
//! does not keep sstables out of compaction for good; a restart forgets
//! every session (storage drops pending marks when a table opens).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use parking_lot::Mutex;
use varve_storage::engine_repair::TokenRange;
use varve_storage::Engine;

use crate::coordinator::Host;
use crate::env::Clock;
use crate::net::wire::{put_varint, Reader};
use crate::net::{Failure, FailureReason, Messaging, Request, Verb};
use crate::streaming::pull::{bounds, store_streamed};
use crate::streaming::Puller;
use crate::verbs::codec::{count, put_table, read_table, PayloadError};
use crate::verbs::mutation::TableUpdate;

/// Ranges one PREPARE may name (a node with 256 vnodes and RF 5 holds
/// 1,280).
pub const MAX_PREPARE_RANGES: usize = 4096;

/// How long a replica may take to prepare (an anticompaction of its
/// unrepaired data, paced by `compaction_throughput`) or finalize.
pub const PREPARE_TIMEOUT: Duration = Duration::from_secs(3600);

/// How long a session may hold a replica's sstables before the replica
/// gives them back.
pub const PENDING_SESSION_LIFETIME: Duration = Duration::from_secs(6 * 3600);

/// Keys copied per scan by [`copy_local`].
const KEYS_PER_COPY: usize = 1000;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrepareRequest {
    pub session: u128,
    pub table: u128,
    pub ranges: Vec<TokenRange>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FinalizeRequest {
    pub session: u128,
    pub table: u128,
    /// `None`: the session failed.
    pub repaired_at_ms: Option<i64>,
}

pub fn encode_prepare(req: &PrepareRequest) -> Bytes {
    let mut out = Vec::with_capacity(40 + 16 * req.ranges.len());
    out.extend_from_slice(&req.session.to_be_bytes());
    put_table(&mut out, req.table);
    put_varint(&mut out, req.ranges.len() as u64);
    for (start, end) in &req.ranges {
        out.extend_from_slice(&start.to_be_bytes());
        out.extend_from_slice(&end.to_be_bytes());
    }
    Bytes::from(out)
}

pub fn decode_prepare(payload: &[u8]) -> Result<PrepareRequest, PayloadError> {
    let mut r = Reader::new(payload);
    let session = u128::from_be_bytes(r.array()?);
    let table = read_table(&mut r)?;
    let n = count(&mut r, "ranges", MAX_PREPARE_RANGES)?;
    let mut ranges = Vec::with_capacity(n.min(r.remaining() / 16));
    for _ in 0..n {
        ranges.push((r.i64()?, r.i64()?));
    }
    r.finish()?;
    Ok(PrepareRequest {
        session,
        table,
        ranges,
    })
}

pub fn encode_finalize(req: &FinalizeRequest) -> Bytes {
    let mut out = Vec::with_capacity(41);
    out.extend_from_slice(&req.session.to_be_bytes());
    put_table(&mut out, req.table);
    out.push(u8::from(req.repaired_at_ms.is_some()));
    out.extend_from_slice(&req.repaired_at_ms.unwrap_or(0).to_be_bytes());
    Bytes::from(out)
}

pub fn decode_finalize(payload: &[u8]) -> Result<FinalizeRequest, PayloadError> {
    let mut r = Reader::new(payload);
    let session = u128::from_be_bytes(r.array()?);
    let table = read_table(&mut r)?;
    let outcome = r.u8()?;
    let at = r.i64()?;
    r.finish()?;
    let repaired_at_ms = match (outcome, at) {
        (1, at) => Some(at),
        (0, 0) => None,
        _ => {
            return Err(PayloadError::Malformed(format!(
                "outcome {outcome} at {at}"
            )))
        }
    };
    Ok(FinalizeRequest {
        session,
        table,
        repaired_at_ms,
    })
}

fn encode_held(held: usize) -> Bytes {
    let mut out = Vec::with_capacity(10);
    put_varint(&mut out, held as u64);
    Bytes::from(out)
}

fn decode_held(payload: &[u8]) -> Result<usize, PayloadError> {
    let mut r = Reader::new(payload);
    let held = r.varint()?;
    r.finish()?;
    usize::try_from(held).map_err(|_| PayloadError::Malformed(format!("{held} sstables")))
}

/// When a session began on this replica.
type Began = tokio::time::Instant;

/// The sessions a replica takes part in: when each began, and its tables.
struct Sessions {
    open: Mutex<BTreeMap<u128, (Began, Vec<u128>)>>,
    /// [`PENDING_SESSION_LIFETIME`] but in tests.
    lifetime: Duration,
}

impl Sessions {
    fn new(lifetime: Duration) -> Sessions {
        Sessions {
            open: Mutex::new(BTreeMap::new()),
            lifetime,
        }
    }

    /// Notes `table` in `session` at `now`; returns the (session, table)
    /// pairs of other sessions past their lifetime, forgotten here.
    fn begin(&self, session: u128, table: u128, now: Began) -> Vec<(u128, u128)> {
        let mut open = self.open.lock();
        let expired: Vec<u128> = open
            .iter()
            .filter(|(s, (began, _))| **s != session && now.duration_since(*began) > self.lifetime)
            .map(|(s, _)| *s)
            .collect();
        let mut released = Vec::new();
        for s in expired {
            if let Some((_, tables)) = open.remove(&s) {
                released.extend(tables.into_iter().map(|t| (s, t)));
            }
        }
        let entry = open.entry(session).or_insert((now, Vec::new()));
        if !entry.1.contains(&table) {
            entry.1.push(table);
        }
        released
    }

    fn end(&self, session: u128, table: u128) {
        let mut open = self.open.lock();
        if let Some((_, tables)) = open.get_mut(&session) {
            tables.retain(|t| *t != table);
            if tables.is_empty() {
                open.remove(&session);
            }
        }
    }
}

/// A PREPARE or a FINALIZE, as a replica carries it out.
enum Step {
    Prepare(PrepareRequest),
    Finalize(FinalizeRequest),
}

impl Step {
    fn decode(verb: Verb, payload: &[u8]) -> Result<Step, PayloadError> {
        match verb {
            Verb::REPAIR_PREPARE => decode_prepare(payload).map(Step::Prepare),
            _ => decode_finalize(payload).map(Step::Finalize),
        }
    }

    /// Carries the step out on `engine`: the sstables the session holds.
    fn run(&self, engine: &Engine) -> Result<usize, varve_storage::Error> {
        match self {
            Step::Prepare(p) => {
                let now = engine.now_seconds();
                engine
                    .prepare_incremental(p.table, &p.ranges, p.session, now)
                    .map(|done| done.pending.len())
            }
            Step::Finalize(f) => engine.finalize_incremental(f.table, f.session, f.repaired_at_ms),
        }
    }

    /// [`Step::run`] in memory first, on the blocking pool if storage
    /// would wait (as the replica verbs: a task on the pool ends at a
    /// moment of real time, which a simulation cannot replay). A step run
    /// twice changes nothing more: a prepare takes only unrepaired
    /// sstables, a finalize only pending ones.
    async fn run_here(
        self,
        engine: Arc<Engine>,
    ) -> Result<Result<usize, varve_storage::Error>, String> {
        crate::verbs::replica::first_in_memory(move || self.run(&engine)).await
    }
}

/// Answers REPAIR_PREPARE and REPAIR_FINALIZE from `engine`; `clock`
/// dates the sessions.
pub fn serve(messaging: &Messaging, engine: Arc<Engine>, clock: Arc<dyn Clock>) {
    let sessions = Arc::new(Sessions::new(PENDING_SESSION_LIFETIME));
    for verb in [Verb::REPAIR_PREPARE, Verb::REPAIR_FINALIZE] {
        let (engine, sessions, clock) = (engine.clone(), sessions.clone(), clock.clone());
        messaging.register(verb, move |req: Request| {
            let (engine, sessions, clock) = (engine.clone(), sessions.clone(), clock.clone());
            async move {
                let step = match Step::decode(verb, &req.payload) {
                    Ok(step) => step,
                    Err(e) => return Some(Err(e.failure())),
                };
                let released = match &step {
                    Step::Prepare(p) => sessions.begin(p.session, p.table, clock.now()),
                    Step::Finalize(f) => {
                        sessions.end(f.session, f.table);
                        Vec::new()
                    }
                };
                release(&engine, released).await;
                Some(match step.run_here(engine).await {
                    Ok(Ok(held)) => Ok(encode_held(held)),
                    Ok(Err(e)) => Err(crate::verbs::replica::failure(&e)),
                    Err(e) => Err(Failure::new(FailureReason::UNKNOWN, e)),
                })
            }
        });
    }
}

/// Gives back the sstables of sessions that never ended.
async fn release(engine: &Arc<Engine>, released: Vec<(u128, u128)>) {
    for (session, table) in released {
        tracing::warn!(
            "incremental repair session {session:032x} never ended: its sstables of table \
             {table:032x} are unrepaired again"
        );
        let failed = Step::Finalize(FinalizeRequest {
            session,
            table,
            repaired_at_ms: None,
        });
        let _ = failed.run_here(engine.clone()).await;
    }
}

/// Asks `host` (this node directly) to prepare or finalize; the sstables
/// the session holds there.
pub async fn ask(
    puller: &Puller,
    host: &Host,
    verb: Verb,
    payload: Bytes,
) -> Result<usize, String> {
    if host.is_local {
        let step = Step::decode(verb, &payload).map_err(|e| e.to_string())?;
        return step
            .run_here(puller.engine())
            .await?
            .map_err(|e| format!("here: {e}"));
    }
    let answer = puller
        .messaging
        .request(host.address, verb, payload, PREPARE_TIMEOUT)
        .map_err(|e| e.to_string())?
        .await
        .map_err(|e| format!("{}: {e}", host.address))?;
    if answer.from_host != host.host_id {
        return Err(format!("{} answered as {}", host.address, answer.from_host));
    }
    decode_held(&answer.payload).map_err(|e| e.to_string())
}

/// Writes what this node holds of `(lo, hi]` of `table` again, through
/// the write path: after a leaf's sync in an incremental repair, so that
/// this node's unrepaired data holds the merged leaf as the others' does
/// (its own part of the leaf is in the session's sstables, about to be
/// marked repaired), and the next repair finds the leaf equal everywhere.
pub async fn copy_local(puller: &Puller, table: u128, (lo, hi): TokenRange) -> Result<(), String> {
    let engine = puller.engine();
    // Copying a partition twice (in memory, then again on the pool if it
    // would wait) changes nothing.
    let copy = move || -> Result<(), varve_storage::Error> {
        let all = [varve_types::data::Slice::all(&engine.comparator(table)?)];
        for (mut from, to) in bounds(lo, hi) {
            loop {
                let keys = engine.scan_keys(table, &from, &to, KEYS_PER_COPY)?;
                for key in &keys {
                    if let Some(update) = engine.read_partition(table, key, &all)? {
                        let key = key.clone();
                        store_streamed(&engine, None, TableUpdate { table, key, update })?;
                    }
                }
                match keys.last() {
                    Some(last) if keys.len() == KEYS_PER_COPY => {
                        from = varve_types::data::TokenBound::AfterKey(last.clone())
                    }
                    _ => break,
                }
            }
        }
        Ok(())
    };
    crate::verbs::replica::first_in_memory(copy)
        .await?
        .map_err(|e| format!("copying a repaired leaf here: {e}"))
}

/// For the internode fuzz target: what decodes encodes back to itself.
pub fn fuzz_decode(payload: &[u8]) {
    if let Ok(req) = decode_prepare(payload) {
        assert_eq!(decode_prepare(&encode_prepare(&req)), Ok(req));
    }
    if let Ok(req) = decode_finalize(payload) {
        assert_eq!(decode_finalize(&encode_finalize(&req)), Ok(req));
    }
    if let Ok(held) = decode_held(payload) {
        assert_eq!(decode_held(&encode_held(held)), Ok(held));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prepare_round_trips_and_its_range_limit_holds_at_n_and_n_plus_1() {
        let at_limit = PrepareRequest {
            session: u128::MAX - 3,
            table: 9,
            ranges: (0..MAX_PREPARE_RANGES as i64).map(|i| (i, -i)).collect(),
        };
        assert_eq!(
            decode_prepare(&encode_prepare(&at_limit)),
            Ok(at_limit.clone())
        );
        let mut over = at_limit.clone();
        over.ranges.push((1, 2));
        assert!(decode_prepare(&encode_prepare(&over)).is_err());
        let small = encode_prepare(&PrepareRequest {
            ranges: vec![(5, -5)],
            ..at_limit
        });
        for cut in 0..small.len() {
            assert!(decode_prepare(&small[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn finalize_round_trips_and_refuses_an_outcome_it_does_not_know() {
        for repaired_at_ms in [Some(1_700_000_000_000), Some(0), None] {
            let req = FinalizeRequest {
                session: 1,
                table: 2,
                repaired_at_ms,
            };
            assert_eq!(decode_finalize(&encode_finalize(&req)), Ok(req));
        }
        let mut bad = encode_finalize(&FinalizeRequest {
            session: 1,
            table: 2,
            repaired_at_ms: None,
        })
        .to_vec();
        bad[32] = 2;
        assert!(decode_finalize(&bad).is_err(), "outcome 2");
        bad[32] = 0;
        bad[40] = 1;
        assert!(
            decode_finalize(&bad).is_err(),
            "a failed session with a time"
        );
        assert_eq!(decode_held(&encode_held(12)), Ok(12));
    }

    #[test]
    fn a_session_past_its_lifetime_is_released_at_the_next_prepare() {
        let lifetime = Duration::from_secs(60);
        let sessions = Sessions::new(lifetime);
        #[allow(clippy::disallowed_methods)] // an origin only: the test moves time by hand
        let t0 = Began::from_std(std::time::Instant::now());
        assert!(sessions.begin(1, 10, t0).is_empty());
        assert!(sessions.begin(1, 11, t0).is_empty());
        let later = t0 + lifetime + Duration::from_secs(1);
        assert!(
            sessions.begin(1, 12, later).is_empty(),
            "a session never releases itself"
        );
        assert!(
            sessions.begin(2, 10, t0 + lifetime).is_empty(),
            "not past it yet"
        );
        let released = sessions.begin(3, 10, later);
        assert_eq!(released, vec![(1, 10), (1, 11), (1, 12)]);
        sessions.end(2, 10);
        sessions.end(3, 10);
        assert!(sessions.open.lock().is_empty());
    }
}
