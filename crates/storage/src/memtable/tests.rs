//! The bucketed memtable against a plain sorted list: order, ranges that
//! cross bucket boundaries, limits, and the extreme tokens.

use super::*;
use proptest::prelude::*;

fn key(token: i64, k: u8) -> PartitionKey {
    PartitionKey {
        token,
        key: Bytes::from(vec![k]),
    }
}

fn one_row() -> Partition {
    Partition::default()
}

#[test]
fn buckets_follow_token_order_from_the_lowest_token_to_the_highest() {
    for bits in [1, 12, 16] {
        let n = 1usize << bits;
        assert_eq!(bucket_of(i64::MIN, bits), 0);
        assert_eq!(bucket_of(-1, bits), n / 2 - 1);
        assert_eq!(bucket_of(0, bits), n / 2);
        assert_eq!(bucket_of(i64::MAX, bits), n - 1);
        // The first bucket ends after 2^(64 - bits) tokens.
        let second = (i64::MIN as i128 + (1i128 << (64 - bits))) as i64;
        assert_eq!(bucket_of(second - 1, bits), 0);
        assert_eq!(bucket_of(second, bits), 1);
    }
    for token in [i64::MIN, -1, 0, i64::MAX] {
        assert_eq!(bucket_of(token, 0), 0, "one bucket holds every token");
    }
}

#[test]
fn a_memtable_gets_a_bucket_per_sixteen_partitions_of_the_last_up_to_the_maximum() {
    assert_eq!(buckets_for(0), 1);
    assert_eq!(buckets_for(2 * PARTITIONS_PER_BUCKET - 1), 1);
    assert_eq!(buckets_for(2 * PARTITIONS_PER_BUCKET), 2);
    assert_eq!(buckets_for(3 * PARTITIONS_PER_BUCKET - 1), 2);
    assert_eq!(buckets_for(3 * PARTITIONS_PER_BUCKET), 4);
    let at_max = PARTITIONS_PER_BUCKET * MEMTABLE_BUCKETS_MAX;
    assert_eq!(buckets_for(at_max), MEMTABLE_BUCKETS_MAX);
    assert_eq!(
        buckets_for(at_max + PARTITIONS_PER_BUCKET),
        MEMTABLE_BUCKETS_MAX
    );
    assert_eq!(
        Memtable::with_buckets(MEMTABLE_BUCKETS_MAX).bucket_count(),
        MEMTABLE_BUCKETS_MAX
    );
    let m = Memtable::new();
    for t in 0..40 {
        m.apply(&key(t << 58, 0), one_row(), 0);
    }
    assert_eq!(Memtable::sized_after(&m).bucket_count(), 2);
}

#[test]
#[should_panic]
fn more_buckets_than_the_maximum_are_refused() {
    Memtable::with_buckets(MEMTABLE_BUCKETS_MAX * 2);
}

#[test]
fn an_unwritten_memtable_is_empty_everywhere() {
    let m = Memtable::new();
    assert!(m.is_empty());
    assert!(m
        .keys(&TokenBound::Unbounded, &TokenBound::Unbounded, 10)
        .is_empty());
    assert!(m.read(&key(5, 1), &[]).is_none());
    assert!(!m.contains(&key(5, 1)));
    assert!(m.snapshot().is_empty());
    assert!(m.buckets.get().is_none(), "reads make no buckets");
}

fn token() -> impl Strategy<Value = i64> {
    prop_oneof![
        Just(i64::MIN),
        Just(i64::MIN + 1),
        Just(-1i64),
        Just(0i64),
        Just(i64::MAX),
        -3i64..3,
        any::<i64>(),
    ]
}

fn bound(tokens: Vec<i64>) -> impl Strategy<Value = TokenBound> {
    let pick = proptest::sample::select(tokens);
    prop_oneof![
        Just(TokenBound::Unbounded),
        pick.clone().prop_map(TokenBound::TokenInclusive),
        pick.clone().prop_map(TokenBound::TokenExclusive),
        (pick, 0u8..3).prop_map(|(t, k)| TokenBound::AfterKey(key(t, k))),
        any::<i64>().prop_map(TokenBound::TokenInclusive),
    ]
}

type Case = (usize, Vec<(i64, u8)>, TokenBound, TokenBound, usize);

fn case() -> impl Strategy<Value = Case> {
    proptest::collection::vec((token(), 0u8..3), 1..60).prop_flat_map(|entries| {
        let tokens: Vec<i64> = entries.iter().map(|e| e.0).collect();
        (
            proptest::sample::select(vec![1, 2, 16, 4096, MEMTABLE_BUCKETS_MAX]),
            Just(entries),
            bound(tokens.clone()),
            bound(tokens),
            0usize..80,
        )
    })
}

proptest! {
    #[test]
    fn the_buckets_hold_what_one_sorted_list_would((buckets, entries, start, end, limit) in case()) {
        let m = Memtable::with_buckets(buckets);
        let mut all: Vec<PartitionKey> = Vec::new();
        for (t, k) in &entries {
            let pk = key(*t, *k);
            m.apply(&pk, one_row(), 0);
            all.push(pk);
        }
        all.sort();
        all.dedup();
        prop_assert_eq!(m.partition_count(), all.len());
        let mut walked = Vec::new();
        m.try_for_each(|k, _| -> Result<(), ()> {
            walked.push(k.clone());
            Ok(())
        })
        .unwrap();
        prop_assert_eq!(&walked, &all);
        let snapshot: Vec<PartitionKey> = m.snapshot().into_iter().map(|(k, _)| k).collect();
        prop_assert_eq!(&snapshot, &all);
        let want: Vec<PartitionKey> = all
            .iter()
            .filter(|k| key_in_range(k, &start, &end))
            .take(limit)
            .cloned()
            .collect();
        prop_assert_eq!(m.keys(&start, &end, limit), want);
        for k in &all {
            prop_assert!(m.contains(k));
            prop_assert!(m.read(k, &[]).is_some());
        }
    }
}

/// "Memtable cell count" counts each update's rows, static row, range
/// tombstones and partition deletion, summed over every update applied
/// (merged or not), and a memtable made after a flush starts from 0.
#[test]
fn operations_count_rows_static_rows_range_tombstones_and_partition_deletions() {
    use crate::cell::DeletionTime;
    use crate::clustering::{ClusteringComparator, ClusteringKey};
    use crate::row::Row;
    let cmp = ClusteringComparator::new(vec![(varve_types::CqlType::Int, false)]);
    let ck = |c: i32| vec![Bytes::copy_from_slice(&c.to_be_bytes())];
    let mut rows = Partition::default();
    for c in 0..3 {
        rows.rows
            .insert(ClusteringKey::row(ck(c), &cmp), Row::default());
    }
    let with_static = Partition {
        static_row: Some(Row::default()),
        ..Partition::default()
    };
    let mut ranges = Partition::default();
    for c in [0, 5] {
        ranges
            .range_tombstones
            .push(crate::partition::RangeTombstone {
                slice: Slice::prefix(ck(c), &cmp),
                deletion: DeletionTime {
                    marked_for_delete_at: 1,
                    local_deletion_time: 1,
                },
            });
    }
    let deleted = Partition {
        deletion: DeletionTime {
            marked_for_delete_at: 1,
            local_deletion_time: 1,
        },
        ..Partition::default()
    };
    assert_eq!(operation_count(&rows), 3);
    assert_eq!(operation_count(&with_static), 1);
    assert_eq!(operation_count(&ranges), 2);
    assert_eq!(operation_count(&deleted), 1);
    assert_eq!(operation_count(&Partition::default()), 0);

    let m = Memtable::default();
    for p in [rows, with_static, ranges, deleted] {
        m.apply(&key(7, 1), p, 0); // one partition, merged each time
    }
    assert_eq!(m.operation_count(), 7);
    assert_eq!(m.partition_count(), 1);
    assert_eq!(Memtable::sized_after(&m).operation_count(), 0);
}
