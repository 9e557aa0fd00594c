//! A table's clustering comparator, built from its definition and
//! remembered per thread.
//!
//! The comparator orders clustering keys by the clustering columns' types
//! and directions: a pure function of the table, so query builds it from
//! the schema rather than asking whoever stores the data. A thread keeps
//! the last [`COMPARATOR_MEMO_ENTRIES`] it built, each found only by its
//! table's `Arc` (a schema change gives the table a new one).

use std::cell::RefCell;
use std::sync::Arc;

use varve_schema::Table;
use varve_types::data::ClusteringComparator;

use crate::memo::Lru;

/// Comparators a thread remembers.
pub const COMPARATOR_MEMO_ENTRIES: usize = 32;

thread_local! {
    static MEMO: RefCell<Lru<Arc<Table>, ClusteringComparator>> =
        const { RefCell::new(Lru::new(COMPARATOR_MEMO_ENTRIES)) };
}

/// The clustering comparator of `table`.
pub fn of(table: &Arc<Table>) -> Arc<ClusteringComparator> {
    MEMO.with(|memo| {
        let mut memo = memo.borrow_mut();
        if let Some(c) = memo.find(|t| Arc::ptr_eq(t, table)) {
            return c;
        }
        let c = build(table);
        memo.insert(Arc::clone(table), Arc::clone(&c));
        c
    })
}

/// The comparator of `t`'s clustering columns, in key order.
pub fn build(t: &Table) -> Arc<ClusteringComparator> {
    ClusteringComparator::new(
        t.clustering()
            .map(|c| (c.ty.clone(), c.descending))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use varve_schema::options::TableOptions;
    use varve_schema::table::TableSpec;
    use varve_types::data::ClusteringKey;
    use varve_types::CqlType;

    fn table(desc: bool) -> Arc<Table> {
        Arc::new(
            Table::create(TableSpec {
                keyspace: "ks".into(),
                name: "t".into(),
                id: 1,
                columns: vec![
                    ("k".into(), CqlType::Int, false),
                    ("c".into(), CqlType::Int, false),
                ],
                partition_key: vec!["k".into()],
                clustering: vec![("c".into(), desc)],
                options: TableOptions::default(),
            })
            .expect("valid table"),
        )
    }

    #[test]
    fn the_comparator_follows_the_table_and_is_remembered_per_table() {
        let asc = table(false);
        let desc = table(true);
        let a = of(&asc);
        assert!(Arc::ptr_eq(&a, &of(&asc)), "the same table hits the memo");
        let d = of(&desc);
        assert!(!Arc::ptr_eq(&a, &d));
        let one = bytes::Bytes::from_static(&[0, 0, 0, 1]);
        let two = bytes::Bytes::from_static(&[0, 0, 0, 2]);
        let order = |c: &Arc<ClusteringComparator>| {
            ClusteringKey::row(vec![one.clone()], c).cmp(&ClusteringKey::row(vec![two.clone()], c))
        };
        assert_eq!(order(&a), std::cmp::Ordering::Less);
        assert_eq!(order(&d), std::cmp::Ordering::Greater);
    }
}
