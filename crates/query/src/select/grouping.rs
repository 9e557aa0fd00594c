//! GROUP BY: one result row per group of rows sharing the partition key and
//! a clustering prefix.
//!
//! As Cassandra 5.0 answers: the GROUP BY columns are primary key columns in
//! their declared order (columns fixed by an EQ restriction may be left
//! out); aggregates run per group; other selected columns show the group's
//! first row; LIMIT, PER PARTITION LIMIT and the page size count groups. A
//! group is closed when a row of the next group comes, or at the end of its
//! partition (the partition key is always part of a group), so a page ends
//! just after a group's last row and the next page starts a new group.

use super::aggregation::Aggregation;
use super::selectors::{compile_expr, Sel};
use super::{passes, Run};
use crate::error::{QueryError, Result};
use crate::restrictions::Selection;
use crate::rows::RowView;
use bytes::Bytes;
use varve_cql::ast::{ArithOp, SelectorExpr};
use varve_schema::{Column, ColumnKind, Table};
use varve_storage::PartitionKey;
use varve_types::CqlType;

/// The open group of a GROUP BY query.
#[derive(Debug, Clone)]
pub struct Grouping {
    /// How many clustering columns a group shares.
    pub prefix_len: usize,
    /// The function of the group's last clustering column
    /// (`floor(t, 1h)`): rows whose values of it are equal share a group.
    pub key_fn: Option<Sel>,
    /// The key of the open group (its clustering prefix, the last value
    /// through `key_fn`), if a row opened one.
    pub open: Option<Vec<Bytes>>,
    /// The clustering prefix of the open group's first row.
    pub first: Option<Vec<Bytes>>,
}

/// The functions Cassandra 5.0 takes as monotonic: a GROUP BY may end with
/// one of them applied to a clustering column, its other arguments constant.
const MONOTONIC_FUNCTIONS: [&str; 4] = ["floor", "todate", "totimestamp", "tounixtimestamp"];

/// The grouping of `group_by`, or `None` without GROUP BY, checked as
/// Cassandra 5.0 checks it (same order of checks, same messages).
pub fn plan(
    table: &Table,
    sel: &Selection,
    group_by: &[SelectorExpr],
    distinct: bool,
) -> Result<Option<Grouping>> {
    if group_by.is_empty() {
        return Ok(None);
    }
    let one_partition =
        matches!(&sel.partitions, crate::restrictions::PartitionSelection::Keys(k) if k.len() == 1);
    let mut pk = table.partition_key().chain(table.clustering()).peekable();
    let mut prefix_len = 0;
    let mut function: Option<&SelectorExpr> = None;
    for item in group_by {
        let column = match item {
            SelectorExpr::Column(name) => {
                let col = column(table, name)?;
                if !col.is_primary_key() {
                    return Err(invalid(format!("Group by is currently only supported on the columns of the PRIMARY KEY, got {name}")));
                }
                if function.is_some() {
                    return Err(invalid(
                        "Functions are only supported on the last element of the GROUP BY clause"
                            .into(),
                    ));
                }
                col
            }
            other => {
                let col = function_column(table, other)?;
                function = Some(other);
                col
            }
        };
        loop {
            let Some(next) = pk.next() else {
                return Err(out_of_order());
            };
            if next.kind == ColumnKind::Clustering {
                prefix_len += 1;
            }
            if next.name == column.name {
                break;
            }
            let fixed = match next.kind {
                ColumnKind::PartitionKey => one_partition,
                _ => (next.position as usize) < sel.clustering.eq_len,
            };
            if !fixed {
                return Err(out_of_order());
            }
        }
    }
    if pk
        .peek()
        .is_some_and(|c| c.kind == ColumnKind::PartitionKey)
    {
        return Err(invalid(
            "Group by is not supported on only a part of the partition key".into(),
        ));
    }
    if prefix_len > 0 && distinct {
        return Err(invalid(
            "Grouping on clustering columns is not allowed for SELECT DISTINCT queries".into(),
        ));
    }
    let key_fn = function.map(|f| monotonic(table, f)).transpose()?;
    Ok(Some(Grouping {
        prefix_len,
        key_fn,
        open: None,
        first: None,
    }))
}

fn invalid(message: String) -> QueryError {
    QueryError::Invalid(message)
}

fn out_of_order() -> QueryError {
    invalid("Group by currently only support groups of columns following their declared order in the PRIMARY KEY".into())
}

fn column<'a>(table: &'a Table, name: &str) -> Result<&'a Column> {
    table.column(name).ok_or_else(|| {
        invalid(format!(
            "Undefined column name {name} in table {}.{}",
            table.keyspace, table.name
        ))
    })
}

/// The one clustering column a GROUP BY function is applied to (the
/// function compiles first, so a call no overload takes is refused as
/// such).
fn function_column<'a>(table: &'a Table, f: &SelectorExpr) -> Result<&'a Column> {
    compile_expr(table, f)?;
    if let SelectorExpr::FunctionCall { name, .. } = f {
        if matches!(
            name.to_ascii_lowercase().as_str(),
            "count" | "min" | "max" | "sum" | "avg"
        ) {
            return Err(invalid(format!(
                "Aggregate functions are not supported within the GROUP BY clause, got: system.{}",
                name.to_ascii_lowercase()
            )));
        }
    }
    let mut names = Vec::new();
    columns_in(f, &mut names);
    names.dedup();
    let Some(first) = names.first() else {
        return Err(invalid(
            "GROUP BY functions must have one clustering column name as parameter".into(),
        ));
    };
    if names.len() > 1 {
        return Err(invalid(format!(
            "GROUP BY functions accept only one clustering column as parameter, got: {}",
            names.join(",")
        )));
    }
    let col = column(table, first)?;
    if col.kind != ColumnKind::Clustering {
        return Err(invalid(format!(
            "Group by functions are only supported on clustering columns, got {first}"
        )));
    }
    Ok(col)
}

/// The columns `expr` reads, in order.
fn columns_in(expr: &SelectorExpr, out: &mut Vec<String>) {
    match expr {
        SelectorExpr::Column(c) if !out.contains(c) => out.push(c.clone()),
        SelectorExpr::FunctionCall { args, .. } => args.iter().for_each(|a| columns_in(a, out)),
        SelectorExpr::Operation { left, right, .. } => {
            columns_in(left, out);
            columns_in(right, out);
        }
        SelectorExpr::Negate(x) | SelectorExpr::Paren(x) | SelectorExpr::Cast { expr: x, .. } => {
            columns_in(x, out)
        }
        _ => {}
    }
}

/// `f` compiled, when it is a function Cassandra takes as monotonic with
/// its column as first argument and constants after it.
fn monotonic(table: &Table, f: &SelectorExpr) -> Result<Sel> {
    let (compiled, _, ty) = compile_expr(table, f)?;
    let ok = match (f, &compiled) {
        (SelectorExpr::FunctionCall { name, args }, Sel::Func { .. }) => {
            MONOTONIC_FUNCTIONS.contains(&crate::functions::canonical(name).as_str())
                && matches!(args.first(), Some(SelectorExpr::Column(_)))
                && args[1..].iter().all(|a| matches!(a, SelectorExpr::Term(_)))
        }
        _ => false,
    };
    if ok {
        return Ok(compiled);
    }
    Err(invalid(format!(
        "Only monotonic functions are supported in the GROUP BY clause. Got: {} ",
        signature(table, f, &ty)?
    )))
}

/// A function as Cassandra prints it: `system.abs : (int) -> int`, each
/// constant argument marked `(constant)`.
fn signature(table: &Table, f: &SelectorExpr, ret: &CqlType) -> Result<String> {
    let (name, args): (String, Vec<&SelectorExpr>) = match f {
        SelectorExpr::FunctionCall { name, args } => {
            (name.to_ascii_lowercase(), args.iter().collect())
        }
        SelectorExpr::Operation { op, left, right } => (
            format!("\"{}\"", operation_name(*op)),
            vec![&**left, &**right],
        ),
        SelectorExpr::Negate(x) => ("\"_negate\"".into(), vec![&**x]),
        _ => return Ok(format!("{ret}")),
    };
    let mut types: Vec<CqlType> = Vec::new();
    let mut shown = Vec::new();
    for (i, a) in args.iter().enumerate() {
        let (ty, constant) = match a {
            SelectorExpr::Term(t) => {
                let ty = crate::functions::argument_type(&name, i, t, types.first())
                    .unwrap_or_else(|| crate::functions::natural_type(t));
                (ty, true)
            }
            _ => (compile_expr(table, a)?.2, false),
        };
        shown.push(format!("{ty}{}", if constant { "(constant)" } else { "" }));
        types.push(ty);
    }
    let types = shown;
    Ok(format!("system.{name} : ({}) -> {ret}", types.join(", ")))
}

fn operation_name(op: ArithOp) -> &'static str {
    match op {
        ArithOp::Add => "_add",
        ArithOp::Sub => "_substract",
        ArithOp::Mul => "_multiply",
        ArithOp::Div => "_divide",
        ArithOp::Mod => "_modulo",
    }
}

impl Run<'_> {
    /// A partition with only a static row is a group of its own (its
    /// clustering columns null). Returns false when the page is full.
    pub(super) fn static_group(
        &mut self,
        view: &RowView,
        key: &PartitionKey,
        key_index: u32,
    ) -> Result<bool> {
        if !self.filters.iter().all(|f| passes(f, view)) {
            return Ok(true);
        }
        self.close_group()?;
        if self.full() {
            return Ok(false);
        }
        self.open_group(Vec::new(), &[]);
        self.agg.add(self.projection, view, key.token, self.now)?;
        self.mark(key, key_index, None, None);
        Ok(true)
    }

    /// The group key of a row with clustering `ck`: its clustering
    /// prefix, the last value through the GROUP BY function if there is
    /// one.
    pub(super) fn group_key(&self, ck: &[Bytes], view: &RowView) -> Result<Vec<Bytes>> {
        let Some(g) = &self.group else {
            return Ok(Vec::new());
        };
        let mut key = ck[..g.prefix_len.min(ck.len())].to_vec();
        if let (Some(f), Some(last)) = (&g.key_fn, key.last_mut()) {
            *last = super::selector_eval::eval(f, view, 0, self.now)?.unwrap_or_default();
        }
        Ok(key)
    }

    /// True when a row of group `key` starts a group: none is open, or
    /// the open one has another key.
    pub(super) fn starts_group(&self, key: &[Bytes]) -> bool {
        match self.group.as_ref().and_then(|g| g.open.as_ref()) {
            None => true,
            Some(open) => open[..] != key[..],
        }
    }

    /// Opens the group of `key`, whose first row has clustering `ck`.
    pub(super) fn open_group(&mut self, key: Vec<Bytes>, ck: &[Bytes]) {
        if let Some(g) = &mut self.group {
            g.first = Some(ck[..g.prefix_len.min(ck.len())].to_vec());
            g.open = Some(key);
        }
    }

    /// Ends the open group, if any: its row joins the page and counts
    /// against LIMIT (also in the paging state, which was marked at the
    /// group's last row).
    pub(super) fn close_group(&mut self) -> Result<()> {
        let Some(g) = self.group.as_mut() else {
            return Ok(());
        };
        if g.open.take().is_none() {
            return Ok(());
        }
        let open = g.first.take().unwrap_or_default();
        self.rows.push(self.agg.row(self.projection)?);
        if self.keep_sort_keys {
            self.sort_keys.push(open);
        }
        self.agg = Aggregation::new(self.projection);
        if let Some(r) = &mut self.remaining {
            *r = r.saturating_sub(1);
        }
        if let Some(last) = &mut self.last {
            last.remaining = self.remaining.map(|r| r as i32).unwrap_or(-1);
        }
        Ok(())
    }
}
