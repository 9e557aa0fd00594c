//! The second half of a read (docs/design/cluster.md, section 8.3): when
//! a digest differs from the data's, the full data of every replica that
//! answered, merged; with `read_repair` BLOCKING, the merged partition is
//! written back to each replica whose own data differed from it, and the
//! read waits for those writes (within its timeout) before it answers,
//! so a later read at the same level cannot see older data than this one
//! did (Cassandra's monotonic quorum reads). The repair sends the whole
//! merged partition restricted to the slices read (to the part of them the
//! answers covered, when a replica stopped at the row limit); applying what
//! a replica already holds changes nothing.

use std::sync::Arc;

use varve_types::data::{ClusteringComparator, ClusteringKey, Partition, Slice};
use varve_types::data_error::DataError;

use super::answers::{Deadline, Pending};
use super::read::{on_local_error, read_timeout, Answers, Read, Round, Version};
use super::service::Coordinator;
use super::service::Plan;
use super::short_read;
use crate::net::{RequestError, Verb};
use crate::verbs::mutation::{self, TableUpdate};
use crate::verbs::read::{self, ReadKind, ReadResponse};

/// What the answers add up to.
pub(super) struct Reconciled {
    /// The replicas' data merged (unresolved).
    pub merged: Option<Partition>,
    /// When some replica stopped at the row limit: the last row the merge
    /// can be trusted up to ([`short_read::bound`]).
    pub cut: Option<ClusteringKey>,
    /// SSTables touched on this node.
    pub sstables: u32,
}

/// Why a read repair did not complete.
pub(super) enum RepairError {
    /// The read's deadline passed first.
    TimedOut,
    Failed(DataError),
}

/// Several replicas' data merged up to where all of them can be trusted.
pub(super) struct Merged {
    pub merged: Option<Partition>,
    /// When some replica stopped at the row limit, the last row the merge
    /// is trusted up to ([`short_read::bound`]).
    pub cut: Option<ClusteringKey>,
    /// Each replica's version, restricted as the merge is: what a repair
    /// compares with it.
    pub seen: Vec<(usize, Option<Partition>)>,
}

/// Merges the replicas' `versions` of `r`'s partition (the newest cell
/// and any deletion win), each restricted to the part of the slices
/// every version covers.
pub(super) fn merge_versions(versions: &[Version], r: &Read<'_>) -> Merged {
    let cut = short_read::bound(versions, r);
    let covered = cut.as_ref().map(|c| Slice::cut_at(r.slices, c, r.reversed));
    let within = |p: &Partition| match &covered {
        Some(slices) => p.slice(slices),
        None => p.clone(),
    };
    let mut merged: Option<Partition> = None;
    for p in versions.iter().filter_map(|v| v.partition.as_ref()) {
        match merged.as_mut() {
            Some(m) => m.merge(within(p)),
            None => merged = Some(within(p)),
        }
    }
    let seen = versions
        .iter()
        .map(|v| (v.replica, v.partition.as_ref().map(within)))
        .collect();
    Merged { merged, cut, seen }
}

impl Coordinator {
    /// The partition the answers add up to: the data itself when every
    /// digest agrees with it, else every responder's data merged (up to
    /// the cut), repaired where the table asks for it.
    pub(super) async fn reconcile(
        &self,
        round: &mut Round<'_>,
        answers: Answers,
    ) -> Result<Reconciled, DataError> {
        let Some(data) = answers.data else {
            return Err(read_timeout(round, false));
        };
        let expected = data.digest();
        if answers.digests.iter().all(|(_, d)| *d == expected) {
            let cut = short_read::bound(std::slice::from_ref(&data), round.r);
            return Ok(Reconciled {
                merged: data.partition,
                cut,
                sstables: answers.sstables,
            });
        }
        self.metrics.digest_mismatches.inc();
        let mut versions = vec![data];
        let others: Vec<usize> = answers.digests.iter().map(|(i, _)| *i).collect();
        self.fetch_data(round, &others, &mut versions).await?;
        let merge = merge_versions(&versions, round.r);
        if round.r.blocking_repair {
            if let Some(m) = &merge.merged {
                let (r, plan) = (round.r, &round.plan);
                match self
                    .repair(r, plan, &mut round.expired, &merge.seen, m)
                    .await
                {
                    Ok(()) => {}
                    Err(RepairError::TimedOut) => return Err(read_timeout(round, true)),
                    Err(RepairError::Failed(e)) => return Err(e),
                }
            }
        }
        Ok(Reconciled {
            merged: merge.merged,
            cut: merge.cut,
            sstables: answers.sstables,
        })
    }

    /// Full data from each of `replicas`, added to `versions`.
    async fn fetch_data(
        &self,
        round: &mut Round<'_>,
        replicas: &[usize],
        versions: &mut Vec<Version>,
    ) -> Result<(), DataError> {
        round.pending = Pending::default();
        for &i in replicas {
            if round.plan.is_local(i) {
                versions.push(self.read_stored(round.r, i)?.0);
            } else {
                self.ask(round, i, ReadKind::Data);
            }
        }
        let cmp = self.comparator(round.r.table)?;
        let mut waiting = replicas
            .iter()
            .filter(|&&i| !round.plan.is_local(i))
            .count();
        while waiting > 0 {
            let answer = tokio::select! {
                biased;
                answer = round.pending.next_answer() => answer,
                () = round.expired.passed() => None,
            };
            let Some((i, answer)) = answer else {
                return Err(read_timeout(round, true));
            };
            waiting -= 1;
            let failed =
                |why: String| DataError::ReadFailure(format!("{}: {why}", round.plan.address(i)));
            match answer {
                Ok(response) => match read::decode_response(&response.payload, &cmp) {
                    Ok(ReadResponse::Data(partition, stopped)) => versions.push(Version {
                        replica: i,
                        partition,
                        stopped,
                    }),
                    Ok(ReadResponse::Digest(_)) => return Err(failed("a digest for data".into())),
                    Err(e) => return Err(failed(e.to_string())),
                },
                Err(RequestError::Failure(f)) => return Err(failed(f.to_string())),
                Err(_) => return Err(read_timeout(round, true)),
            }
        }
        Ok(())
    }

    /// Writes `merged` to every replica whose version differs from it and
    /// waits for them (until `expired`).
    pub(super) async fn repair(
        &self,
        r: &Read<'_>,
        plan: &Plan,
        expired: &mut Deadline,
        versions: &[(usize, Option<Partition>)],
        merged: &Partition,
    ) -> Result<(), RepairError> {
        let target = read::digest(Some(merged), false);
        let stale: Vec<usize> = versions
            .iter()
            .filter(|(_, p)| read::digest(p.as_ref(), false) != target)
            .map(|(i, _)| *i)
            .collect();
        if stale.is_empty() {
            return Ok(());
        }
        self.metrics.read_repairs.inc();
        let payload = mutation::encode(&[TableUpdate {
            table: r.table,
            key: r.key.clone(),
            update: merged.clone(),
        }]);
        let mut pending = Pending::default();
        for &i in &stale {
            if plan.is_local(i) {
                self.engine
                    .apply(r.table, r.key, merged.clone())
                    .map_err(|e| RepairError::Failed(on_local_error(e)))?;
                continue;
            }
            let to = plan.address(i);
            match self
                .messaging
                .request(to, Verb::MUTATION, payload.clone(), self.timeouts.read)
            {
                Ok(answer) => pending.push(i, answer),
                Err(e) => {
                    return Err(RepairError::Failed(DataError::ReadFailure(format!(
                        "read repair to {to} not sent: {e}"
                    ))))
                }
            }
        }
        loop {
            let answer = tokio::select! {
                biased;
                answer = pending.next_answer() => answer,
                () = expired.passed() => return Err(RepairError::TimedOut),
            };
            match answer {
                None => return Ok(()),
                Some((_, Ok(_))) => {}
                Some((i, Err(e))) => {
                    return Err(RepairError::Failed(DataError::ReadFailure(format!(
                        "read repair on {}: {e}",
                        plan.address(i)
                    ))))
                }
            }
        }
    }

    pub(super) fn comparator(&self, table: u128) -> Result<Arc<ClusteringComparator>, DataError> {
        self.engine.comparator(table).map_err(on_local_error)
    }
}
