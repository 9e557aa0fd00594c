//! [`bounded`] on its own; the model test of every operator and bound is
//! restrictions_slice_model_tests.rs, from the WHERE clause on.

use super::*;
use varve_types::CqlType;

fn int(v: i32) -> Bytes {
    Bytes::copy_from_slice(&v.to_be_bytes())
}

/// Bounds on columns of one direction stay one slice, as before the split.
#[test]
fn one_direction_gives_one_slice() {
    for descending in [false, true] {
        let cmp = ClusteringComparator::new(vec![(CqlType::Int, descending); 2]);
        let lower = (vec![int(1), int(2)], false);
        let upper = (vec![int(3)], true);
        let slices = bounded(&[], Some(&lower), Some(&upper), &cmp);
        assert_eq!(slices.len(), 1, "descending {descending}: {slices:?}");
    }
}

/// `(a, b) > (1, 2)` with `a ASC, b DESC`: the rest of `a = 1` before
/// `(1, 2)`, then everything after `a = 1`.
#[test]
fn mixed_orders_split_the_slice() {
    let cmp = ClusteringComparator::new(vec![(CqlType::Int, false), (CqlType::Int, true)]);
    let lower = (vec![int(1), int(2)], false);
    let slices = bounded(&[], Some(&lower), None, &cmp);
    let expected = vec![
        Slice {
            start: ClusteringKey::before(vec![int(1)], &cmp),
            end: ClusteringKey::before(vec![int(1), int(2)], &cmp),
        },
        Slice {
            start: ClusteringKey::after(vec![int(1)], &cmp),
            end: ClusteringKey::after(vec![], &cmp),
        },
    ];
    assert_eq!(slices, expected);
}
