//! Partition keys over a token range, and TRUNCATE, across the ring.
//!
//! A key scan asks every UP node of the ring for the keys it holds in the
//! range (RANGE_READ of keys, in chunks of at most
//! [`MAX_KEYS_PER_RESPONSE`]), merges them in token order without
//! duplicates and keeps the first `limit`. It answers the data path's
//! `scan_keys`; SELECT scans ranges with rows instead
//! ([`super::range_scan`]), one request per replica rather than one per
//! partition. Before anything is sent, the level must be reachable for
//! every range the scan crosses (checked on each node's primary ranges:
//! Unavailable otherwise).
//!
//! TRUNCATE needs every node of the ring UP (Unavailable otherwise, as in
//! Cassandra) and waits for each of them.

use std::collections::BTreeSet;

use varve_types::consistency::{Consistency, Unavailable};
use varve_types::data::{PartitionKey, TokenBound};
use varve_types::data_error::DataError;

use super::answers::Pending;
use super::read::on_local_error;
use super::replication::Replication;
use super::service::Coordinator;
use crate::net::{RequestError, Verb};
use crate::verbs::range::{self, MAX_KEYS_PER_RESPONSE};

/// Keys of one table over a token range at a level.
#[derive(Debug, Clone, Copy)]
pub struct KeyScan<'a> {
    pub table: u128,
    pub start: &'a TokenBound,
    pub end: &'a TokenBound,
    pub limit: usize,
    pub replication: &'a Replication,
    pub consistency: Consistency,
}

impl Coordinator {
    /// The first `limit` keys of the range held by any UP node.
    pub async fn scan_keys(&self, s: KeyScan<'_>) -> Result<Vec<PartitionKey>, DataError> {
        self.assure_range_live(s.replication, s.consistency)
            .map_err(DataError::Unavailable)?;
        let topology = self.topology();
        let live = self.membership.live();
        let mut found: BTreeSet<PartitionKey> = BTreeSet::new();
        for host in topology.hosts() {
            if host.is_local {
                let here = self
                    .engine
                    .scan_keys(s.table, s.start, s.end, s.limit)
                    .map_err(on_local_error)?;
                found.extend(here);
            } else if live.is_up(host.host_id) {
                let keys = self.keys_of(host.address, &s).await?;
                found.extend(keys);
            }
        }
        Ok(found.into_iter().take(s.limit).collect())
    }

    /// Up to `limit` keys of the range from the node at `to`.
    async fn keys_of(
        &self,
        to: std::net::SocketAddr,
        s: &KeyScan<'_>,
    ) -> Result<Vec<PartitionKey>, DataError> {
        let mut keys: Vec<PartitionKey> = Vec::new();
        let mut start = s.start.clone();
        loop {
            let want = (s.limit - keys.len()).min(MAX_KEYS_PER_RESPONSE);
            let payload = range::encode_request(s.table, &start, s.end, want);
            let answer = self
                .messaging
                .request(to, Verb::RANGE_READ, payload, self.timeouts.range)
                .map_err(|e| DataError::Overloaded(format!("key scan to {to} not sent: {e}")))?
                .await;
            let response = match answer {
                Ok(r) => r,
                Err(RequestError::Failure(f)) => {
                    return Err(DataError::ReadFailure(format!("key scan on {to}: {f}")))
                }
                Err(_) => return Err(self.range_timeout(s.consistency)),
            };
            let (chunk, more) = range::decode_response(&response.payload)
                .map_err(|e| DataError::ReadFailure(format!("key scan on {to}: {e}")))?;
            keys.extend(chunk);
            match keys.last() {
                Some(last) if more && keys.len() < s.limit => {
                    start = TokenBound::AfterKey(last.clone());
                }
                _ => return Ok(keys),
            }
        }
    }

    fn range_timeout(&self, consistency: Consistency) -> DataError {
        DataError::ReadTimeout(varve_types::data_error::ReadTimeout {
            consistency,
            received: 0,
            block_for: 1,
            data_present: false,
        })
    }

    /// Unavailable when some range of the ring lacks the UP replicas the
    /// level needs (each node's first token stands for its ranges).
    fn assure_range_live(
        &self,
        replication: &Replication,
        consistency: Consistency,
    ) -> Result<(), Unavailable> {
        let topology = self.topology();
        for token in topology.range_ends() {
            let plan = self.plan(token, replication);
            self.assure_live(&plan, replication, consistency)?;
        }
        Ok(())
    }

    /// Empties `table` on every node of the ring.
    pub async fn truncate(&self, table: u128) -> Result<(), DataError> {
        let topology = self.topology();
        let live = self.membership.live();
        let hosts = topology.hosts();
        let alive = hosts
            .iter()
            .filter(|h| h.is_local || live.is_up(h.host_id))
            .count() as u32;
        if alive < hosts.len() as u32 {
            return Err(DataError::Unavailable(Unavailable {
                consistency: Consistency::All,
                required: hosts.len() as u32,
                alive,
                dc: None,
            }));
        }
        let mut pending = Pending::default();
        let payload = bytes::Bytes::copy_from_slice(&table.to_be_bytes());
        for (i, h) in hosts.iter().enumerate().filter(|(_, h)| !h.is_local) {
            let answer = self
                .messaging
                .request(
                    h.address,
                    Verb::TRUNCATE,
                    payload.clone(),
                    self.timeouts.truncate,
                )
                .map_err(|e| {
                    DataError::Server(format!("truncate to {} not sent: {e}", h.address))
                })?;
            pending.push(i, answer);
        }
        self.engine.truncate(table).map_err(on_local_error)?;
        while let Some((i, answer)) = pending.next_answer().await {
            if let Err(e) = answer {
                return Err(DataError::Server(format!(
                    "truncate on {} did not complete: {e}",
                    hosts[i].address
                )));
            }
        }
        Ok(())
    }
}
