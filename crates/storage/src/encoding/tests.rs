//! Tests of both encoding versions: round trips (fixed and random
//! partitions), the size of the cassandra-stress row, and rejection of
//! malformed input (truncation, unknown flags, overflowing deltas) without
//! panics.

use super::tests_gen::{arb_partition, arb_row, comparator, Reach};
use super::*;
use crate::cell::{Cell, DeletionTime, LivenessInfo};
use crate::clustering::Slice;
use crate::partition::RangeTombstone;
use proptest::prelude::*;

/// A partition of every shape (the version 1 tests' sample).
fn sample() -> Partition {
    let cmp = comparator();
    let mut p = Partition {
        deletion: DeletionTime::new(5, 100),
        ..Partition::default()
    };
    let mut s = Row::default();
    s.cells
        .insert((3, None), Cell::live(9, Bytes::from_static(b"static")));
    p.static_row = Some(s);
    for i in 0..3 {
        let mut row = Row {
            liveness: Some(LivenessInfo::new(10 + i, 0, 0)),
            ..Row::default()
        };
        row.cells.insert(
            (4, None),
            Cell::expiring(11, 60, 1000, Bytes::from(vec![i as u8; 40])),
        );
        row.cells.insert(
            (5, Some(Bytes::from_static(b"k"))),
            Cell::tombstone(12, 2000),
        );
        row.complex_deletions.insert(5, DeletionTime::new(7, 3));
        if i == 1 {
            row.deletion = Some(DeletionTime::new(8, 4));
        }
        let key = ClusteringKey::row(
            vec![
                Bytes::copy_from_slice(&(i as i32).to_be_bytes()),
                Bytes::from_static(b"x"),
            ],
            &cmp,
        );
        p.rows.insert(key, row);
    }
    p.range_tombstones.push(RangeTombstone {
        slice: Slice {
            start: ClusteringKey::before(vec![Bytes::copy_from_slice(&1i32.to_be_bytes())], &cmp),
            end: ClusteringKey::after(vec![], &cmp),
        },
        deletion: DeletionTime::new(6, 50),
    });
    p
}

fn encode_v(p: &Partition, version: u8) -> Vec<u8> {
    let mut out = Vec::new();
    match version {
        1 => v1::encode_partition(&mut out, p),
        2 => v2::encode_partition(&mut out, p),
        _ => encode_partition(&mut out, p),
    }
    out
}

/// What `p` decodes to in `version`: as it is, except that version 3 keeps
/// the range tombstones as disjoint ranges of the strongest deletion.
fn as_decoded(p: &Partition, version: u8) -> Partition {
    if version >= 3 {
        crate::encoding::v3::with_normalized_tombstones(p.clone())
    } else {
        p.clone()
    }
}

/// Every version, oldest first.
const VERSIONS: [u8; 3] = [1, 2, 3];

/// Decodes all of `bytes` in `version`; trailing bytes are an error.
/// A value read through a shared reader is a slice of the buffer; through
/// a plain reader, a copy.
#[test]
fn shared_reader_values_are_slices_of_the_buffer() {
    let buf = Bytes::from_static(&[3, b'a', b'b', b'c']);
    let shared = Reader::shared(&buf).bytes().unwrap();
    assert_eq!(shared, &b"abc"[..]);
    assert_eq!(shared.as_ptr(), buf[1..].as_ptr(), "no copy");
    let copied = Reader::new(&buf).bytes().unwrap();
    assert_eq!(copied, &b"abc"[..]);
    assert_ne!(copied.as_ptr(), buf[1..].as_ptr(), "a copy");
}

fn decode_all(bytes: &[u8], version: u8) -> Result<Partition, DecodeError> {
    let mut r = Reader::new(bytes);
    let p = decode_partition_v(&mut r, &comparator(), version)?;
    if !r.is_empty() {
        return Err(r.err("trailing bytes"));
    }
    Ok(p)
}

/// The cassandra-stress default row: an INSERT of five 34-byte blobs with
/// one timestamp, no TTL, no clustering (columns 1..=5; 0 is the key).
fn stress_partition() -> Partition {
    let cmp = comparator();
    let ts = 1_732_000_000_123_456;
    let mut row = Row {
        liveness: Some(LivenessInfo::new(ts, 0, 1_732_000_000)),
        ..Row::default()
    };
    for column in 1..=5 {
        row.cells
            .insert((column, None), Cell::live(ts, Bytes::from(vec![7u8; 34])));
    }
    let mut p = Partition::default();
    p.rows.insert(ClusteringKey::row(vec![], &cmp), row);
    p
}

#[test]
fn the_current_version_is_3_and_every_version_is_readable() {
    assert_eq!(PARTITION_ENCODING_VERSION, 3);
    assert_eq!(READABLE_PARTITION_ENCODINGS, &VERSIONS[..]);
}

#[test]
fn the_stress_row_overhead_shrinks_by_at_least_40_percent() {
    let p = stress_partition();
    let values = 5 * 34;
    let v1 = encode_v(&p, 1).len();
    let v2 = encode_v(&p, 2).len();
    let (o1, o2) = (v1 - values, v2 - values);
    eprintln!("cassandra-stress row: v1 {v1} bytes (overhead {o1}), v2 {v2} bytes (overhead {o2})");
    assert!(o2 * 10 <= o1 * 6, "v1 overhead {o1}, v2 overhead {o2}");
    // Per cell: a flags byte, a length byte, the value; the first cell also
    // carries no column id (1 follows the start value 0).
    assert_eq!(v2, 1 + 8 + 1 + 1 + 1 + 1 + 1 + 5 * (1 + 1 + 34));
    assert_eq!(decode_all(&encode_v(&p, 2), 2).unwrap(), p);
    // Version 3 frames the row as an item: one byte more per partition (the
    // end), the row count replaced by an item kind.
    let v3 = encode_v(&p, 3).len();
    assert_eq!(v3, v2 + 1, "version 3 costs one byte per partition");
    assert_eq!(decode_all(&encode_v(&p, 3), 3).unwrap(), p);
}

#[test]
fn the_sample_round_trips_in_every_version() {
    let p = sample();
    for version in VERSIONS {
        let bytes = encode_v(&p, version);
        assert_eq!(
            decode_all(&bytes, version).unwrap(),
            as_decoded(&p, version),
            "version {version}"
        );
    }
}

#[test]
fn the_current_entry_points_write_and_read_version_3() {
    let p = sample();
    let mut out = Vec::new();
    encode_partition(&mut out, &p);
    assert_eq!(out, encode_v(&p, 3));
    assert_eq!(
        decode_partition(&mut Reader::new(&out), &comparator()).unwrap(),
        as_decoded(&p, 3)
    );
    // Older bytes do not decode as version 3 (the version is not in the
    // bytes: it comes from the container).
    assert_ne!(
        decode_all(&encode_v(&p, 2), 3).ok(),
        Some(as_decoded(&p, 3))
    );
}

#[test]
fn unknown_versions_are_refused() {
    let bytes = encode_v(&sample(), 3);
    for version in [0u8, 4, 255] {
        let e = decode_all(&bytes, version).unwrap_err();
        assert_eq!(e.what, "unsupported partition encoding version");
        assert!(decode_row_v(&mut Reader::new(&bytes), version).is_err());
    }
}

#[test]
fn every_truncation_and_flip_is_an_error_not_a_panic() {
    for version in VERSIONS {
        let out = encode_v(&sample(), version);
        for cut in 0..out.len() {
            assert!(
                decode_all(&out[..cut], version).is_err(),
                "v{version} cut {cut}"
            );
        }
        for i in 0..out.len() {
            for bit in 0..8 {
                let mut bad = out.clone();
                bad[i] ^= 1 << bit;
                let _ = decode_all(&bad, version);
            }
        }
    }
}

#[test]
fn clustering_components_are_limited_at_1024() {
    let cmp = comparator();
    for (n, ok) in [
        (MAX_CLUSTERING_COMPONENTS, true),
        (MAX_CLUSTERING_COMPONENTS + 1, false),
    ] {
        let mut p = Partition::default();
        let key = ClusteringKey::row(vec![Bytes::new(); n], &cmp);
        p.rows.insert(key, Row::default());
        for version in VERSIONS {
            let got = decode_all(&encode_v(&p, version), version);
            assert_eq!(got.is_ok(), ok, "{n} components, version {version}");
        }
    }
}

/// Version 2 bytes of a partition holding one row with one cell, built by
/// hand: header (flags, base), row count, no clustering, row flags, then
/// `row_tail` (liveness and cells as the test wants).
fn v2_one_row(header: &[u8], row_tail: &[u8]) -> Vec<u8> {
    let mut out = header.to_vec();
    out.extend_from_slice(&[1, 0]); // one row, zero clustering values
    out.extend_from_slice(row_tail);
    out
}

#[test]
fn unknown_flag_bits_are_rejected() {
    // Partition flags: bits above 0x08.
    let e = decode_all(&[0x10, 0, 0], 2).unwrap_err();
    assert_eq!(e.what, "unknown partition flags");
    // Row flags: bits above 0x08.
    let e = decode_all(&v2_one_row(&[0, 0], &[0x10, 0]), 2).unwrap_err();
    assert_eq!(e.what, "unknown row flags");
    // Cell flags: 0x80. Row: no flags, one cell.
    let e = decode_all(&v2_one_row(&[0, 0], &[0, 1, 0x80]), 2).unwrap_err();
    assert_eq!(e.what, "unknown cell flags");
    // A standalone row header may only carry the ldt base flag.
    let e = decode_row_v(&mut Reader::new(&[0x01, 0, 0, 0]), 2).unwrap_err();
    assert_eq!(e.what, "unknown partition flags");
}

#[test]
fn contradictory_or_dangling_flags_are_rejected() {
    // Expiring liveness flag without a liveness.
    let e = decode_all(&v2_one_row(&[0, 0], &[0x02, 0]), 2).unwrap_err();
    assert_eq!(e.what, "expiring liveness flag without a liveness");
    // A cell both deleted and expiring (implicit column, empty value).
    let e = decode_all(&v2_one_row(&[0, 0], &[0, 1, 0x66, 1]), 2).unwrap_err();
    assert_eq!(e.what, "contradictory cell flags");
    // USE_ROW_TTL without IS_EXPIRING.
    let e = decode_all(&v2_one_row(&[0, 0], &[0, 1, 0x68, 1]), 2).unwrap_err();
    assert_eq!(e.what, "contradictory cell flags");
    // USE_ROW_TIMESTAMP in a row without liveness.
    let e = decode_all(&v2_one_row(&[0, 0], &[0, 1, 0x70]), 2).unwrap_err();
    assert_eq!(e.what, "cell refers to a row liveness the row lacks");
    // USE_ROW_TTL in a row without liveness (timestamp field 0 = i64::MIN).
    let e = decode_all(&v2_one_row(&[0, 0], &[0, 1, 0x6c, 0]), 2).unwrap_err();
    assert_eq!(e.what, "cell refers to a row liveness the row lacks");
}

#[test]
fn overflowing_deltas_are_rejected() {
    let mut max_base = vec![0];
    put_zigzag(&mut max_base, i64::MAX);
    // Liveness timestamp: base i64::MAX + (1 - 1) is fine, + (2 - 1) is not.
    let ok = decode_all(&v2_one_row(&max_base, &[0x01, 1, 0]), 2).unwrap();
    assert_eq!(
        ok.rows.values().next().unwrap().liveness.unwrap().timestamp,
        i64::MAX
    );
    let e = decode_all(&v2_one_row(&max_base, &[0x01, 2, 0]), 2).unwrap_err();
    assert_eq!(e.what, "timestamp delta overflows");
    // Local deletion time: base i32::MAX - 1, deletion deltas 1 and 2
    // (encoded as delta + 1: 2 and 3); the second passes i32::MAX.
    let mut header = vec![PARTITION_HAS_LDT_BASE_FOR_TESTS];
    put_zigzag(&mut header, 0);
    put_zigzag(&mut header, i32::MAX as i64 - 1);
    let row = |ldt: u8| v2_one_row(&header, &[0x04, 1, ldt, 0]);
    let p = decode_all(&row(2), 2).unwrap();
    assert_eq!(
        p.rows
            .values()
            .next()
            .unwrap()
            .deletion
            .unwrap()
            .local_deletion_time,
        i32::MAX
    );
    assert_eq!(
        decode_all(&row(3), 2).unwrap_err().what,
        "local deletion time delta overflows"
    );
    // A base local deletion time outside i32.
    let mut header = vec![PARTITION_HAS_LDT_BASE_FOR_TESTS];
    put_zigzag(&mut header, 0);
    put_zigzag(&mut header, i32::MAX as i64 + 1);
    let e = decode_all(&v2_one_row(&header, &[0, 0]), 2).unwrap_err();
    assert_eq!(e.what, "base local deletion time out of range");
    // A TTL above u32::MAX: expiring liveness, ts field, ttl varint 2^32.
    let mut tail = vec![0x03, 1];
    put_varint(&mut tail, 1 << 32);
    let e = decode_all(&v2_one_row(&[0, 0], &tail), 2).unwrap_err();
    assert_eq!(e.what, "ttl too large");
    // Column ids: an explicit u32::MAX then an implicit next column (each
    // cell: flags, [column], timestamp field 0, empty value).
    let mut tail = vec![0, 2, 0x20];
    put_varint(&mut tail, u32::MAX as u64);
    tail.extend_from_slice(&[0, 0x60, 0]);
    let e = decode_all(&v2_one_row(&[0, 0], &tail), 2).unwrap_err();
    assert_eq!(e.what, "column id too large");
}

/// The header flag of a base local deletion time (documented as 0x04).
const PARTITION_HAS_LDT_BASE_FOR_TESTS: u8 = 0x04;

#[test]
fn varints_round_trip() {
    for v in [0u64, 1, 127, 128, 300, u32::MAX as u64, u64::MAX] {
        let mut out = Vec::new();
        put_varint(&mut out, v);
        assert_eq!(Reader::new(&out).varint().unwrap(), v);
    }
    for v in [0i64, 1, -1, 63, -64, 64, i64::MIN, i64::MAX] {
        let mut out = Vec::new();
        put_zigzag(&mut out, v);
        assert_eq!(Reader::new(&out).zigzag().unwrap(), v);
    }
}

/// A varint read one byte at a time, as the reader once did: the value or
/// the error, and where the reader stands afterwards.
fn varint_byte_by_byte(buf: &[u8], start: usize) -> (Result<u64, (&'static str, usize)>, usize) {
    let mut pos = start;
    let mut v = 0u64;
    for i in 0..VARINT_MAX_BYTES {
        let Some(&b) = buf.get(pos) else {
            return (Err(("truncated", pos)), pos);
        };
        pos += 1;
        v |= ((b & 0x7f) as u64) << (7 * i);
        if b & 0x80 == 0 {
            return (Ok(v), pos);
        }
    }
    (Err(("varint too long", pos)), pos)
}

/// At exactly `VARINT_MAX_BYTES` bytes a varint is read; at one more
/// continuation byte it is too long; cut short it is truncated, the error
/// naming the offset where the bytes ran out.
#[test]
fn varint_limits() {
    let mut ten = vec![0xffu8; VARINT_MAX_BYTES - 1];
    ten.push(0x01);
    assert_eq!(Reader::new(&ten).varint().unwrap(), u64::MAX);
    let eleven = vec![0xffu8; VARINT_MAX_BYTES + 1];
    let err = Reader::new(&eleven).varint().unwrap_err();
    assert_eq!(
        (err.what, err.offset),
        ("varint too long", VARINT_MAX_BYTES)
    );
    let err = Reader::new(&ten[..4]).varint().unwrap_err();
    assert_eq!((err.what, err.offset), ("truncated", 4));
}

/// Varints of every length up to one past the limit, with more bytes after
/// them and without: a skip ends where a read does (the word load covers
/// lengths up to 8; longer ones and the last 7 bytes of a buffer take the
/// reading path).
#[test]
fn skip_varint_at_every_length() {
    for len in 1..=VARINT_MAX_BYTES + 1 {
        let mut v = vec![0x80u8; len - 1];
        v.push(0x01);
        for tail in [0, 3, 8] {
            let mut buf = v.clone();
            buf.extend(std::iter::repeat_n(0x7f, tail));
            let (mut read, mut skip) = (Reader::new(&buf), Reader::new(&buf));
            let want = read.varint().map(|_| ()).map_err(|e| (e.what, e.offset));
            let got = skip.skip_varint().map_err(|e| (e.what, e.offset));
            assert_eq!(got, want, "length {len}, {tail} bytes after");
            assert_eq!(skip.position(), read.position(), "length {len}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any bytes from any start: the one-pass varint gives the value, the
    /// error and the position of the byte-by-byte reading.
    #[test]
    fn varint_matches_byte_by_byte_reading(
        buf in proptest::collection::vec(any::<u8>(), 0..24),
        start in 0usize..24,
        continuation in any::<bool>(),
    ) {
        // Bias towards long varints: most random bytes end one at once.
        let buf: Vec<u8> = if continuation { buf.iter().map(|b| b | 0x80).collect() } else { buf };
        let start = start.min(buf.len());
        let mut r = Reader::new(&buf);
        r.take(start).unwrap();
        let got = r.varint().map_err(|e| (e.what, e.offset));
        let (want, pos) = varint_byte_by_byte(&buf, start);
        prop_assert_eq!(got, want);
        prop_assert_eq!(r.position(), pos);
    }

    /// Skipping a varint ends where reading it does, with the same error.
    #[test]
    fn skip_varint_ends_where_varint_does(
        buf in proptest::collection::vec(any::<u8>(), 0..24),
        start in 0usize..24,
        continuation in 0usize..12,
    ) {
        // Bias towards long varints: `continuation` bytes from the start
        // go on.
        let start = start.min(buf.len());
        let buf: Vec<u8> = buf
            .iter()
            .enumerate()
            .map(|(i, b)| if (start..start + continuation).contains(&i) { b | 0x80 } else { *b })
            .collect();
        let (mut read, mut skip) = (Reader::new(&buf), Reader::new(&buf));
        read.take(start).unwrap();
        skip.take(start).unwrap();
        let want = read.varint().map(|_| ()).map_err(|e| (e.what, e.offset));
        let got = skip.skip_varint().map_err(|e| (e.what, e.offset));
        prop_assert_eq!(got, want);
        prop_assert_eq!(skip.position(), read.position());
    }

    #[test]
    fn partitions_round_trip_in_versions_2_and_3(p in arb_partition(Reach::Extreme, 6)) {
        for version in [2, 3] {
            let bytes = encode_v(&p, version);
            prop_assert_eq!(decode_all(&bytes, version).unwrap(), as_decoded(&p, version));
        }
    }

    /// Normalizing range tombstones changes no row's fate: every clustering
    /// is covered by the same strongest deletion before and after.
    #[test]
    fn normalized_tombstones_delete_what_the_originals_do(p in arb_partition(Reach::Extreme, 6)) {
        let n = crate::encoding::v3::normalize(&p.range_tombstones);
        let strongest = |list: &[crate::partition::RangeTombstone], k: &ClusteringKey| {
            list.iter()
                .filter(|rt| rt.slice.contains(k) && !rt.deletion.is_live())
                .fold(DeletionTime::LIVE, |a, rt| a.max(rt.deletion))
        };
        let probes: Vec<ClusteringKey> = p
            .range_tombstones
            .iter()
            .flat_map(|rt| [rt.slice.start.clone(), rt.slice.end.clone()])
            .flat_map(|b| [
                ClusteringKey::row(b.values.clone(), b.comparator()),
                ClusteringKey::row(vec![], b.comparator()),
            ])
            .chain(p.rows.keys().cloned())
            .collect();
        for k in &probes {
            prop_assert_eq!(strongest(&p.range_tombstones, k), strongest(&n, k), "at {:?}", k);
        }
        prop_assert_eq!(crate::encoding::v3::normalize(&n), n.clone(), "normalizing twice changes nothing");
    }

    /// A reader over a shared buffer decodes the same partition as one that
    /// copies.
    #[test]
    fn shared_reader_decodes_what_the_copying_one_does(p in arb_partition(Reach::Extreme, 6)) {
        for version in VERSIONS {
            let bytes = Bytes::from(encode_v(&p, version));
            let mut r = Reader::shared(&bytes);
            let shared = decode_partition_v(&mut r, &comparator(), version).unwrap();
            prop_assert!(r.is_empty());
            prop_assert_eq!(&shared, &as_decoded(&p, version));
        }
    }

    #[test]
    fn partitions_round_trip_in_version_1(p in arb_partition(Reach::Extreme, 6)) {
        let bytes = encode_v(&p, 1);
        prop_assert_eq!(decode_all(&bytes, 1).unwrap(), p);
    }

    #[test]
    fn standalone_rows_round_trip(row in arb_row(Reach::Extreme)) {
        let mut out = Vec::new();
        encode_row(&mut out, &row);
        let mut r = Reader::new(&out);
        prop_assert_eq!(decode_row(&mut r).unwrap(), row.clone());
        prop_assert!(r.is_empty());
        let mut out = Vec::new();
        v1::encode_row(&mut out, &row);
        prop_assert_eq!(decode_row_v(&mut Reader::new(&out), 1).unwrap(), row);
    }

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        fuzz_decode(&bytes, &comparator());
        for version in [0, 1, 2, 3, 4] {
            let _ = decode_all(&bytes, version);
            let _ = decode_row_v(&mut Reader::new(&bytes), version);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn every_truncation_of_a_random_partition_is_an_error(p in arb_partition(Reach::Extreme, 4)) {
        for version in VERSIONS {
            let bytes = encode_v(&p, version);
            for cut in 0..bytes.len() {
                prop_assert!(decode_all(&bytes[..cut], version).is_err());
            }
        }
    }
}
