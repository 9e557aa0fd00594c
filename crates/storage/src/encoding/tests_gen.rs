//! Random partitions for the encoding tests, reaching the corners the
//! sstable generators stay away from: extreme timestamps (`i64::MIN`,
//! `i64::MIN + 1`, `i64::MAX`), any TTL and deletion time including the
//! sentinels, cells that share their row's timestamp and TTL (the compact
//! forms of version 2), collections with paths, static rows, range
//! tombstones and every kind of deletion.

use crate::cell::{Cell, DeletionTime, LivenessInfo, NO_DELETION_TIME};
use crate::clustering::{ClusteringComparator, ClusteringKey, Slice};
use crate::partition::{Partition, RangeTombstone};
use crate::row::Row;
use bytes::Bytes;
use proptest::prelude::*;
use std::sync::Arc;
use varve_types::CqlType;

pub fn comparator() -> Arc<ClusteringComparator> {
    ClusteringComparator::new(vec![(CqlType::Int, false), (CqlType::Text, true)])
}

/// Realistic microsecond timestamps, near-equal ones, and the extremes.
pub fn arb_timestamp() -> impl Strategy<Value = i64> {
    prop_oneof![
        4 => 1_700_000_000_000_000i64..1_700_000_000_100_000,
        1 => Just(i64::MIN),
        1 => Just(i64::MIN + 1),
        1 => Just(i64::MAX),
        1 => any::<i64>(),
    ]
}

/// Seconds, the "none" sentinel, and the extremes.
pub fn arb_ldt() -> impl Strategy<Value = i32> {
    prop_oneof![
        4 => 1_700_000_000i32..1_700_100_000,
        2 => Just(NO_DELETION_TIME),
        1 => Just(i32::MIN),
        1 => any::<i32>(),
    ]
}

pub fn arb_ttl() -> impl Strategy<Value = i32> {
    prop_oneof![3 => 1i32..1_000_000, 1 => Just(0), 1 => any::<i32>()]
}

pub fn arb_deletion() -> impl Strategy<Value = DeletionTime> {
    prop_oneof![
        6 => (arb_timestamp(), arb_ldt()).prop_map(|(t, l)| DeletionTime::new(t, l)),
        1 => Just(DeletionTime::LIVE),
    ]
}

/// How a generated cell relates to its row's liveness.
#[derive(Debug, Clone, Copy)]
enum Like {
    Nothing,
    Timestamp,
    TimestampAndTtl,
}

fn arb_cell() -> impl Strategy<Value = (Cell, Like)> {
    let value = proptest::collection::vec(any::<u8>(), 0..12).prop_map(Bytes::from);
    let like = prop_oneof![
        Just(Like::Nothing),
        Just(Like::Timestamp),
        Just(Like::TimestampAndTtl)
    ];
    let kind = prop_oneof![
        // live, tombstone, expiring, anything at all
        (arb_timestamp()).prop_map(|t| (t, 0, NO_DELETION_TIME)),
        (arb_timestamp(), arb_ldt()).prop_map(|(t, l)| (t, 0, l)),
        (arb_timestamp(), 1i32..100_000, arb_ldt()).prop_map(|(t, ttl, l)| (t, ttl, l)),
        (arb_timestamp(), arb_ttl(), arb_ldt()),
    ];
    (kind, value, like).prop_map(|((timestamp, ttl, local_deletion_time), value, like)| {
        let cell = Cell {
            timestamp,
            ttl,
            local_deletion_time,
            value,
        };
        (cell, like)
    })
}

fn arb_liveness() -> impl Strategy<Value = LivenessInfo> {
    prop_oneof![
        arb_timestamp().prop_map(|t| LivenessInfo::new(t, 0, 0)),
        (arb_timestamp(), 1i32..100_000, arb_ldt()).prop_map(|(t, ttl, l)| LivenessInfo {
            timestamp: t,
            ttl,
            local_expiration_time: l,
        }),
        (arb_timestamp(), arb_ttl(), arb_ldt()).prop_map(|(t, ttl, l)| LivenessInfo {
            timestamp: t,
            ttl,
            local_expiration_time: l,
        }),
    ]
}

pub fn arb_row() -> impl Strategy<Value = Row> {
    let path =
        proptest::option::of(proptest::collection::vec(any::<u8>(), 0..4).prop_map(Bytes::from));
    let column = prop_oneof![0u32..6, Just(u32::MAX - 1), Just(u32::MAX)];
    (
        proptest::option::of(arb_liveness()),
        proptest::option::of(arb_deletion()),
        proptest::collection::vec(((column, path), arb_cell()), 0..8),
        proptest::collection::btree_map(prop_oneof![0u32..8, Just(u32::MAX)], arb_deletion(), 0..3),
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

fn clustering_values() -> impl Strategy<Value = Vec<Bytes>> {
    (any::<i32>(), "[a-z]{0,3}", 0usize..3).prop_map(|(i, s, n)| {
        let mut v = vec![Bytes::copy_from_slice(&i.to_be_bytes()), Bytes::from(s)];
        v.truncate(n);
        v
    })
}

fn arb_range_tombstone() -> impl Strategy<Value = (Vec<Bytes>, bool, Vec<Bytes>, bool, DeletionTime)>
{
    (
        clustering_values(),
        any::<bool>(),
        clustering_values(),
        any::<bool>(),
        arb_deletion(),
    )
}

/// A random partition of fewer than `max_rows` rows.
pub fn arb_partition(max_rows: usize) -> impl Strategy<Value = Partition> {
    (
        arb_deletion(),
        proptest::option::of(arb_row()),
        proptest::collection::vec((clustering_values(), arb_row()), 0..max_rows),
        proptest::collection::vec(arb_range_tombstone(), 0..3),
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
