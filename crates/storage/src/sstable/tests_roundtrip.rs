//! Round trips through the writer and reader: random partitions with and
//! without compression and at several chunk lengths, point reads, scans by
//! token, statistics, the bloom filter's false-positive rate, and limits;
//! and the statistics section's codec on random values.

use super::test_util::{arb_partitions, comparator, open, write};
use crate::cell::{Cell, DeletionTime, NO_DELETION_TIME};
use crate::clustering::ClusteringKey;
use crate::engine::{PartitionKey, TokenBound};
use crate::fs::DiskAccessMode;
use crate::partition::Partition;
use crate::row::Row;
use crate::sstable::format::{MAX_CHUNK_LENGTH, MAX_INDEX_INTERVAL, MAX_KEY_LEN, MIN_CHUNK_LENGTH};
use crate::sstable::fs_mem::MemFs;
use crate::sstable::histogram::{DropTimeHistogram, SizeHistogram, SIZE_BUCKETS};
use crate::sstable::stats::{decode_stats, encode_stats};
use crate::sstable::{Compression, SstableParams, SstableStats, SstableWriter};
use bytes::Bytes;
use proptest::prelude::*;
use std::path::Path;

fn params(compression: Compression, chunk_length: usize, interval: usize) -> SstableParams {
    SstableParams {
        chunk_length,
        compression,
        min_index_interval: interval,
        ..SstableParams::default()
    }
}

/// Writes `parts`, then reads them back with the summary at step 1 and
/// downsampled to `step` (and back), which must not change any answer.
fn check_round_trip(
    parts: &[(PartitionKey, Partition)],
    p: SstableParams,
    step: usize,
) -> Result<(), TestCaseError> {
    let fs = MemFs::new();
    let path = Path::new("t/a.db");
    let written = write(&fs, path, p, parts);
    let table = open(&fs, path, 1.0).unwrap();
    prop_assert_eq!(table.stats(), &written);
    for s in [1, step, 1] {
        table.resample_summary(s).unwrap();
        prop_assert_eq!(table.summary().step(), s);
        check_reads(&table, parts)?;
    }
    // The same file read through "maps" (the index only, then everything).
    let image = fs.get(path).unwrap();
    for access in [DiskAccessMode::MmapIndexOnly, DiskAccessMode::Mmap] {
        let mapped = MemFs::with_access(access);
        mapped.insert(path, image.clone());
        let table = open(&mapped, path, 1.0).unwrap();
        for s in [step, 1] {
            table.resample_summary(s).unwrap();
            check_reads(&table, parts)?;
        }
    }
    Ok(())
}

fn check_reads(
    table: &crate::sstable::Sstable,
    parts: &[(PartitionKey, Partition)],
) -> Result<(), TestCaseError> {
    table.verify().unwrap();
    prop_assert_eq!(table.stats().partition_count, parts.len() as u64);
    let all: Vec<_> = table.iter().unwrap().collect::<crate::Result<_>>().unwrap();
    prop_assert_eq!(&all, &parts.to_vec());
    for (k, part) in parts {
        let got = table.read_partition(k).unwrap();
        prop_assert_eq!(got.as_ref(), Some(part));
    }
    let absent = PartitionKey::new(Bytes::from_static(
        b"no such key, too long for the strategy",
    ));
    prop_assert_eq!(table.read_partition(&absent).unwrap(), None);
    let keys = table
        .keys(&TokenBound::Unbounded, &TokenBound::Unbounded, usize::MAX)
        .unwrap();
    prop_assert_eq!(
        keys,
        parts.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>()
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn random_partitions_round_trip(
        parts in arb_partitions(40),
        lz4 in any::<bool>(),
        chunk in prop::sample::select(vec![16usize, 100, 1000, 16 * 1024]),
        interval in 1usize..6,
        step in 1usize..6,
    ) {
        let compression = if lz4 { Compression::Lz4 } else { Compression::None };
        check_round_trip(&parts, params(compression, chunk, interval), step)?;
    }

    #[test]
    fn keys_respect_token_bounds(parts in arb_partitions(60), a in any::<usize>(), b in any::<usize>(), limit in 0usize..70) {
        let fs = MemFs::new();
        let path = Path::new("t/k.db");
        write(&fs, path, params(Compression::Lz4, 64, 3), &parts);
        let table = open(&fs, path, 1.0).unwrap();
        let keys: Vec<PartitionKey> = parts.iter().map(|(k, _)| k.clone()).collect();
        let pick = |i: usize| keys.get(i % keys.len().max(1)).cloned();
        let (Some(ka), Some(kb)) = (pick(a), pick(b)) else { return Ok(()) };
        let bounds = [
            (TokenBound::TokenInclusive(ka.token), TokenBound::TokenInclusive(kb.token)),
            (TokenBound::TokenExclusive(ka.token), TokenBound::TokenExclusive(kb.token)),
            (TokenBound::AfterKey(ka.clone()), TokenBound::Unbounded),
            (TokenBound::Unbounded, TokenBound::AfterKey(kb.clone())),
            (TokenBound::AfterKey(ka.clone()), TokenBound::TokenInclusive(kb.token)),
        ];
        for (start, end) in bounds {
            let want: Vec<PartitionKey> = keys
                .iter()
                .filter(|k| match &start {
                    TokenBound::Unbounded => true,
                    TokenBound::TokenInclusive(t) => k.token >= *t,
                    TokenBound::TokenExclusive(t) => k.token > *t,
                    TokenBound::AfterKey(s) => *k > s,
                })
                .filter(|k| match &end {
                    TokenBound::Unbounded => true,
                    TokenBound::TokenInclusive(t) => k.token <= *t,
                    TokenBound::TokenExclusive(t) => k.token < *t,
                    TokenBound::AfterKey(e) => *k < e,
                })
                .take(limit)
                .cloned()
                .collect();
            prop_assert_eq!(table.keys(&start, &end, limit).unwrap(), want, "{:?}..{:?}", start, end);
        }
    }
}

fn wide_partition(rows: i32, value_len: usize) -> Partition {
    let cmp = comparator();
    let mut p = Partition::default();
    for i in 0..rows {
        let mut row = Row::default();
        row.cells.insert(
            (1, None),
            Cell::live(i as i64, Bytes::from(vec![i as u8; value_len])),
        );
        let key = ClusteringKey::row(
            vec![Bytes::copy_from_slice(&i.to_be_bytes()), Bytes::new()],
            &cmp,
        );
        p.rows.insert(key, row);
    }
    p
}

#[test]
fn partitions_larger_than_a_chunk_round_trip() {
    let mut parts: Vec<(PartitionKey, Partition)> = (0..5)
        .map(|i| {
            (
                PartitionKey::new(Bytes::from(format!("wide{i}"))),
                wide_partition(200 + i, 97),
            )
        })
        .collect();
    parts.sort_by(|a, b| a.0.cmp(&b.0));
    for compression in [Compression::None, Compression::Lz4] {
        for chunk in [16, 333, 4096] {
            check_round_trip(&parts, params(compression, chunk, 2), 3).unwrap();
        }
    }
}

#[test]
fn empty_sstable_opens_and_reads_nothing() {
    check_round_trip(&[], SstableParams::default(), 2).unwrap();
}

#[test]
fn statistics_are_exact() {
    let cmp = comparator();
    let ck = |i: i32| {
        vec![
            Bytes::copy_from_slice(&i.to_be_bytes()),
            Bytes::from_static(b"x"),
        ]
    };
    let mut a = Partition {
        deletion: DeletionTime::new(5, 1000),
        ..Partition::default()
    };
    let mut row = Row::default();
    row.cells
        .insert((1, None), Cell::live(100, Bytes::from_static(b"v")));
    row.cells.insert(
        (2, None),
        Cell::expiring(7, 60, 2000, Bytes::from_static(b"e")),
    );
    row.cells.insert((3, None), Cell::tombstone(-3, 500));
    a.rows.insert(ClusteringKey::row(ck(1), &cmp), row.clone());
    a.rows.insert(
        ClusteringKey::row(ck(9), &cmp),
        Row {
            deletion: Some(DeletionTime::new(50, 700)),
            ..Row::default()
        },
    );
    let b = wide_partition(3, 1);
    let mut parts = vec![
        (PartitionKey::new(Bytes::from_static(b"a")), a),
        (PartitionKey::new(Bytes::from_static(b"b")), b),
    ];
    parts.sort_by(|x, y| x.0.cmp(&y.0));
    let fs = MemFs::new();
    let path = Path::new("t/s.db");
    let s = write(&fs, path, SstableParams::default(), &parts);
    assert_eq!(s.partition_count, 2);
    assert_eq!(s.row_count, 5);
    assert_eq!(s.cell_count, 6);
    assert_eq!(s.tombstone_count, 3);
    assert_eq!(s.expiring_count, 1);
    assert_eq!((s.min_timestamp, s.max_timestamp), (-3, 100));
    assert_eq!(
        (s.min_local_deletion_time, s.max_local_deletion_time),
        (500, NO_DELETION_TIME)
    );
    assert_eq!((s.min_ttl, s.max_ttl), (0, 60));
    assert_eq!(s.drop_times.total(), 4);
    assert!((s.droppable_tombstones(1000) - 3.0).abs() < 1.0);
    assert_eq!(s.first_key.as_ref(), Some(&parts[0].0));
    assert_eq!(s.last_key.as_ref(), Some(&parts[1].0));
    let min = s.min_clustering.clone().unwrap();
    let max = s.max_clustering.clone().unwrap();
    assert_eq!(min.values[0], Bytes::copy_from_slice(&0i32.to_be_bytes()));
    assert_eq!(max.values[0], Bytes::copy_from_slice(&9i32.to_be_bytes()));
    assert_eq!(s.partition_sizes.total(), 2);
    let table = open(&fs, path, 1.0).unwrap();
    assert_eq!(table.stats(), &s);
    assert!(table.stats().compressed_len + 16 < table.size_on_disk());
}

#[test]
fn bloom_false_positive_rate_is_near_target() {
    let fs = MemFs::new();
    let path = Path::new("t/bloom.db");
    let mut parts: Vec<_> = (0..10_000)
        .map(|i| {
            (
                PartitionKey::new(Bytes::from(format!("key{i}"))),
                Partition {
                    deletion: DeletionTime::new(1, 1),
                    ..Partition::default()
                },
            )
        })
        .collect();
    parts.sort_by(|a, b| a.0.cmp(&b.0));
    write(&fs, path, SstableParams::default(), &parts);
    let table = open(&fs, path, 1.0).unwrap();
    for (k, _) in parts.iter().step_by(10) {
        assert!(table.read_partition(k).unwrap().is_some());
    }
    assert_eq!(table.bloom_true_positives(), 1000);
    let trials = 20_000;
    for i in 0..trials {
        assert!(table
            .read_partition(&PartitionKey::new(Bytes::from(format!("miss{i}"))))
            .unwrap()
            .is_none());
    }
    let rate = table.bloom_false_positives() as f64 / trials as f64;
    assert!(rate > 0.005 && rate < 0.015, "false positive rate {rate}");
}

#[test]
fn limits_hold_at_n_and_fail_at_n_plus_one() {
    let fs = MemFs::new();
    let path = Path::new("t/l.db");
    let cmp = comparator();
    let p = Partition {
        deletion: DeletionTime::new(1, 1),
        ..Partition::default()
    };
    let mut w =
        SstableWriter::create(fs.clone(), path, SstableParams::default(), cmp.clone()).unwrap();
    let longest = PartitionKey::new(Bytes::from(vec![7u8; MAX_KEY_LEN]));
    w.add(&longest, &p).unwrap();
    assert!(w
        .add(
            &PartitionKey {
                token: i64::MAX,
                key: Bytes::from(vec![7u8; MAX_KEY_LEN + 1])
            },
            &p
        )
        .is_err());
    assert!(w
        .add(
            &PartitionKey {
                token: i64::MAX,
                key: Bytes::new()
            },
            &p
        )
        .is_err());
    assert!(
        w.add(&longest, &p).is_err(),
        "a repeated key is out of order"
    );
    w.finish().unwrap();
    let table = open(&fs, path, 1.0).unwrap();
    assert_eq!(table.read_partition(&longest).unwrap(), Some(p));
    for (len, ok) in [
        (MAX_CHUNK_LENGTH, true),
        (MAX_CHUNK_LENGTH + 1, false),
        (MIN_CHUNK_LENGTH, true),
        (MIN_CHUNK_LENGTH - 1, false),
    ] {
        let params = SstableParams {
            chunk_length: len,
            ..SstableParams::default()
        };
        assert_eq!(
            SstableWriter::create(fs.clone(), path, params, cmp.clone()).is_ok(),
            ok,
            "{len}"
        );
    }
    for (interval, ok) in [
        (MAX_INDEX_INTERVAL, true),
        (MAX_INDEX_INTERVAL + 1, false),
        (0, false),
    ] {
        let params = SstableParams {
            min_index_interval: interval,
            ..SstableParams::default()
        };
        assert_eq!(
            SstableWriter::create(fs.clone(), path, params, cmp.clone()).is_ok(),
            ok,
            "{interval}"
        );
    }
    let params = SstableParams {
        bloom_fp_chance: 0.0,
        ..SstableParams::default()
    };
    assert!(SstableWriter::create(fs.clone(), path, params, cmp.clone()).is_err());
    let params = SstableParams {
        bloom_fp_chance: 1.0,
        ..SstableParams::default()
    };
    assert!(SstableWriter::create(fs.clone(), path, params, cmp).is_ok());
}

#[test]
fn key_cache_serves_repeated_point_reads() {
    let fs = MemFs::new();
    let path = Path::new("t/cache.db");
    let parts = super::test_util::sample_partitions(50);
    write(&fs, path, SstableParams::default(), &parts);
    let sst = open(&fs, path, 1.0).unwrap();
    for (k, p) in &parts {
        assert_eq!(sst.read_partition(k).unwrap().as_ref(), Some(p));
    }
    assert_eq!(sst.key_cache_hits(), 0);
    for (k, p) in &parts {
        assert_eq!(
            sst.read_partition(k).unwrap().as_ref(),
            Some(p),
            "cached read"
        );
    }
    assert_eq!(sst.key_cache_hits(), parts.len() as u64);
}

/// Two keys with one token share a key cache entry: reading one after the
/// other finds the other's partition at the cached place, and the index
/// gives the right one (no error, no wrong answer).
#[test]
fn key_cache_entries_of_a_shared_token_fall_back_to_the_index() {
    let key = |k: &str| PartitionKey {
        token: 42,
        key: Bytes::from(k.to_string()),
    };
    let partition = |ts: i64| Partition {
        deletion: DeletionTime::new(ts, 1),
        ..Partition::default()
    };
    let parts = vec![(key("a"), partition(1)), (key("b"), partition(2))];
    let fs = MemFs::new();
    let path = Path::new("t/shared-token.db");
    write(&fs, path, SstableParams::default(), &parts);
    let sst = open(&fs, path, 1.0).unwrap();
    for _ in 0..2 {
        for (k, p) in &parts {
            assert_eq!(sst.read_partition(k).unwrap().as_ref(), Some(p), "{k:?}");
        }
    }
    assert_eq!(sst.key_cache_len(), 1, "one entry for the token");
    assert_eq!(
        sst.key_cache_hits(),
        0,
        "each read found the other key's place"
    );
    // The same key twice in a row is served by the cache.
    assert_eq!(
        sst.read_partition(&parts[1].0).unwrap().as_ref(),
        Some(&parts[1].1)
    );
    assert_eq!(sst.key_cache_hits(), 1);
}

/// A partition key: any token, a short key or one of [`MAX_KEY_LEN`]
/// bytes (the most its u16 length holds).
fn arb_stats_key() -> impl Strategy<Value = PartitionKey> {
    let len = prop_oneof![9 => 0usize..24, 1 => Just(MAX_KEY_LEN)];
    (any::<i64>(), len, any::<u8>()).prop_map(|(token, len, fill)| PartitionKey {
        token,
        key: Bytes::from(
            (0..len)
                .map(|i| fill.wrapping_add(i as u8))
                .collect::<Vec<_>>(),
        ),
    })
}

/// A row clustering or a bound (weight -1, 0 or +1) of up to three
/// components of any bytes, more than the table's two included.
fn arb_stats_clustering() -> impl Strategy<Value = ClusteringKey> {
    let values = proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..6), 0..4);
    (values, -1i8..=1).prop_map(|(values, weight)| {
        let values = values.into_iter().map(Bytes::from).collect();
        let cmp = comparator();
        match weight {
            -1 => ClusteringKey::before(values, &cmp),
            0 => ClusteringKey::row(values, &cmp),
            _ => ClusteringKey::after(values, &cmp),
        }
    })
}

/// Any statistics the section can hold: counts, timestamps, deletion
/// times and TTLs over their whole ranges (min above max included, the
/// codec does not care), both keys and clustering bounds present or not,
/// any size histogram, a drop-time histogram of random times and bin
/// limit, and the format 2 counts present (both) or not (format 1).
fn arb_stats() -> impl Strategy<Value = SstableStats> {
    let counts = prop::array::uniform5(prop_oneof![0u64..1000, any::<u64>()]);
    let times = (
        any::<i64>(),
        any::<i64>(),
        prop::array::uniform4(prop_oneof![Just(NO_DELETION_TIME), any::<i32>()]),
    );
    let lens = (any::<u64>(), any::<u64>());
    let keys = (
        proptest::option::of(arb_stats_key()),
        proptest::option::of(arb_stats_key()),
    );
    let clusterings = (
        proptest::option::of(arb_stats_clustering()),
        proptest::option::of(arb_stats_clustering()),
    );
    let sizes = proptest::collection::vec(
        prop_oneof![Just(0u64), 0u64..1000, any::<u64>()],
        SIZE_BUCKETS + 1,
    );
    let drops = (
        proptest::collection::vec(any::<i32>(), 0..150),
        1usize..=120,
    );
    let v2 = proptest::option::of((any::<u64>(), any::<u64>()));
    (counts, times, lens, keys, clusterings, sizes, drops, v2).prop_map(
        |(counts, (min_ts, max_ts, t), lens, keys, clusterings, sizes, drops, v2)| {
            let mut drop_times = DropTimeHistogram::new(drops.1);
            for t in drops.0 {
                drop_times.add(t);
            }
            SstableStats {
                partition_count: counts[0],
                row_count: counts[1],
                cell_count: counts[2],
                tombstone_count: counts[3],
                expiring_count: counts[4],
                min_timestamp: min_ts,
                max_timestamp: max_ts,
                min_local_deletion_time: t[0],
                max_local_deletion_time: t[1],
                min_ttl: t[2],
                max_ttl: t[3],
                uncompressed_len: lens.0,
                compressed_len: lens.1,
                first_key: keys.0,
                last_key: keys.1,
                min_clustering: clusterings.0,
                max_clustering: clusterings.1,
                partition_sizes: SizeHistogram { counts: sizes },
                drop_times,
                partition_deletions: v2.map(|v| v.0),
                static_rows: v2.map(|v| v.1),
            }
        },
    )
}

/// The components and weight of a clustering bound: `ClusteringKey`'s
/// `==` is the table's order, this is its exact bytes.
fn clustering_bytes(k: &Option<ClusteringKey>) -> Option<(Vec<Bytes>, i8)> {
    k.as_ref().map(|k| (k.values.clone(), k.weight))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Any statistics decode to exactly themselves, the clustering bounds
    /// byte for byte.
    #[test]
    fn any_statistics_round_trip_exactly(s in arb_stats()) {
        let bytes = encode_stats(&s);
        let decoded = decode_stats(&bytes, &comparator()).unwrap();
        for (got, want) in [
            (&decoded.min_clustering, &s.min_clustering),
            (&decoded.max_clustering, &s.max_clustering),
        ] {
            prop_assert_eq!(clustering_bytes(got), clustering_bytes(want));
        }
        prop_assert_eq!(decoded, s);
    }

    /// A truncated statistics section is an error, never a panic, with
    /// one exception the format allows: cut just before the two format 2
    /// counts (its last 16 bytes), it is a whole format 1 section and
    /// decodes to the same statistics without them. The decoder does not
    /// know the file's version; on open, the footer's length and CRC of
    /// the section catch that cut.
    #[test]
    fn truncated_statistics_are_errors(
        s in arb_stats(),
        picks in proptest::collection::vec(any::<prop::sample::Index>(), 24),
    ) {
        let bytes = encode_stats(&s);
        let len = bytes.len();
        let ends = [0, 1, len - 1, len - 8, len - 16, len - 17];
        let cuts = picks.iter().map(|i| i.index(len)).chain(ends);
        let cmp = comparator();
        for cut in cuts {
            let got = decode_stats(&bytes[..cut], &cmp);
            if s.partition_deletions.is_some() && cut == len - 16 {
                let v1 = SstableStats { partition_deletions: None, static_rows: None, ..s.clone() };
                prop_assert_eq!(got, Ok(v1));
            } else {
                prop_assert!(got.is_err(), "cut at {} of {}", cut, len);
            }
        }
    }

    /// Statistics with a changed byte, and any bytes at all, decode or
    /// fail without a panic.
    #[test]
    fn damaged_statistics_never_panic(
        s in arb_stats(),
        at in any::<prop::sample::Index>(),
        mask in 1u8..,
        noise in proptest::collection::vec(any::<u8>(), 0..400),
    ) {
        let mut bytes = encode_stats(&s);
        let i = at.index(bytes.len());
        bytes[i] ^= mask;
        let cmp = comparator();
        let _ = decode_stats(&bytes, &cmp);
        let _ = decode_stats(&noise, &cmp);
    }
}
