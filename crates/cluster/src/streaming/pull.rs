//! Fetching one token range from its source into this node's engine.
//!
//! First the source's sstables that lie wholly inside the range come as
//! whole files ([`super::file_fetch`]); then the rest in pages, which
//! leave those sstables out. The puller asks for a page (STREAM_PULL),
//! decodes it whole (a page that does not decode is asked again, never
//! applied in part), applies its partitions through the engine's normal
//! write path (in memory first, on the blocking pool if they would
//! wait), and asks for the next page after the last key. A range that
//! wraps the ring is two pulls. Pages and file chunks are paced so the
//! bytes received from each source stay under `stream_throughput_outbound`
//! ([`super::pace`]).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use varve_storage::io_mode::NonBlocking;
use varve_storage::Engine;
use varve_types::data::TokenBound;

use super::pace::{Lane, Pacer};
use super::plan::RangeSource;
use crate::env::Clock;
use crate::net::{Messaging, Verb};
use crate::verbs::mutation::TableUpdate;
use crate::verbs::stream::{self, PullRequest};

/// `stream_throughput_outbound` by default, in MiB/s (Cassandra's 24).
pub const STREAM_THROUGHPUT_OUTBOUND_MIB: u64 = 24;

/// The byte budget of one page.
pub const STREAM_PAGE_BYTES: usize = 1024 * 1024;

/// How long one page may take to come.
pub const STREAM_PAGE_TIMEOUT: Duration = Duration::from_secs(30);

/// How many times a page is asked before the range fails.
pub const STREAM_PAGE_ATTEMPTS: u32 = 3;

/// The pause before a page is asked again.
const RETRY_PAUSE: Duration = Duration::from_millis(500);

/// What a pull moved.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PullStats {
    /// Partitions moved, those of whole sstables included.
    pub partitions: u64,
    /// Bytes moved: pages and whole sstables.
    pub bytes: u64,
    pub pages: u64,
    /// Whole sstables moved.
    pub files: u64,
}

impl std::ops::AddAssign for PullStats {
    fn add_assign(&mut self, other: PullStats) {
        self.partitions += other.partitions;
        self.bytes += other.bytes;
        self.pages += other.pages;
        self.files += other.files;
    }
}

/// Fetches ranges into `engine`.
pub struct Puller {
    engine: Arc<Engine>,
    pub(crate) messaging: Messaging,
    pub(super) clock: Arc<dyn Clock>,
    /// `stream_throughput_outbound` per source, and for what this node
    /// pushes.
    pacer: Pacer,
    /// Where the bytes moved are counted (none: not counted).
    pub(crate) streams: Option<Arc<super::Streams>>,
    /// This node's Paxos acceptor: streamed `system.paxos` partitions
    /// merge into its state by ballot (none: applied as any table's).
    pub(super) paxos: Option<Arc<crate::paxos::PaxosReplica>>,
    /// This node's whole sstables, which a push offers (none: a push
    /// sends pages only).
    pub(super) files: Option<Arc<super::FileSource>>,
}

impl Puller {
    pub fn new(
        engine: Arc<Engine>,
        messaging: Messaging,
        clock: Arc<dyn Clock>,
        throughput: u64,
    ) -> Puller {
        Puller {
            engine,
            messaging,
            pacer: Pacer::new(throughput, clock.clone()),
            clock,
            streams: None,
            paxos: None,
            files: None,
        }
    }

    /// Offers this node's whole sstables through `files` when it pushes.
    pub fn with_file_source(mut self, files: Arc<super::FileSource>) -> Puller {
        self.files = Some(files);
        self
    }

    /// The table whose streamed partitions merge into the Paxos state.
    pub fn paxos_table(&self) -> Option<u128> {
        self.paxos.as_ref().map(|p| p.table())
    }

    /// This node's Paxos acceptor, if streamed `system.paxos` partitions
    /// merge into it.
    pub fn paxos_replica(&self) -> Option<Arc<crate::paxos::PaxosReplica>> {
        self.paxos.clone()
    }

    /// Merges streamed `system.paxos` partitions through `paxos`.
    pub fn with_paxos(mut self, paxos: Arc<crate::paxos::PaxosReplica>) -> Puller {
        self.paxos = Some(paxos);
        self
    }

    /// Counts what this puller moves in `streams` (and shows its
    /// operations in `nodetool netstats`).
    pub fn with_streams(mut self, streams: Arc<super::Streams>) -> Puller {
        self.streams = Some(streams);
        self
    }

    /// Starts showing `operation` on `table` (nothing without streams).
    pub fn begin(
        &self,
        operation: &'static str,
        table: &str,
        ranges: usize,
    ) -> Option<super::Stream> {
        self.streams
            .as_ref()
            .map(|s| s.begin(operation, table, ranges))
    }

    /// Fetches `range` of `table` from its source: its whole sstables,
    /// then pages.
    pub async fn pull(&self, table: u128, range: &RangeSource) -> Result<PullStats, String> {
        let ranges = [(range.start, range.end)];
        let whole = self
            .fetch_whole(table, range.source, range.address, &ranges)
            .await?;
        let mut stats = whole.moved;
        stats += self.pull_pages(table, range, &whole.skip).await?;
        Ok(stats)
    }

    /// Fetches `range` of `table` from its source in pages, leaving out
    /// the source's sstables of the generations in `skip` (they came
    /// whole).
    pub async fn pull_pages(
        &self,
        table: u128,
        range: &RangeSource,
        skip: &[u64],
    ) -> Result<PullStats, String> {
        let mut stats = PullStats::default();
        for (start, end) in bounds(range.start, range.end) {
            stats += self.pull_bounds(table, range, (start, end), skip).await?;
        }
        Ok(stats)
    }

    async fn pull_bounds(
        &self,
        table: u128,
        range: &RangeSource,
        (mut start, end): (TokenBound, TokenBound),
        skip: &[u64],
    ) -> Result<PullStats, String> {
        let mut stats = PullStats::default();
        loop {
            let req = PullRequest {
                table,
                start: start.clone(),
                end: end.clone(),
                max_bytes: STREAM_PAGE_BYTES,
                skip: skip.to_vec(),
            };
            let (page, size) = self.page(range, &req).await?;
            stats.pages += 1;
            stats.bytes += size as u64;
            if let Some(s) = &self.streams {
                s.bytes_in.add(size as u64);
            }
            stats.partitions += page.partitions.len() as u64;
            let last = page.partitions.last().map(|p| p.key.clone());
            let more = page.more;
            self.apply(page.partitions).await?;
            self.pace(Lane::From(range.address), size as u64).await;
            match (more, last) {
                (true, Some(key)) => start = TokenBound::AfterKey(key),
                (true, None) => return Err("the source said more but sent nothing".into()),
                (false, _) => return Ok(stats),
            }
        }
    }

    /// One page, asked up to [`STREAM_PAGE_ATTEMPTS`] times.
    async fn page(
        &self,
        range: &RangeSource,
        req: &PullRequest,
    ) -> Result<(stream::Page, usize), String> {
        let payload = stream::encode_request(req);
        let mut last_error = String::new();
        for attempt in 0..STREAM_PAGE_ATTEMPTS {
            if attempt > 0 {
                self.clock.sleep(RETRY_PAUSE).await;
            }
            match self.ask(range, req.table, payload.clone()).await {
                Ok(page) => return Ok(page),
                Err(e) => last_error = e,
            }
        }
        Err(format!(
            "streaming ({}, {}] from {} failed {STREAM_PAGE_ATTEMPTS} times: {last_error}",
            range.start, range.end, range.address
        ))
    }

    async fn ask(
        &self,
        range: &RangeSource,
        table: u128,
        payload: Bytes,
    ) -> Result<(stream::Page, usize), String> {
        let answer = self
            .messaging
            .request(
                range.address,
                Verb::STREAM_PULL,
                payload,
                STREAM_PAGE_TIMEOUT,
            )
            .map_err(|e| e.to_string())?
            .await
            .map_err(|e| e.to_string())?;
        if answer.from_host != range.source {
            return Err(format!(
                "{} answered as {}, not {}",
                range.address, answer.from_host, range.source
            ));
        }
        let payload = answer.payload;
        let page =
            stream::decode_page(&payload, table, &*self.engine).map_err(|e| e.to_string())?;
        Ok((page, payload.len()))
    }

    async fn apply(&self, partitions: Vec<TableUpdate>) -> Result<(), String> {
        if partitions.is_empty() {
            return Ok(());
        }
        store(Arc::clone(&self.engine), self.paxos.clone(), partitions).await
    }

    pub(crate) fn engine(&self) -> Arc<Engine> {
        Arc::clone(&self.engine)
    }

    /// Counts `bytes` moved on `lane`, and waits while the lane runs ahead
    /// of the limit.
    pub(super) async fn pace(&self, lane: Lane, bytes: u64) {
        self.pacer.pace(lane, bytes).await;
    }
}

/// Stores one streamed partition: merged by ballot into the Paxos state
/// when it is `system.paxos`', applied as any write otherwise.
pub fn store_streamed(
    engine: &Engine,
    paxos: Option<&crate::paxos::PaxosReplica>,
    p: TableUpdate,
) -> Result<(), varve_storage::Error> {
    match paxos {
        Some(paxos) if paxos.table() == p.table => paxos.merge_streamed(&p.key, &p.update),
        _ => engine.apply(p.table, &p.key, p.update),
    }
}

/// Stores streamed partitions ([`store_streamed`]): in memory first, as
/// a replica stores a MUTATION; if one would wait (a full memtable, a
/// commitlog sync, a Paxos state's fsync), all of them again on the
/// blocking pool (storing a partition twice changes nothing). A task on
/// the pool ends at a moment of real time: pages always stored there made
/// the simulation's runs of one seed differ.
async fn store(
    engine: Arc<Engine>,
    paxos: Option<Arc<crate::paxos::PaxosReplica>>,
    partitions: Vec<TableUpdate>,
) -> Result<(), String> {
    let apply = move || -> Result<(), varve_storage::Error> {
        for p in &partitions {
            store_streamed(&engine, paxos.as_deref(), p.clone())?;
        }
        Ok(())
    };
    let in_memory = {
        let _scope = NonBlocking::enter();
        apply()
    };
    let stored = match in_memory {
        Err(varve_storage::Error::WouldBlock { .. }) => tokio::task::spawn_blocking(apply)
            .await
            .map_err(|e| format!("streaming task: {e}"))?,
        other => other,
    };
    stored.map_err(|e| format!("storing a streamed partition: {e}"))
}

/// The token bounds of `(start, end]`: two when the range wraps the ring
/// (or is the whole ring, `start == end`).
pub fn bounds(start: i64, end: i64) -> Vec<(TokenBound, TokenBound)> {
    if start < end {
        return vec![(
            TokenBound::TokenExclusive(start),
            TokenBound::TokenInclusive(end),
        )];
    }
    vec![
        (TokenBound::TokenExclusive(start), TokenBound::Unbounded),
        (TokenBound::Unbounded, TokenBound::TokenInclusive(end)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verbs::replica::tests::{
        engine_with_table, sample_update, while_the_blocking_pool_is_busy,
    };
    use varve_types::data::Slice;

    #[test]
    fn a_page_is_stored_in_memory_without_the_blocking_pool() {
        let update = sample_update(b"k");
        let (_storage, engine) = engine_with_table(update.table);
        let stored =
            while_the_blocking_pool_is_busy(store(engine.clone(), None, vec![update.clone()]))
                .expect("storing the page waited for the blocking pool");
        assert_eq!(stored, Ok(()));
        let cmp = engine.comparator(update.table).unwrap();
        let read = engine.read_partition(update.table, &update.key, &[Slice::all(&cmp)]);
        assert!(read.unwrap().is_some());
    }

    #[test]
    fn a_wrapping_range_is_two_pulls() {
        assert_eq!(
            bounds(-5, 10),
            vec![(
                TokenBound::TokenExclusive(-5),
                TokenBound::TokenInclusive(10)
            )]
        );
        assert_eq!(bounds(10, -5).len(), 2);
        assert_eq!(bounds(7, 7).len(), 2, "one token: the whole ring");
    }
}
