//! The search table finds exactly what a scan of the span finds.

use super::*;
use crate::sstable::index::{decode_span, find_in_span, test_spans, IndexWriter};
use bytes::Bytes;
use proptest::prelude::*;

/// Spans of `step` blocks of an index, with their offsets.
fn spans(index: &[u8], summary: &[u8], step: usize) -> Vec<(u64, Vec<u8>)> {
    test_spans(index, summary, step)
        .into_iter()
        .map(|(_, offset, bytes)| (offset, bytes))
        .collect()
}

fn key(token: i64, k: &str) -> PartitionKey {
    PartitionKey {
        token,
        key: Bytes::from(k.to_string()),
    }
}

proptest! {
    /// For keys present and absent, tokens shared by several keys, any
    /// block size and span length: the table's binary search agrees with
    /// the scan, and the span comes back unchanged.
    #[test]
    fn the_search_table_agrees_with_the_scan(
        keys in proptest::collection::btree_set((-20i64..20, "[a-c]{0,3}"), 1..80),
        interval in 1usize..9,
        step in 1usize..4,
    ) {
        let mut w = IndexWriter::new(interval);
        for (n, (t, k)) in keys.iter().enumerate() {
            w.add(&key(*t, k), n as u64 * 10, 7 + n as u64);
        }
        let (index, summary) = w.finish();
        for (base, span) in spans(&index, &summary, step) {
            let entries = decode_span(&span, base).unwrap();
            let built = with_search_table(&span, &entries);
            let table = Searchable::parse(&built).unwrap();
            prop_assert_eq!(table.span(), &span[..]);
            for t in -21i64..21 {
                for k in ["", "a", "ab", "b", "bca", "c", "ccc", "d"] {
                    let probe = key(t, k);
                    let scanned = find_in_span(&span, base, false, true, &probe).unwrap();
                    prop_assert_eq!(table.find(&probe).unwrap(), scanned, "{:?}", probe);
                }
            }
        }
    }
}

#[test]
fn a_table_whose_lengths_do_not_add_up_is_refused() {
    let mut w = IndexWriter::new(4);
    for i in 0..10 {
        w.add(&key(i, "k"), i as u64 * 10, 10);
    }
    let (index, summary) = w.finish();
    let (base, span) = spans(&index, &summary, 1).remove(0);
    let entries = decode_span(&span, base).unwrap();
    let built = with_search_table(&span, &entries);
    assert!(Searchable::parse(&built).is_some());
    assert!(Searchable::parse(&built[..built.len() - 1]).is_none());
    assert!(Searchable::parse(&built[1..]).is_none());
    assert!(Searchable::parse(&[0u8; 7]).is_none());
    let mut wrong_n = built.clone();
    wrong_n[0] += 1;
    assert!(Searchable::parse(&wrong_n).is_none());
}
