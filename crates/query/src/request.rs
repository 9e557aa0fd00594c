//! Recording one finished statement into the client-request metrics: its
//! operation (see [`crate::metrics`] for the classification), node-wide
//! and per table.

use std::time::Instant;

use varve_cql::ast::{Conditions, QualifiedName, Statement};
use varve_schema::Schema;
use varve_storage::TableId;

use crate::api::QueryResult;
use crate::context::Ctx;
use crate::error::Result;
use crate::metrics::Operation;
use crate::processor::Processor;

/// Whether a write statement (or any statement of a batch) has an IF.
pub fn is_conditional(stmt: &Statement) -> bool {
    let has = |c: &Conditions| !matches!(c, Conditions::None);
    match stmt {
        Statement::Insert(i) => has(&i.conditions),
        Statement::Update(u) => has(&u.conditions),
        Statement::Delete(d) => has(&d.conditions),
        Statement::Batch(b) => b.statements.iter().any(is_conditional),
        _ => false,
    }
}

/// The operation of a statement that ran with `ctx`; `None` when it is no
/// client request (DDL, USE, a virtual table, a SELECT refused before it
/// read anything).
pub fn operation(ctx: &Ctx, stmt: &Statement) -> Option<Operation> {
    match stmt {
        Statement::Select(_) => ctx
            .read_shape
            .map(|single| Operation::of_select(single, ctx.opts.consistency)),
        Statement::Insert(_)
        | Statement::Update(_)
        | Statement::Delete(_)
        | Statement::Batch(_) => Some(Operation::of_write(is_conditional(stmt))),
        _ => None,
    }
}

/// Records a statement run by `Processor::run`.
pub fn record(
    p: &Processor,
    ctx: &Ctx,
    stmt: &Statement,
    started: Instant,
    result: &Result<QueryResult>,
) {
    let Some(op) = operation(ctx, stmt) else {
        return;
    };
    if result
        .as_ref()
        .is_err_and(crate::error::QueryError::would_block)
    {
        return; // it runs again, and that run is the one recorded
    }
    p.metrics
        .requests
        .finish(op, started, result.as_ref().err());
    if result.is_ok() {
        let ks = ctx.keyspace.as_deref();
        match stmt {
            Statement::Batch(_) => {
                record_table(p, &ctx.schema, ks, stmt, op, started, &mut Vec::new())
            }
            // One statement names one table: nothing to deduplicate, and
            // no list to allocate on every request.
            _ => {
                if let Some(name) = table_of(stmt) {
                    finish_table(p, &ctx.schema, ks, name, op, started, None);
                }
            }
        }
    }
}

/// The table a statement other than a batch names.
fn table_of(stmt: &Statement) -> Option<&QualifiedName> {
    match stmt {
        Statement::Select(s) => Some(&s.table),
        Statement::Insert(i) => Some(&i.table),
        Statement::Update(u) => Some(&u.table),
        Statement::Delete(d) => Some(&d.table),
        _ => None,
    }
}

/// The tables a statement names (each once).
fn tables_of(stmt: &Statement) -> Vec<&QualifiedName> {
    let mut out: Vec<&QualifiedName> = Vec::new();
    collect_tables(stmt, &mut out);
    out
}

fn collect_tables<'a>(stmt: &'a Statement, out: &mut Vec<&'a QualifiedName>) {
    if let Statement::Batch(b) = stmt {
        for s in &b.statements {
            collect_tables(s, out);
        }
        return;
    }
    let Some(name) = table_of(stmt) else {
        return;
    };
    if !out.contains(&name) {
        out.push(name);
    }
}

/// Records the per-table coordinator latency of a successful statement,
/// once per table not yet in `seen` (which it extends).
pub fn record_table(
    p: &Processor,
    schema: &Schema,
    keyspace: Option<&str>,
    stmt: &Statement,
    op: Operation,
    started: Instant,
    seen: &mut Vec<TableId>,
) {
    for name in tables_of(stmt) {
        finish_table(p, schema, keyspace, name, op, started, Some(seen));
    }
}

/// Records `op` for the table `name` (in `keyspace` unless it names its
/// own), unless it is unknown, virtual, or already in `seen` (which it
/// extends).
fn finish_table(
    p: &Processor,
    schema: &Schema,
    keyspace: Option<&str>,
    name: &QualifiedName,
    op: Operation,
    started: Instant,
    seen: Option<&mut Vec<TableId>>,
) {
    let Some(ks) = name.keyspace.as_deref().or(keyspace) else {
        return;
    };
    let Some(t) = schema.table(ks, &name.name).filter(|t| !t.is_virtual) else {
        return;
    };
    if let Some(seen) = seen {
        if seen.contains(&t.id) {
            return;
        }
        seen.push(t.id);
    }
    p.metrics.table(t.id, ks, &t.name).finish(op, started);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stmt(text: &str) -> Statement {
        varve_cql::parse(text).expect("parses").statement
    }

    #[test]
    fn conditions_make_cas_writes() {
        assert!(!is_conditional(&stmt("INSERT INTO t (k) VALUES (1)")));
        assert!(is_conditional(&stmt(
            "INSERT INTO t (k) VALUES (1) IF NOT EXISTS"
        )));
        assert!(is_conditional(&stmt(
            "UPDATE t SET v = 1 WHERE k = 1 IF v = 2"
        )));
        assert!(is_conditional(&stmt("DELETE FROM t WHERE k = 1 IF EXISTS")));
        assert!(!is_conditional(&stmt("SELECT * FROM t")));
        assert!(is_conditional(&stmt(
            "BEGIN BATCH INSERT INTO t (k) VALUES (1); UPDATE t SET v = 1 WHERE k = 1 IF v = 2; APPLY BATCH"
        )));
        assert!(!is_conditional(&stmt(
            "BEGIN BATCH INSERT INTO t (k) VALUES (1); DELETE FROM t WHERE k = 2; APPLY BATCH"
        )));
    }

    #[test]
    fn batches_name_each_table_once() {
        let b = stmt(
            "BEGIN BATCH INSERT INTO a (k) VALUES (1); INSERT INTO a (k) VALUES (2); INSERT INTO ks.b (k) VALUES (1); APPLY BATCH",
        );
        let names: Vec<&str> = tables_of(&b).iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
    }
}
