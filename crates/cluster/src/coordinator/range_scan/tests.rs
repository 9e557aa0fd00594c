//! The pieces of a range, and how a wave's answers fill a page.

use super::*;
use bytes::Bytes;
use TokenBound::{TokenExclusive as Excl, TokenInclusive as Incl, Unbounded};

#[test]
fn the_whole_ring_is_cut_where_ranges_end_and_wraps_to_the_first_owner() {
    let got = pieces(&[-10, 0, 10], &Unbounded, &Unbounded);
    let want = vec![
        (Unbounded, Incl(-10), -10),
        (Excl(-10), Incl(0), 0),
        (Excl(0), Incl(10), 10),
        (Excl(10), Unbounded, -10),
    ];
    assert_eq!(got, want);
}

#[test]
fn a_token_range_keeps_its_own_bounds_inside_the_pieces_it_crosses() {
    let got = pieces(&[-10, 0, 10], &Excl(-3), &Incl(4));
    assert_eq!(got, vec![(Excl(-3), Incl(0), 0), (Excl(0), Incl(4), 10)]);
    // Bounds on a range's end: the piece that ends there, and no more.
    let got = pieces(&[-10, 0, 10], &Incl(0), &Incl(0));
    assert_eq!(got, vec![(Incl(0), Incl(0), 0)]);
    let got = pieces(&[-10, 0, 10], &Excl(0), &Incl(10));
    assert_eq!(got, vec![(Excl(0), Incl(10), 10)]);
    let got = pieces(&[-10, 0, 10], &Incl(11), &Unbounded);
    assert_eq!(got, vec![(Incl(11), Unbounded, -10)]);
}

#[test]
fn a_scan_resumed_after_a_key_starts_in_that_keys_piece() {
    let key = PartitionKey::new(Bytes::from_static(b"k"));
    let t = key.token;
    let ends = [t - 5, t, t + 5];
    let got = pieces(&ends, &TokenBound::AfterKey(key.clone()), &Unbounded);
    assert_eq!(got[0], (TokenBound::AfterKey(key), Incl(t), t));
    assert_eq!(got[1], (Excl(t), Incl(t + 5), t + 5));
    assert_eq!(got.len(), 3);
}

fn scanned(keys: &[&'static [u8]]) -> ScannedRows {
    let read = || ReadResult {
        partition: Some(varve_types::data::Partition::default()),
        tombstones: 0,
        complete: true,
        sstables: 0,
    };
    ScannedRows {
        partitions: keys
            .iter()
            .map(|k| (PartitionKey::new(Bytes::from_static(k)), read()))
            .collect(),
        more: false,
    }
}

#[test]
fn answers_of_one_wave_are_cut_at_the_scans_limit() {
    let replication = Replication::Simple(1);
    let s = RowScan {
        table: 1,
        start: &Unbounded,
        end: &Unbounded,
        slices: &[],
        reversed: false,
        now_seconds: 0,
        row_limit: usize::MAX,
        total_rows: usize::MAX,
        limit: 3,
        replication: &replication,
        consistency: Consistency::One,
        blocking_repair: false,
    };
    let (mut found, mut rows) = (ScannedRows::default(), 0);
    // Room for three: two fit, then three more of which one is kept.
    assert!(!absorb(&mut found, &mut rows, scanned(&[b"a", b"b"]), &s));
    assert!(absorb(
        &mut found,
        &mut rows,
        scanned(&[b"c", b"d", b"e"]),
        &s
    ));
    assert_eq!(found.partitions.len(), 3);
    assert!(found.more);
    // An answer of exactly the room left stops the scan, and says more.
    let (mut found, mut rows) = (ScannedRows::default(), 0);
    assert!(absorb(
        &mut found,
        &mut rows,
        scanned(&[b"a", b"b", b"c"]),
        &s
    ));
    assert_eq!((found.partitions.len(), found.more), (3, true));
}

#[test]
fn a_ring_without_tokens_is_one_piece() {
    assert_eq!(
        pieces(&[], &Excl(3), &Unbounded),
        vec![(Excl(3), Unbounded, 0)]
    );
}
