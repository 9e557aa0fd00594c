//! Range scans that return rows (docs/design/cluster.md, section 8.4).
//!
//! The scanned token range is cut where the ring's ranges end; each piece
//! is read from as many of its UP replicas as the level needs, chosen as a
//! partition read chooses them (this node first, then its data centre).
//! Consecutive pieces read from the same nodes become one span and one
//! RANGE_READ of rows per node. Each node answers the partitions it holds
//! in the span, as stored and cut at the row limit, until a limit stops
//! it ([`crate::verbs::replica_range`]).
//!
//! The answers of a span are merged partition by partition, as a read's
//! data responses are, with read repair where the table asks for it.
//! Across partitions, an answer that stopped at a limit covers the span
//! only up to its last key: the merge is kept up to the smallest such key
//! and the scan stops there (the caller resumes after it). Within a
//! partition, short read protection trusts the merge up to its cut and
//! marks the partition incomplete past it; the caller reads on.
//!
//! Spans are read in token order, in waves: one span, then two at once,
//! then four, while the partitions found leave room for more.

use std::collections::BTreeMap;

use futures::future::join_all;
use varve_storage::ReadCost;
use varve_types::consistency::{Consistency, Unavailable};
use varve_types::data::{PartitionKey, Slice, TokenBound};
use varve_types::data_error::{DataError, ReadTimeout};

use super::answers::{Deadline, Pending};
use super::read::{needed, on_local_error, Read, ReadResult, Version};
use super::read_repair::{merge_versions, RepairError};
use super::replication::Replication;
use super::service::{Coordinator, Plan};
use super::short_read::{self, resolve_at_cut};
use super::speculate::Speculation;
use super::write_acks::{Progress, WriteAcks};
use crate::net::{RequestError, Verb};
use crate::verbs::range_rows::{
    self, RowScanAnswer, RowScanRequest, ScannedPartition, MAX_PARTITIONS_PER_RANGE_READ,
};
use crate::verbs::replica_range::{scan_stored, ScanSink};

mod pieces;
pub(crate) use pieces::pieces;

/// A scan of a table's partitions, with their first rows, at a level.
#[derive(Debug, Clone, Copy)]
pub struct RowScan<'a> {
    pub table: u128,
    pub start: &'a TokenBound,
    pub end: &'a TokenBound,
    pub slices: &'a [Slice],
    pub reversed: bool,
    pub now_seconds: i32,
    /// Live rows per partition (`usize::MAX`: all).
    pub row_limit: usize,
    /// Live rows over the scan (`usize::MAX`: no limit).
    pub total_rows: usize,
    /// Partitions over the scan, at least 1.
    pub limit: usize,
    pub replication: &'a Replication,
    pub consistency: Consistency,
    /// The table's `read_repair`: BLOCKING (true) or NONE.
    pub blocking_repair: bool,
}

/// What a scan found: partitions in token order (a partition that holds
/// nothing live under the slices comes with no rows), and whether the
/// range may go on past the last one.
#[derive(Debug, Default)]
pub struct ScannedRows {
    pub partitions: Vec<(PartitionKey, ReadResult)>,
    pub more: bool,
}

/// A stretch of the ring read from one set of nodes.
struct Span {
    start: TokenBound,
    end: TokenBound,
    plan: Plan,
    acks: WriteAcks,
    contacts: Vec<usize>,
}

impl Span {
    /// Its contacts, in no particular order.
    fn hosts(&self) -> Vec<crate::net::HostId> {
        let mut hosts: Vec<_> = self
            .contacts
            .iter()
            .map(|&i| self.plan.host(i).host_id)
            .collect();
        hosts.sort();
        hosts
    }
}

impl Coordinator {
    /// The first partitions of `s`'s range, each with its first rows, at
    /// the scan's level.
    pub async fn scan_rows(&self, s: RowScan<'_>) -> Result<ScannedRows, DataError> {
        let spans = self.spans(&s).map_err(DataError::Unavailable)?;
        let mut found = ScannedRows::default();
        let mut rows = 0usize;
        let (mut next, mut wave) = (0, 1);
        while next < spans.len() {
            let ahead = &spans[next..(next + wave).min(spans.len())];
            let budget = RowScan {
                limit: s.limit - found.partitions.len(),
                total_rows: s.total_rows.saturating_sub(rows),
                ..s
            };
            let answers = join_all(ahead.iter().map(|span| self.read_span(&budget, span))).await;
            for answer in answers {
                if absorb(&mut found, &mut rows, answer?, &s) {
                    return Ok(found);
                }
            }
            next += ahead.len();
            wave *= 2;
        }
        Ok(found)
    }

    /// The spans of `s`'s range, each checked for the UP replicas its level
    /// needs (Unavailable otherwise).
    fn spans(&self, s: &RowScan<'_>) -> Result<Vec<Span>, Unavailable> {
        let mut spans: Vec<Span> = Vec::new();
        for (start, end, owner) in pieces(&self.topology().range_ends(), s.start, s.end) {
            let plan = self.plan(owner, s.replication);
            self.assure_live(&plan, s.replication, s.consistency)?;
            let factors = s.replication.factors();
            let acks = WriteAcks::new(s.consistency, &factors, &self.local_dc, &plan.dcs());
            let order = self.preference(&plan, &acks);
            let span = Span {
                start,
                end,
                contacts: needed(&order, &acks),
                plan,
                acks,
            };
            match spans.last_mut() {
                Some(last) if last.hosts() == span.hosts() => last.end = span.end,
                _ => spans.push(span),
            }
        }
        Ok(spans)
    }

    /// One span's partitions from its contacts, merged.
    async fn read_span(&self, s: &RowScan<'_>, span: &Span) -> Result<ScannedRows, DataError> {
        let req = RowScanRequest {
            table: s.table,
            start: span.start.clone(),
            end: span.end.clone(),
            slices: s.slices.to_vec(),
            reversed: s.reversed,
            now_seconds: s.now_seconds,
            row_limit: s.row_limit,
            total_rows: s.total_rows,
            partition_limit: s.limit.min(MAX_PARTITIONS_PER_RANGE_READ),
        };
        if let [only] = span.contacts[..] {
            if span.plan.is_local(only) {
                return self.scan_live_here(&req);
            }
        }
        let mut expired = Deadline::after(&self.clock, self.timeouts.range);
        let answers = self.gather(span, &req, s.consistency, &mut expired).await?;
        self.merge_span(s, span, answers, &mut expired).await
    }

    /// Every contact's answer, or the error that stopped the level.
    async fn gather(
        &self,
        span: &Span,
        req: &RowScanRequest,
        consistency: Consistency,
        expired: &mut Deadline,
    ) -> Result<Vec<(usize, RowScanAnswer)>, DataError> {
        let mut acks = span.acks.clone();
        let mut answers = Vec::with_capacity(span.contacts.len());
        for &i in span.contacts.iter().filter(|&&i| span.plan.is_local(i)) {
            answers.push((i, self.scan_here(req)?));
            acks.ack(i);
        }
        let payload = range_rows::encode_request(req);
        let mut pending = Pending::default();
        for &i in span.contacts.iter().filter(|&&i| !span.plan.is_local(i)) {
            let to = span.plan.address(i);
            match self
                .messaging
                .request(to, Verb::RANGE_READ, payload.clone(), self.timeouts.range)
            {
                Ok(answer) => pending.push(i, answer),
                Err(e) => tracing::debug!("range read to {to} not sent: {e}"),
            }
        }
        let cmp = self.comparator(req.table)?;
        let mut last_failure = String::new();
        loop {
            match acks.progress() {
                Progress::Succeeded => return Ok(answers),
                Progress::Failed => {
                    return Err(DataError::ReadFailure(format!(
                        "range read failed on {} replica(s): {last_failure}",
                        acks.failures()
                    )))
                }
                _ => {}
            }
            let answer = tokio::select! {
                biased;
                answer = pending.next_answer() => answer,
                () = expired.passed() => None,
            };
            let Some((i, answer)) = answer else {
                return Err(range_timeout(consistency, &acks, !answers.is_empty()));
            };
            let decoded = match answer {
                Ok(response) => {
                    range_rows::decode_response(&response.payload, &cmp).map_err(|e| e.to_string())
                }
                Err(RequestError::Failure(f)) => Err(f.to_string()),
                // A timeout or a shut-down messaging: no answer from it.
                Err(_) => continue,
            };
            match decoded {
                Ok(a) => {
                    answers.push((i, a));
                    acks.ack(i);
                }
                Err(why) => {
                    acks.fail(i);
                    last_failure = format!("{}: {why}", span.plan.address(i));
                }
            }
        }
    }

    /// This node's answer to `req`.
    fn scan_here(&self, req: &RowScanRequest) -> Result<RowScanAnswer, DataError> {
        let mut found = Vec::new();
        let more = scan_stored(&self.engine, req, &mut found, &mut ReadCost::default())
            .map_err(on_local_error)?;
        let partitions = found
            .into_iter()
            .map(|(key, partition, stopped)| ScannedPartition {
                key,
                partition,
                stopped,
            })
            .collect();
        Ok(RowScanAnswer { partitions, more })
    }

    /// `req` answered by this node alone (its only contact): each
    /// partition's live rows as storage resolves them.
    fn scan_live_here(&self, req: &RowScanRequest) -> Result<ScannedRows, DataError> {
        let mut found = LiveSink::default();
        let more = scan_stored(&self.engine, req, &mut found, &mut ReadCost::default())
            .map_err(on_local_error)?;
        Ok(ScannedRows {
            partitions: found.0,
            more,
        })
    }

    /// The partitions of a span's answers, merged up to the smallest last
    /// key of an answer that stopped at a limit.
    async fn merge_span(
        &self,
        s: &RowScan<'_>,
        span: &Span,
        answers: Vec<(usize, RowScanAnswer)>,
        expired: &mut Deadline,
    ) -> Result<ScannedRows, DataError> {
        let bound = answers
            .iter()
            .filter(|(_, a)| a.more)
            .filter_map(|(_, a)| a.partitions.last().map(|p| p.key.clone()))
            .min();
        let mut by_key: BTreeMap<PartitionKey, Vec<Version>> = BTreeMap::new();
        for (i, answer) in answers {
            for p in answer.partitions {
                if bound.as_ref().is_some_and(|b| p.key > *b) {
                    break;
                }
                by_key.entry(p.key).or_default().push(Version {
                    replica: i,
                    partition: p.partition,
                    stopped: p.stopped,
                });
            }
        }
        // Contacts that hold different keys can together send more than
        // the limit: the first ones are kept, and the scan resumes after.
        let over = by_key.len() > s.limit;
        let mut found = ScannedRows {
            partitions: Vec::with_capacity(by_key.len().min(s.limit)),
            more: bound.is_some() || over,
        };
        for (key, mut versions) in by_key.into_iter().take(s.limit) {
            // A contact without the key holds nothing under it.
            for &i in &span.contacts {
                if !versions.iter().any(|v| v.replica == i) {
                    versions.push(Version {
                        replica: i,
                        partition: None,
                        stopped: false,
                    });
                }
            }
            let result = self.resolve_key(s, span, &key, versions, expired).await?;
            found.partitions.push((key, result));
        }
        Ok(found)
    }

    /// One partition's versions resolved as a read resolves them,
    /// repaired where they differ and the table asks for it.
    async fn resolve_key(
        &self,
        s: &RowScan<'_>,
        span: &Span,
        key: &PartitionKey,
        mut versions: Vec<Version>,
        expired: &mut Deadline,
    ) -> Result<ReadResult, DataError> {
        let r = Read {
            table: s.table,
            key,
            slices: s.slices,
            reversed: s.reversed,
            now_seconds: s.now_seconds,
            row_limit: s.row_limit,
            replication: s.replication,
            consistency: s.consistency,
            speculation: Speculation::Never,
            blocking_repair: s.blocking_repair,
        };
        let agree = versions
            .iter()
            .all(|v| v.stopped == versions[0].stopped && v.partition == versions[0].partition);
        if agree {
            // Every contact sent the same: nothing to merge or repair.
            let cut = short_read::bound(&versions[..1], &r);
            let only = versions.swap_remove(0);
            return Ok(resolve_at_cut(only.partition, cut, &r));
        }
        self.metrics.digest_mismatches.inc();
        let merge = merge_versions(&versions, &r);
        if s.blocking_repair {
            if let Some(m) = &merge.merged {
                let repaired = self.repair(&r, &span.plan, expired, &merge.seen, m).await;
                match repaired {
                    Ok(()) => {}
                    Err(RepairError::TimedOut) => {
                        return Err(DataError::ReadTimeout(ReadTimeout {
                            consistency: s.consistency,
                            received: span.acks.block_for(),
                            block_for: span.acks.block_for(),
                            data_present: true,
                        }))
                    }
                    Err(RepairError::Failed(e)) => return Err(e),
                }
            }
        }
        Ok(resolve_at_cut(merge.merged, merge.cut, &r))
    }
}

/// Adds a span's answer to what a scan found (the spans of one wave each
/// had the whole budget, so an answer past the room left is cut, and the
/// scan resumes after what was kept); whether the scan stops here.
fn absorb(
    found: &mut ScannedRows,
    rows: &mut usize,
    mut part: ScannedRows,
    s: &RowScan<'_>,
) -> bool {
    let room = s.limit.saturating_sub(found.partitions.len());
    if part.partitions.len() > room {
        part.partitions.truncate(room);
        part.more = true;
    }
    *rows = rows.saturating_add(part.partitions.iter().map(|(_, r)| counted(r)).sum());
    found.partitions.extend(part.partitions);
    if part.more || found.partitions.len() >= s.limit || *rows >= s.total_rows {
        found.more = true;
        return true;
    }
    false
}

/// Partitions read live on this node ([`Coordinator::scan_live_here`]).
#[derive(Default)]
struct LiveSink(Vec<(PartitionKey, ReadResult)>);

impl ScanSink for LiveSink {
    fn read(
        &mut self,
        engine: &varve_storage::Engine,
        req: &RowScanRequest,
        key: PartitionKey,
        cost: &mut ReadCost,
    ) -> Result<usize, varve_storage::Error> {
        let found = engine.read_live_costed(
            req.table,
            &key,
            &req.slices,
            req.reversed,
            req.now_seconds,
            req.row_limit,
            cost,
        )?;
        let result = match found {
            Some((partition, stats, complete)) => ReadResult {
                partition: Some(partition),
                tombstones: stats.tombstones,
                complete,
                sstables: 0,
            },
            None => ReadResult {
                partition: None,
                tombstones: 0,
                complete: true,
                sstables: 0,
            },
        };
        let rows = counted(&result);
        self.0.push((key, result));
        Ok(rows)
    }

    fn count(&self) -> usize {
        self.0.len()
    }

    fn is_full(&self) -> bool {
        false
    }
}

/// The rows a partition's answer counts for against a scan's total: its
/// live rows, or one for a partition with only a live static row.
fn counted(r: &ReadResult) -> usize {
    match &r.partition {
        None => 0,
        Some(p) if p.rows.is_empty() && p.static_row.is_some() => 1,
        Some(p) => p.rows.len(),
    }
}

fn range_timeout(consistency: Consistency, acks: &WriteAcks, data_present: bool) -> DataError {
    DataError::ReadTimeout(ReadTimeout {
        consistency,
        received: acks.received(),
        block_for: acks.block_for(),
        data_present,
    })
}

#[cfg(test)]
mod tests;
