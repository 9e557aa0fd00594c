//! A replica's side of a RANGE_READ of rows ([`super::range_rows`]): the
//! partitions this node stores in a token range, in token order, each as
//! stored under the slices and cut at the row limit, until a limit says
//! stop. The coordinator uses the same walk for its own replica.

use varve_storage::{Engine, Error as StorageError, ReadCost};
use varve_types::data::{Partition, PartitionKey, TokenBound};

use super::range_rows::{AnswerWriter, RowScanRequest};

/// Keys taken from storage at a time while a range is walked.
const KEYS_PER_STEP: usize = 256;

/// Where a walk puts what it finds: each key of the range is read into
/// the sink, which says how many live rows it counts for.
pub trait ScanSink {
    fn read(
        &mut self,
        engine: &Engine,
        req: &RowScanRequest,
        key: PartitionKey,
        cost: &mut ReadCost,
    ) -> Result<usize, StorageError>;
    /// Partitions read so far.
    fn count(&self) -> usize;
    /// Whether the answer is as large as it may grow.
    fn is_full(&self) -> bool;
}

/// The partition as stored under the slices, cut at the row limit, and
/// the live rows it counts for.
fn read_stored(
    engine: &Engine,
    req: &RowScanRequest,
    key: &PartitionKey,
    cost: &mut ReadCost,
) -> Result<(Option<Partition>, bool, usize), StorageError> {
    let (partition, stopped) = engine.read_stored_limited(
        req.table,
        key,
        &req.slices,
        req.reversed,
        req.now_seconds,
        req.row_limit,
        cost,
    )?;
    let rows = live_rows(partition.as_ref(), req);
    Ok((partition, stopped, rows))
}

impl ScanSink for AnswerWriter {
    fn read(
        &mut self,
        engine: &Engine,
        req: &RowScanRequest,
        key: PartitionKey,
        cost: &mut ReadCost,
    ) -> Result<usize, StorageError> {
        let (partition, stopped, rows) = read_stored(engine, req, &key, cost)?;
        self.push(&key, partition.as_ref(), stopped);
        Ok(rows)
    }

    fn count(&self) -> usize {
        AnswerWriter::count(self)
    }

    fn is_full(&self) -> bool {
        AnswerWriter::is_full(self)
    }
}

/// Partitions kept as they are (this node's own answer as one contact of
/// several, which crosses no network: bounded by the request's limits
/// alone).
impl ScanSink for Vec<(PartitionKey, Option<Partition>, bool)> {
    fn read(
        &mut self,
        engine: &Engine,
        req: &RowScanRequest,
        key: PartitionKey,
        cost: &mut ReadCost,
    ) -> Result<usize, StorageError> {
        let (partition, stopped, rows) = read_stored(engine, req, &key, cost)?;
        self.push((key, partition, stopped));
        Ok(rows)
    }

    fn count(&self) -> usize {
        self.len()
    }

    fn is_full(&self) -> bool {
        false
    }
}

/// Walks `req`'s range on `engine` into `sink`; returns `more`: whether it
/// stopped at a limit with keys of the range left.
pub fn scan_stored(
    engine: &Engine,
    req: &RowScanRequest,
    sink: &mut dyn ScanSink,
    cost: &mut ReadCost,
) -> Result<bool, StorageError> {
    let mut start = req.start.clone();
    let mut rows = 0usize;
    loop {
        let want = (req.partition_limit - sink.count()).min(KEYS_PER_STEP);
        let keys = engine.scan_keys(req.table, &start, &req.end, want + 1)?;
        let last_step = keys.len() <= want;
        for (n, key) in keys.into_iter().enumerate() {
            let stopped_here =
                sink.count() >= req.partition_limit || rows >= req.total_rows || sink.is_full();
            if stopped_here {
                return Ok(true);
            }
            if n == want {
                // The extra key only told that the range goes on.
                start = TokenBound::AfterKey(key);
                break;
            }
            let counted = sink.read(engine, req, key, cost)?;
            rows = rows.saturating_add(counted);
        }
        if last_step {
            return Ok(false);
        }
    }
}

/// The live rows a partition counts for toward `total_rows`: its rows up
/// to the row limit, or one for a partition with only a live static row.
fn live_rows(partition: Option<&Partition>, req: &RowScanRequest) -> usize {
    let Some(p) = partition else { return 0 };
    let (live, _, _) = p.resolve_slices(&req.slices, req.reversed, req.now_seconds, req.row_limit);
    match (live.rows.len(), live.static_row.is_some()) {
        (0, true) => 1,
        (n, _) => n,
    }
}
