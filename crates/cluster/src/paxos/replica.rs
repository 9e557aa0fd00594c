//! What a replica does with PAXOS_PREPARE, PAXOS_PROPOSE and PAXOS_COMMIT
//! (docs/design/paxos.md, sections 4 and 5), and with PAXOS_PROPOSE_CHECKED
//! (docs/design/paxos-two-rounds.md): under the partition's lock, it
//! loads the state, applies the message's rule ([`super::state`]) and
//! writes the state; then, the lock released, it awaits an fsync that
//! covers the write, and only then answers. A prepare that promises also
//! reads the partition's data under the slices (under the lock, so after
//! the latest commit was applied); a commit writes the update to the data
//! first. The step under the lock runs on the calling task when storage
//! can serve it from memory, else on tokio's blocking pool; the fsync is
//! awaited, not waited for, so no thread is held while the commitlog
//! syncs (concurrent steps share one fsync). A step's commitlog entries
//! are left to that sync, which writes and syncs them in one round,
//! instead of each append writing its own. A coordinator reaches its own
//! replica through the same functions, without the network.
//!
//! Why the lock need not cover the fsync: the commitlog is one sequence,
//! and a sync makes everything appended before it durable. A step that
//! read another's state not yet durable either only rejects (which binds
//! nothing) or writes state of its own after it, and answers only once a
//! sync covers its own write, and so the other's too.

use std::sync::Arc;

use bytes::Bytes;
use varve_storage::commitlog::DeferredWrites;
use varve_storage::io_mode::NonBlocking;
use varve_storage::{Error as StorageError, ReadCost};

use super::ballot::Ballot;
use super::checked::{self, CheckAnswer, Checked, Refusal};
use super::codec::{self, Carry, Prepare, PrepareResponse};
use super::state::{PrepareAnswer, Proposal};
use super::store::PaxosStore;
use crate::net::{Failure, FailureReason, Messaging, Reply, Request, Verb};
use crate::verbs::replica::failure;

/// Stripes of the per-partition locks of a replica's Paxos state.
pub const PAXOS_LOCK_STRIPES: usize = 1024;

/// This node as a Paxos acceptor.
pub struct PaxosReplica {
    store: PaxosStore,
    locks: Vec<parking_lot::Mutex<()>>,
    /// Run each message on the calling task instead of the blocking pool:
    /// for an engine that never waits (the simulation's, in memory), where
    /// a thread would make the run depend on the OS's scheduling.
    inline: bool,
}

impl PaxosReplica {
    pub fn new(store: PaxosStore) -> Arc<PaxosReplica> {
        Arc::new(PaxosReplica {
            store,
            locks: (0..PAXOS_LOCK_STRIPES)
                .map(|_| parking_lot::Mutex::new(()))
                .collect(),
            inline: false,
        })
    }

    /// An acceptor that runs each message on the calling task (see
    /// `inline`).
    pub fn new_inline(store: PaxosStore) -> Arc<PaxosReplica> {
        let mut replica = PaxosReplica::new(store);
        if let Some(r) = Arc::get_mut(&mut replica) {
            r.inline = true;
        }
        replica
    }

    /// Registers the three verbs' handlers.
    pub fn register(self: &Arc<Self>, messaging: &Messaging) {
        let me = Arc::clone(self);
        messaging.register(Verb::PAXOS_PREPARE, move |req: Request| {
            let me = Arc::clone(&me);
            async move { Some(me.handle_prepare(req.payload).await) }
        });
        let me = Arc::clone(self);
        messaging.register(Verb::PAXOS_PROPOSE, move |req: Request| {
            let me = Arc::clone(&me);
            async move { Some(me.handle_propose(req.payload).await) }
        });
        let me = Arc::clone(self);
        messaging.register(Verb::PAXOS_COMMIT, move |req: Request| {
            let me = Arc::clone(&me);
            async move { Some(me.handle_commit(req.payload).await) }
        });
        let me = Arc::clone(self);
        messaging.register(Verb::PAXOS_PROPOSE_CHECKED, move |req: Request| {
            let me = Arc::clone(&me);
            async move { Some(me.handle_propose_checked(req.payload).await) }
        });
    }

    async fn handle_propose_checked(self: Arc<Self>, payload: Bytes) -> Reply {
        let c =
            checked::decode_checked(&payload, &**self.store.engine()).map_err(|e| e.failure())?;
        let answer = self.propose_checked(c).await?;
        Ok(checked::encode_check_answer(answer))
    }

    async fn handle_prepare(self: Arc<Self>, payload: Bytes) -> Reply {
        let prepare =
            codec::decode_prepare(&payload, &**self.store.engine()).map_err(|e| e.failure())?;
        let response = self.prepare(prepare).await?;
        Ok(codec::encode_prepare_response(&response))
    }

    async fn handle_propose(self: Arc<Self>, payload: Bytes) -> Reply {
        let carry =
            codec::decode_carry(&payload, &**self.store.engine()).map_err(|e| e.failure())?;
        let answer = self.propose(carry).await?;
        Ok(codec::encode_propose_response(answer))
    }

    async fn handle_commit(self: Arc<Self>, payload: Bytes) -> Reply {
        let carry =
            codec::decode_carry(&payload, &**self.store.engine()).map_err(|e| e.failure())?;
        self.commit(carry).await?;
        Ok(Bytes::new())
    }

    /// Promises (durably) and reads, or rejects.
    pub async fn prepare(self: Arc<Self>, p: Prepare) -> Result<PrepareResponse, Failure> {
        let (response, wrote) = self.step(move |me| me.prepare_now(&p)).await?;
        if wrote {
            self.durable().await?;
        }
        Ok(response)
    }

    /// Accepts (durably), or names the newer promise.
    pub async fn propose(self: Arc<Self>, c: Carry) -> Result<Result<(), Ballot>, Failure> {
        let answer = self.step(move |me| me.propose_now(&c)).await?;
        if answer.is_ok() {
            self.durable().await?;
        }
        Ok(answer)
    }

    /// Accepts a checked proposal (durably) if this replica's state and
    /// data show what its decision was based on; a check without an update
    /// only answers, writing nothing.
    pub async fn propose_checked(self: Arc<Self>, c: Checked) -> Result<CheckAnswer, Failure> {
        let writes = c.update.is_some();
        let answer = self.step(move |me| me.propose_checked_now(&c)).await?;
        if answer.is_ok() && writes {
            self.durable().await?;
        }
        Ok(answer)
    }

    /// Applies a decided update and records it (durably).
    pub async fn commit(self: Arc<Self>, c: Carry) -> Result<(), Failure> {
        self.step(move |me| me.commit_now(&c)).await?;
        self.durable().await
    }

    /// Runs a step under the partition's lock: on this task when storage
    /// serves it from memory, else again on the blocking pool (inline, the
    /// simulation: always on this task, where it may block, as before). A
    /// step reads everything before it writes, so a retry finds the state
    /// the first try found.
    async fn step<T, F>(self: &Arc<Self>, f: F) -> Result<T, Failure>
    where
        T: Send + 'static,
        F: Fn(&PaxosReplica) -> Result<T, StorageError> + Send + 'static,
    {
        if self.inline {
            return written_by_sync(|| f(self)).map_err(|e| failure(&e));
        }
        // Writes that wait for their fsync (batch and group commitlog
        // modes) go straight to the pool.
        let first = match self.store.engine().writes_wait_for_sync() {
            false => {
                let _scope = NonBlocking::enter();
                written_by_sync(|| f(self))
            }
            true => Err(StorageError::WouldBlock {
                what: "a write that waits for its fsync",
            }),
        };
        match first {
            Err(StorageError::WouldBlock { .. }) => {
                let me = Arc::clone(self);
                blocking(move || written_by_sync(|| f(&me))).await
            }
            other => other.map_err(|e| failure(&e)),
        }
    }

    /// Waits, without a thread, until everything this replica wrote is on
    /// disk. Inline (the simulation), on this thread: a wake from the
    /// commitlog's thread would come at a moment of real time, and the
    /// runs of one seed would differ.
    async fn durable(&self) -> Result<(), Failure> {
        if self.inline {
            return self.store.engine().sync().map_err(|e| failure(&e));
        }
        match self.store.engine().sync_later() {
            Ok(Some(wait)) => wait.await.map_err(|e| failure(&e)),
            Ok(None) => Ok(()),
            Err(e) => Err(failure(&e)),
        }
    }

    /// Whether a round of `update` at `ballot` fits this node's commitlog: the
    /// limit's error (naming the sizes) when its update, or the state
    /// holding it, is larger than a mutation may be. A coordinator asks
    /// before it proposes, so that an update too large fails clearly, with
    /// nothing accepted anywhere, instead of failing at every replica as
    /// an unknown outcome. The replicas' limits are taken to be this
    /// node's (`commitlog_segment_size`, the same on every node).
    pub fn check_fits(
        &self,
        table: u128,
        key: &varve_types::data::PartitionKey,
        ballot: Ballot,
        update: &varve_types::data::Partition,
    ) -> Result<(), StorageError> {
        self.store
            .check_fits(table, key, ballot, update, self.store.now_seconds())
    }

    /// Merges another replica's `system.paxos` partition of `key`, streamed
    /// here (a node joining, leaving or replaced), into this node's state,
    /// by ballot: a plain write would compare each replica's own cell
    /// timestamps, which say nothing across replicas
    /// (docs/design/topology.md, section 3).
    pub fn merge_streamed(
        &self,
        key: &varve_types::data::PartitionKey,
        streamed: &varve_types::data::Partition,
    ) -> Result<(), StorageError> {
        let _guard = self.lock(key.token);
        let now = self.store.now_seconds();
        for (table, theirs) in self.store.decode_streamed(streamed, now)? {
            let loaded = self.store.load(table, key, now)?;
            let merged = loaded.state.clone().merge(theirs);
            if merged != loaded.state {
                self.store.save(table, key, &merged, loaded.written, now)?;
                self.store.engine().sync()?;
            }
        }
        Ok(())
    }

    /// What a repair compares of a `system.paxos` partition
    /// ([`PaxosStore::repair_digest`]), appended to `out`.
    pub fn repair_digest(
        &self,
        partition: &varve_types::data::Partition,
        out: &mut Vec<u8>,
    ) -> Result<(), StorageError> {
        self.store
            .repair_digest(partition, self.store.now_seconds(), out)
    }

    /// `system.paxos`' id.
    pub fn table(&self) -> u128 {
        self.store.table()
    }

    #[cfg(test)]
    pub(crate) fn store_for_tests(&self) -> &PaxosStore {
        &self.store
    }

    fn lock(&self, token: i64) -> parking_lot::MutexGuard<'_, ()> {
        self.locks[(token as u64 % PAXOS_LOCK_STRIPES as u64) as usize].lock()
    }

    /// The promise written (not yet durable) with the data read, or the
    /// rejection; whether it wrote.
    fn prepare_now(&self, p: &Prepare) -> Result<(PrepareResponse, bool), StorageError> {
        let _guard = self.lock(p.key.token);
        let now = self.store.now_seconds();
        let loaded = self.store.load(p.table, &p.key, now)?;
        let mut state = loaded.state;
        let answer = state.prepare(p.ballot);
        if matches!(answer, PrepareAnswer::Reject { .. }) {
            return Ok((PrepareResponse { answer, data: None }, false));
        }
        // Read before the promise is written: the lock keeps commits out,
        // so the data is the same, and a read that would wait on the disk
        // is retried with nothing written yet.
        let mut cost = ReadCost::default();
        let data = self
            .store
            .engine()
            .read_partition_costed(p.table, &p.key, &p.slices, &mut cost)?;
        self.store
            .save(p.table, &p.key, &state, loaded.written, now)?;
        Ok((PrepareResponse { answer, data }, true))
    }

    /// The acceptance written (not yet durable), or the newer promise.
    fn propose_now(&self, c: &Carry) -> Result<Result<(), Ballot>, StorageError> {
        let _guard = self.lock(c.key.token);
        let now = self.store.now_seconds();
        let loaded = self.store.load(c.table, &c.key, now)?;
        let mut state = loaded.state;
        let answer = state.propose(c.proposal.clone());
        if answer.is_ok() {
            self.store
                .save(c.table, &c.key, &state, loaded.written, now)?;
        }
        Ok(answer)
    }

    /// The checks on the state and the data, and the acceptance written
    /// (not yet durable) when they pass and there is an update.
    fn propose_checked_now(&self, c: &Checked) -> Result<CheckAnswer, StorageError> {
        let p = &c.read;
        let _guard = self.lock(p.key.token);
        let now = self.store.now_seconds();
        let loaded = self.store.load(p.table, &p.key, now)?;
        let mut cost = ReadCost::default();
        let data = self
            .store
            .engine()
            .read_partition_costed(p.table, &p.key, &p.slices, &mut cost)?;
        let digest = checked::data_digest(data.as_ref(), &p.slices, p.now_seconds);
        let answer = checked::check(&loaded.state, c, &digest);
        let (Ok(()), Some(update)) = (answer, &c.update) else {
            return Ok(answer);
        };
        let mut state = loaded.state;
        if let Err(promised) = state.propose(Proposal {
            ballot: p.ballot,
            update: update.clone(),
        }) {
            return Ok(Err(Refusal::Promise(promised)));
        }
        self.store
            .save(p.table, &p.key, &state, loaded.written, now)?;
        Ok(Ok(()))
    }

    /// The update and the commit written (not yet durable). A retry after
    /// the state's load would wait on the disk writes the update again:
    /// the same cells, no change.
    fn commit_now(&self, c: &Carry) -> Result<(), StorageError> {
        let _guard = self.lock(c.key.token);
        let now = self.store.now_seconds();
        self.store
            .engine()
            .apply(c.table, &c.key, c.proposal.update.clone())?;
        let loaded = self.store.load(c.table, &c.key, now)?;
        let mut state = loaded.state;
        if state.commit(c.proposal.clone()) {
            self.store
                .save(c.table, &c.key, &state, loaded.written, now)?;
        }
        Ok(())
    }
}

/// Runs a step with its commitlog appends left to the sync its caller
/// requests next (`DeferredWrites::leave_to_sync`): every step that writes
/// is followed by [`PaxosReplica::durable`] before its answer, and that
/// sync's round writes the entries, so a step costs no `write(2)` of its
/// own (in periodic mode; the other modes wait for their fsync anyway).
fn written_by_sync<T>(f: impl FnOnce() -> T) -> T {
    let scope = DeferredWrites::begin();
    let result = f();
    scope.leave_to_sync();
    result
}

/// Runs `f` on the blocking pool; a storage error becomes the failure a
/// coordinator gets.
async fn blocking<T, F>(f: F) -> Result<T, Failure>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, StorageError> + Send + 'static,
{
    match tokio::task::spawn_blocking(f).await {
        Ok(result) => result.map_err(|e| failure(&e)),
        Err(e) => Err(Failure::new(
            FailureReason::UNKNOWN,
            format!("paxos task: {e}"),
        )),
    }
}
