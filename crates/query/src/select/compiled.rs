//! A SELECT's projection, compiled once per table version and selection
//! and remembered per thread.
//!
//! Compiling the selection (resolving columns, naming result columns) and
//! hashing the result metadata id cost about a tenth of a point read's CPU
//! when done on every execution. A thread keeps the
//! [`COMPILED_MEMO_ENTRIES`] compilations it used last. An entry holds its table's `Arc`
//! and is found only by the same `Arc` (any schema change gives the table a
//! new one) and an equal selection (compared in full), so a hit is always
//! what compiling again would give.

use std::cell::RefCell;
use std::sync::Arc;

use bytes::Bytes;
use varve_cql::ast::Selection;
use varve_schema::Table;

use super::selectors::{self, Projection};
use crate::error::Result;
use crate::memo::Lru;

/// Compilations a thread remembers: a node serves few SELECT shapes.
pub const COMPILED_MEMO_ENTRIES: usize = 16;

/// A compiled selection and the metadata id of its result columns.
pub struct Compiled {
    pub projection: Projection,
    pub metadata_id: Bytes,
}

thread_local! {
    static MEMO: RefCell<Lru<(Arc<Table>, Selection), Compiled>> =
        const { RefCell::new(Lru::new(COMPILED_MEMO_ENTRIES)) };
}

/// The compiled `selection` of `table`, from this thread's memo when it is
/// there; errors are not remembered.
pub fn compiled(table: &Arc<Table>, selection: &Selection) -> Result<Arc<Compiled>> {
    MEMO.with(|memo| {
        memo.borrow_mut().get_or_try_insert_with(
            |(t, s)| Arc::ptr_eq(t, table) && s == selection,
            || (Arc::clone(table), selection.clone()),
            || {
                let projection = selectors::compile(table, selection)?;
                let metadata_id = crate::prepare::metadata_id(&projection.specs);
                Ok(Compiled {
                    projection,
                    metadata_id,
                })
            },
        )
    })
}

/// Entries this thread remembers (for tests).
#[cfg(test)]
fn memo_len() -> usize {
    MEMO.with(|m| m.borrow().len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use varve_cql::ast::{Selector, SelectorExpr};

    fn table(name: &str) -> Arc<Table> {
        let spec = varve_schema::table::TableSpec {
            keyspace: "ks".into(),
            name: name.into(),
            id: 1,
            columns: vec![
                ("k".into(), varve_types::CqlType::Int, false),
                ("v".into(), varve_types::CqlType::Text, false),
            ],
            partition_key: vec!["k".into()],
            clustering: Vec::new(),
            options: Default::default(),
        };
        Arc::new(Table::create(spec).unwrap())
    }

    fn only(column: &str) -> Selection {
        Selection::Items(vec![Selector {
            expr: SelectorExpr::Column(column.into()),
            alias: None,
        }])
    }

    #[test]
    fn a_hit_needs_the_same_table_arc_and_an_equal_selection() {
        let t = table("t");
        let a = compiled(&t, &Selection::Wildcard).unwrap();
        let b = compiled(&t, &Selection::Wildcard).unwrap();
        assert!(
            Arc::ptr_eq(&a, &b),
            "same table and selection: one compilation"
        );
        assert_eq!(a.projection.specs.len(), 2);
        let v = compiled(&t, &only("v")).unwrap();
        assert_eq!(v.projection.specs.len(), 1);
        assert_eq!(v.projection.specs[0].name, "v");
        // The same table after a schema change is a new Arc: compiled anew.
        let altered = Arc::new((*t).clone());
        let c = compiled(&altered, &Selection::Wildcard).unwrap();
        assert!(!Arc::ptr_eq(&a, &c));
        // Errors are returned, not remembered.
        let before = memo_len();
        assert!(compiled(&t, &only("nope")).is_err());
        assert_eq!(memo_len(), before);
    }

    #[test]
    fn the_memo_keeps_n_entries_and_drops_the_least_recently_used_at_n_plus_one() {
        let tables: Vec<Arc<Table>> = (0..COMPILED_MEMO_ENTRIES)
            .map(|i| table(&format!("t{i}")))
            .collect();
        let first: Vec<Arc<Compiled>> = tables
            .iter()
            .map(|t| compiled(t, &Selection::Wildcard).unwrap())
            .collect();
        assert_eq!(memo_len(), COMPILED_MEMO_ENTRIES);
        // N entries: all still there. Using t0 again makes t1 the oldest.
        for (t, c) in tables.iter().zip(&first) {
            assert!(Arc::ptr_eq(c, &compiled(t, &Selection::Wildcard).unwrap()));
        }
        assert!(Arc::ptr_eq(
            &first[0],
            &compiled(&tables[0], &Selection::Wildcard).unwrap()
        ));
        // N + 1: the least recently used (t1) goes, the rest stay.
        compiled(&table("extra"), &Selection::Wildcard).unwrap();
        assert_eq!(memo_len(), COMPILED_MEMO_ENTRIES);
        assert!(Arc::ptr_eq(
            &first[0],
            &compiled(&tables[0], &Selection::Wildcard).unwrap()
        ));
        assert!(!Arc::ptr_eq(
            &first[1],
            &compiled(&tables[1], &Selection::Wildcard).unwrap()
        ));
    }
}
