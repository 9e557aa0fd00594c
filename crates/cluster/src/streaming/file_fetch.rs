//! The receiving side of whole-sstable streaming (docs/design/topology.md,
//! section 4): list what a source holds whole for the ranges, fetch each
//! file chunk by chunk, check it, install them all in one manifest
//! write, and tell the pages which of the source's sstables to leave out.
//!
//! - Each chunk comes with its CRC32; one that does not match, or does
//!   not come, is asked again, up to [`STREAM_PAGE_ATTEMPTS`] times.
//! - A whole file is checked by storage against the whole-file checksum
//!   the source gave (and opened); one that fails is fetched again from
//!   its start, up to [`STREAM_FILE_ATTEMPTS`] times, then left to the
//!   pages: only files installed are left out of them, so nothing is
//!   lost when a file never comes.
//! - A failure of this node's own storage (a full disk) fails the stream:
//!   the bootstrap (or decommission, or removal) reports it and tries
//!   again later; the node goes on.
//! - A listing that fails (the source is busy, or does not answer) moves
//!   the whole range in pages.
//!
//! Chunks are paced by the same throughput limit as the pages, and
//! counted as streamed bytes; each file installed as a streamed file.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use varve_storage::{Error as StorageError, ReceivedSstable};

use super::file_source::on_disk;
use super::pull::{PullStats, Puller, STREAM_PAGE_ATTEMPTS, STREAM_PAGE_TIMEOUT};
use crate::net::{HostId, Verb};
use crate::verbs::stream_file::{self, FileInfo, FileRequest, FileResponse};

/// The chunk this node asks for.
pub const STREAM_FILE_CHUNK_BYTES: usize = 1024 * 1024;

/// How many times a file that fails its check is fetched from its start
/// before it is left to the pages.
pub const STREAM_FILE_ATTEMPTS: u32 = 3;

/// How long a RELEASE may take (nothing waits on its answer but this).
const RELEASE_TIMEOUT: Duration = Duration::from_secs(5);

/// The pause before a chunk or a file is asked again.
const RETRY_PAUSE: Duration = Duration::from_millis(500);

/// What whole files a stream moved.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WholeFiles {
    /// The source's generations installed here: the pages leave them out.
    pub skip: Vec<u64>,
    pub moved: PullStats,
}

impl WholeFiles {
    /// The files of `came`, installed at the other end (or here).
    pub fn of<'a>(came: impl IntoIterator<Item = &'a FileInfo>) -> WholeFiles {
        let mut whole = WholeFiles::default();
        for f in came {
            whole.skip.push(f.generation);
            whole.moved.partitions += f.partitions;
            whole.moved.bytes += f.size;
            whole.moved.files += 1;
        }
        whole
    }
}

/// Where a stream's files come from.
#[derive(Debug, Clone, Copy)]
pub struct FileOrigin {
    pub table: u128,
    pub source: HostId,
    pub address: SocketAddr,
    pub session: u64,
}

/// Why a file did not come: the source's side (asked again, then left
/// to the pages) or this node's storage (the stream fails).
enum FetchError {
    Remote(String),
    Local(String),
}

impl Puller {
    /// Whether `table` may come as whole files: its engine keeps sstables,
    /// and it is not `system.paxos`, whose streamed rows merge into the
    /// Paxos state by ballot.
    pub(crate) fn may_stream_whole(&self, table: u128) -> bool {
        self.engine().keeps_sstables(table)
            && self.paxos.as_ref().is_none_or(|p| p.table() != table)
    }

    /// Lists the sstables `source` holds inside `ranges` of `table`,
    /// fetches and installs them, and ends the session.
    pub async fn fetch_whole(
        &self,
        table: u128,
        source: HostId,
        address: SocketAddr,
        ranges: &[(i64, i64)],
    ) -> Result<WholeFiles, String> {
        if !self.may_stream_whole(table) || ranges.is_empty() {
            return Ok(WholeFiles::default());
        }
        let mut origin = FileOrigin {
            table,
            source,
            address,
            session: 0,
        };
        let files = match self.list(&origin, ranges).await {
            Ok((session, files)) => {
                origin.session = session;
                files
            }
            Err(why) => {
                tracing::warn!("listing whole sstables at {address} failed, pages only: {why}");
                return Ok(WholeFiles::default());
            }
        };
        if origin.session == 0 {
            return Ok(WholeFiles::default());
        }
        let fetched = self.fetch_files(&origin, &files, ranges).await;
        self.release(&origin).await;
        fetched
    }

    /// Fetches `files` of `origin`'s session (those whose span lies inside
    /// `ranges`) and installs those that came whole and intact.
    pub async fn fetch_files(
        &self,
        origin: &FileOrigin,
        files: &[FileInfo],
        ranges: &[(i64, i64)],
    ) -> Result<WholeFiles, String> {
        let inside = |f: &&FileInfo| ranges.iter().any(|(s, e)| f.span().inside(*s, *e));
        let mut received = Vec::new();
        let mut came = Vec::new();
        for f in files.iter().filter(inside) {
            match self.fetch_file(origin, f).await {
                Ok(r) => {
                    received.push(r);
                    came.push(*f);
                }
                Err(FetchError::Remote(why)) => tracing::warn!(
                    "sstable {} from {} left to the pages: {why}",
                    f.generation,
                    origin.address
                ),
                Err(FetchError::Local(why)) => return Err(why),
            }
        }
        let engine = self.engine();
        let table = origin.table;
        on_disk(&self.engine(), move || {
            engine.install_received(table, received)
        })
        .await
        .map_err(|f| f.to_string())?
        .map_err(|e| format!("installing streamed sstables: {e}"))?;
        if let Some(s) = &self.streams {
            s.files_in.add(came.len() as u64);
        }
        Ok(WholeFiles::of(&came))
    }

    /// One file, fetched again from its start when it fails its check.
    async fn fetch_file(
        &self,
        origin: &FileOrigin,
        f: &FileInfo,
    ) -> Result<ReceivedSstable, FetchError> {
        let mut last = String::new();
        for attempt in 0..STREAM_FILE_ATTEMPTS {
            if attempt > 0 {
                self.clock.sleep(RETRY_PAUSE).await;
            }
            match self.fetch_once(origin, f).await {
                Ok(r) => return Ok(r),
                Err(FetchError::Remote(why)) => last = why,
                Err(local) => return Err(local),
            }
        }
        Err(FetchError::Remote(format!(
            "{STREAM_FILE_ATTEMPTS} attempts failed: {last}"
        )))
    }

    /// One file, chunk by chunk, into a temporary file; checked.
    async fn fetch_once(
        &self,
        origin: &FileOrigin,
        f: &FileInfo,
    ) -> Result<ReceivedSstable, FetchError> {
        let local = |e: String| FetchError::Local(format!("receiving an sstable: {e}"));
        let engine = self.engine();
        let (e, span, crc, table) = (self.engine(), f.span(), f.crc, origin.table);
        let mut incoming = on_disk(&engine, move || e.receive_sstable(table, &span, crc))
            .await
            .map_err(|x| local(x.to_string()))?
            .map_err(|x| local(x.to_string()))?;
        let mut offset = 0u64;
        while offset < f.size {
            let due = (f.size - offset).min(STREAM_FILE_CHUNK_BYTES as u64) as usize;
            let bytes = self
                .chunk(origin, f.generation, offset, due)
                .await
                .map_err(FetchError::Remote)?;
            if bytes.len() != due {
                return Err(FetchError::Remote(format!(
                    "a chunk of {} bytes at {offset} where {due} were due",
                    bytes.len()
                )));
            }
            let (back, written) = on_disk(&engine, move || {
                let r = incoming.write(&bytes);
                (incoming, r)
            })
            .await
            .map_err(|x| local(x.to_string()))?;
            incoming = back;
            written.map_err(|x| local(x.to_string()))?;
            if let Some(s) = &self.streams {
                s.bytes_in.add(due as u64);
            }
            self.pace(super::pace::Lane::From(origin.address), due as u64)
                .await;
            offset += due as u64;
        }
        let e = self.engine();
        match on_disk(&engine, move || e.finish_received(incoming))
            .await
            .map_err(|x| local(x.to_string()))?
        {
            Ok(r) => Ok(r),
            Err(corrupt @ StorageError::Corruption { .. }) => {
                Err(FetchError::Remote(corrupt.to_string()))
            }
            Err(other) => Err(local(other.to_string())),
        }
    }

    /// One chunk whose CRC matches, asked up to [`STREAM_PAGE_ATTEMPTS`]
    /// times.
    async fn chunk(
        &self,
        origin: &FileOrigin,
        generation: u64,
        offset: u64,
        max_bytes: usize,
    ) -> Result<Bytes, String> {
        let req = FileRequest::Chunk {
            session: origin.session,
            table: origin.table,
            generation,
            offset,
            max_bytes,
        };
        let payload = stream_file::encode_request(&req);
        let mut last = String::new();
        for attempt in 0..STREAM_PAGE_ATTEMPTS {
            if attempt > 0 {
                self.clock.sleep(RETRY_PAUSE).await;
            }
            match self
                .ask_file(origin, payload.clone(), STREAM_PAGE_TIMEOUT)
                .await
            {
                Ok(FileResponse::Chunk { bytes, crc }) if crc32fast::hash(&bytes) == crc => {
                    return Ok(bytes)
                }
                Ok(FileResponse::Chunk { .. }) => last = "a chunk failed its checksum".into(),
                Ok(other) => last = format!("a chunk answered with {other:?}"),
                Err(e) => last = e,
            }
        }
        Err(format!(
            "chunk at {offset} of sstable {generation}: {STREAM_PAGE_ATTEMPTS} attempts \
             failed: {last}"
        ))
    }

    /// The session and files `origin.source` holds inside `ranges`.
    async fn list(
        &self,
        origin: &FileOrigin,
        ranges: &[(i64, i64)],
    ) -> Result<(u64, Vec<FileInfo>), String> {
        let req = FileRequest::List {
            table: origin.table,
            ranges: ranges.to_vec(),
        };
        let payload = stream_file::encode_request(&req);
        match self.ask_file(origin, payload, STREAM_PAGE_TIMEOUT).await? {
            FileResponse::Listed { session, files } => Ok((session, files)),
            other => Err(format!("a listing answered with {other:?}")),
        }
    }

    /// Ends `origin`'s session at its source (what fails is only logged:
    /// an idle session ends by itself).
    async fn release(&self, origin: &FileOrigin) {
        let payload = stream_file::encode_request(&FileRequest::Release {
            session: origin.session,
        });
        if let Err(e) = self.ask_file(origin, payload, RELEASE_TIMEOUT).await {
            tracing::debug!("ending file session {}: {e}", origin.session);
        }
    }

    /// One STREAM_FILE request to `origin`'s source.
    async fn ask_file(
        &self,
        origin: &FileOrigin,
        payload: Bytes,
        timeout: Duration,
    ) -> Result<FileResponse, String> {
        let answer = self
            .messaging
            .request(origin.address, Verb::STREAM_FILE, payload, timeout)
            .map_err(|e| e.to_string())?
            .await
            .map_err(|e| e.to_string())?;
        if answer.from_host != origin.source {
            return Err(format!(
                "{} answered as {}, not {}",
                origin.address, answer.from_host, origin.source
            ));
        }
        stream_file::decode_response(&answer.payload).map_err(|e| e.to_string())
    }
}
