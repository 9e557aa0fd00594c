//! Model test of clustering slices, from the WHERE clause on: random
//! clustering orders, EQ prefixes and bounds (single- and multi-column, every
//! operator, every length), each compared row by row with the tuple
//! comparison CQL defines: lexicographic, in each column's natural order,
//! whatever the clustering order.

use super::tests::{where_clause, with_ctx};
use super::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::cmp::Ordering;
use varve_schema::table::TableSpec;
use varve_storage::ClusteringKey;

/// Clustering values are small ints, so bounds often meet rows.
const VALUE_MAX: i32 = 3;
const CASES: u64 = 2_000;
const NAMES: [&str; 3] = ["a", "b", "c"];

/// `t (k int, a int, b int, c int, PRIMARY KEY (k, ...))` with the first
/// `descending.len()` of a, b, c as clustering columns in these directions.
fn table(descending: &[bool]) -> Table {
    let mut columns = vec![("k".to_string(), CqlType::Int, false)];
    columns.extend(NAMES.iter().map(|n| (n.to_string(), CqlType::Int, false)));
    Table::create(TableSpec {
        keyspace: "ks".into(),
        name: "t".into(),
        id: 1,
        columns,
        partition_key: vec!["k".into()],
        clustering: NAMES
            .iter()
            .zip(descending)
            .map(|(n, d)| (n.to_string(), *d))
            .collect(),
        options: Default::default(),
    })
    .unwrap()
}

/// One end of the range: `(columns...) op (values...)`.
#[derive(Debug, Clone)]
struct End {
    op: &'static str,
    values: Vec<i32>,
}

impl End {
    fn random(rng: &mut StdRng, ops: [&'static str; 2], len_max: usize) -> Option<End> {
        if len_max == 0 || rng.gen_bool(0.2) {
            return None;
        }
        let len = rng.gen_range(1..=len_max);
        let values = (0..len).map(|_| rng.gen_range(0..=VALUE_MAX)).collect();
        Some(End {
            op: ops[rng.gen_range(0..2)],
            values,
        })
    }

    /// The relation, on the columns from `first` on.
    fn cql(&self, first: usize, single: bool) -> String {
        let cols = &NAMES[first..first + self.values.len()];
        let vals: Vec<String> = self.values.iter().map(i32::to_string).collect();
        if single {
            format!("{} {} {}", cols[0], self.op, vals[0])
        } else {
            format!("({}) {} ({})", cols.join(", "), self.op, vals.join(", "))
        }
    }

    /// Whether the row's columns from `first` on satisfy this end.
    fn holds(&self, row: &[i32], first: usize) -> bool {
        let ord = row[first..]
            .iter()
            .zip(&self.values)
            .map(|(x, y)| x.cmp(y))
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal);
        match self.op {
            ">" => ord == Ordering::Greater,
            ">=" => ord != Ordering::Less,
            "<" => ord == Ordering::Less,
            _ => ord != Ordering::Greater,
        }
    }
}

/// Every row of a table with `width` int clustering columns.
fn all_rows(width: usize) -> Vec<Vec<i32>> {
    let mut rows = vec![Vec::new()];
    for _ in 0..width {
        let mut next = Vec::new();
        for r in &rows {
            for v in 0..=VALUE_MAX {
                next.push([r.as_slice(), &[v]].concat());
            }
        }
        rows = next;
    }
    rows
}

fn int(v: i32) -> Bytes {
    Bytes::copy_from_slice(&v.to_be_bytes())
}

/// Each random query's slices are sorted and disjoint, and hold a row
/// exactly when the row matches the prefix and both ends by tuple
/// comparison.
#[test]
fn slices_hold_exactly_the_rows_the_tuple_comparison_selects() {
    let seed = rand::random::<u64>();
    let mut rng = StdRng::seed_from_u64(seed);
    for case in 0..CASES {
        let width = rng.gen_range(1..=3);
        let descending: Vec<bool> = (0..width).map(|_| rng.gen_bool(0.5)).collect();
        let t = Arc::new(table(&descending));
        let eq_len = rng.gen_range(0..width);
        let prefix: Vec<i32> = (0..eq_len).map(|_| rng.gen_range(0..=VALUE_MAX)).collect();
        let lower = End::random(&mut rng, [">", ">="], width - eq_len);
        let upper = End::random(&mut rng, ["<", "<="], width - eq_len);
        let ends: Vec<&End> = lower.iter().chain(upper.iter()).collect();
        let mut relations = vec!["k = 0".to_string()];
        relations.extend(prefix.iter().zip(NAMES).map(|(v, n)| format!("{n} = {v}")));
        // A one-column end is written `a > 1` or `(a) > (1)`, at random.
        relations.extend(
            ends.iter()
                .map(|e| e.cql(eq_len, e.values.len() == 1 && rng.gen_bool(0.5))),
        );
        let cql = format!("SELECT * FROM t WHERE {}", relations.join(" AND "));
        let what = format!("seed {seed} case {case}: {cql} with order {descending:?}");

        let rels = where_clause(&cql);
        let selection = with_ctx(&[], |ctx| analyse(ctx, &t, &rels));
        let selection = selection.unwrap_or_else(|e| panic!("{what}: {e:?}"));
        assert!(
            selection.filters.is_empty(),
            "{what}: filters {:?}",
            selection.filters
        );
        let cmp = crate::comparator::of(&t);
        let slices = selection.clustering.slices(&cmp);
        for pair in slices.windows(2) {
            assert!(
                pair[0].end <= pair[1].start,
                "{what}: not sorted and disjoint: {slices:?}"
            );
        }
        for row in all_rows(width) {
            let want = row[..eq_len] == prefix[..] && ends.iter().all(|e| e.holds(&row, eq_len));
            let key = ClusteringKey::row(row.iter().map(|v| int(*v)).collect(), &cmp);
            let got = slices.iter().any(|s| s.contains(&key));
            assert_eq!(got, want, "{what}: row {row:?} in {slices:?}");
        }
    }
}
