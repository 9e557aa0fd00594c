//! Range scans read partitions ahead (docs/design/cluster.md, section
//! 8.4, until RANGE_READ returns rows).
//!
//! A range scan takes the partition keys of a token range in batches and
//! reads each partition in turn. On one node every read is answered at
//! once, and the scan reads one partition at a time, each with just the
//! rows the page still needs. On a cluster a read waits on replicas, so
//! reading the partitions of a batch one after another waits one round trip
//! per partition: the scan instead keeps [`PREFETCH_PARTITIONS`] first reads
//! in flight, in key order, each for as many rows as the page could take
//! when the batch started. A read made with more rows than a partition
//! turns out to need stands for the smaller one: its first rows in the
//! query's order, marked incomplete when rows were cut.
//!
//! Which case applies is decided by the first read of a batch: answered at
//! once (one node), the scan goes on one read at a time; pending (a
//! cluster), it reads ahead.

use crate::data_path::{DataFuture, DataPath, PartitionRead, ReadCommand};
use futures::stream::{self, Stream, StreamExt};
use varve_storage::PartitionKey;
use varve_types::data_error::DataError;

/// First reads of a range scan's partitions in flight at once, on a
/// cluster.
pub const PREFETCH_PARTITIONS: usize = 16;

/// A partition's first read, made before it was needed.
pub(super) struct Prefetched {
    pub found: PartitionRead,
    /// The row limit it was read with.
    pub row_limit: usize,
}

impl Prefetched {
    /// The read as one made with `chunk` rows: the first `chunk` rows in
    /// the query's order (the last ones when `reversed`), incomplete when
    /// rows were cut; `None` when it was read with fewer rows than that.
    pub fn into_read_of(self, chunk: usize, reversed: bool) -> Option<PartitionRead> {
        if chunk > self.row_limit {
            return None;
        }
        let mut found = self.found;
        if let Some(p) = &mut found.partition {
            let boundary = if reversed {
                p.rows.keys().rev().nth(chunk)
            } else {
                p.rows.keys().nth(chunk)
            };
            if let Some(b) = boundary.cloned() {
                p.rows.retain(|k, _| if reversed { *k > b } else { *k < b });
                found.complete = false;
            }
        }
        Some(found)
    }
}

/// How a batch of partitions is read.
pub(super) enum Batch<'a> {
    /// One node: the first partition's read, answered; the others are read
    /// when needed.
    OneAtATime(Option<Prefetched>),
    /// A cluster: every partition's first read, in key order, several in
    /// flight.
    Ahead(std::pin::Pin<Box<dyn Stream<Item = Result<PartitionRead, DataError>> + Send + 'a>>),
}

impl<'a> Batch<'a> {
    /// Starts reading `keys` (not empty) as `command` says, each key in
    /// turn in place of its `key`.
    pub async fn start(
        data: &'a dyn DataPath,
        keys: &'a [PartitionKey],
        command: ReadCommand<'a>,
    ) -> Result<Batch<'a>, DataError> {
        let row_limit = command.row_limit;
        let first = data.read(ReadCommand {
            key: &keys[0],
            ..command
        });
        if let DataFuture::Ready(_) = first {
            let found = first.await?;
            return Ok(Batch::OneAtATime(Some(Prefetched { found, row_limit })));
        }
        let rest = keys[1..]
            .iter()
            .map(move |key| data.read(ReadCommand { key, ..command }));
        let reads = stream::iter(std::iter::once(first).chain(rest)).buffered(PREFETCH_PARTITIONS);
        Ok(Batch::Ahead(Box::pin(reads)))
    }

    /// The prefetched first read of the next partition, if there is one.
    pub async fn next(&mut self, row_limit: usize) -> Result<Option<Prefetched>, DataError> {
        match self {
            Batch::OneAtATime(first) => Ok(first.take()),
            Batch::Ahead(reads) => match reads.next().await {
                Some(found) => Ok(Some(Prefetched {
                    found: found?,
                    row_limit,
                })),
                None => Ok(None),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use varve_storage::{ClusteringComparator, ClusteringKey, Partition, Row};
    use varve_types::CqlType;

    fn read_of(rows: &[i32]) -> PartitionRead {
        let cmp = ClusteringComparator::new(vec![(CqlType::Int, false)]);
        let mut p = Partition::default();
        for &c in rows {
            let key = ClusteringKey::row(vec![Bytes::copy_from_slice(&c.to_be_bytes())], &cmp);
            p.rows.insert(key, Row::default());
        }
        PartitionRead {
            partition: Some(p),
            complete: true,
            ..PartitionRead::default()
        }
    }

    fn clusterings(r: &PartitionRead) -> Vec<i32> {
        let rows = &r.partition.as_ref().expect("rows").rows;
        rows.keys()
            .map(|k| i32::from_be_bytes(k.values[0][..4].try_into().expect("int")))
            .collect()
    }

    #[test]
    fn a_read_ahead_stands_for_a_smaller_one_in_either_direction() {
        let ahead = |rows: &[i32]| Prefetched {
            found: read_of(rows),
            row_limit: 5,
        };
        let cut = ahead(&[1, 2, 3, 4, 5])
            .into_read_of(2, false)
            .expect("smaller");
        assert_eq!((clusterings(&cut), cut.complete), (vec![1, 2], false));
        let cut = ahead(&[1, 2, 3, 4, 5])
            .into_read_of(2, true)
            .expect("smaller");
        assert_eq!((clusterings(&cut), cut.complete), (vec![4, 5], false));
        let whole = ahead(&[1, 2]).into_read_of(3, false).expect("smaller");
        assert_eq!((clusterings(&whole), whole.complete), (vec![1, 2], true));
        let exact = ahead(&[1, 2, 3]).into_read_of(3, true).expect("same");
        assert_eq!((clusterings(&exact), exact.complete), (vec![1, 2, 3], true));
        assert!(
            ahead(&[1]).into_read_of(6, false).is_none(),
            "read with fewer rows"
        );
    }
}
