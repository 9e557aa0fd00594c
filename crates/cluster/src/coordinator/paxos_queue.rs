//! One coordinator's queue of conditional statements per partition
//! (docs/design/paxos.md, section 7). The first statement of a partition
//! leads: it runs Paxos rounds for itself and for every statement that
//! arrived meanwhile (at most [`CAS_QUEUE_MAX`] per round), which the
//! round decides in arrival order, each on the state the one before it
//! left. Each waiting statement gets its own answer; when the leader has
//! its own, it hands the lead to the first statement still waiting (also
//! when its task is dropped), so no statement waits behind an endless
//! stream of others. A full queue lets a statement run rounds of its own:
//! Paxos orders it with the leader's, only less cheaply.

use std::collections::{BTreeMap, VecDeque};

use bytes::Bytes;
use tokio::sync::oneshot;
use varve_types::data_error::DataError;

use super::paxos::{Cas, CasResult, DecideFn, Decided, PaxosParts};
use super::service::Coordinator;

/// The most statements one round decides.
pub const CAS_QUEUE_MAX: usize = 128;

/// A partition: its table and key.
type QueueKey = (u128, Bytes);

/// A statement waiting for its partition's next round.
struct Waiter {
    decide: DecideFn,
    wake: oneshot::Sender<Wake>,
}

/// What a waiting statement is told.
enum Wake {
    Answer(Result<CasResult, DataError>),
    /// The leader is done: this statement leads now.
    Lead,
}

/// How a statement joined its partition's queue.
enum Joined {
    Lead,
    Wait(oneshot::Receiver<Wake>),
    Full,
}

/// The waiting statements of every partition with a leader.
#[derive(Default)]
pub struct CasQueues {
    by_key: parking_lot::Mutex<BTreeMap<QueueKey, VecDeque<Waiter>>>,
}

impl CasQueues {
    fn join(&self, key: &QueueKey, decide: &DecideFn) -> Joined {
        let mut queues = self.by_key.lock();
        let Some(queue) = queues.get_mut(key) else {
            queues.insert(key.clone(), VecDeque::new());
            return Joined::Lead;
        };
        if queue.len() >= CAS_QUEUE_MAX {
            return Joined::Full;
        }
        let (wake, waiting) = oneshot::channel();
        queue.push_back(Waiter {
            decide: decide.clone(),
            wake,
        });
        Joined::Wait(waiting)
    }

    /// Up to `n` waiting statements, in arrival order.
    fn take(&self, key: &QueueKey, n: usize) -> Vec<Waiter> {
        let mut queues = self.by_key.lock();
        let Some(queue) = queues.get_mut(key) else {
            return Vec::new();
        };
        let n = n.min(queue.len());
        queue.drain(..n).collect()
    }

    /// Statements a round had no room for go back to the front, in order.
    fn put_back(&self, key: &QueueKey, waiters: Vec<Waiter>) {
        let mut queues = self.by_key.lock();
        let queue = queues.entry(key.clone()).or_default();
        for w in waiters.into_iter().rev() {
            queue.push_front(w);
        }
    }

    /// The leader is done: the first statement still waiting leads, or
    /// the partition has no queue any more.
    fn hand_off(&self, key: &QueueKey) {
        let mut queues = self.by_key.lock();
        let Some(queue) = queues.get_mut(key) else {
            return;
        };
        while let Some(next) = queue.pop_front() {
            if next.wake.send(Wake::Lead).is_ok() {
                return;
            }
        }
        queues.remove(key);
    }
}

/// Hands the lead on when the leader is done or dropped.
struct Leadership<'a> {
    queues: &'a CasQueues,
    key: QueueKey,
}

impl Drop for Leadership<'_> {
    fn drop(&mut self) {
        self.queues.hand_off(&self.key);
    }
}

impl Coordinator {
    /// A conditional statement through its partition's queue.
    pub(super) async fn cas_in_queue(
        &self,
        parts: &PaxosParts,
        c: &Cas<'_>,
        own: DecideFn,
    ) -> Result<CasResult, DataError> {
        let key: QueueKey = (c.table, c.key.key.clone());
        match parts.queues.join(&key, &own) {
            Joined::Lead => {}
            Joined::Full => {
                let batch = self.rounds(parts, c, &[own]).await?;
                let (current, complete) = (batch.current, batch.complete);
                return answer(
                    batch.decided.into_iter().next(),
                    &current,
                    complete,
                    batch.contention,
                    batch.path,
                );
            }
            Joined::Wait(waiting) => match waiting.await {
                Ok(Wake::Answer(answer)) => return answer,
                Ok(Wake::Lead) => {}
                // The leader's statement was dropped (its client went)
                // while its round may have carried this one: unknown.
                Err(_) => return Err(self.unknown_outcome(c)),
            },
        }
        let _lead = Leadership {
            queues: &parts.queues,
            key: key.clone(),
        };
        let waiters = parts.queues.take(&key, CAS_QUEUE_MAX - 1);
        let mut decides = Vec::with_capacity(1 + waiters.len());
        decides.push(own);
        decides.extend(waiters.iter().map(|w| w.decide.clone()));
        match self.rounds(parts, c, &decides).await {
            Ok(batch) => {
                let contention = batch.contention;
                let (complete, current, path) = (batch.complete, batch.current.clone(), batch.path);
                let mut decided = batch.decided.into_iter();
                let mine = answer(decided.next(), &current, complete, contention, path);
                let mut undecided = Vec::new();
                for w in waiters {
                    match decided.next() {
                        Some(d) => {
                            let _ = w.wake.send(Wake::Answer(answer(
                                Some(d),
                                &current,
                                complete,
                                contention,
                                path,
                            )));
                        }
                        None => undecided.push(w),
                    }
                }
                parts.queues.put_back(&key, undecided);
                mine
            }
            Err(e) => {
                for w in waiters {
                    let _ = w.wake.send(Wake::Answer(Err(e.clone())));
                }
                Err(e)
            }
        }
    }
}

/// A decided statement's answer.
fn answer(
    decided: Option<Decided>,
    current: &varve_types::data::Partition,
    complete: bool,
    contention: u64,
    path: super::paxos::CasPath,
) -> Result<CasResult, DataError> {
    let Some(d) = decided else {
        // Never: a round decides at least its first statement.
        return Err(DataError::Server(format!(
            "a round left its first statement undecided ({} rows seen)",
            current.rows.len()
        )));
    };
    Ok(CasResult {
        current: d.seen,
        applied: d.applied?,
        complete,
        contention,
        forwarded: false,
        home_refused: false,
        path,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn decide() -> DecideFn {
        Arc::new(|_, _| Ok((false, None)))
    }

    /// A partition's first statement leads; the next `CAS_QUEUE_MAX` wait;
    /// one more finds the queue full.
    #[test]
    fn the_queue_holds_cas_queue_max_waiters_and_no_more() {
        let queues = CasQueues::default();
        let key: QueueKey = (1, Bytes::from_static(b"k"));
        assert!(matches!(queues.join(&key, &decide()), Joined::Lead));
        let mut waiting = Vec::new();
        for _ in 0..CAS_QUEUE_MAX {
            match queues.join(&key, &decide()) {
                Joined::Wait(w) => waiting.push(w),
                _ => panic!("room for {CAS_QUEUE_MAX}"),
            }
        }
        assert!(matches!(queues.join(&key, &decide()), Joined::Full));
        // Another partition has its own queue.
        let other: QueueKey = (1, Bytes::from_static(b"j"));
        assert!(matches!(queues.join(&other, &decide()), Joined::Lead));
    }

    /// The leader done, the first waiter leads; a waiter that went away is
    /// passed over; with nobody left the partition has no queue.
    #[test]
    fn the_lead_passes_to_the_first_waiter_still_there() {
        let queues = CasQueues::default();
        let key: QueueKey = (1, Bytes::from_static(b"k"));
        assert!(matches!(queues.join(&key, &decide()), Joined::Lead));
        let Joined::Wait(gone) = queues.join(&key, &decide()) else {
            panic!("waits")
        };
        let Joined::Wait(mut next) = queues.join(&key, &decide()) else {
            panic!("waits")
        };
        drop(gone);
        queues.hand_off(&key);
        assert!(matches!(next.try_recv(), Ok(Wake::Lead)));
        queues.hand_off(&key);
        assert!(matches!(queues.join(&key, &decide()), Joined::Lead));
    }
}
