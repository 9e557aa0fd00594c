//! Whole sstables in a push (a decommission: docs/design/topology.md,
//! sections 4 and 5): the leaving node opens a session of its own files
//! that lie inside the ranges it gives to one node, and offers them with
//! STREAM_FILE_OFFER; that node fetches them with STREAM_FILE, as a
//! pulling node does, installs them and answers with those it installed.
//! The leaving node then pushes the ranges' pages without them.
//!
//! An offer that fails (the receiver does not answer, or failed) moves
//! the ranges in pages only: what the receiver may have installed comes
//! again, which changes nothing.

use std::sync::Arc;
use std::time::Duration;

use super::file_fetch::{FileOrigin, WholeFiles};
use super::plan::RangeSource;
use super::pull::Puller;
use crate::net::{Failure, FailureReason, Messaging, Request, Verb};
use crate::verbs::stream_file::{
    decode_installed, decode_offer, encode_installed, encode_offer, FileInfo, Offer,
};

/// How long a receiver may take to fetch the files offered.
pub const STREAM_FILE_OFFER_TIMEOUT: Duration = Duration::from_secs(3600);

/// Answers STREAM_FILE_OFFER: fetches the offered files with `puller`.
pub fn serve_offers(messaging: &Messaging, puller: Arc<Puller>) {
    messaging.register(Verb::STREAM_FILE_OFFER, move |req: Request| {
        let puller = Arc::clone(&puller);
        async move {
            let offer = match decode_offer(&req.payload) {
                Ok(o) => o,
                Err(e) => return Some(Err(e.failure())),
            };
            if !puller.may_stream_whole(offer.table) {
                return Some(Ok(encode_installed(&[])));
            }
            let origin = FileOrigin {
                table: offer.table,
                source: offer.source,
                address: offer.address,
                session: offer.session,
            };
            Some(
                match puller
                    .fetch_files(&origin, &offer.files, &offer.ranges)
                    .await
                {
                    Ok(whole) => Ok(encode_installed(&whole.skip)),
                    Err(e) => Err(Failure::new(FailureReason::UNKNOWN, e)),
                },
            )
        }
    });
}

impl Puller {
    /// Offers this node's sstables that lie inside one of `ranges` of
    /// `table` to `to` (its `source` and `address` name the receiver);
    /// what it installed.
    pub async fn offer_whole(
        &self,
        table: u128,
        to: &RangeSource,
        ranges: &[(i64, i64)],
    ) -> Result<WholeFiles, String> {
        let Some(files) = self.files.clone() else {
            return Ok(WholeFiles::default());
        };
        if !self.may_stream_whole(table) || ranges.is_empty() {
            return Ok(WholeFiles::default());
        }
        let (session, offered) = match files.open(table, ranges).await {
            Ok(opened) => opened,
            Err(e) => {
                tracing::warn!("holding whole sstables to offer failed, pages only: {e}");
                return Ok(WholeFiles::default());
            }
        };
        if session == 0 {
            return Ok(WholeFiles::default());
        }
        let answer = self.send_offer(table, to, session, ranges, &offered).await;
        files.release(session);
        let installed = match answer {
            Ok(installed) => installed,
            Err(why) => {
                tracing::warn!(
                    "offering whole sstables to {} failed, pages only: {why}",
                    to.address
                );
                return Ok(WholeFiles::default());
            }
        };
        let came: Vec<&FileInfo> = offered
            .iter()
            .filter(|f| installed.contains(&f.generation))
            .collect();
        Ok(WholeFiles::of(came))
    }

    async fn send_offer(
        &self,
        table: u128,
        to: &RangeSource,
        session: u64,
        ranges: &[(i64, i64)],
        files: &[FileInfo],
    ) -> Result<Vec<u64>, String> {
        let me = self.messaging.identity();
        let payload = encode_offer(&Offer {
            table,
            session,
            source: me.host_id,
            address: me.address,
            ranges: ranges.to_vec(),
            files: files.to_vec(),
        });
        let answer = self
            .messaging
            .request(
                to.address,
                Verb::STREAM_FILE_OFFER,
                payload,
                STREAM_FILE_OFFER_TIMEOUT,
            )
            .map_err(|e| e.to_string())?
            .await
            .map_err(|e| e.to_string())?;
        if answer.from_host != to.source {
            return Err(format!("{} answered as {}", to.address, answer.from_host));
        }
        decode_installed(&answer.payload).map_err(|e| e.to_string())
    }
}
