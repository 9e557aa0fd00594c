//! Property tests of the storage model's invariants: merging updates in any
//! order gives the same partition, and resolving agrees with a simple
//! per-cell oracle of Cassandra's rules.

use bytes::Bytes;
use proptest::prelude::*;
use std::sync::Arc;
use varve_storage::*;
use varve_types::CqlType;

fn cmp() -> Arc<ClusteringComparator> {
    ClusteringComparator::new(vec![(CqlType::Int, false)])
}

fn ck(c: i32) -> Vec<Bytes> {
    vec![Bytes::copy_from_slice(&c.to_be_bytes())]
}

/// One random operation on a small partition.
#[derive(Debug, Clone)]
enum Op {
    Write {
        c: i32,
        col: u32,
        ts: i64,
        value: u8,
        ttl: i32,
    },
    DeleteCell {
        c: i32,
        col: u32,
        ts: i64,
    },
    DeleteRow {
        c: i32,
        ts: i64,
    },
    DeleteRange {
        from: i32,
        to: i32,
        ts: i64,
    },
    DeletePartition {
        ts: i64,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..4i32, 0..2u32, 1..20i64, any::<u8>(), prop_oneof![Just(0), 1..10i32]).prop_map(|(c, col, ts, value, ttl)| Op::Write { c, col, ts, value, ttl }),
        2 => (0..4i32, 0..2u32, 1..20i64).prop_map(|(c, col, ts)| Op::DeleteCell { c, col, ts }),
        1 => (0..4i32, 1..20i64).prop_map(|(c, ts)| Op::DeleteRow { c, ts }),
        1 => (0..4i32, 0..4i32, 1..20i64).prop_map(|(a, b, ts)| Op::DeleteRange { from: a.min(b), to: a.max(b), ts }),
        1 => (1..20i64).prop_map(|ts| Op::DeletePartition { ts }),
    ]
}

const WRITE_SECOND: i32 = 100;

fn update(op: &Op) -> Partition {
    let cmp = cmp();
    let mut p = Partition::default();
    match op {
        Op::Write {
            c,
            col,
            ts,
            value,
            ttl,
        } => {
            let mut row = Row::default();
            row.cells.insert(
                (*col, None),
                Cell::expiring(*ts, *ttl, WRITE_SECOND, Bytes::copy_from_slice(&[*value])),
            );
            p.rows.insert(ClusteringKey::row(ck(*c), &cmp), row);
        }
        Op::DeleteCell { c, col, ts } => {
            let mut row = Row::default();
            row.cells
                .insert((*col, None), Cell::tombstone(*ts, WRITE_SECOND));
            p.rows.insert(ClusteringKey::row(ck(*c), &cmp), row);
        }
        Op::DeleteRow { c, ts } => {
            let row = Row {
                deletion: Some(DeletionTime::new(*ts, WRITE_SECOND)),
                ..Row::default()
            };
            p.rows.insert(ClusteringKey::row(ck(*c), &cmp), row);
        }
        Op::DeleteRange { from, to, ts } => p.range_tombstones.push(RangeTombstone {
            slice: Slice {
                start: ClusteringKey::before(ck(*from), &cmp),
                end: ClusteringKey::after(ck(*to), &cmp),
            },
            deletion: DeletionTime::new(*ts, WRITE_SECOND),
        }),
        Op::DeletePartition { ts } => p.deletion = DeletionTime::new(*ts, WRITE_SECOND),
    }
    p
}

/// The oracle: the live value of (c, col) at `now`, by Cassandra's rules
/// applied to the raw list of operations.
fn oracle(ops: &[Op], c: i32, col: u32, now: i32) -> Option<u8> {
    // The winning cell version: highest timestamp; ties as `pick` says.
    let mut best: Option<(i64, bool, u8, i32)> = None; // (ts, is_tombstone, value, expiry)
    let mut deleted_at = i64::MIN;
    for op in ops {
        match *op {
            Op::Write {
                c: oc,
                col: ocol,
                ts,
                value,
                ttl,
            } if oc == c && ocol == col => {
                let expiry = if ttl > 0 {
                    WRITE_SECOND + ttl
                } else {
                    i32::MAX
                };
                let cand = (ts, false, value, expiry);
                best = Some(match best {
                    None => cand,
                    Some(b) => pick(b, cand),
                });
            }
            Op::DeleteCell {
                c: oc,
                col: ocol,
                ts,
            } if oc == c && ocol == col => {
                let cand = (ts, true, 0, WRITE_SECOND);
                best = Some(match best {
                    None => cand,
                    Some(b) => pick(b, cand),
                });
            }
            Op::DeleteRow { c: oc, ts } if oc == c => deleted_at = deleted_at.max(ts),
            Op::DeleteRange { from, to, ts } if from <= c && c <= to => {
                deleted_at = deleted_at.max(ts)
            }
            Op::DeletePartition { ts } => deleted_at = deleted_at.max(ts),
            _ => {}
        }
    }
    let (ts, tomb, value, expiry) = best?;
    if tomb || ts <= deleted_at || now >= expiry {
        return None;
    }
    Some(value)
}

/// Cassandra 5.0's tie rules: a tombstone or an expiring cell beats a
/// plain live cell, a tombstone beats an expiring cell, the later deletion
/// or expiry wins, then the greater value.
fn pick(a: (i64, bool, u8, i32), b: (i64, bool, u8, i32)) -> (i64, bool, u8, i32) {
    if a.0 != b.0 {
        return if a.0 > b.0 { a } else { b };
    }
    let dated = |x: &(i64, bool, u8, i32)| x.1 || x.3 != i32::MAX;
    if dated(&a) || dated(&b) {
        if dated(&a) != dated(&b) {
            return if dated(&a) { a } else { b };
        }
        if a.1 != b.1 {
            return if a.1 { a } else { b };
        }
        if a.3 != b.3 {
            return if a.3 > b.3 { a } else { b };
        }
    }
    if a.2 >= b.2 {
        a
    } else {
        b
    }
}

fn merged(ops: &[Op]) -> Partition {
    let mut p = Partition::default();
    for op in ops {
        p.merge(update(op));
    }
    p
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn merge_order_does_not_matter(ops in proptest::collection::vec(op(), 0..25), seed in any::<u64>()) {
        let forward = merged(&ops);
        let mut shuffled = ops.clone();
        // A deterministic shuffle from the seed.
        let mut s = seed;
        for i in (1..shuffled.len()).rev() {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            shuffled.swap(i, (s >> 33) as usize % (i + 1));
        }
        let backward = merged(&shuffled);
        for now in [WRITE_SECOND, WRITE_SECOND + 5, WRITE_SECOND + 20] {
            prop_assert_eq!(forward.resolve(now).0, backward.resolve(now).0);
        }
    }

    #[test]
    fn resolve_matches_the_oracle(ops in proptest::collection::vec(op(), 0..25), now_offset in 0..15i32) {
        let now = WRITE_SECOND + now_offset;
        let (live, _) = merged(&ops).resolve(now);
        let cmp = cmp();
        for c in 0..4 {
            for col in 0..2u32 {
                let got = live
                    .rows
                    .get(&ClusteringKey::row(ck(c), &cmp))
                    .and_then(|r| r.cells.get(&(col, None)))
                    .map(|cell| cell.value[0]);
                prop_assert_eq!(got, oracle(&ops, c, col, now), "c={} col={} now={}", c, col, now);
            }
        }
    }
}
