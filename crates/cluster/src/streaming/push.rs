//! Sending one token range of this node's engine to a node that takes it
//! over (a decommission: docs/design/topology.md, section 5).
//!
//! First this node's sstables that lie wholly inside the range, offered
//! whole ([`super::offer`]); then the same pages as STREAM_PULL, without
//! those the receiver installed, read here and sent as STREAM_PUSH; the
//! receiver applies a page whole before it answers, and a page it refuses
//! or does not answer is sent again, up to [`STREAM_PAGE_ATTEMPTS`] times.
//! Paced by the same throughput limit as pulls.

use std::sync::Arc;

use bytes::Bytes;
use varve_storage::Engine;
use varve_types::data::TokenBound;

use super::plan::RangeSource;
use super::pull::{
    bounds, PullStats, Puller, STREAM_PAGE_ATTEMPTS, STREAM_PAGE_BYTES, STREAM_PAGE_TIMEOUT,
};
use crate::net::Verb;
use crate::verbs::replica::first_in_memory;
use crate::verbs::stream::{self, BuiltPage, PageError, PullRequest};

/// Reads one page to send: in memory first, on the blocking pool if it
/// would wait on the disk (as the source of a STREAM_PULL reads it).
async fn read_page(engine: Arc<Engine>, req: PullRequest) -> Result<BuiltPage, String> {
    // A partition too large for a frame is an answer, not a retry.
    let read = move || match stream::read_page(&engine, &req) {
        Ok(page) => Ok(Ok(page)),
        Err(PageError::Storage(e)) => Err(e),
        Err(PageError::TooLarge(e)) => Ok(Err(e)),
    };
    first_in_memory(read)
        .await?
        .map_err(|e| format!("reading a page to stream: {e:?}"))?
        .map_err(|e| format!("reading a page to stream: {e}"))
}

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
            let page = read_page(self.engine(), req).await?;
            stats.pages += 1;
            stats.partitions += page.partitions as u64;
            stats.bytes += page.bytes.len() as u64;
            if let Some(s) = &self.streams {
                s.bytes_out.add(page.bytes.len() as u64);
            }
            self.send(range, stream::encode_push(table, &page.bytes))
                .await?;
            self.pace(super::pace::Lane::Outbound, page.bytes.len() as u64)
                .await;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verbs::replica::tests::{
        engine_with_table, sample_update, while_the_blocking_pool_is_busy,
    };

    #[test]
    fn a_page_to_push_is_read_in_memory_without_the_blocking_pool() {
        let update = sample_update(b"k");
        let (_storage, engine) = engine_with_table(update.table);
        engine
            .apply(update.table, &update.key, update.update.clone())
            .unwrap();
        let req = PullRequest {
            table: update.table,
            start: TokenBound::Unbounded,
            end: TokenBound::Unbounded,
            max_bytes: STREAM_PAGE_BYTES,
            skip: Vec::new(),
        };
        let page = while_the_blocking_pool_is_busy(read_page(engine, req))
            .expect("reading the page waited for the blocking pool")
            .unwrap();
        assert!(!page.more && page.last == Some(update.key));
    }
}
