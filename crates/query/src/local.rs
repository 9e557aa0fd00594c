//! [`LocalNode`]: the data path of a node that holds every replica itself,
//! straight over its storage engine.
//!
//! Every answer is ready at once (a read that would wait on the disk in a
//! non-blocking scope answers `WouldBlock` at once, as the engine does).
//! Consistency levels are checked before a statement gets here
//! (`crate::consistency`): one node is the one live replica of every
//! keyspace.

use std::sync::Arc;

use varve_storage::{Engine, ReadCost};
use varve_types::data::PartitionKey;
use varve_types::data_error::DataError;

use crate::data_path::{
    DataFuture, DataPath, KeyScan, PartitionRead, ReadCommand, TableId, WriteCommand,
};

/// One node's storage engine as a [`DataPath`].
pub struct LocalNode {
    engine: Arc<Engine>,
}

impl LocalNode {
    pub fn new(engine: Arc<Engine>) -> Self {
        LocalNode { engine }
    }
}

impl DataPath for LocalNode {
    fn write(&self, w: WriteCommand) -> DataFuture<'_, ()> {
        DataFuture::ready(
            self.engine
                .apply(w.table, &w.key, w.update)
                .map_err(on_write),
        )
    }

    fn read<'a>(&'a self, r: ReadCommand<'a>) -> DataFuture<'a, PartitionRead> {
        let mut cost = ReadCost::default();
        let found = self.engine.read_live_costed(
            r.table,
            r.key,
            r.slices,
            r.reversed,
            r.now_seconds,
            r.row_limit,
            &mut cost,
        );
        DataFuture::ready(match found {
            Ok(Some((partition, stats, complete))) => Ok(PartitionRead {
                partition: Some(partition),
                tombstones: stats.tombstones,
                complete,
                sstables: cost.sstables,
            }),
            Ok(None) => Ok(PartitionRead {
                partition: None,
                tombstones: 0,
                complete: true,
                sstables: cost.sstables,
            }),
            Err(e) => Err(on_read(e)),
        })
    }

    fn scan_keys<'a>(&'a self, s: KeyScan<'a>) -> DataFuture<'a, Vec<PartitionKey>> {
        DataFuture::ready(
            self.engine
                .scan_keys(s.table, s.start, s.end, s.limit)
                .map_err(on_read),
        )
    }

    fn truncate(&self, table: TableId) -> DataFuture<'_, ()> {
        DataFuture::ready(self.engine.truncate(table).map_err(on_read))
    }
}

/// A storage error met while reading (or doing anything but a write) as
/// the data path reports it: a damaged file is a ReadFailure, as
/// Cassandra reports a corrupt sstable.
pub fn on_read(e: varve_storage::Error) -> DataError {
    e.on_read()
}

/// A storage error met while storing a write: a failing or full disk is
/// a WriteFailure (the write was not acknowledged); anything else as
/// [`on_read`] says.
pub fn on_write(e: varve_storage::Error) -> DataError {
    e.on_write()
}
