//! Sending one token range of this node's engine to a node that takes it
//! over (a decommission: docs/design/topology.md, section 5).
//!
//! First this node's sstables that lie wholly inside the range, offered
//! whole ([`super::offer`]); then the same pages as STREAM_PULL, without
//! those the receiver installed, read here and sent as STREAM_PUSH; the
//! receiver applies a page whole before it answers, and a page it refuses
//! or does not answer is sent again, up to [`STREAM_PAGE_ATTEMPTS`] times.
//! Paced by the same throughput limit as pulls.

use bytes::Bytes;
use varve_types::data::TokenBound;

use super::plan::RangeSource;
use super::pull::{
    bounds, PullStats, Puller, STREAM_PAGE_ATTEMPTS, STREAM_PAGE_BYTES, STREAM_PAGE_TIMEOUT,
};
use crate::net::Verb;
use crate::verbs::stream::{self, PullRequest};

/// The pause before a page is sent again.
const RETRY_PAUSE: std::time::Duration = std::time::Duration::from_millis(500);

impl Puller {
    /// Sends `range` of `table` to `range.address` (its `source` field
    /// names the receiver here): its whole sstables, then pages.
    pub async fn push(&self, table: u128, range: &RangeSource) -> Result<PullStats, String> {
        let whole = self
            .offer_whole(table, range, &[(range.start, range.end)])
            .await?;
        let mut stats = whole.moved;
        stats += self.push_pages(table, range, &whole.skip).await?;
        Ok(stats)
    }

    /// Sends `range` of `table` in pages, without this node's sstables of
    /// the generations in `skip` (the receiver installed them whole).
    pub async fn push_pages(
        &self,
        table: u128,
        range: &RangeSource,
        skip: &[u64],
    ) -> Result<PullStats, String> {
        let mut stats = PullStats::default();
        for (start, end) in bounds(range.start, range.end) {
            stats += self.push_bounds(table, range, (start, end), skip).await?;
        }
        Ok(stats)
    }

    async fn push_bounds(
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
            let engine = self.engine();
            let page = tokio::task::spawn_blocking(move || stream::read_page(&engine, &req))
                .await
                .map_err(|e| format!("streaming task: {e}"))?
                .map_err(|e| format!("reading a page to stream: {e:?}"))?;
            stats.pages += 1;
            stats.partitions += page.partitions as u64;
            stats.bytes += page.bytes.len() as u64;
            if let Some(s) = &self.streams {
                s.bytes_out.add(page.bytes.len() as u64);
            }
            self.send(range, stream::encode_push(table, &page.bytes))
                .await?;
            self.pace(page.bytes.len() as u64).await;
            match (page.more, page.last) {
                (true, Some(key)) => start = TokenBound::AfterKey(key),
                (true, None) => return Err("a page said more but held nothing".into()),
                (false, _) => return Ok(stats),
            }
        }
    }

    async fn send(&self, range: &RangeSource, payload: Bytes) -> Result<(), String> {
        let mut last_error = String::new();
        for attempt in 0..STREAM_PAGE_ATTEMPTS {
            if attempt > 0 {
                self.clock.sleep(RETRY_PAUSE).await;
            }
            let sent = self
                .messaging
                .request(
                    range.address,
                    Verb::STREAM_PUSH,
                    payload.clone(),
                    STREAM_PAGE_TIMEOUT,
                )
                .map_err(|e| e.to_string());
            let answer = match sent {
                Ok(pending) => pending.await.map_err(|e| e.to_string()),
                Err(e) => Err(e),
            };
            match answer {
                Ok(a) if a.from_host == range.source => return Ok(()),
                Ok(a) => {
                    last_error = format!("{} answered as {}", range.address, a.from_host);
                }
                Err(e) => last_error = e,
            }
        }
        Err(format!(
            "sending ({}, {}] to {} failed {STREAM_PAGE_ATTEMPTS} times: {last_error}",
            range.start, range.end, range.address
        ))
    }
}
