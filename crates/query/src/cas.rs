//! Conditional statements (lightweight transactions): query evaluates the
//! conditions and plans the update; the data path runs them as one
//! linearizable step on the partition ([`crate::data_path::DataPath::cas`]:
//! a lock on one node, Paxos across replicas), stamping the update with
//! the transaction's timestamp (docs/design/paxos.md). An update that does
//! not apply is still ordered with the others (CASSANDRA-12126).

use crate::api::{ColumnSpec, QueryResult, ResultRows};
use crate::context::Ctx;
use crate::data_path::{CasCommand, CasDecider, CasDecision, DataResult};
use crate::dropped_cells::DroppedCells;
use crate::error::{QueryError, Result};
use crate::processor::Processor;
use crate::restrictions::Selection;
use crate::rows::{key_components, RowView};
use crate::terms::{eval, Evaluated};
use bytes::Bytes;
use std::cmp::Ordering;
use std::sync::Arc;
use varve_cql::ast::{Conditions, Operator, Term};
use varve_schema::{Column, Table};
use varve_storage::{ClusteringKey, Partition, PartitionKey, Slice};
use varve_types::{codec, compare, CqlType, Value};

/// One evaluated condition `column[element] op values`.
#[derive(Debug, Clone)]
pub struct Cond {
    pub column: Column,
    pub element: Option<Value>,
    pub op: Operator,
    /// One value (or several for IN); `None` is null.
    pub values: Vec<Option<Value>>,
}

#[derive(Debug, Clone)]
pub enum CasKind {
    NotExists,
    Exists,
    Conditions(Vec<Cond>),
}

/// What a conditional statement checks before it applies.
#[derive(Debug, Clone)]
pub struct CasCheck {
    pub table: Arc<Table>,
    pub key: PartitionKey,
    /// The row checked; `None` checks the partition's static row.
    pub clustering: Option<Vec<Bytes>>,
    pub kind: CasKind,
}

/// Builds the check of a statement's IF clause, if it has one.
/// `statics_only`: the statement writes static columns and nothing else
/// (a DELETE of whole rows or partitions does not); with conditions on
/// static columns only (or IF [NOT] EXISTS), and no clustering in its
/// WHERE, it checks the static row, as Cassandra does.
pub fn check_for(
    verb: &str,
    ctx: &Ctx,
    table: &Arc<Table>,
    keys: &[PartitionKey],
    sel: &Selection,
    (conditions, statics_only): (&Conditions, bool),
) -> Result<Option<CasCheck>> {
    let kind = match conditions {
        Conditions::None => return Ok(None),
        Conditions::IfNotExists => CasKind::NotExists,
        Conditions::IfExists => CasKind::Exists,
        Conditions::If(list) => {
            let mut out = Vec::new();
            for c in list {
                let col = table.column(&c.column).cloned().ok_or_else(|| {
                    QueryError::Invalid(format!(
                        "Undefined column name {} in table {}.{}",
                        c.column, table.keyspace, table.name
                    ))
                })?;
                let (elem_ty, element) = match (&c.element, col.ty.unfrozen()) {
                    (None, _) if c.field.is_some() => {
                        check_not_key(&col)?;
                        crate::user_types::fields::condition_field(&col, c.field.as_deref())?
                    }
                    (None, _) => (col.ty.clone(), None),
                    (Some(key), _) => element_of(ctx, &col, key)?,
                };
                check_not_key(&col)?;
                if elem_ty.unfrozen() == &CqlType::Duration
                    && matches!(
                        c.op,
                        Operator::Lt | Operator::Le | Operator::Gt | Operator::Ge
                    )
                {
                    return Err(QueryError::Invalid(format!(
                        "Slice conditions ( {} ) are not supported on durations",
                        operator_text(c.op)
                    )));
                }
                // An element's values are named as Cassandra names them.
                let receiver = if c.element.is_some() {
                    format!("value({})", col.name)
                } else {
                    col.name.clone()
                };
                let values = match (&c.op, &c.rhs) {
                    (Operator::In, Term::Tuple(items)) => items
                        .iter()
                        .map(|t| value(ctx, t, &elem_ty, &receiver))
                        .collect::<Result<_>>()?,
                    (Operator::In, other) => match eval(
                        ctx,
                        other,
                        &CqlType::List(Box::new(elem_ty.clone())),
                        &receiver,
                    )? {
                        Evaluated::Value(Value::List(vs)) => vs.into_iter().map(Some).collect(),
                        _ => {
                            return Err(QueryError::Invalid(
                                "Invalid null list in IN condition".into(),
                            ))
                        }
                    },
                    (Operator::Contains | Operator::ContainsKey, t) => {
                        let inner = match (c.op, col.ty.unfrozen()) {
                            (Operator::Contains, CqlType::List(e) | CqlType::Set(e)) => {
                                (**e).clone()
                            }
                            (Operator::Contains, CqlType::Map(_, v)) => (**v).clone(),
                            (Operator::ContainsKey, CqlType::Map(k, _)) => (**k).clone(),
                            _ => {
                                return Err(QueryError::Invalid(format!(
                                    "Invalid CONTAINS condition on non-collection column {}",
                                    col.name
                                )))
                            }
                        };
                        vec![value(ctx, t, &inner, &col.name)?]
                    }
                    (_, t) => vec![value(ctx, t, &elem_ty, &receiver)?],
                };
                out.push(Cond {
                    column: col,
                    element,
                    op: c.op,
                    values,
                });
            }
            CasKind::Conditions(out)
        }
    };
    if keys.len() != 1 {
        return Err(QueryError::Invalid(
            "IN on the partition key is not supported with conditional updates".into(),
        ));
    }
    let regular_conditions = matches!(&kind, CasKind::Conditions(c) if c.iter().any(|c| c.column.kind != varve_schema::ColumnKind::Static));
    let clustering = if sel.clustering.is_unrestricted()
        && table.clustering_len() > 0
        && statics_only
        && !regular_conditions
    {
        None
    } else {
        if !sel.clustering.is_exact(table) {
            check_static_write(verb, table, sel, statics_only)?;
            let missing = table
                .clustering()
                .nth(sel.clustering.eq_len)
                .map(|c| c.name.clone())
                .unwrap_or_default();
            return Err(QueryError::Invalid(format!(
                "{verb} statements must restrict all PRIMARY KEY columns with equality relations in order to use IF conditions, but column '{missing}' is not restricted"
            )));
        }
        if sel.clustering.prefixes.len() != 1 {
            return Err(QueryError::Invalid(
                "IN on the clustering key columns is not supported with conditional updates".into(),
            ));
        }
        Some(sel.clustering.prefixes[0].clone())
    };
    Ok(Some(CasCheck {
        table: table.clone(),
        key: keys[0].clone(),
        clustering,
        kind,
    }))
}

/// Cassandra's refusals of a conditional write that leaves clustering
/// columns out but is not a write of static columns checked on statics.
fn check_static_write(
    verb: &str,
    table: &Table,
    sel: &Selection,
    statics_only: bool,
) -> Result<()> {
    let what = match (verb, statics_only) {
        ("DELETE", false) => "delete non static columns",
        ("DELETE", true) => "use IF condition on non static columns",
        (_, true) if sel.clustering.is_unrestricted() => {
            let missing: Vec<&str> = table.clustering().map(|c| c.name.as_str()).collect();
            return Err(QueryError::Invalid(format!(
                "Some clustering keys are missing: {}",
                missing.join(", ")
            )));
        }
        _ => return Ok(()),
    };
    Err(QueryError::Invalid(format!(
        "DELETE statements must restrict all PRIMARY KEY columns with equality relations in order to {what}"
    )))
}

/// A condition on a primary key column is refused.
fn check_not_key(col: &Column) -> Result<()> {
    if col.is_primary_key() {
        return Err(QueryError::Invalid(format!(
            "PRIMARY KEY column '{}' cannot have IF conditions",
            col.name
        )));
    }
    Ok(())
}

/// `IF m[key] ...` or `IF l[index] ...` (frozen or not): the type of the
/// element and its key, with Cassandra's refusals of sets, other columns,
/// null keys and negative indexes.
fn element_of(ctx: &Ctx, col: &Column, key: &Term) -> Result<(CqlType, Option<Value>)> {
    let name = &col.name;
    let (elem_ty, key_ty, receiver, kind) = match col.ty.unfrozen() {
        CqlType::Map(kt, vt) => (
            (**vt).clone(),
            (**kt).clone(),
            format!("key({name})"),
            "map",
        ),
        CqlType::List(et) => ((**et).clone(), CqlType::Int, format!("idx({name})"), "list"),
        CqlType::Set(_) => {
            return Err(QueryError::Invalid(format!(
                "Invalid element access syntax for set column {name}"
            )))
        }
        _ => {
            return Err(QueryError::Invalid(format!(
                "Invalid element access syntax for non-collection column {name}"
            )))
        }
    };
    let key = match eval(ctx, key, &key_ty, &receiver)? {
        Evaluated::Value(v) => v,
        Evaluated::Null => {
            return Err(QueryError::Invalid(format!(
                "Invalid null value for {kind} element access"
            )))
        }
        Evaluated::Unset => {
            return Err(QueryError::Invalid(format!(
                "Invalid unset value for {kind} element access"
            )))
        }
    };
    if let Value::Int(i) = key {
        if i < 0 && kind == "list" {
            return Err(QueryError::Invalid(format!(
                "Invalid negative list index {i}"
            )));
        }
    }
    Ok((elem_ty, Some(key)))
}

/// A slice operator as CQL writes it.
fn operator_text(op: Operator) -> &'static str {
    match op {
        Operator::Lt => "<",
        Operator::Le => "<=",
        Operator::Gt => ">",
        _ => ">=",
    }
}

fn value(ctx: &Ctx, t: &Term, ty: &CqlType, name: &str) -> Result<Option<Value>> {
    match eval(ctx, t, ty, name)? {
        Evaluated::Value(v) => Ok(Some(v)),
        Evaluated::Null => Ok(None),
        Evaluated::Unset => Err(QueryError::Invalid(format!(
            "Invalid unset value for condition on {name}"
        ))),
    }
}

/// Checks every condition and applies every update when all hold, as one
/// linearizable step on the partition (the data path's `cas`: a lock on
/// one node, Paxos on a cluster). Returns the `[applied]` result.
pub async fn run(
    p: &Processor,
    ctx: &mut Ctx<'_>,
    groups: Vec<crate::write::TableUpdates>,
    checks: Vec<CasCheck>,
    is_batch: bool,
) -> Result<QueryResult> {
    let first = checks
        .first()
        .ok_or_else(|| QueryError::Server("no condition".into()))?
        .clone();
    for c in &checks {
        if c.table.id != first.table.id {
            return Err(QueryError::Invalid(
                "Batch with conditions cannot span multiple tables".into(),
            ));
        }
        if c.key != first.key {
            return Err(QueryError::Invalid(
                "Batch with conditions cannot span multiple partitions".into(),
            ));
        }
    }
    let mut update = Partition::default();
    for (t, updates) in groups {
        if t.id != first.table.id || updates.iter().any(|(k, _)| *k != first.key) {
            return Err(QueryError::Invalid(
                "Batch with conditions cannot span multiple partitions".into(),
            ));
        }
        for (_, u) in updates {
            update.merge(u);
        }
    }
    let table = first.table.clone();
    let cmp = crate::comparator::of(&table);
    let slices = [Slice::all(&cmp)];
    let decider = Arc::new(StatementDecider {
        table: table.clone(),
        checks,
        update,
        planned_micros: ctx.timestamp_micros,
        is_batch,
    });
    let command = CasCommand {
        table: table.id,
        key: &first.key,
        slices: &slices,
        serial: serial_level(ctx)?,
        commit: crate::consistency::level(ctx.opts.consistency)?,
        now_seconds: ctx.now_seconds,
        decider: decider.clone(),
    };
    let mut outcome = p.data.cas(command).await?;
    if let Some(d) = DroppedCells::of(&table) {
        d.partition(&mut outcome.current);
    }
    p.metrics
        .requests
        .cas_write_contention
        .record(outcome.contention);
    if !outcome.applied {
        p.metrics.requests.cas_condition_not_met.inc();
    }
    let pk = key_components(&table, &first.key);
    let (_, shown) = decider.evaluate(&outcome.current, &pk);
    Ok(QueryResult::Rows(result(
        &table,
        outcome.applied,
        &shown,
        &outcome.current,
        &pk,
        &cmp,
        is_batch,
    )))
}

/// The rows an answer shows: for each check, the columns and the row.
type Shown = Vec<(Vec<Column>, Option<Vec<Bytes>>)>;

/// A statement's conditions and planned update, decided by the data path
/// against the partition as its transaction found it.
pub(crate) struct StatementDecider {
    pub(crate) table: Arc<Table>,
    pub(crate) checks: Vec<CasCheck>,
    /// Every update of the statement (or batch), merged.
    pub(crate) update: Partition,
    /// The timestamp the update was planned with.
    pub(crate) planned_micros: i64,
    pub(crate) is_batch: bool,
}

impl StatementDecider {
    /// Whether every check holds on `current`, and the rows to show.
    fn evaluate(&self, current: &Partition, pk: &[Bytes]) -> (bool, Shown) {
        let table = &self.table;
        let shown_part;
        let current = match DroppedCells::of(table) {
            None => current,
            Some(d) => {
                let mut p = current.clone();
                d.partition(&mut p);
                shown_part = p;
                &shown_part
            }
        };
        let cmp = crate::comparator::of(table);
        let mut applied = true;
        let mut shown: Shown = Vec::new();
        for c in &self.checks {
            let row = c
                .clustering
                .as_ref()
                .and_then(|ck| current.rows.get(&ClusteringKey::row(ck.clone(), &cmp)));
            let view = RowView {
                pk,
                clustering: c.clustering.as_deref(),
                row,
                static_row: current.static_row.as_ref(),
            };
            let exists = match &c.clustering {
                Some(_) => row.is_some(),
                None => current.static_row.is_some() || !current.rows.is_empty(),
            };
            let ok = match &c.kind {
                CasKind::NotExists => !exists,
                CasKind::Exists => exists,
                CasKind::Conditions(conds) => conds.iter().all(|cond| holds(cond, &view)),
            };
            if ok && !self.is_batch {
                continue;
            }
            applied &= ok;
            // Nothing read for this row: only `[applied]` comes back for it.
            let read_something = match &c.clustering {
                Some(_) => row.is_some(),
                None => current.static_row.is_some(),
            };
            if !read_something {
                continue;
            }
            match &c.kind {
                CasKind::NotExists => shown.push((
                    table.visible_columns().cloned().collect(),
                    c.clustering.clone(),
                )),
                CasKind::Exists => {}
                CasKind::Conditions(conds) => {
                    let mut cols: Vec<Column> = Vec::new();
                    for cond in conds {
                        if !cols.iter().any(|x| x.name == cond.column.name) {
                            cols.push(cond.column.clone());
                        }
                    }
                    shown.push((cols, c.clustering.clone()));
                }
            }
        }
        (applied, shown)
    }
}

impl CasDecider for StatementDecider {
    fn decide(&self, current: &Partition, timestamp: i64) -> DataResult<CasDecision> {
        let first = self.checks.first();
        let pk = first.map_or_else(Vec::new, |c| key_components(&self.table, &c.key));
        let (applied, _) = self.evaluate(current, &pk);
        let update = applied.then(|| {
            let mut update = self.update.clone();
            update.shift_timestamps(timestamp - self.planned_micros);
            update
        });
        Ok(CasDecision { applied, update })
    }

    fn portable(&self) -> Option<Bytes> {
        Some(crate::cas_portable::encode(self))
    }
}

/// The level of a conditional statement's read (SERIAL when the client
/// named none).
fn serial_level(ctx: &Ctx<'_>) -> Result<varve_types::Consistency> {
    match ctx.opts.serial_consistency {
        Some(code) => crate::consistency::level(code),
        None => Ok(varve_types::Consistency::Serial),
    }
}

fn result(
    table: &Table,
    applied: bool,
    shown: &[(Vec<Column>, Option<Vec<Bytes>>)],
    current: &Partition,
    pk: &[Bytes],
    cmp: &Arc<varve_storage::ClusteringComparator>,
    is_batch: bool,
) -> ResultRows {
    let spec = |name: &str, ty: CqlType| ColumnSpec {
        keyspace: table.keyspace.clone(),
        table: table.name.clone(),
        name: name.to_string(),
        ty,
    };
    let mut columns = vec![spec("[applied]", CqlType::Boolean)];
    let applied_value = Some(Bytes::from(codec::serialize(&Value::Boolean(applied))));
    if applied || shown.is_empty() {
        let metadata_id = crate::prepare::metadata_id(&columns);
        return ResultRows {
            columns: columns.into(),
            rows: vec![vec![applied_value]],
            paging_state: None,
            metadata_id,
        };
    }
    // A batch names the rows it shows, so its primary key columns come first.
    let mut cols: Vec<Column> = Vec::new();
    if is_batch {
        cols.extend(
            table
                .visible_columns()
                .filter(|c| c.is_primary_key())
                .cloned(),
        );
    }
    for (list, _) in shown {
        for c in list {
            if !cols.iter().any(|x| x.name == c.name) {
                cols.push(c.clone());
            }
        }
    }
    for c in &cols {
        columns.push(spec(&c.name, c.ty.clone()));
    }
    let mut rows = Vec::new();
    for (_, ck) in shown {
        let row = ck
            .as_ref()
            .and_then(|ck| current.rows.get(&ClusteringKey::row(ck.clone(), cmp)));
        let view = RowView {
            pk,
            clustering: ck.as_deref(),
            row,
            static_row: current.static_row.as_ref(),
        };
        let mut out = vec![applied_value.clone()];
        for c in &cols {
            out.push(view.value(c));
        }
        rows.push(out);
    }
    let metadata_id = crate::prepare::metadata_id(&columns);
    ResultRows {
        columns: columns.into(),
        rows,
        paging_state: None,
        metadata_id,
    }
}

/// Whether one condition holds on the current row.
fn holds(cond: &Cond, view: &RowView) -> bool {
    let current = match view.value(&cond.column) {
        None => None,
        Some(bytes) => match codec::deserialize(&cond.column.ty, &bytes) {
            Ok(v) => Some(v),
            Err(_) => return false,
        },
    };
    let (ty, current) = match &cond.element {
        None => (cond.column.ty.clone(), current),
        Some(el) => match (cond.column.ty.unfrozen(), current) {
            (CqlType::Udt(u), current) => {
                let Value::Int(i) = el else { return false };
                let Some(fty) = usize::try_from(*i).ok().and_then(|i| u.field_types.get(i)) else {
                    return false;
                };
                let field = match current {
                    Some(Value::Tuple(fields)) => fields.into_iter().nth(*i as usize).flatten(),
                    _ => None,
                };
                (fty.clone(), field)
            }
            (CqlType::Map(_, vt), Some(Value::Map(entries))) => (
                (**vt).clone(),
                entries.into_iter().find(|(k, _)| k == el).map(|(_, v)| v),
            ),
            (CqlType::List(et), Some(Value::List(items))) => {
                let idx = if let Value::Int(i) = el {
                    *i as usize
                } else {
                    usize::MAX
                };
                ((**et).clone(), items.into_iter().nth(idx))
            }
            (CqlType::Map(_, t) | CqlType::List(t), None) => ((**t).clone(), None),
            _ => return false,
        },
    };
    let cmp = |want: &Option<Value>| -> Option<Ordering> {
        match (&current, want) {
            (Some(a), Some(b)) => Some(compare::compare(
                &ty,
                &codec::serialize(a),
                &codec::serialize(b),
            )),
            (None, None) => Some(Ordering::Equal),
            _ => None,
        }
    };
    match cond.op {
        Operator::Contains | Operator::ContainsKey => {
            let Some(want) = &cond.values[0] else {
                return false;
            };
            match (&current, cond.op) {
                (Some(Value::List(items) | Value::Set(items)), Operator::Contains) => {
                    items.contains(want)
                }
                (Some(Value::Map(entries)), Operator::Contains) => {
                    entries.iter().any(|(_, v)| v == want)
                }
                (Some(Value::Map(entries)), Operator::ContainsKey) => {
                    entries.iter().any(|(k, _)| k == want)
                }
                _ => false,
            }
        }
        Operator::Eq => cmp(&cond.values[0]) == Some(Ordering::Equal),
        Operator::Ne => cmp(&cond.values[0]) != Some(Ordering::Equal),
        Operator::In => cond.values.iter().any(|v| cmp(v) == Some(Ordering::Equal)),
        Operator::Lt => current.is_some() && cmp(&cond.values[0]) == Some(Ordering::Less),
        Operator::Le => {
            current.is_some()
                && matches!(cmp(&cond.values[0]), Some(Ordering::Less | Ordering::Equal))
        }
        Operator::Gt => current.is_some() && cmp(&cond.values[0]) == Some(Ordering::Greater),
        Operator::Ge => {
            current.is_some()
                && matches!(
                    cmp(&cond.values[0]),
                    Some(Ordering::Greater | Ordering::Equal)
                )
        }
        _ => false,
    }
}
