//! A holder's replay of the batches it keeps (docs/design/cluster.md,
//! section 8.6): every [`REPLAY_INTERVAL`], each batch older than
//! [`REPLAY_AFTER_TIMEOUTS`] write timeouts has every mutation written at
//! ANY (replicas that are DOWN get hints), then goes. A batch whose write
//! fails stays for the next round; a mutation of a table that no longer
//! exists is skipped. Mutations carry their own timestamps, so a batch
//! applied by both its coordinator and a replay changes nothing twice.

use std::sync::Arc;

use varve_types::consistency::Consistency;
use varve_types::data_error::WriteType;

use super::service::Coordinator;
use super::write::Write;
use crate::batchlog::{REPLAY_AFTER_TIMEOUTS, REPLAY_INTERVAL};
use crate::verbs::batch::StoredBatch;
use crate::verbs::mutation;

impl Coordinator {
    /// Replays every batch old enough; how many were replayed and removed.
    pub async fn replay_batches(&self) -> usize {
        let Some(log) = self.batchlog.get().cloned() else {
            return 0;
        };
        let wait = self.timeouts.write * REPLAY_AFTER_TIMEOUTS;
        let now = self.clock.wall_micros();
        let due = |b: &StoredBatch| now - b.created_micros >= wait.as_micros() as i64;
        let batches = tokio::task::spawn_blocking({
            let log = Arc::clone(&log);
            move || log.list()
        })
        .await
        .unwrap_or_default();
        let mut replayed = 0;
        for b in batches.into_iter().filter(due) {
            if self.replay_one(&b).await {
                log.remove(&b.id);
                replayed += 1;
            }
        }
        replayed
    }

    /// Writes every mutation of `b` at ANY; whether all went through.
    async fn replay_one(&self, b: &StoredBatch) -> bool {
        for payload in &b.mutations {
            let updates = match mutation::decode(payload, &*self.engine) {
                Ok(u) => u,
                Err(e) => {
                    tracing::warn!("a batch's mutation does not decode, skipped: {e}");
                    continue;
                }
            };
            for u in updates {
                let Some(replication) = self.replication_lookup.get().and_then(|f| f(u.table))
                else {
                    continue;
                };
                let written = self
                    .write(Write {
                        table: u.table,
                        key: u.key,
                        update: u.update,
                        replication: &replication,
                        consistency: Consistency::Any,
                        write_type: WriteType::Batch,
                    })
                    .await;
                if let Err(e) = written {
                    tracing::info!("batch replay will try again: {e}");
                    return false;
                }
            }
        }
        true
    }

    /// Replays due batches every [`REPLAY_INTERVAL`] until aborted.
    pub fn replay_batches_forever(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        let me = Arc::clone(self);
        tokio::spawn(async move {
            loop {
                me.clock.sleep(REPLAY_INTERVAL).await;
                let n = me.replay_batches().await;
                if n > 0 {
                    tracing::info!(
                        "replayed {n} logged batch(es) their coordinator did not finish"
                    );
                }
            }
        })
    }
}
