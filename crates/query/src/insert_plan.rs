//! A plain INSERT of bind markers, compiled once per table version and
//! statement and remembered per thread.
//!
//! The general write path turns every INSERT into relations and
//! assignments, analyses the relations as a WHERE clause would be, and
//! resolves each column by name, on every execution: about a fifth of a
//! write's CPU in the stress benchmark. Most writes are prepared INSERTs of
//! one row with a marker per column, whose shape does not change between
//! executions. For those, [`compile`] resolves the columns once; an
//! execution then evaluates the markers with the same functions the
//! general path uses (so values are validated, and rejected, with the same
//! errors) and builds the one row.
//!
//! A statement qualifies when it has no JSON and no IF, names every
//! primary key column once, names no column twice, and binds every value
//! to a marker. Anything else takes the general path, whose checks give
//! the errors. The memo follows [`crate::select::compiled`]: an entry holds
//! its table's `Arc` and is found only by that `Arc` and an equal
//! statement, so a hit is what compiling again would give.

use crate::collections;
use crate::context::Ctx;
use crate::error::Result;
use crate::memo::Lru;
use crate::restrictions;
use crate::write::{using, Planned};
use std::cell::RefCell;
use std::sync::Arc;
use varve_cql::ast::{Assignment, Conditions, Insert, Term};
use varve_schema::{Column, ColumnKind, Table};
use varve_storage::{value_slab, CellMap, ClusteringKey, LivenessInfo, Partition, Row};

/// Compiled INSERTs a thread remembers.
pub const INSERT_MEMO_ENTRIES: usize = 16;

/// An INSERT with its columns resolved.
pub struct CompiledInsert {
    /// Partition key columns in the statement's order (the order the
    /// general path evaluates them in), with their place in the key.
    partition: Vec<(usize, Column, Term)>,
    /// Clustering columns in clustering order.
    clustering: Vec<(Column, Term)>,
    /// Every other column, in the statement's order, as the assignment the
    /// general path would make of it.
    cells: Vec<(Column, Assignment)>,
    regular_cells: usize,
}

/// Compilations by table version and statement; `None` remembers that a
/// statement takes the general path.
type Memo = Lru<(Arc<Table>, Insert), Option<CompiledInsert>>;

thread_local! {
    static MEMO: RefCell<Memo> = const { RefCell::new(Lru::new(INSERT_MEMO_ENTRIES)) };
}

/// The compiled form of `ins` on `table`, or `None` when the statement
/// must take the general path. Remembered per thread either way.
pub fn compiled(table: &Arc<Table>, ins: &Insert) -> Arc<Option<CompiledInsert>> {
    let found: std::result::Result<_, std::convert::Infallible> = MEMO.with(|memo| {
        memo.borrow_mut().get_or_try_insert_with(
            |(t, i)| Arc::ptr_eq(t, table) && i == ins,
            || (Arc::clone(table), ins.clone()),
            || Ok(compile(table, ins)),
        )
    });
    let Ok(c) = found;
    c
}

fn compile(table: &Table, ins: &Insert) -> Option<CompiledInsert> {
    // COMPACT STORAGE tables write no row marker and complete a dense
    // table's value: the general path knows how.
    if ins.json.is_some()
        || table.is_compact()
        || ins.conditions != Conditions::None
        || ins.columns.len() != ins.values.len()
    {
        return None;
    }
    let mut partition = Vec::new();
    let mut clustering: Vec<Option<(Column, Term)>> = vec![None; table.clustering_len()];
    let mut cells = Vec::new();
    for (i, (name, term)) in ins.columns.iter().zip(&ins.values).enumerate() {
        if !matches!(term, Term::Bind(_)) || ins.columns[..i].contains(name) {
            return None;
        }
        let col = table.column(name)?.clone();
        match col.kind {
            ColumnKind::PartitionKey => {
                partition.push((col.position as usize, col, term.clone()));
            }
            ColumnKind::Clustering => {
                let at = col.position as usize;
                clustering[at] = Some((col, term.clone()));
            }
            _ => {
                let set = Assignment::Set {
                    column: name.clone(),
                    value: term.clone(),
                };
                cells.push((col, set));
            }
        }
    }
    if partition.len() != table.partition_key_len() {
        return None;
    }
    let clustering: Vec<(Column, Term)> = clustering.into_iter().collect::<Option<_>>()?;
    let regular_cells = cells
        .iter()
        .filter(|(c, _)| c.kind != ColumnKind::Static)
        .count();
    Some(CompiledInsert {
        partition,
        clustering,
        cells,
        regular_cells,
    })
}

/// Plans one execution of a compiled INSERT: the one row it writes.
pub fn plan(
    ctx: &Ctx<'_>,
    table: &Arc<Table>,
    ins: &Insert,
    c: &CompiledInsert,
    batch_ts: Option<i64>,
) -> Result<Planned> {
    let (ts, ttl) = using(ctx, table, &ins.using, batch_ts, false)?;
    let mut components = vec![bytes::Bytes::new(); c.partition.len()];
    for (at, col, term) in &c.partition {
        components[*at] = restrictions::key_value(ctx, term, col)?;
    }
    let key = restrictions::partition_key(&components)?;
    let mut prefix = Vec::with_capacity(c.clustering.len());
    for (col, term) in &c.clustering {
        prefix.push(restrictions::key_value(ctx, term, col)?);
    }
    let now = ctx.now_seconds;
    let mut row = Row {
        liveness: Some(LivenessInfo::new(ts, ttl, now)),
        cells: CellMap::with_capacity(c.regular_cells),
        ..Row::default()
    };
    let mut static_row = Row::default();
    for (col, set) in &c.cells {
        if col.kind == ColumnKind::Static {
            collections::assign(ctx, col, set, ts, ttl, None, &mut static_row)?;
        } else {
            collections::assign(ctx, col, set, ts, ttl, None, &mut row)?;
        }
    }
    let mut partition = Partition::default();
    if !static_row.is_empty() {
        partition.static_row = Some(static_row);
    }
    let cmp = crate::comparator::of(table);
    partition.rows.insert(ClusteringKey::row(prefix, &cmp), row);
    Ok(Planned {
        table: Arc::clone(table),
        updates: vec![(value_slab::copy_key(&key), partition)],
        cas: None,
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
    use varve_cql::ast::Statement;
    use varve_types::CqlType;

    fn table(name: &str) -> Arc<Table> {
        let spec = varve_schema::table::TableSpec {
            keyspace: "ks".into(),
            name: name.into(),
            id: 1,
            columns: vec![
                ("k".into(), CqlType::Int, false),
                ("c".into(), CqlType::Text, false),
                ("s".into(), CqlType::Int, true),
                ("v".into(), CqlType::Text, false),
            ],
            partition_key: vec!["k".into()],
            clustering: vec![("c".into(), false)],
            options: Default::default(),
        };
        Arc::new(Table::create(spec).unwrap())
    }

    fn insert(text: &str) -> Insert {
        match varve_cql::parse(text).unwrap().statement {
            Statement::Insert(i) => i,
            other => panic!("not an insert: {other:?}"),
        }
    }

    #[test]
    fn only_plain_inserts_of_markers_naming_the_whole_key_compile() {
        let t = table("t");
        let compiles = |text: &str| compile(&t, &insert(text)).is_some();
        assert!(compiles("INSERT INTO t (k, c, v) VALUES (?, ?, ?)"));
        assert!(compiles(
            "INSERT INTO t (v, s, c, k) VALUES (?, ?, ?, ?) USING TTL ?"
        ));
        assert!(compiles("INSERT INTO t (k, c) VALUES (:a, :b)"));
        for general in [
            "INSERT INTO t (k, c, v) VALUES (?, ?, 'x')",
            "INSERT INTO t (k, c, v) VALUES (?, ?, ?) IF NOT EXISTS",
            "INSERT INTO t JSON ?",
            "INSERT INTO t (k, v) VALUES (?, ?)",
            "INSERT INTO t (k, s) VALUES (?, ?)",
            "INSERT INTO t (c, v) VALUES (?, ?)",
            "INSERT INTO t (k, c, v, v) VALUES (?, ?, ?, ?)",
            "INSERT INTO t (k, c, nope) VALUES (?, ?, ?)",
        ] {
            assert!(!compiles(general), "{general} takes the general path");
        }
        let c = compile(
            &t,
            &insert("INSERT INTO t (v, s, c, k) VALUES (?, ?, ?, ?)"),
        )
        .unwrap();
        assert_eq!(c.partition.len(), 1);
        assert_eq!(c.clustering.len(), 1);
        let cells: Vec<&str> = c.cells.iter().map(|(col, _)| col.name.as_str()).collect();
        assert_eq!(cells, ["v", "s"], "cells keep the statement's order");
        assert_eq!(c.regular_cells, 1);
    }

    #[test]
    fn a_hit_needs_the_same_table_arc_and_an_equal_statement() {
        let t = table("t");
        let ins = insert("INSERT INTO t (k, c, v) VALUES (?, ?, ?)");
        let a = compiled(&t, &ins);
        assert!(Arc::ptr_eq(&a, &compiled(&t, &ins)));
        let other = insert("INSERT INTO t (k, c, s) VALUES (?, ?, ?)");
        assert!(!Arc::ptr_eq(&a, &compiled(&t, &other)));
        let altered = Arc::new((*t).clone());
        assert!(!Arc::ptr_eq(&a, &compiled(&altered, &ins)));
        // A statement that cannot compile is remembered as such.
        let general = insert("INSERT INTO t (k, c, v) VALUES (?, ?, 'x')");
        let g = compiled(&t, &general);
        assert!(g.is_none());
        assert!(Arc::ptr_eq(&g, &compiled(&t, &general)));
    }

    #[test]
    fn the_memo_keeps_n_entries_and_drops_the_least_recently_used_at_n_plus_one() {
        let ins = insert("INSERT INTO t (k, c, v) VALUES (?, ?, ?)");
        let tables: Vec<Arc<Table>> = (0..INSERT_MEMO_ENTRIES)
            .map(|i| table(&format!("t{i}")))
            .collect();
        let first: Vec<_> = tables.iter().map(|t| compiled(t, &ins)).collect();
        assert_eq!(memo_len(), INSERT_MEMO_ENTRIES);
        for (t, c) in tables.iter().zip(&first) {
            assert!(Arc::ptr_eq(c, &compiled(t, &ins)), "N entries: all kept");
        }
        // t0 used again: t1 is now the least recently used.
        compiled(&tables[0], &ins);
        compiled(&table("extra"), &ins);
        assert_eq!(memo_len(), INSERT_MEMO_ENTRIES);
        assert!(Arc::ptr_eq(&first[0], &compiled(&tables[0], &ins)));
        assert!(!Arc::ptr_eq(&first[1], &compiled(&tables[1], &ins)));
    }
}
