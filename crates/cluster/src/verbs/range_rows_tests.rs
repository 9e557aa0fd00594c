//! RANGE_READ of rows: round trips, its limits at N and N + 1, and every
//! malformed answer refused; a replica's walk stops at each limit.

use std::sync::Arc;

use bytes::Bytes;
use varve_storage::ReadCost;
use varve_types::data::{
    Cell, ClusteringComparator, ClusteringKey, Partition, PartitionKey, Row, Slice, TokenBound,
};
use varve_types::CqlType;

use super::codec::PayloadError;
use super::range_rows::{
    self, AnswerWriter, RowScanAnswer, RowScanRequest, ScannedPartition,
    MAX_PARTITIONS_PER_RANGE_READ, RANGE_READ_RESPONSE_BYTES,
};
use super::replica_range::scan_stored;
use super::tests::comparators;

const TABLE: u128 = 0x5a1c_395e;

fn cmp() -> Arc<ClusteringComparator> {
    ClusteringComparator::new(vec![(CqlType::Int, false)])
}

fn key(k: &str) -> PartitionKey {
    PartitionKey::new(Bytes::copy_from_slice(k.as_bytes()))
}

/// Rows 0 .. n, each with column 1 = `value`.
fn rows(n: i32, value: &[u8]) -> Partition {
    let mut p = Partition::default();
    for c in 0..n {
        let mut row = Row::default();
        row.cells
            .insert((1, None), Cell::live(7, Bytes::copy_from_slice(value)));
        let ck = vec![Bytes::copy_from_slice(&c.to_be_bytes())];
        p.rows.insert(ClusteringKey::row(ck, &cmp()), row);
    }
    p
}

fn request(partition_limit: usize) -> RowScanRequest {
    RowScanRequest {
        table: TABLE,
        start: TokenBound::AfterKey(key("a")),
        end: TokenBound::TokenInclusive(1 << 40),
        slices: vec![Slice::all(&cmp())],
        reversed: true,
        now_seconds: 1_000,
        row_limit: 3,
        total_rows: usize::MAX,
        partition_limit,
    }
}

fn malformed(e: PayloadError) -> bool {
    matches!(e, PayloadError::Malformed(_))
}

#[test]
fn a_range_read_of_rows_round_trips() {
    let req = request(12);
    let bytes = range_rows::encode_request(&req);
    assert!(range_rows::asks_rows(&bytes));
    assert!(!range_rows::asks_rows(&super::range::encode_request(
        TABLE, &req.start, &req.end, 3
    )));
    assert_eq!(
        range_rows::decode_request(&bytes, &comparators()).unwrap(),
        req
    );
    let mut keys = [key("x"), key("y"), key("z")];
    keys.sort();
    let answer = RowScanAnswer {
        partitions: vec![
            ScannedPartition {
                key: keys[0].clone(),
                partition: Some(rows(2, b"v")),
                stopped: true,
            },
            ScannedPartition {
                key: keys[1].clone(),
                partition: None,
                stopped: false,
            },
            ScannedPartition {
                key: keys[2].clone(),
                partition: Some(Partition::default()),
                stopped: false,
            },
        ],
        more: true,
    };
    let bytes = range_rows::encode_response(&answer);
    assert_eq!(range_rows::decode_response(&bytes, &cmp()).unwrap(), answer);
    for n in 0..bytes.len() {
        assert!(range_rows::decode_response(&bytes.slice(..n), &cmp()).is_err());
    }
}

#[test]
fn a_partition_limit_of_the_maximum_passes_and_one_more_is_refused() {
    let at = |limit: usize| {
        // encode_request clamps the limit: write the count by hand.
        let good = range_rows::encode_request(&request(MAX_PARTITIONS_PER_RANGE_READ));
        let mut wire = Vec::new();
        crate::net::wire::put_varint(&mut wire, MAX_PARTITIONS_PER_RANGE_READ as u64);
        let mut asked = Vec::new();
        crate::net::wire::put_varint(&mut asked, limit as u64);
        let pos = find(&good, &wire);
        let bytes = [&good[..pos], &asked[..], &good[pos + wire.len()..]].concat();
        range_rows::decode_request(&Bytes::from(bytes), &comparators())
    };
    let max = MAX_PARTITIONS_PER_RANGE_READ;
    assert_eq!(at(max).unwrap().partition_limit, max);
    assert!(malformed(at(max + 1).unwrap_err()));
    let mut answer = vec![range_rows::KIND_ROWS];
    crate::net::wire::put_varint(&mut answer, max as u64 + 1);
    let err = range_rows::decode_response(&Bytes::from(answer), &cmp()).unwrap_err();
    assert!(malformed(err));
}

/// Where `needle` first occurs in `hay` (after the table id and kind).
fn find(hay: &[u8], needle: &[u8]) -> usize {
    (17..hay.len())
        .rev()
        .find(|&i| hay[i..].starts_with(needle))
        .expect("the count is in the request")
}

#[test]
fn answers_with_keys_out_of_order_or_more_without_a_key_are_refused() {
    let mut keys = [key("x"), key("y")];
    keys.sort();
    let of = |k: &PartitionKey| ScannedPartition {
        key: k.clone(),
        partition: None,
        stopped: false,
    };
    let backwards = RowScanAnswer {
        partitions: vec![of(&keys[1]), of(&keys[0])],
        more: false,
    };
    let bytes = range_rows::encode_response(&backwards);
    assert!(malformed(
        range_rows::decode_response(&bytes, &cmp()).unwrap_err()
    ));
    let twice = RowScanAnswer {
        partitions: vec![of(&keys[0]), of(&keys[0])],
        more: false,
    };
    let bytes = range_rows::encode_response(&twice);
    assert!(malformed(
        range_rows::decode_response(&bytes, &cmp()).unwrap_err()
    ));
    let nothing_more = RowScanAnswer {
        partitions: vec![],
        more: true,
    };
    let bytes = range_rows::encode_response(&nothing_more);
    assert!(malformed(
        range_rows::decode_response(&bytes, &cmp()).unwrap_err()
    ));
}

#[test]
fn an_answer_is_full_at_the_byte_budget_and_not_a_byte_before() {
    let mut w = AnswerWriter::default();
    let big = rows(1, &vec![0u8; RANGE_READ_RESPONSE_BYTES / 2]);
    w.push(&key("a"), Some(&big), false);
    assert!(!w.is_full());
    // Grow the answer one small partition at a time: it turns full at
    // the push that brings it to the budget, not before.
    let small = rows(1, &[0u8; 64]);
    let mut n = 0;
    loop {
        let before = w.len();
        w.push(&key(&format!("k{n}")), Some(&small), false);
        n += 1;
        if w.is_full() {
            assert!(before < RANGE_READ_RESPONSE_BYTES);
            assert!(w.len() >= RANGE_READ_RESPONSE_BYTES);
            break;
        }
        assert!(w.len() < RANGE_READ_RESPONSE_BYTES);
    }
}

#[test]
fn a_replica_walk_stops_at_each_limit_and_says_more() {
    let (_storage, engine) = super::replica::tests::engine_with_table(TABLE);
    let mut keys: Vec<PartitionKey> = (0..10).map(|i| key(&format!("p{i}"))).collect();
    keys.sort();
    for (i, k) in keys.iter().enumerate() {
        engine
            .apply(TABLE, k, rows(i as i32 % 4 + 1, b"v"))
            .unwrap();
    }
    let walk = |req: RowScanRequest| {
        let mut found = Vec::new();
        let more = scan_stored(&engine, &req, &mut found, &mut ReadCost::default()).unwrap();
        (found, more)
    };
    let whole = RowScanRequest {
        start: TokenBound::Unbounded,
        end: TokenBound::Unbounded,
        reversed: false,
        row_limit: usize::MAX,
        ..request(MAX_PARTITIONS_PER_RANGE_READ)
    };
    let (all, more) = walk(whole.clone());
    assert_eq!((all.len(), more), (10, false));
    let got: Vec<&PartitionKey> = all.iter().map(|(k, _, _)| k).collect();
    assert_eq!(got, keys.iter().collect::<Vec<_>>());
    // Partitions: N of 10 stops with more; all 10 exactly does not.
    let (some, more) = walk(RowScanRequest {
        partition_limit: 9,
        ..whole.clone()
    });
    assert_eq!((some.len(), more), (9, true));
    let (some, more) = walk(RowScanRequest {
        partition_limit: 10,
        ..whole.clone()
    });
    assert_eq!((some.len(), more), (10, false));
    // Rows: the partition that reaches the total is the last one.
    let first_two: usize = (0..2).map(|i| i % 4 + 1).sum();
    let (some, more) = walk(RowScanRequest {
        total_rows: first_two,
        ..whole.clone()
    });
    assert_eq!((some.len(), more), (2, true));
    let (some, _) = walk(RowScanRequest {
        total_rows: first_two + 1,
        ..whole.clone()
    });
    assert_eq!(some.len(), 3);
    // The row limit cuts each partition and says so.
    let (cut, _) = walk(RowScanRequest {
        row_limit: 2,
        ..whole
    });
    for (i, (_, p, stopped)) in cut.iter().enumerate() {
        let n = p.as_ref().map_or(0, |p| p.rows.len());
        assert_eq!(n, (i % 4 + 1).min(2));
        if i % 4 + 1 > 2 {
            assert!(*stopped, "partition {i} was cut");
        }
    }
}
