//! What a replica does with the data verbs: MUTATION, HINT, READ,
//! RANGE_READ (keys or rows), STREAM_PULL, STREAM_PUSH and TRUNCATE, each over this node's
//! storage engine.
//!
//! A request first runs in a non-blocking scope on the messaging task (a
//! write that only touches memory, a read served from the caches); one
//! that would wait on the disk (or on an fsync, in the commitlog's batch
//! and group modes) runs again on tokio's blocking pool. A payload that
//! does not decode, an unknown table, a full memtable or a failing disk
//! becomes the request's failure with its reason; nothing panics.

use std::sync::Arc;

use bytes::Bytes;
use varve_storage::io_mode::NonBlocking;
use varve_storage::{Engine, Error as StorageError, ReadCost};

use super::codec::PayloadError;
use super::{batch, mutation, range, range_rows, read, replica_range, stream};
use crate::batchlog::BatchlogStore;
use crate::net::{Failure, FailureReason, Messaging, Reply, Request, Verb};

/// This node as a replica of the data verbs.
#[derive(Clone)]
pub struct Replica {
    engine: Arc<Engine>,
    /// Where batches other coordinators log here are kept.
    batchlog: Option<Arc<BatchlogStore>>,
    /// Whether a write waits for an fsync (commitlog batch or group mode):
    /// such writes go straight to the blocking pool.
    writes_wait_for_sync: bool,
    /// Where streamed bytes are counted (pages served out, pushes in).
    streams: Option<Arc<crate::streaming::Streams>>,
    /// Pushed `system.paxos` partitions merge into this acceptor's state.
    paxos: Option<Arc<crate::paxos::PaxosReplica>>,
}

impl Replica {
    pub fn new(engine: Arc<Engine>, writes_wait_for_sync: bool) -> Replica {
        Replica {
            engine,
            batchlog: None,
            writes_wait_for_sync,
            streams: None,
            paxos: None,
        }
    }

    /// Merges pushed `system.paxos` partitions through `paxos`, by ballot.
    pub fn with_paxos(mut self, paxos: Arc<crate::paxos::PaxosReplica>) -> Replica {
        self.paxos = Some(paxos);
        self
    }

    /// Counts the bytes of the stream pages this replica serves and
    /// receives in `streams`.
    pub fn with_streams(mut self, streams: Arc<crate::streaming::Streams>) -> Replica {
        self.streams = Some(streams);
        self
    }

    /// This replica keeps logged batches in `store` (BATCH_STORE and
    /// BATCH_REMOVE are answered only then).
    pub fn with_batchlog(mut self, store: Arc<BatchlogStore>) -> Replica {
        self.batchlog = Some(store);
        self
    }

    /// Registers the handlers of MUTATION, HINT, READ, RANGE_READ and
    /// TRUNCATE.
    pub fn register(&self, messaging: &Messaging) {
        let me = self.clone();
        messaging.register(Verb::MUTATION, move |req: Request| {
            let me = me.clone();
            async move { Some(me.mutation(req.payload).await) }
        });
        let me = self.clone();
        messaging.register(Verb::HINT, move |req: Request| {
            let me = me.clone();
            async move { Some(me.hint(req.payload).await) }
        });
        let me = self.clone();
        messaging.register(Verb::READ, move |req: Request| {
            let me = me.clone();
            async move { Some(me.read(req.payload).await) }
        });
        let me = self.clone();
        messaging.register(Verb::RANGE_READ, move |req: Request| {
            let me = me.clone();
            async move {
                Some(if range_rows::asks_rows(&req.payload) {
                    me.scan_rows(req.payload).await
                } else {
                    me.scan_keys(req.payload).await
                })
            }
        });
        if let Some(log) = &self.batchlog {
            let store = Arc::clone(log);
            messaging.register(Verb::BATCH_STORE, move |req: Request| {
                let store = Arc::clone(&store);
                async move { Some(store_batch(store, req.payload).await) }
            });
            let store = Arc::clone(log);
            messaging.register(Verb::BATCH_REMOVE, move |req: Request| {
                if let Ok(id) = batch::decode_remove(&req.payload) {
                    store.remove(&id);
                }
                async { None }
            });
        }
        let me = self.clone();
        messaging.register(Verb::STREAM_PULL, move |req: Request| {
            let me = me.clone();
            async move { Some(me.stream_page(req.payload).await) }
        });
        let engine = Arc::clone(&self.engine);
        let streams = self.streams.clone();
        let paxos = self.paxos.clone();
        messaging.register(Verb::STREAM_PUSH, move |req: Request| {
            let engine = Arc::clone(&engine);
            let paxos = paxos.clone();
            if let Some(s) = &streams {
                s.bytes_in.add(req.payload.len() as u64);
            }
            async move { Some(store_pushed(engine, paxos, req.payload).await) }
        });
        let me = self.clone();
        messaging.register(Verb::TRUNCATE, move |req: Request| {
            let me = me.clone();
            async move { Some(me.truncate(req.payload).await) }
        });
    }

    /// Stores a MUTATION's updates.
    pub async fn mutation(&self, payload: Bytes) -> Reply {
        let updates = mutation::decode(&payload, &*self.engine).map_err(|e| e.failure())?;
        let engine = Arc::clone(&self.engine);
        let apply = move || -> Result<Bytes, StorageError> {
            for u in &updates {
                engine.apply(u.table, &u.key, u.update.clone())?;
            }
            Ok(Bytes::new())
        };
        if self.writes_wait_for_sync {
            return blocking(apply).await;
        }
        // The updates were cloned for the first try: a retry on the pool
        // applies the same updates again (same timestamps, no change).
        match in_memory(&apply) {
            Err(e) if is_would_block(&e) => blocking(apply).await,
            other => other.map_err(|e| failure(&e)),
        }
    }

    /// Stores a HINT: `created_micros` i64, then a MUTATION payload,
    /// applied as that mutation.
    pub async fn hint(&self, payload: Bytes) -> Reply {
        let body = mutation::hint_body(&payload).map_err(|e| e.failure())?;
        self.mutation(body).await
    }

    /// Answers a READ with the partition as stored, cut at the row limit.
    pub async fn read(&self, payload: Bytes) -> Reply {
        let req = read::decode_request(&payload, &*self.engine).map_err(|e| e.failure())?;
        let engine = Arc::clone(&self.engine);
        let run = move || -> Result<Bytes, StorageError> {
            let mut cost = ReadCost::default();
            let (p, stopped) = engine.read_stored_limited(
                req.table,
                &req.key,
                &req.slices,
                req.reversed,
                req.now_seconds,
                req.row_limit,
                &mut cost,
            )?;
            Ok(match req.kind {
                read::ReadKind::Data => read::encode_response(p.as_ref(), stopped),
                read::ReadKind::Digest => read::encode_digest_response(p.as_ref(), stopped),
            })
        };
        self.first_in_memory(run).await
    }

    /// Answers a key scan.
    pub async fn scan_keys(&self, payload: Bytes) -> Reply {
        let req = range::decode_request(&payload).map_err(|e| e.failure())?;
        let engine = Arc::clone(&self.engine);
        let run = move || -> Result<Bytes, StorageError> {
            // One more than asked tells whether there are more.
            let mut keys = engine.scan_keys(req.table, &req.start, &req.end, req.limit + 1)?;
            let more = keys.len() > req.limit;
            keys.truncate(req.limit);
            Ok(range::encode_response(&keys, more))
        };
        self.first_in_memory(run).await
    }

    /// Answers a range read of rows.
    pub async fn scan_rows(&self, payload: Bytes) -> Reply {
        let req = range_rows::decode_request(&payload, &*self.engine).map_err(|e| e.failure())?;
        let engine = Arc::clone(&self.engine);
        let run = move || -> Result<Bytes, StorageError> {
            let mut answer = range_rows::AnswerWriter::default();
            let more =
                replica_range::scan_stored(&engine, &req, &mut answer, &mut ReadCost::default())?;
            Ok(answer.finish(more))
        };
        self.first_in_memory(run).await
    }

    /// A STREAM_PULL's page: the range's partitions, whole, in token order,
    /// until the budget is spent. Read in memory first, as the other
    /// verbs; a page that would wait on the disk is read again on the
    /// blocking pool. (A task on the pool ends at a moment of real time:
    /// a page always read there made the simulation's runs of one seed
    /// differ.)
    pub async fn stream_page(&self, payload: Bytes) -> Reply {
        let req = stream::decode_request(&payload).map_err(|e| e.failure())?;
        let engine = Arc::clone(&self.engine);
        let run = move || page_of(&engine, &req);
        let page = match in_memory(&run) {
            Err(e) if is_would_block(&e) => match tokio::task::spawn_blocking(run).await {
                Ok(page) => page,
                Err(e) => {
                    return Err(Failure::new(
                        FailureReason::UNKNOWN,
                        format!("replica task: {e}"),
                    ))
                }
            },
            other => other,
        };
        let reply = page.unwrap_or_else(|e| Err(failure(&e)));
        if let (Ok(bytes), Some(s)) = (&reply, &self.streams) {
            s.bytes_out.add(bytes.len() as u64);
        }
        reply
    }

    /// Empties a table (always on the blocking pool: it removes files).
    pub async fn truncate(&self, payload: Bytes) -> Reply {
        let mut r = crate::net::wire::Reader::new(&payload);
        let table = super::codec::read_table(&mut r).map_err(|e| e.failure())?;
        r.finish().map_err(|e| PayloadError::from(e).failure())?;
        let engine = Arc::clone(&self.engine);
        blocking(move || engine.truncate(table).map(|()| Bytes::new())).await
    }

    async fn first_in_memory<F>(&self, run: F) -> Reply
    where
        F: Fn() -> Result<Bytes, StorageError> + Send + 'static,
    {
        match in_memory(&run) {
            Err(e) if is_would_block(&e) => blocking(run).await,
            other => other.map_err(|e| failure(&e)),
        }
    }
}

/// Fills one STREAM_PULL page from `engine`: the answer, or the storage
/// error that stopped it (`WouldBlock` among them).
fn page_of(engine: &Engine, req: &stream::PullRequest) -> Result<Reply, StorageError> {
    match stream::read_page(engine, req) {
        Ok(page) => Ok(Ok(page.bytes)),
        Err(stream::PageError::Storage(e)) => Err(e),
        Err(stream::PageError::TooLarge(e)) => Ok(Err(Failure::new(FailureReason::UNKNOWN, e))),
    }
}

/// Stores a STREAM_PUSH page: in memory first, on the blocking pool if
/// it would wait (as a MUTATION).
async fn store_pushed(
    engine: Arc<Engine>,
    paxos: Option<Arc<crate::paxos::PaxosReplica>>,
    payload: Bytes,
) -> Reply {
    let updates = stream::decode_push(&payload, &*engine).map_err(|e| e.failure())?;
    let store = move || -> Result<Bytes, StorageError> {
        for u in &updates {
            crate::streaming::pull::store_streamed(&engine, paxos.as_deref(), u.clone())?;
        }
        Ok(Bytes::new())
    };
    match in_memory(&store) {
        Err(e) if is_would_block(&e) => blocking(store).await,
        other => other.map_err(|e| failure(&e)),
    }
}

/// Keeps a BATCH_STORE's batch durably before answering.
async fn store_batch(store: Arc<BatchlogStore>, payload: Bytes) -> Reply {
    let batch = batch::decode_store(&payload).map_err(|e| e.failure())?;
    match tokio::task::spawn_blocking(move || store.store(&batch)).await {
        Ok(Ok(())) => Ok(Bytes::new()),
        Ok(Err(e)) => Err(Failure::new(
            FailureReason::UNKNOWN,
            format!("batchlog: {e}"),
        )),
        Err(e) => Err(Failure::new(
            FailureReason::UNKNOWN,
            format!("batchlog task: {e}"),
        )),
    }
}

/// Runs `f` where it may not wait on the disk.
fn in_memory<T>(f: &impl Fn() -> Result<T, StorageError>) -> Result<T, StorageError> {
    let _scope = NonBlocking::enter();
    f()
}

/// Runs `f` in memory first, as the verbs do; if it would wait on the
/// disk, again on tokio's blocking pool (the error: the pool's task
/// failed). A task on the pool ends at a moment of real time: work
/// always sent there makes the simulation's runs of one seed differ.
pub(crate) async fn first_in_memory<T, F>(f: F) -> Result<Result<T, StorageError>, String>
where
    T: Send + 'static,
    F: Fn() -> Result<T, StorageError> + Send + 'static,
{
    match in_memory(&f) {
        Err(e) if is_would_block(&e) => tokio::task::spawn_blocking(f)
            .await
            .map_err(|e| format!("storage task: {e}")),
        other => Ok(other),
    }
}

/// Runs `f` on the blocking pool.
async fn blocking<F>(f: F) -> Reply
where
    F: FnOnce() -> Result<Bytes, StorageError> + Send + 'static,
{
    match tokio::task::spawn_blocking(f).await {
        Ok(result) => result.map_err(|e| failure(&e)),
        Err(e) => Err(Failure::new(
            FailureReason::UNKNOWN,
            format!("replica task: {e}"),
        )),
    }
}

fn is_would_block(e: &StorageError) -> bool {
    matches!(e, StorageError::WouldBlock { .. })
}

/// A storage error as the failure the coordinator gets.
pub fn failure(e: &StorageError) -> Failure {
    let reason = match e {
        StorageError::UnknownTable(_) => FailureReason::INCOMPATIBLE_SCHEMA,
        StorageError::MemtablesFull { .. } => FailureReason::OVERLOADED,
        StorageError::Io { source, .. } if is_disk_full(source) => FailureReason::DISK_FULL,
        _ => FailureReason::UNKNOWN,
    };
    Failure::new(reason, e.to_string())
}

fn is_disk_full(e: &std::io::Error) -> bool {
    e.raw_os_error() == Some(libc::ENOSPC)
}

#[cfg(test)]
pub(crate) mod tests {
    use std::future::Future;
    use std::time::Duration;

    use varve_storage::sstable::SstableParams;
    use varve_storage::{Storage, TableDescriptor};
    use varve_types::data::{ClusteringComparator, TokenBound};
    use varve_types::CqlType;

    use super::*;
    use crate::env::SystemClock;
    pub(crate) use crate::verbs::tests::sample_update;

    /// Runs `f` on a runtime whose one blocking thread is busy until `f`
    /// has finished; `None` if `f` took 10 s (it waited for the pool).
    pub(crate) fn while_the_blocking_pool_is_busy<F: Future>(f: F) -> Option<F::Output> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .max_blocking_threads(1)
            .build()
            .expect("a runtime");
        let (release, busy) = std::sync::mpsc::channel::<()>();
        let occupied = rt.spawn_blocking(move || {
            let _ = busy.recv();
        });
        let limit = Duration::from_secs(10);
        let out = rt
            .block_on(crate::env::timeout(&SystemClock, limit, f))
            .ok();
        let _ = release.send(());
        let _ = rt.block_on(occupied);
        out
    }

    /// An in-memory engine with table `id` (an int clustering column, as
    /// `sample_update`'s).
    pub(crate) fn engine_with_table(id: u128) -> (Storage, Arc<Engine>) {
        let storage = Storage::new();
        let engine = storage.engine();
        let table = TableDescriptor {
            id,
            keyspace: "ks".into(),
            name: "t".into(),
            comparator: ClusteringComparator::new(vec![(CqlType::Int, false)]),
            params: SstableParams::default(),
            durable_writes: true,
            gc_grace_seconds: 864_000,
            compaction: Default::default(),
        };
        engine.create_table(table).expect("the table");
        (storage, engine)
    }

    #[test]
    fn a_page_in_memory_is_read_without_the_blocking_pool() {
        let update = sample_update(b"k");
        let (_storage, engine) = engine_with_table(update.table);
        engine
            .apply(update.table, &update.key, update.update.clone())
            .unwrap();
        let replica = Replica::new(engine.clone(), false);
        let payload = stream::encode_request(&stream::PullRequest {
            table: update.table,
            start: TokenBound::Unbounded,
            end: TokenBound::Unbounded,
            max_bytes: 1 << 20,
            skip: vec![],
        });
        let reply = while_the_blocking_pool_is_busy(replica.stream_page(payload))
            .expect("the page waited for the blocking pool");
        let page = stream::decode_page(&reply.unwrap(), update.table, &*engine).unwrap();
        assert_eq!(page.partitions.len(), 1);
        assert_eq!(page.partitions[0].key, update.key);
        assert!(!page.more);
    }
}
