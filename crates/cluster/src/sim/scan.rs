//! Range scans among a data run's reads (`SimConfig::scans`): a planned
//! read of key `k` made as a RANGE_READ of rows over `k`'s ring range, a
//! page of one to three partitions (or of one live row). When the page
//! reaches `k`, its answer for `k` is a read of `k` at the op's level, and
//! the data checker judges it as one: acknowledged writes seen, no value
//! from nowhere, Unavailable exactly when `k`'s replicas are too few (the
//! scan stays within `k`'s range, which has `k`'s replicas). When the page
//! stops before `k`, the op ends without an answer (a failure the checks
//! leave aside). Keys before `k` in its range make the page's bound (the
//! smallest last key of a replica that stopped at the limit) matter.

use std::sync::Arc;

use varve_types::data::{Slice, TokenBound};

use super::data::{cell_of, comparator, key, NOW_SECONDS, TABLE};
use super::workload::{OpKind, Outcome, PlannedOp, Workload};
use crate::coordinator::{Coordinator, Replication, RowScan};
use varve_types::data_error::DataError;

/// Makes every other planned read (by id; the final reads stay reads) a
/// scan. The draws of the workload are untouched, so a seed plans the
/// same operations with or without scans.
pub fn plan_scans(workload: &mut Workload) {
    for (id, op) in workload.ops.iter_mut().enumerate() {
        if matches!(op.kind, OpKind::Read { .. }) && !op.last && id.is_multiple_of(2) {
            op.scan = true;
        }
    }
}

/// Runs planned read `id` as a scan; its answer for the op's key.
pub async fn scan_for(
    coordinator: &Arc<Coordinator>,
    replication: &Replication,
    op: &PlannedOp,
    id: usize,
    blocking_repair: bool,
) -> Result<Outcome, DataError> {
    let k = key(op.key);
    let ends = coordinator.topology().range_ends();
    let (start, end) = range_of(&ends, k.token);
    let slices = [Slice::all(&comparator())];
    let found = coordinator
        .scan_rows(RowScan {
            table: TABLE,
            start: &start,
            end: &end,
            slices: &slices,
            reversed: false,
            now_seconds: NOW_SECONDS,
            row_limit: usize::MAX,
            total_rows: if id.is_multiple_of(4) { 1 } else { usize::MAX },
            limit: 1 + id % 3,
            replication,
            consistency: op.level,
            blocking_repair,
        })
        .await?;
    if let Some((_, r)) = found.partitions.iter().find(|(pk, _)| *pk == k) {
        return Ok(Outcome::Read(r.partition.as_ref().and_then(cell_of)));
    }
    // Keys come in token order: past the last one, the page said nothing.
    let covered = !found.more || found.partitions.last().is_some_and(|(pk, _)| *pk > k);
    Ok(match covered {
        true => Outcome::Read(None),
        false => Outcome::Failed("the scan stopped before the key".into()),
    })
}

/// The ring range holding `token`, as scan bounds: `(t[i-1], t[i]]`, or
/// `[min, t0]`, or `(tn, max]`.
fn range_of(ends: &[i64], token: i64) -> (TokenBound, TokenBound) {
    match ends.iter().position(|&t| t >= token) {
        Some(0) => (TokenBound::Unbounded, TokenBound::TokenInclusive(ends[0])),
        Some(i) => (
            TokenBound::TokenExclusive(ends[i - 1]),
            TokenBound::TokenInclusive(ends[i]),
        ),
        None => match ends.last() {
            Some(&t) => (TokenBound::TokenExclusive(t), TokenBound::Unbounded),
            None => (TokenBound::Unbounded, TokenBound::Unbounded),
        },
    }
}
