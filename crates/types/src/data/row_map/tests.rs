//! RowMap against a `BTreeMap` oracle, on both sides of the switch from
//! vector to tree.

use super::*;
use crate::data::cell::Cell;
use crate::data::clustering::ClusteringComparator;
use crate::CqlType;
use bytes::Bytes;
use proptest::prelude::*;
use std::sync::{Arc, OnceLock};

fn cmp() -> &'static Arc<ClusteringComparator> {
    static CMP: OnceLock<Arc<ClusteringComparator>> = OnceLock::new();
    CMP.get_or_init(|| ClusteringComparator::new(vec![(CqlType::Int, false)]))
}

fn int(v: i32) -> Bytes {
    Bytes::copy_from_slice(&v.to_be_bytes())
}

fn key(v: i32) -> ClusteringKey {
    ClusteringKey::row(vec![int(v)], cmp())
}

fn row(ts: i64) -> Row {
    let mut r = Row::default();
    r.cells.insert(
        (1, None),
        Cell::live(ts, Bytes::from(ts.to_be_bytes().to_vec())),
    );
    r
}

#[derive(Debug, Clone)]
enum Op {
    Insert(i32, i64),
    Remove(i32),
}

/// Keys drawn from twice the vector limit, so maps cross it both ways.
fn arb_ops() -> impl Strategy<Value = Vec<Op>> {
    let k = 0..(2 * ROW_MAP_VEC_MAX as i32);
    let op = prop_oneof![
        4 => (k.clone(), 0i64..100).prop_map(|(k, t)| Op::Insert(k, t)),
        1 => k.prop_map(Op::Remove),
    ];
    prop::collection::vec(op, 0..(3 * ROW_MAP_VEC_MAX))
}

/// A bound of a slice: a row key (included or excluded), a clustering
/// bound before or after a value, or none.
fn arb_bound() -> impl Strategy<Value = Bound<ClusteringKey>> {
    let v = -1..(2 * ROW_MAP_VEC_MAX as i32 + 1);
    prop_oneof![
        v.clone().prop_map(|v| Bound::Included(key(v))),
        v.clone().prop_map(|v| Bound::Excluded(key(v))),
        v.clone()
            .prop_map(|v| Bound::Excluded(ClusteringKey::before(vec![int(v)], cmp()))),
        v.prop_map(|v| Bound::Excluded(ClusteringKey::after(vec![int(v)], cmp()))),
        Just(Bound::Unbounded),
    ]
}

fn apply(ops: &[Op]) -> (RowMap, BTreeMap<ClusteringKey, Row>) {
    let mut ours = RowMap::new();
    let mut model = BTreeMap::new();
    for op in ops {
        match op {
            Op::Insert(k, t) => {
                assert_eq!(
                    ours.insert(key(*k), row(*t)),
                    model.insert(key(*k), row(*t))
                );
            }
            Op::Remove(k) => assert_eq!(ours.remove(&key(*k)), model.remove(&key(*k))),
        }
    }
    (ours, model)
}

/// What `BTreeMap::range` returns, or nothing where it would panic.
fn model_range<'a>(
    model: &'a BTreeMap<ClusteringKey, Row>,
    lo: &Bound<ClusteringKey>,
    hi: &Bound<ClusteringKey>,
) -> Vec<(&'a ClusteringKey, &'a Row)> {
    if !bounds_are_ordered(lo.as_ref(), hi.as_ref()) {
        return Vec::new();
    }
    model.range((lo.clone(), hi.clone())).collect()
}

proptest! {
    /// Inserts and removes in any order leave the map a BTreeMap would
    /// hold, and every read agrees with it.
    #[test]
    fn behaves_like_a_btree_map(
        ops in arb_ops(),
        probe in -1i32..70,
        lo in arb_bound(),
        hi in arb_bound(),
    ) {
        let (mut ours, mut model) = apply(&ops);
        prop_assert_eq!(ours.len(), model.len());
        prop_assert_eq!(ours.is_empty(), model.is_empty());
        prop_assert!(ours.iter().eq(model.iter()));
        prop_assert!(ours.iter().rev().eq(model.iter().rev()));
        prop_assert_eq!(ours.iter().len(), model.len());
        prop_assert!(ours.keys().eq(model.keys()));
        prop_assert!(ours.values().rev().eq(model.values().rev()));
        prop_assert_eq!(ours.first_key_value(), model.first_key_value());
        prop_assert_eq!(ours.last_key_value(), model.last_key_value());
        prop_assert_eq!(ours.get(&key(probe)), model.get(&key(probe)));
        prop_assert_eq!(ours.contains_key(&key(probe)), model.contains_key(&key(probe)));

        let expect = model_range(&model, &lo, &hi);
        let got: Vec<_> = ours.range((lo.clone(), hi.clone())).collect();
        prop_assert_eq!(&got, &expect);
        let got: Vec<_> = ours.range((lo.clone(), hi.clone())).rev().collect();
        let reversed: Vec<_> = expect.into_iter().rev().collect();
        prop_assert_eq!(got, reversed);

        if let (Some(a), Some(b)) = (ours.get_mut(&key(probe)), model.get_mut(&key(probe))) {
            a.merge(row(1000));
            b.merge(row(1000));
        }
        ours.retain(|k, _| k.values[0][3] % 3 != 0);
        model.retain(|k, _| k.values[0][3] % 3 != 0);
        prop_assert_eq!(&ours, &model.clone().into_iter().collect::<RowMap>());
        prop_assert!(ours.clone().into_iter().eq(model.clone()));
        prop_assert!(ours.into_values().rev().eq(model.into_values().rev()));
    }

    /// Merging two maps (each a vector or a tree) equals merging the
    /// other's rows one by one into a BTreeMap with `Row::merge`.
    #[test]
    fn merge_equals_rowwise_merge(a in arb_ops(), b in arb_ops(), shift in 0i32..70) {
        let (mut ours, model_a) = apply(&a);
        let shifted: Vec<Op> = b
            .iter()
            .map(|op| match op {
                Op::Insert(k, t) => Op::Insert(k + shift, *t),
                Op::Remove(k) => Op::Remove(k + shift),
            })
            .collect();
        let (theirs, model_b) = apply(&shifted);
        let mut model = model_a;
        for (k, r) in model_b {
            match model.get_mut(&k) {
                Some(mine) => mine.merge(r),
                None => {
                    model.insert(k, r);
                }
            }
        }
        ours.merge(theirs);
        prop_assert!(ours.iter().eq(model.iter()));
        prop_assert_eq!(ours.len(), model.len());
    }
}

/// Inserts out of order: the vector holds exactly `ROW_MAP_VEC_MAX` rows.
fn descending(n: usize) -> RowMap {
    (0..n as i32).rev().map(|k| (key(k * 2), row(1))).collect()
}

#[test]
fn a_vector_holds_the_limit_and_one_more_out_of_order_makes_a_tree() {
    let mut m = descending(ROW_MAP_VEC_MAX);
    assert!(!m.is_tree());
    assert_eq!(m.len(), ROW_MAP_VEC_MAX);
    // Replacing an existing key or appending never switches.
    assert_eq!(m.insert(key(0), row(2)), Some(row(1)));
    assert!(!m.is_tree());
    m.insert(key(1), row(1));
    assert!(m.is_tree(), "entry N+1 out of order");
    assert_eq!(m.len(), ROW_MAP_VEC_MAX + 1);
    assert!(m.keys().map(|k| k.values[0].clone()).is_sorted());
}

#[test]
fn appends_stay_a_vector_past_the_limit() {
    let n = ROW_MAP_VEC_MAX * 100;
    let m: RowMap = (0..n as i32).map(|k| (key(k), row(1))).collect();
    assert!(!m.is_tree());
    assert_eq!(m.len(), n);
    assert_eq!(m.range(key(10)..key(13)).count(), 3);
}

#[test]
fn a_one_row_map_allocates_one_slot() {
    let mut m = RowMap::new();
    m.insert(key(1), row(1));
    assert_eq!(m.vec_capacity(), Some(1));
}

#[test]
fn merge_of_a_small_interleaved_update_into_a_wide_vector_makes_a_tree() {
    let mut wide: RowMap = (0..ROW_MAP_VEC_MAX as i32)
        .map(|k| (key(k * 2), row(1)))
        .collect();
    let mut update = RowMap::new();
    update.insert(key(3), row(1));
    wide.merge(update);
    assert!(wide.is_tree());
    // An overwrite of a row a wide vector has stays in the vector.
    let mut wide: RowMap = (0..100).map(|k| (key(k), row(1))).collect();
    let mut update = RowMap::new();
    update.insert(key(50), row(7));
    wide.merge(update);
    assert!(!wide.is_tree());
    assert_eq!(wide.get(&key(50)), Some(&row(7)));
    // Two wide vectors merge linearly into a vector.
    let mut a: RowMap = (0..100).map(|k| (key(k * 2), row(1))).collect();
    let b: RowMap = (0..100).map(|k| (key(k * 2 + 1), row(1))).collect();
    a.merge(b);
    assert!(!a.is_tree());
    assert_eq!(a.len(), 200);
    // An overwrite of rows the map has merges in place.
    let mut one = RowMap::new();
    one.insert(key(1), row(1));
    let mut again = RowMap::new();
    again.insert(key(1), row(5));
    one.merge(again);
    assert_eq!(one.vec_capacity(), Some(1));
    assert_eq!(one.get(&key(1)), Some(&row(5)));
}

#[test]
fn inverted_ranges_are_empty_in_both_representations() {
    for m in [descending(4), descending(ROW_MAP_VEC_MAX + 1)] {
        assert_eq!(m.range(key(6)..key(2)).count(), 0);
        assert_eq!(
            m.range((Bound::Excluded(key(2)), Bound::Excluded(key(2))))
                .count(),
            0
        );
    }
}

/// Times appends and random-order inserts into a wide partition, RowMap
/// against BTreeMap (`cargo test -p varve-storage --lib
/// row_map::tests::insert_timings -- --ignored --nocapture`).
#[test]
#[ignore]
fn insert_timings() {
    const ROWS: i32 = 50_000;
    // A fixed permutation: 7919 is prime to ROWS.
    let shuffled: Vec<i32> = (0..ROWS).map(|i| (i * 7919) % ROWS).collect();
    let ordered: Vec<i32> = (0..ROWS).collect();
    for (what, order) in [("appends", &ordered), ("random order", &shuffled)] {
        let keys: Vec<ClusteringKey> = order.iter().map(|k| key(*k)).collect();
        let start = std::time::Instant::now();
        let mut ours = RowMap::new();
        for k in &keys {
            ours.insert(k.clone(), Row::default());
        }
        let ours_ms = start.elapsed().as_millis();
        let start = std::time::Instant::now();
        let mut model = BTreeMap::new();
        for k in &keys {
            model.insert(k.clone(), Row::default());
        }
        let model_ms = start.elapsed().as_millis();
        assert_eq!(ours.len(), model.len());
        eprintln!(
            "{ROWS} {what}: RowMap {ours_ms} ms (tree: {}), BTreeMap {model_ms} ms",
            ours.is_tree()
        );
    }
}
