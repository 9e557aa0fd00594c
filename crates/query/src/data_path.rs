//! The data path: what the query layer needs from "the data", whether it
//! lives on this node alone or on replicas across a cluster.
//!
//! Query analyses a statement against the schema, then reads and writes
//! partitions only through [`DataPath`]. One node implements it over its
//! storage engine ([`crate::local::LocalNode`]); the cluster's coordinator
//! will implement it by sending the same commands to replicas
//! (docs/design/cluster.md, section 2.1). Query never sees replicas, and
//! the implementation never sees CQL.
//!
//! Every method returns a [`DataFuture`]: [`DataFuture::Ready`] when the
//! answer was known at once (always, on one node: no allocation, no
//! task), or a boxed future that waits for other nodes.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use varve_types::data::{Partition, PartitionKey, Slice, TokenBound};
use varve_types::data_error::DataError;
use varve_types::Consistency;

/// A table's id (the schema's `Table::id`).
pub type TableId = u128;

/// The result of a data path operation.
pub type DataResult<T> = std::result::Result<T, DataError>;

/// A data path answer: ready now, or later.
pub enum DataFuture<'a, T> {
    /// Known at once (taken on the first poll).
    Ready(Option<DataResult<T>>),
    /// Waits for something (another node, a disk read elsewhere).
    Boxed(Pin<Box<dyn Future<Output = DataResult<T>> + Send + 'a>>),
}

impl<T> DataFuture<'_, T> {
    /// An answer known now.
    pub fn ready(result: DataResult<T>) -> Self {
        DataFuture::Ready(Some(result))
    }
}

impl<T> Unpin for DataFuture<'_, T> {}

impl<T> Future for DataFuture<'_, T> {
    type Output = DataResult<T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<DataResult<T>> {
        match self.get_mut() {
            DataFuture::Ready(r) => Poll::Ready(
                r.take()
                    .unwrap_or_else(|| Err(DataError::Server("data future polled again".into()))),
            ),
            DataFuture::Boxed(f) => f.as_mut().poll(cx),
        }
    }
}

/// What kind of write a mutation belongs to (the native protocol's
/// write types, which a write timeout reports).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteKind {
    /// One INSERT, UPDATE or DELETE.
    Simple,
    /// A statement of an UNLOGGED (or COUNTER) batch.
    UnloggedBatch,
    /// A statement of a LOGGED batch.
    LoggedBatch,
    /// The write of a conditional statement whose condition held.
    Cas,
}

/// One partition update of one table, with its timestamps set.
#[derive(Debug)]
pub struct WriteCommand {
    pub table: TableId,
    pub key: PartitionKey,
    pub update: Partition,
    pub consistency: Consistency,
    pub kind: WriteKind,
}

/// The live rows of one partition, restricted to slices.
#[derive(Debug, Clone, Copy)]
pub struct ReadCommand<'a> {
    pub table: TableId,
    pub key: &'a PartitionKey,
    pub slices: &'a [Slice],
    /// The last rows of the slices rather than the first.
    pub reversed: bool,
    /// The statement's clock: every replica judges TTLs by it.
    pub now_seconds: i32,
    /// At most this many live rows (`usize::MAX`: all).
    pub row_limit: usize,
    pub consistency: Consistency,
}

/// What a [`ReadCommand`] found.
#[derive(Debug, Default)]
pub struct PartitionRead {
    /// The live rows and static row; `None` when nothing is stored under
    /// the key.
    pub partition: Option<Partition>,
    /// Tombstones the read went over.
    pub tombstones: u64,
    /// Whether every row of the slices was visited (false: the read
    /// stopped at `row_limit`).
    pub complete: bool,
    /// SSTables whose data the read touched on this node (0 when the
    /// data came from elsewhere).
    pub sstables: u32,
}

/// Decides one conditional statement against the partition as a
/// transaction found it (docs/design/paxos.md, section 2). Query builds it
/// from the statement's conditions and planned updates; the data path
/// calls it once it holds the current state, with the timestamp the
/// update's cells must carry (the ballot's).
pub trait CasDecider: Send + Sync {
    /// Whether the conditions hold on `current` (the partition's live
    /// rows and static row under the command's slices, `None`-free: an
    /// absent partition is empty) and, if they do, the update to apply,
    /// every timestamp set to `timestamp`.
    fn decide(&self, current: &Partition, timestamp: i64) -> DataResult<CasDecision>;

    /// This decider in bytes another node's query layer rebuilds
    /// ([`crate::cas_portable::rebuild`]), so a cluster can hand the
    /// statement to the partition's home replica; `None` if it cannot
    /// travel (it then runs where it is).
    fn portable(&self) -> Option<bytes::Bytes> {
        None
    }
}

/// What a [`CasDecider`] decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CasDecision {
    pub applied: bool,
    /// The update to apply (only when applied).
    pub update: Option<Partition>,
}

/// A conditional statement on one partition.
pub struct CasCommand<'a> {
    pub table: TableId,
    pub key: &'a PartitionKey,
    /// What the conditions and the answer's row need to read.
    pub slices: &'a [Slice],
    /// SERIAL or LOCAL_SERIAL: who takes part in the transaction.
    pub serial: Consistency,
    /// The statement's level: where the applied update must be before the
    /// answer.
    pub commit: Consistency,
    pub now_seconds: i32,
    pub decider: Arc<dyn CasDecider>,
}

/// What a conditional statement found and decided.
#[derive(Debug, Clone)]
pub struct CasOutcome {
    /// The live state the decision was made on.
    pub current: Partition,
    pub applied: bool,
    /// How many times the statement waited for another transaction on the
    /// same partition (the contention metric).
    pub contention: u64,
}

/// Partition keys of a table in token order.
#[derive(Debug, Clone, Copy)]
pub struct KeyScan<'a> {
    pub table: TableId,
    pub start: &'a TokenBound,
    pub end: &'a TokenBound,
    /// At most this many keys.
    pub limit: usize,
    pub consistency: Consistency,
}

/// Partitions of a table over a token range, each with its first rows,
/// as replicas answer range reads (docs/design/cluster.md, section 8.4).
#[derive(Debug, Clone, Copy)]
pub struct RowScan<'a> {
    pub table: TableId,
    pub start: &'a TokenBound,
    pub end: &'a TokenBound,
    pub slices: &'a [Slice],
    pub reversed: bool,
    pub now_seconds: i32,
    /// Live rows per partition (`usize::MAX`: all).
    pub row_limit: usize,
    /// Live rows over the scan, a partition with only a static row
    /// counting one (`usize::MAX`: no limit).
    pub total_rows: usize,
    /// Partitions, at least 1.
    pub limit: usize,
    pub consistency: Consistency,
}

/// What a [`RowScan`] found: partitions in token order, each read as a
/// [`ReadCommand`] with the scan's slices and row limit would read it
/// (incomplete ones are read on by the caller), and whether the range may
/// go on after the last one.
#[derive(Debug, Default)]
pub struct ScannedPartitions {
    pub partitions: Vec<(PartitionKey, PartitionRead)>,
    pub more: bool,
}

/// Reads and writes of partitions, on one node or many.
pub trait DataPath: Send + Sync {
    /// Stores one partition update at the command's level.
    fn write(&self, w: WriteCommand) -> DataFuture<'_, ()>;

    /// Stores a LOGGED batch's updates (each at its command's level): all
    /// of them or, if the coordinator dies half-way, eventually all of them
    /// anyway (a cluster's batchlog). On one node every update is written
    /// in turn (the commitlog holds them all before the answer).
    fn write_logged_batch(&self, writes: Vec<WriteCommand>) -> DataFuture<'_, ()> {
        DataFuture::Boxed(Box::pin(async move {
            for w in writes {
                self.write(w).await?;
            }
            Ok(())
        }))
    }

    /// Reads one partition's live rows at the command's level.
    fn read<'a>(&'a self, r: ReadCommand<'a>) -> DataFuture<'a, PartitionRead>;

    /// Partition keys in token order from `start` to `end`.
    fn scan_keys<'a>(&'a self, s: KeyScan<'a>) -> DataFuture<'a, Vec<PartitionKey>>;

    /// Partitions with their first rows over a token range, when this path
    /// reads ranges whole (a cluster: one request per replica rather than
    /// one per partition); `None` when it does not, and the caller takes
    /// keys with [`DataPath::scan_keys`] and reads each partition.
    fn scan_rows<'a>(&'a self, s: RowScan<'a>) -> Option<DataFuture<'a, ScannedPartitions>> {
        let _ = s;
        None
    }

    /// Removes every row of a table (TRUNCATE).
    fn truncate(&self, table: TableId) -> DataFuture<'_, ()>;

    /// Runs a conditional statement as one linearizable step on its
    /// partition: reads the current state, asks the decider, and writes
    /// its update when the conditions held. (A read at a serial level is a
    /// `read` whose consistency is SERIAL or LOCAL_SERIAL.)
    fn cas<'a>(&'a self, c: CasCommand<'a>) -> DataFuture<'a, CasOutcome>;

    /// Whether this data path checks the live replicas of each command
    /// itself (a cluster's coordinator does, against the ring and the
    /// failure detector): query then leaves the Unavailable check of
    /// non-serial levels to it. A one-node path (the default) does not.
    fn checks_replicas(&self) -> bool {
        false
    }

    /// Unavailable when too few replicas of `token` are UP for
    /// `consistency`, checked before anything is sent: a batch checks
    /// every partition first, so that it is refused whole rather than
    /// applied in part. (Paths that do not check replicas say yes.)
    fn assure_live(&self, table: TableId, token: i64, consistency: Consistency) -> DataResult<()> {
        let _ = (table, token, consistency);
        Ok(())
    }

    /// Why lightweight transactions cannot run on this data path now, if
    /// they cannot (a cluster of several nodes, until Paxos): the
    /// statement is then refused with this message.
    fn lwt_refusal(&self) -> Option<String> {
        None
    }
}
