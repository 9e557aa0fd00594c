//! The sending side of whole-sstable streaming: STREAM_FILE's sessions
//! (docs/design/topology.md, section 4).
//!
//! A LIST flushes the table, holds every live sstable whose token span
//! lies inside one of the ranges asked (storage's `hold_sstables`: a
//! compaction that replaces one meanwhile cannot take its bytes away) and
//! opens a *session* naming them; CHUNK reads one piece of one of them;
//! RELEASE ends the session. A session nobody asked anything of for
//! [`FILE_SESSION_IDLE`] is dropped at the next LIST or CHUNK (its
//! receiver died or gave up), and at most [`MAX_FILE_SESSIONS`] are open at once
//! (past that, LIST fails OVERLOADED and the receiver streams the range
//! in pages). A leaving node opens sessions of its own for the files it
//! offers ([`FileSource::open`]).
//!
//! Flushes and reads run on tokio's blocking pool, or at once when the
//! engine's file system never waits (the simulation's).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use parking_lot::Mutex;
use tokio::time::Instant;
use varve_storage::{Engine, HeldSstable};

use crate::env::Clock;
use crate::net::{Failure, FailureReason, Messaging, Reply, Request, Verb};
use crate::verbs::stream_file::{self, FileInfo, FileRequest, FileResponse, MAX_STREAM_FILES};

/// How long a session may go without a request before it is dropped.
pub const FILE_SESSION_IDLE: Duration = Duration::from_secs(120);

/// Most sessions open at once on one node.
pub const MAX_FILE_SESSIONS: usize = 64;

/// One stream's held files.
struct Session {
    table: u128,
    files: BTreeMap<u64, Arc<HeldSstable>>,
    used: Instant,
}

/// This node as the source of whole sstables.
pub struct FileSource {
    engine: Arc<Engine>,
    clock: Arc<dyn Clock>,
    sessions: Mutex<(u64, BTreeMap<u64, Session>)>,
    /// Where the bytes and files sent are counted.
    streams: Option<Arc<super::Streams>>,
}

impl FileSource {
    pub fn new(engine: Arc<Engine>, clock: Arc<dyn Clock>) -> FileSource {
        FileSource {
            engine,
            clock,
            sessions: Mutex::new((1, BTreeMap::new())),
            streams: None,
        }
    }

    /// Counts the bytes and files sent in `streams`.
    pub fn with_streams(mut self, streams: Arc<super::Streams>) -> FileSource {
        self.streams = Some(streams);
        self
    }

    /// Answers STREAM_FILE on `messaging`.
    pub fn register(self: &Arc<Self>, messaging: &Messaging) {
        let me = Arc::clone(self);
        messaging.register(Verb::STREAM_FILE, move |req: Request| {
            let me = Arc::clone(&me);
            async move { Some(me.answer(req.payload).await) }
        });
    }

    /// The answer to one STREAM_FILE request.
    pub async fn answer(&self, payload: Bytes) -> Reply {
        let req = stream_file::decode_request(&payload).map_err(|e| e.failure())?;
        let rsp = match req {
            FileRequest::List { table, ranges } => {
                let (session, files) = self.open(table, &ranges).await?;
                FileResponse::Listed { session, files }
            }
            FileRequest::Chunk {
                session,
                table,
                generation,
                offset,
                max_bytes,
            } => {
                let held = self.held(session, table, generation)?;
                self.chunk(held, offset, max_bytes).await?
            }
            FileRequest::Release { session } => {
                self.release(session);
                FileResponse::Released
            }
        };
        Ok(stream_file::encode_response(&rsp))
    }

    /// Flushes `table`, holds its sstables that lie inside one of
    /// `ranges` and opens a session for them: its id (0 when none lies
    /// inside: no session) and the files.
    pub async fn open(
        &self,
        table: u128,
        ranges: &[(i64, i64)],
    ) -> Result<(u64, Vec<FileInfo>), Failure> {
        let engine = Arc::clone(&self.engine);
        let wanted = ranges.to_vec();
        let held = on_disk(&self.engine, move || {
            engine.flush_for_streaming(table)?;
            engine.hold_sstables(
                table,
                |span| wanted.iter().any(|(s, e)| span.inside(*s, *e)),
                MAX_STREAM_FILES,
            )
        })
        .await?
        .map_err(|e| crate::verbs::replica::failure(&e))?;
        if held.is_empty() {
            return Ok((0, Vec::new()));
        }
        let files = held.iter().map(info).collect();
        let now = self.clock.now();
        let mut sessions = self.sessions.lock();
        drop_idle(&mut sessions.1, now);
        if sessions.1.len() >= MAX_FILE_SESSIONS {
            return Err(Failure::new(
                FailureReason::OVERLOADED,
                format!("{MAX_FILE_SESSIONS} file streaming sessions are open"),
            ));
        }
        let id = sessions.0;
        sessions.0 += 1;
        let files_held = held
            .into_iter()
            .map(|h| (h.span().generation, Arc::new(h)))
            .collect();
        sessions.1.insert(
            id,
            Session {
                table,
                files: files_held,
                used: now,
            },
        );
        Ok((id, files))
    }

    /// Ends a session: its files are no longer held.
    pub fn release(&self, session: u64) {
        self.sessions.lock().1.remove(&session);
    }

    /// Sessions open now (tests).
    pub fn open_sessions(&self) -> usize {
        self.sessions.lock().1.len()
    }

    /// The held file `generation` of `session`, which must be of `table`.
    fn held(
        &self,
        session: u64,
        table: u128,
        generation: u64,
    ) -> Result<Arc<HeldSstable>, Failure> {
        let now = self.clock.now();
        let mut sessions = self.sessions.lock();
        drop_idle(&mut sessions.1, now);
        let Some(s) = sessions.1.get_mut(&session) else {
            return Err(Failure::new(
                FailureReason::UNKNOWN,
                format!("no file streaming session {session} (it ended, or this node restarted)"),
            ));
        };
        s.used = now;
        match s.files.get(&generation) {
            Some(held) if s.table == table => Ok(Arc::clone(held)),
            _ => Err(Failure::new(
                FailureReason::MALFORMED_PAYLOAD,
                format!("session {session} holds no sstable {generation} of table {table:032x}"),
            )),
        }
    }

    /// One chunk of a held file, counted as sent.
    async fn chunk(
        &self,
        held: Arc<HeldSstable>,
        offset: u64,
        max_bytes: usize,
    ) -> Result<FileResponse, Failure> {
        let file = Arc::clone(&held);
        let bytes = on_disk(&self.engine, move || file.read_chunk(offset, max_bytes))
            .await?
            .map_err(|e| crate::verbs::replica::failure(&e))?;
        if let Some(s) = &self.streams {
            s.bytes_out.add(bytes.len() as u64);
            let end = offset + bytes.len() as u64;
            if end == held.span().size_bytes && !bytes.is_empty() {
                s.files_out.add(1);
            }
        }
        let crc = crc32fast::hash(&bytes);
        Ok(FileResponse::Chunk {
            bytes: Bytes::from(bytes),
            crc,
        })
    }
}

/// Drops the sessions nobody asked anything of for [`FILE_SESSION_IDLE`].
fn drop_idle(sessions: &mut BTreeMap<u64, Session>, now: Instant) {
    sessions.retain(|_, s| now.saturating_duration_since(s.used) < FILE_SESSION_IDLE);
}

/// What a receiver is told of a held file.
fn info(h: &HeldSstable) -> FileInfo {
    let span = h.span();
    FileInfo {
        generation: span.generation,
        size: span.size_bytes,
        first_token: span.first_token,
        last_token: span.last_token,
        partitions: span.partitions,
        crc: h.file_crc(),
    }
}

/// Runs storage work `f`: at once when the engine's file system never
/// waits (the simulation's, so that runs of one seed stay the same), on
/// tokio's blocking pool otherwise.
pub(crate) async fn on_disk<T: Send + 'static>(
    engine: &Engine,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Failure> {
    if engine.never_waits_on_disk() {
        return Ok(f());
    }
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Failure::new(FailureReason::UNKNOWN, format!("streaming task: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::SystemClock;
    use crate::sim::bootstrap_storage::storage_on_sim_fs;
    use crate::verbs::replica::tests::sample_update;
    use varve_storage::sstable::SstableParams;
    use varve_storage::TableDescriptor;
    use varve_types::data::ClusteringComparator;
    use varve_types::CqlType;

    /// A source whose engine (on a simulated file system) holds one
    /// sstable of one partition of table `table`.
    fn source(table: u128) -> (varve_storage::Storage, FileSource) {
        let storage = storage_on_sim_fs(TableDescriptor {
            id: table,
            keyspace: "ks".into(),
            name: "t".into(),
            comparator: ClusteringComparator::new(vec![(CqlType::Int, false)]),
            params: SstableParams::default(),
            durable_writes: false,
            gc_grace_seconds: 864_000,
            compaction: Default::default(),
        });
        let u = sample_update(b"k");
        storage.apply(table, &u.key, u.update).unwrap();
        let files = FileSource::new(storage.engine(), Arc::new(SystemClock));
        (storage, files)
    }

    #[tokio::test(start_paused = true)]
    async fn sessions_are_bounded_at_n_and_end_when_idle() {
        let table = sample_update(b"k").table;
        let (_storage, files) = source(table);
        let whole_ring = [(0, 0)];
        let mut first = None;
        for _ in 0..MAX_FILE_SESSIONS {
            let (session, listed) = files.open(table, &whole_ring).await.unwrap();
            assert_eq!(listed.len(), 1);
            first.get_or_insert(session);
        }
        let err = files.open(table, &whole_ring).await.unwrap_err();
        assert_eq!(err.reason, FailureReason::OVERLOADED);
        // The first session still answers; once idle long enough, none do.
        let first = first.unwrap();
        let generation = files.sessions.lock().1[&first].files.keys().copied().next();
        assert!(files.held(first, table, generation.unwrap()).is_ok());
        assert!(files.held(first, table + 1, generation.unwrap()).is_err());
        // Idle a moment less than the limit: it still answers (and is
        // used again); idle for the limit: gone.
        tokio::time::advance(FILE_SESSION_IDLE - Duration::from_millis(1)).await;
        assert!(files.held(first, table, generation.unwrap()).is_ok());
        tokio::time::advance(FILE_SESSION_IDLE).await;
        assert!(files.held(first, table, generation.unwrap()).is_err());
        assert_eq!(files.open_sessions(), 0);
        assert!(files.open(table, &whole_ring).await.is_ok());
        // Nothing inside the range: no session.
        let t = sample_update(b"k").key.token;
        assert_eq!(files.open(table, &[(t, t + 1)]).await.unwrap().0, 0);
    }
}
