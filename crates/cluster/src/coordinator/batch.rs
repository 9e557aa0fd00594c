//! A logged batch through the batchlog (docs/design/cluster.md, section
//! 8.6, and [`crate::batchlog`]): BATCH_STORE to the holders and their
//! acknowledgements (WriteTimeout with write type BATCH_LOG otherwise),
//! then every partition's write at the client's level (write type BATCH),
//! then BATCH_REMOVE. A write that fails leaves the batch with its holders,
//! who replay it; the client gets the failure.

use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::Poll;

use bytes::Bytes;
use varve_types::consistency::Consistency;
use varve_types::data::{Partition, PartitionKey};
use varve_types::data_error::{DataError, WriteTimeout, WriteType};

use super::answers::{Deadline, Pending};
use super::replication::Replication;
use super::service::Coordinator;
use super::topology::Host;
use super::write::Write;
use crate::batchlog::BATCHLOG_HOLDERS;
use crate::failpoint;
use crate::net::Verb;
use crate::verbs::batch::{self, BatchId, StoredBatch};
use crate::verbs::mutation::{self, TableUpdate};

/// One partition's write of a batch, under way.
type Running<'a> = Pin<Box<dyn Future<Output = Result<(), DataError>> + Send + 'a>>;

/// One partition update of a logged batch.
#[derive(Debug)]
pub struct BatchWrite {
    pub table: u128,
    pub key: PartitionKey,
    pub update: Partition,
    pub replication: Arc<Replication>,
}

impl Coordinator {
    /// Writes a logged batch: all of it, eventually, or none.
    pub async fn write_logged_batch(
        &self,
        writes: Vec<BatchWrite>,
        consistency: Consistency,
    ) -> Result<(), DataError> {
        let Some(log) = self.batchlog.get().cloned() else {
            return self.write_all(writes, consistency).await;
        };
        let batch = StoredBatch {
            id: self.next_batch_id(),
            created_micros: self.clock.wall_micros(),
            mutations: writes
                .iter()
                .map(|w| {
                    mutation::encode(&[TableUpdate {
                        table: w.table,
                        key: w.key.clone(),
                        update: w.update.clone(),
                    }])
                })
                .collect(),
        };
        failpoint::crash_if("batch_before_log");
        let holders = self.batchlog_holders();
        self.store_batch(&log, &holders, &batch, consistency)
            .await?;
        failpoint::crash_if("batch_after_log");
        self.write_all(writes, consistency).await?;
        for h in &holders {
            if h.is_local {
                log.remove(&batch.id);
            } else if let Err(e) = self.messaging.send_one_way(
                h.address,
                Verb::BATCH_REMOVE,
                Bytes::copy_from_slice(&batch.id),
                self.timeouts.write,
            ) {
                tracing::debug!("batch remove to {} not sent: {e}", h.address);
            }
        }
        Ok(())
    }

    /// Every partition's write at `consistency`, all at once; the first
    /// error, if any.
    async fn write_all(
        &self,
        writes: Vec<BatchWrite>,
        consistency: Consistency,
    ) -> Result<(), DataError> {
        let mut running: Vec<Running<'_>> = Vec::with_capacity(writes.len());
        for w in writes {
            running.push(Box::pin(async move {
                self.write(Write {
                    table: w.table,
                    key: w.key,
                    update: w.update,
                    replication: &w.replication,
                    consistency,
                    write_type: WriteType::Batch,
                })
                .await
            }));
        }
        let mut first_error = None;
        poll_fn(|cx| {
            running.retain_mut(|f| match f.as_mut().poll(cx) {
                Poll::Ready(r) => {
                    if let Err(e) = r {
                        first_error.get_or_insert(e);
                    }
                    false
                }
                Poll::Pending => true,
            });
            if running.is_empty() {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
        .await;
        first_error.map_or(Ok(()), Err)
    }

    /// Up to two UP nodes of this data centre other than this one,
    /// different racks first; this node alone when there is none.
    fn batchlog_holders(&self) -> Vec<Host> {
        let topology = self.topology();
        let live = self.membership.live();
        let candidates: Vec<&Host> = topology
            .hosts()
            .iter()
            .filter(|h| !h.is_local && h.location.dc == self.local_dc && live.is_up(h.host_id))
            .collect();
        let mut chosen: Vec<Host> = Vec::new();
        for h in &candidates {
            if chosen.len() < BATCHLOG_HOLDERS
                && chosen.iter().all(|c| c.location.rack != h.location.rack)
            {
                chosen.push((*h).clone());
            }
        }
        for h in &candidates {
            if chosen.len() < BATCHLOG_HOLDERS && chosen.iter().all(|c| c.host_id != h.host_id) {
                chosen.push((*h).clone());
            }
        }
        if chosen.is_empty() {
            chosen.extend(topology.hosts().iter().find(|h| h.is_local).cloned());
        }
        chosen
    }

    /// BATCH_STORE to every holder; all must acknowledge in time.
    async fn store_batch(
        &self,
        log: &Arc<crate::batchlog::BatchlogStore>,
        holders: &[Host],
        batch: &StoredBatch,
        consistency: Consistency,
    ) -> Result<(), DataError> {
        let mut expired = Deadline::after(&self.clock, self.timeouts.write);
        let payload = batch::encode_store(batch);
        let mut pending = Pending::default();
        let mut received = 0;
        for (i, h) in holders.iter().enumerate() {
            if h.is_local {
                let (log, batch) = (Arc::clone(log), batch.clone());
                tokio::task::spawn_blocking(move || log.store(&batch))
                    .await
                    .map_err(|e| DataError::Server(format!("batchlog store: {e}")))?
                    .map_err(|e| DataError::WriteFailure(format!("batchlog store: {e}")))?;
                received += 1;
                continue;
            }
            match self.messaging.request(
                h.address,
                Verb::BATCH_STORE,
                payload.clone(),
                self.timeouts.write,
            ) {
                Ok(answer) => pending.push(i, answer),
                Err(e) => tracing::debug!("batch store to {} not sent: {e}", h.address),
            }
        }
        while received < holders.len() {
            let answer = tokio::select! {
                biased;
                answer = pending.next_answer() => answer,
                () = expired.passed() => None,
            };
            match answer {
                Some((_, Ok(_))) => received += 1,
                Some((_, Err(_))) | None => {
                    return Err(DataError::WriteTimeout(WriteTimeout {
                        consistency,
                        received: received as u32,
                        block_for: holders.len() as u32,
                        write_type: WriteType::BatchLog,
                    }))
                }
            }
        }
        Ok(())
    }

    /// A new batch id: the wall clock, this node's host id, a counter.
    fn next_batch_id(&self) -> BatchId {
        let n = self.batch_counter.fetch_add(1, Ordering::Relaxed);
        let mut id = [0u8; 16];
        id[..8].copy_from_slice(&self.clock.wall_micros().to_be_bytes());
        id[8..12].copy_from_slice(&self.local_host.0[..4]);
        id[12..].copy_from_slice(&n.to_be_bytes());
        id
    }
}
