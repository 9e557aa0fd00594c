//! Random partitions for tests: the one source of the generators of the
//! encoding tests and the sstable tests (`sstable::test_util`). Both reach
//! rows, static rows, cells live, expiring and deleted, collection
//! elements with paths, range tombstones and the four kinds of deletion;
//! [`Reach`] says how far the values go.
//!
//! [`Reach::Extreme`] (the encoding tests) also reaches the corners the
//! sstable tests stay away from: extreme timestamps (`i64::MIN`,
//! `i64::MIN + 1`, `i64::MAX`), any TTL and deletion time including the
//! sentinels, cells that share their row's timestamp and TTL (the compact
//! forms of version 2), column ids up to `u32::MAX`, clustering prefixes as
//! row keys, and a row deletion that deletes nothing.

use crate::cell::{Cell, DeletionTime, LivenessInfo, NO_DELETION_TIME};
use crate::clustering::{ClusteringComparator, ClusteringKey, Slice};
use crate::partition::{Partition, RangeTombstone};
use crate::row::Row;
use bytes::Bytes;
use proptest::prelude::*;
use std::sync::Arc;
use varve_types::CqlType;

/// How far generated values reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// What a node writes: small timestamps, deletion times after the
    /// epoch, cells made by their constructors, full clustering keys.
    Ordinary,
    /// Everything the encoding must carry, sentinels and extremes included.
    Extreme,
}

impl Reach {
    /// Cell values are shorter than this.
    fn value_bytes_max(self) -> usize {
        match self {
            Reach::Ordinary => 40,
            Reach::Extreme => 12,
        }
    }

    /// Collection element paths are shorter than this.
    fn path_bytes_max(self) -> usize {
        match self {
            Reach::Ordinary => 6,
            Reach::Extreme => 4,
        }
    }

    /// Cells (and complex deletions) drawn per row are fewer than this.
    fn cells_max(self) -> (usize, usize) {
        match self {
            Reach::Ordinary => (6, 2),
            Reach::Extreme => (8, 3),
        }
    }
}

pub fn comparator() -> Arc<ClusteringComparator> {
    ClusteringComparator::new(vec![(CqlType::Int, false), (CqlType::Text, true)])
}

/// Microsecond timestamps: small ones, or realistic, near-equal ones and
/// the extremes.
pub fn arb_timestamp(reach: Reach) -> BoxedStrategy<i64> {
    match reach {
        Reach::Ordinary => (-1000i64..1000).boxed(),
        Reach::Extreme => prop_oneof![
            4 => 1_700_000_000_000_000i64..1_700_000_000_100_000,
            1 => Just(i64::MIN),
            1 => Just(i64::MIN + 1),
            1 => Just(i64::MAX),
            1 => any::<i64>(),
        ]
        .boxed(),
    }
}

/// Seconds: small ones, or realistic ones, the "none" sentinel and the
/// extremes.
pub fn arb_ldt(reach: Reach) -> BoxedStrategy<i32> {
    match reach {
        Reach::Ordinary => (0i32..100_000).boxed(),
        Reach::Extreme => prop_oneof![
            4 => 1_700_000_000i32..1_700_100_000,
            2 => Just(NO_DELETION_TIME),
            1 => Just(i32::MIN),
            1 => any::<i32>(),
        ]
        .boxed(),
    }
}

fn arb_ttl() -> impl Strategy<Value = i32> {
    prop_oneof![3 => 1i32..1_000_000, 1 => Just(0), 1 => any::<i32>()]
}

/// A deletion; only [`Reach::Extreme`] draws [`DeletionTime::LIVE`].
pub fn arb_deletion(reach: Reach) -> BoxedStrategy<DeletionTime> {
    let real = (arb_timestamp(reach), arb_ldt(reach)).prop_map(|(t, l)| DeletionTime::new(t, l));
    match reach {
        Reach::Ordinary => real.boxed(),
        Reach::Extreme => prop_oneof![6 => real, 1 => Just(DeletionTime::LIVE)].boxed(),
    }
}

/// How a generated cell relates to its row's liveness.
#[derive(Debug, Clone, Copy)]
enum Like {
    Nothing,
    Timestamp,
    TimestampAndTtl,
}

fn arb_cell(reach: Reach) -> BoxedStrategy<(Cell, Like)> {
    let value =
        proptest::collection::vec(any::<u8>(), 0..reach.value_bytes_max()).prop_map(Bytes::from);
    let ts = || arb_timestamp(reach);
    match reach {
        Reach::Ordinary => prop_oneof![
            (ts(), value.clone()).prop_map(|(t, v)| Cell::live(t, v)),
            (ts(), 1i32..10_000, 0i32..100_000, value.clone())
                .prop_map(|(t, ttl, now, v)| Cell::expiring(t, ttl, now, v)),
            (ts(), 0i32..100_000).prop_map(|(t, now)| Cell::tombstone(t, now)),
        ]
        .prop_map(|cell| (cell, Like::Nothing))
        .boxed(),
        Reach::Extreme => {
            let ldt = || arb_ldt(reach);
            let like = prop_oneof![
                Just(Like::Nothing),
                Just(Like::Timestamp),
                Just(Like::TimestampAndTtl)
            ];
            let kind = prop_oneof![
                // live, tombstone, expiring, anything at all
                ts().prop_map(|t| (t, 0, NO_DELETION_TIME)),
                (ts(), ldt()).prop_map(|(t, l)| (t, 0, l)),
                (ts(), 1i32..100_000, ldt()).prop_map(|(t, ttl, l)| (t, ttl, l)),
                (ts(), arb_ttl(), ldt()),
            ];
            (kind, value, like)
                .prop_map(|((timestamp, ttl, local_deletion_time), value, like)| {
                    let cell = Cell {
                        timestamp,
                        ttl,
                        local_deletion_time,
                        value,
                    };
                    (cell, like)
                })
                .boxed()
        }
    }
}

fn arb_liveness(reach: Reach) -> BoxedStrategy<LivenessInfo> {
    let ts = || arb_timestamp(reach);
    match reach {
        Reach::Ordinary => (ts(), 0i32..100, 0i32..100_000)
            .prop_map(|(t, ttl, now)| LivenessInfo::new(t, ttl, now))
            .boxed(),
        Reach::Extreme => {
            let raw = |(timestamp, ttl, local_expiration_time): (i64, i32, i32)| LivenessInfo {
                timestamp,
                ttl,
                local_expiration_time,
            };
            prop_oneof![
                ts().prop_map(|t| LivenessInfo::new(t, 0, 0)),
                (ts(), 1i32..100_000, arb_ldt(reach)).prop_map(raw),
                (ts(), arb_ttl(), arb_ldt(reach)).prop_map(raw),
            ]
            .boxed()
        }
    }
}

fn arb_column(reach: Reach) -> BoxedStrategy<u32> {
    match reach {
        Reach::Ordinary => (0u32..8).boxed(),
        Reach::Extreme => prop_oneof![0u32..8, Just(u32::MAX - 1), Just(u32::MAX)].boxed(),
    }
}

pub fn arb_row(reach: Reach) -> impl Strategy<Value = Row> {
    let path = proptest::option::of(
        proptest::collection::vec(any::<u8>(), 0..reach.path_bytes_max()).prop_map(Bytes::from),
    );
    let (cells_max, complex_max) = reach.cells_max();
    (
        proptest::option::of(arb_liveness(reach)),
        proptest::option::of(arb_deletion(reach)),
        proptest::collection::vec(((arb_column(reach), path), arb_cell(reach)), 0..cells_max),
        proptest::collection::btree_map(arb_column(reach), arb_deletion(reach), 0..complex_max),
    )
        .prop_map(|(liveness, deletion, cells, complex_deletions)| {
            let mut row = Row {
                liveness,
                deletion,
                complex_deletions,
                ..Row::default()
            };
            for (path, (mut cell, like)) in cells {
                if let Some(l) = &liveness {
                    if !matches!(like, Like::Nothing) {
                        cell.timestamp = l.timestamp;
                    }
                    if matches!(like, Like::TimestampAndTtl) {
                        cell.ttl = l.ttl;
                        cell.local_deletion_time = l.local_expiration_time;
                    }
                }
                row.cells.insert(path, cell);
            }
            row
        })
}

/// Both components of a clustering key.
fn clustering_values() -> impl Strategy<Value = Vec<Bytes>> {
    (any::<i32>(), "[a-z]{0,4}")
        .prop_map(|(i, s)| vec![Bytes::copy_from_slice(&i.to_be_bytes()), Bytes::from(s)])
}

/// The first 0, 1 or 2 components of a clustering key.
fn clustering_prefix() -> impl Strategy<Value = Vec<Bytes>> {
    (clustering_values(), 0usize..3).prop_map(|(mut v, n)| {
        v.truncate(n);
        v
    })
}

/// The clustering of a row: a full key, or for [`Reach::Extreme`] any
/// prefix.
fn row_clustering(reach: Reach) -> BoxedStrategy<Vec<Bytes>> {
    match reach {
        Reach::Ordinary => clustering_values().boxed(),
        Reach::Extreme => clustering_prefix().boxed(),
    }
}

fn arb_range_tombstone(
    reach: Reach,
) -> impl Strategy<Value = (Vec<Bytes>, bool, Vec<Bytes>, bool, DeletionTime)> {
    (
        clustering_prefix(),
        any::<bool>(),
        clustering_prefix(),
        any::<bool>(),
        arb_deletion(reach),
    )
}

/// A random partition of fewer than `max_rows` rows.
pub fn arb_partition(reach: Reach, max_rows: usize) -> impl Strategy<Value = Partition> {
    let deletion = match reach {
        Reach::Ordinary => proptest::option::of(arb_deletion(reach))
            .prop_map(|d| d.unwrap_or(DeletionTime::LIVE))
            .boxed(),
        Reach::Extreme => arb_deletion(reach),
    };
    (
        deletion,
        proptest::option::of(arb_row(reach)),
        proptest::collection::vec((row_clustering(reach), arb_row(reach)), 0..max_rows),
        proptest::collection::vec(arb_range_tombstone(reach), 0..3),
    )
        .prop_map(|(deletion, static_row, rows, rts)| {
            let cmp = comparator();
            let mut p = Partition {
                deletion,
                static_row,
                ..Partition::default()
            };
            for (values, row) in rows {
                p.rows.insert(ClusteringKey::row(values, &cmp), row);
            }
            for (a, before_a, b, after_b, deletion) in rts {
                let start = if before_a {
                    ClusteringKey::before(a, &cmp)
                } else {
                    ClusteringKey::after(a, &cmp)
                };
                let end = if after_b {
                    ClusteringKey::after(b, &cmp)
                } else {
                    ClusteringKey::before(b, &cmp)
                };
                p.range_tombstones.push(RangeTombstone {
                    slice: Slice { start, end },
                    deletion,
                });
            }
            p
        })
}
