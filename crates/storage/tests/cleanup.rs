//! `Engine::cleanup` (`nodetool cleanup`): what the caller does not keep
//! goes, from the memtable and every sstable alike; the rest reads as
//! before.

mod common;

use bytes::Bytes;
use varve_storage::*;

const TABLE: TableId = 0x61;

use common::{int_comparator as cmp, int_row as row};

#[test]
fn cleanup_leaves_out_the_tokens_not_kept_from_sstables_and_memtable() {
    let storage = Storage::open(
        common::options(Clock::system()),
        vec![common::table(TABLE, cmp())],
    )
    .unwrap();
    let engine = storage.engine();
    let keys: Vec<PartitionKey> = (0..300)
        .map(|i| PartitionKey::new(Bytes::from(format!("k{i}"))))
        .collect();
    for (i, k) in keys.iter().enumerate() {
        engine.apply(TABLE, k, row(i as u32)).unwrap();
        if i == 100 || i == 200 {
            engine.flush(TABLE).unwrap();
        }
    }
    // Two sstables, and a third from the memtable's flush.
    let keep = |token: i64| token >= 0;
    let done = engine.cleanup(TABLE, &keep, 1_700_000_000).unwrap();
    assert_eq!(done.rewritten.len(), 3, "{done:?}");
    assert!(done.bytes_after < done.bytes_before, "{done:?}");
    let all = [Slice::all(&cmp())];
    let mut kept = 0;
    for k in &keys {
        let found = engine.read_partition(TABLE, k, &all).unwrap();
        assert_eq!(found.is_some(), k.token >= 0, "token {}", k.token);
        kept += usize::from(found.is_some());
    }
    assert!(kept > 50 && kept < 250, "{kept} of 300 kept");
    // Keeping everything changes nothing.
    let again = engine.cleanup(TABLE, &|_| true, 1_700_000_000).unwrap();
    let left = keys
        .iter()
        .filter(|k| engine.read_partition(TABLE, k, &all).unwrap().is_some())
        .count();
    assert_eq!(left, kept, "{again:?}");
}
