//! The data verbs' payloads: round trips, and every malformed or
//! oversized input refused with the right failure.

use std::sync::Arc;

use bytes::Bytes;
use varve_types::data::{
    Cell, ClusteringComparator, ClusteringKey, DeletionTime, Partition, PartitionKey, Row, Slice,
    TokenBound,
};
use varve_types::CqlType;

use super::codec::{Comparators, PayloadError, MAX_KEY_BYTES};
use super::mutation::{self, TableUpdate};
use super::{range, read};
use crate::net::limits::MAX_SLICES_PER_READ;
use crate::net::wire::put_varint;
use crate::net::FailureReason;

const TABLE: u128 = 0x5a1c_395e;

fn cmp() -> Arc<ClusteringComparator> {
    ClusteringComparator::new(vec![(CqlType::Int, false)])
}

/// A schema of one table.
struct One;

impl Comparators for One {
    fn comparator(&self, table: u128) -> Option<Arc<ClusteringComparator>> {
        (table == TABLE).then(cmp)
    }
}

fn ck(c: i32) -> Vec<Bytes> {
    vec![Bytes::copy_from_slice(&c.to_be_bytes())]
}

fn key(k: &str) -> PartitionKey {
    PartitionKey::new(Bytes::copy_from_slice(k.as_bytes()))
}

fn update() -> Partition {
    let mut p = Partition::default();
    let mut row = Row::default();
    row.cells
        .insert((1, None), Cell::live(42, Bytes::from_static(b"v")));
    p.rows.insert(ClusteringKey::row(ck(1), &cmp()), row);
    let deleted = Row {
        deletion: Some(DeletionTime::new(43, 1_000)),
        ..Row::default()
    };
    p.rows.insert(ClusteringKey::row(ck(2), &cmp()), deleted);
    p
}

/// The one table's schema (for other modules' tests).
pub(crate) fn comparators() -> impl Comparators {
    One
}

/// An update of the one table under key `k` (for other modules' tests).
pub(crate) fn sample_update(k: &[u8]) -> TableUpdate {
    TableUpdate {
        table: TABLE,
        key: PartitionKey::new(Bytes::copy_from_slice(k)),
        update: update(),
    }
}

fn malformed(e: PayloadError) -> bool {
    e.failure().reason == FailureReason::MALFORMED_PAYLOAD
}

#[test]
fn a_mutation_round_trips() {
    let u = TableUpdate {
        table: TABLE,
        key: key("k1"),
        update: update(),
    };
    let bytes = mutation::encode(std::slice::from_ref(&u));
    assert_eq!(mutation::decode(&bytes, &One).unwrap(), vec![u]);
}

#[test]
fn a_mutation_for_an_unknown_table_is_an_incompatible_schema() {
    let u = TableUpdate {
        table: TABLE + 1,
        key: key("k1"),
        update: update(),
    };
    let err = mutation::decode(&mutation::encode(&[u]), &One).unwrap_err();
    assert_eq!(err.failure().reason, FailureReason::INCOMPATIBLE_SCHEMA);
}

#[test]
fn a_mutation_whose_updates_have_different_keys_is_refused() {
    let a = TableUpdate {
        table: TABLE,
        key: key("a"),
        update: update(),
    };
    let b = TableUpdate {
        key: key("b"),
        ..a.clone()
    };
    assert!(malformed(
        mutation::decode(&mutation::encode(&[a, b]), &One).unwrap_err()
    ));
}

#[test]
fn a_key_whose_token_is_not_its_own_is_refused() {
    let mut wrong = key("k1");
    wrong.token ^= 1;
    let u = TableUpdate {
        table: TABLE,
        key: wrong,
        update: update(),
    };
    let err = mutation::decode(&mutation::encode(&[u]), &One).unwrap_err();
    assert!(malformed(err.clone()), "{err}");
}

#[test]
fn every_cut_of_a_mutation_is_refused_without_panicking() {
    let u = TableUpdate {
        table: TABLE,
        key: key("k1"),
        update: update(),
    };
    let bytes = mutation::encode(&[u]);
    for n in 0..bytes.len() {
        assert!(
            mutation::decode(&bytes.slice(..n), &One).is_err(),
            "cut at {n}"
        );
    }
    let mut longer = bytes.to_vec();
    longer.push(0);
    assert!(mutation::decode(&Bytes::from(longer), &One).is_err());
}

#[test]
fn a_key_of_max_key_bytes_passes_and_one_more_is_refused() {
    let at_n = PartitionKey::new(Bytes::from(vec![7u8; MAX_KEY_BYTES]));
    let over = PartitionKey::new(Bytes::from(vec![7u8; MAX_KEY_BYTES + 1]));
    let enc = |k: PartitionKey| {
        mutation::encode(&[TableUpdate {
            table: TABLE,
            key: k,
            update: Partition::default(),
        }])
    };
    assert!(mutation::decode(&enc(at_n), &One).is_ok());
    assert!(malformed(mutation::decode(&enc(over), &One).unwrap_err()));
}

#[test]
fn a_read_request_round_trips() {
    let c = cmp();
    let slices = vec![
        Slice::all(&c),
        Slice {
            start: ClusteringKey::before(ck(3), &c),
            end: ClusteringKey::after(ck(9), &c),
        },
    ];
    let k = key("k");
    for (limit, wire) in [(usize::MAX, 0), (1, 1), (5000, 5000)] {
        let of = read_of(&k, &slices, true, 77, limit);
        let bytes = read::encode_request(&of, read::ReadKind::Digest);
        let back = read::decode_request(&bytes, &One).unwrap();
        assert_eq!(back.table, TABLE);
        assert_eq!(back.key, key("k"));
        assert_eq!(back.slices, slices);
        assert!(back.reversed);
        assert_eq!(back.now_seconds, 77);
        assert_eq!(back.row_limit, limit, "carried as {wire}");
        assert_eq!(back.kind, read::ReadKind::Digest);
    }
}

fn read_of<'a>(
    k: &'a PartitionKey,
    slices: &'a [Slice],
    reversed: bool,
    now_seconds: i32,
    row_limit: usize,
) -> read::ReadOf<'a> {
    read::ReadOf {
        table: TABLE,
        key: k,
        slices,
        reversed,
        now_seconds,
        row_limit,
    }
}

#[test]
fn max_slices_per_read_pass_and_one_more_is_refused() {
    let c = cmp();
    let k = key("k");
    let at_n = vec![Slice::all(&c); MAX_SLICES_PER_READ];
    let bytes = read::encode_request(
        &read_of(&k, &at_n, false, 0, usize::MAX),
        read::ReadKind::Data,
    );
    assert_eq!(
        read::decode_request(&bytes, &One).unwrap().slices.len(),
        MAX_SLICES_PER_READ
    );
    let over = vec![Slice::all(&c); MAX_SLICES_PER_READ + 1];
    let bytes = read::encode_request(
        &read_of(&k, &over, false, 0, usize::MAX),
        read::ReadKind::Data,
    );
    assert!(malformed(read::decode_request(&bytes, &One).unwrap_err()));
}

#[test]
fn a_bound_weight_other_than_minus_one_zero_one_is_refused() {
    let c = cmp();
    let k = key("k");
    let all = [Slice::all(&c)];
    let bytes = read::encode_request(
        &read_of(&k, &all, false, 0, usize::MAX),
        read::ReadKind::Data,
    );
    let mut bad = bytes.to_vec();
    // The first bound's weight follows the slice count (one byte).
    let at = bad.len() - (1 + 1) - (1 + 1) - 1;
    assert_eq!(bad[at], 1, "the count of slices");
    bad[at + 1] = 5;
    assert!(malformed(
        read::decode_request(&Bytes::from(bad), &One).unwrap_err()
    ));
}

#[test]
fn a_read_response_round_trips_with_and_without_data() {
    let p = update();
    for stopped in [false, true] {
        let bytes = read::encode_response(Some(&p), stopped);
        assert_eq!(
            read::decode_response(&bytes, &cmp()).unwrap(),
            read::ReadResponse::Data(Some(p.clone()), stopped)
        );
    }
    let bytes = read::encode_response(Some(&p), false);
    let none = read::encode_response(None, false);
    assert_eq!(
        read::decode_response(&none, &cmp()).unwrap(),
        read::ReadResponse::Data(None, false)
    );
    let mut bad = bytes.to_vec();
    bad[3] = 2;
    assert!(
        read::decode_response(&Bytes::from(bad), &cmp()).is_err(),
        "stopped is 0 or 1"
    );
    // A digest is the MD5 of the data response after its kind: equal data,
    // equal digests; different data, or a cut, different digests.
    let d = read::encode_digest_response(Some(&p), false);
    assert_eq!(d.len(), 17);
    assert_eq!(
        read::decode_response(&d, &cmp()).unwrap(),
        read::ReadResponse::Digest(read::digest(Some(&p), false))
    );
    assert_ne!(read::digest(Some(&p), false), read::digest(None, false));
    assert_ne!(read::digest(Some(&p), false), read::digest(Some(&p), true));
    for n in 0..bytes.len() {
        assert!(read::decode_response(&bytes.slice(..n), &cmp()).is_err());
    }
}

#[test]
fn a_key_scan_round_trips() {
    let start = TokenBound::AfterKey(key("a"));
    let end = TokenBound::TokenInclusive(99);
    let bytes = range::encode_request(TABLE, &start, &end, 5);
    let back = range::decode_request(&bytes).unwrap();
    assert_eq!((back.table, back.limit), (TABLE, 5));
    assert_eq!((back.start, back.end), (start, end));
    let keys = vec![key("a"), key("b")];
    let answer = range::encode_response(&keys, true);
    assert_eq!(range::decode_response(&answer).unwrap(), (keys, true));
}

#[test]
fn a_key_scan_limit_of_max_keys_passes_and_one_more_is_refused() {
    let raw = |limit: u64| {
        let mut out = TABLE.to_be_bytes().to_vec();
        out.push(range::KIND_KEYS);
        out.push(0);
        out.push(0);
        put_varint(&mut out, limit);
        Bytes::from(out)
    };
    let max = range::MAX_KEYS_PER_RESPONSE as u64;
    assert_eq!(
        range::decode_request(&raw(max)).unwrap().limit,
        max as usize
    );
    assert!(malformed(range::decode_request(&raw(max + 1)).unwrap_err()));
    assert!(malformed(range::decode_request(&raw(0)).unwrap_err()));
    // A response claiming more keys than allowed is refused before reading
    // them.
    let mut answer = vec![range::KIND_KEYS];
    put_varint(&mut answer, max + 1);
    assert!(malformed(
        range::decode_response(&Bytes::from(answer)).unwrap_err()
    ));
}

#[test]
fn a_hint_needs_its_eight_byte_header() {
    use super::mutation::{hint_body, HINT_HEADER_BYTES};
    let at_n = Bytes::from(vec![0u8; HINT_HEADER_BYTES]);
    assert_eq!(hint_body(&at_n).unwrap().len(), 0);
    let short = Bytes::from(vec![0u8; HINT_HEADER_BYTES - 1]);
    assert!(malformed(hint_body(&short).unwrap_err()));
}
