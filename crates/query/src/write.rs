//! INSERT, UPDATE, DELETE and BATCH: from statements to partition updates,
//! applied directly or, with IF conditions, under the partition's lock.

use crate::api::{BatchType, BoundValue, QueryOptions, QueryResult};
use crate::cas::{self, CasCheck};
use crate::collections;
use crate::compact_writes;
use crate::context::{order_values, Ctx};
use crate::data_path::{WriteCommand, WriteKind};
use crate::error::{QueryError, Result};
use crate::insert_plan;
use crate::processor::Processor;
use crate::read_lists::{ListRef, ReadLists};
use crate::restrictions::{self, PartitionSelection};
use crate::terms::{eval, Evaluated};
use bytes::Bytes;
use std::sync::Arc;
use varve_cql::ast::{
    Assignment, Batch, Conditions, Delete, Insert, Parsed, Relation, RelationLhs, Statement, Term,
    Update, Using,
};
use varve_schema::{Column, ColumnKind, Schema, Table};
use varve_storage::{
    value_slab, CellMap, ClusteringKey, DeletionTime, LivenessInfo, Partition, PartitionKey,
    RangeTombstone, Row,
};
use varve_types::{CqlType, Value};

/// The longest TTL Cassandra accepts (20 years).
pub const MAX_TTL_SECONDS: i32 = 630_720_000;

/// A table and the partition updates to apply to it.
pub type TableUpdates = (Arc<Table>, Vec<(PartitionKey, Partition)>);

/// One statement of a protocol BATCH, with its own bound values.
pub struct BatchEntry {
    pub parsed: Arc<Parsed>,
    pub spec_names: Vec<String>,
    pub keyspace: Option<String>,
    pub values: Vec<BoundValue>,
}

/// Updates to apply, plus the condition guarding them if any.
pub struct Planned {
    pub table: Arc<Table>,
    pub updates: Vec<(PartitionKey, Partition)>,
    pub cas: Option<CasCheck>,
}

pub async fn execute(p: &Processor, ctx: &mut Ctx<'_>, stmt: &Statement) -> Result<QueryResult> {
    let planned = plan(p, ctx, stmt, None).await?;
    if let Some(check) = planned.cas {
        crate::consistency::check_cas(p, ctx, &planned.table)?;
        // Boxed: conditional writes are rarer, and their future is large.
        let groups = vec![(planned.table, planned.updates)];
        return Box::pin(cas::run(p, ctx, groups, vec![check], false)).await;
    }
    crate::consistency::check_write(p, ctx, &planned.table)?;
    apply(p, ctx, &planned.table, planned.updates, WriteKind::Simple).await?;
    Ok(QueryResult::Void)
}

/// A BATCH written inline in one QUERY: markers are numbered across it.
pub async fn execute_inline_batch(
    p: &Processor,
    ctx: &mut Ctx<'_>,
    b: &Batch,
) -> Result<QueryResult> {
    if b.kind == varve_cql::ast::BatchKind::Counter {
        return Err(QueryError::Invalid(
            "counter batches are not supported yet (counters come later)".into(),
        ));
    }
    if let Some(ts) = &b.using.timestamp {
        ctx.timestamp_micros = timestamp_of(ctx, ts)?;
        if b.statements.iter().any(has_own_timestamp) {
            return Err(QueryError::Invalid(
                "Timestamp must be set either on BATCH or individual statements".into(),
            ));
        }
    }
    let mut plans = Vec::new();
    for s in &b.statements {
        plans.push(plan(p, ctx, s, Some(ctx.timestamp_micros)).await?);
    }
    crate::batch_size::check(&plans, &mut ctx.warnings)?;
    finish_batch(p, ctx, plans, b.kind == varve_cql::ast::BatchKind::Logged).await
}

fn has_own_timestamp(s: &Statement) -> bool {
    match s {
        Statement::Insert(i) => i.using.timestamp.is_some(),
        Statement::Update(u) => u.using.timestamp.is_some(),
        Statement::Delete(d) => d.using.timestamp.is_some(),
        _ => false,
    }
}

/// A protocol BATCH: each statement with its own values.
pub async fn execute_batch(
    p: &Processor,
    schema: &Arc<Schema>,
    kind: BatchType,
    entries: &[BatchEntry],
    opts: &QueryOptions,
) -> Result<crate::api::Outcome> {
    let timestamp = opts.timestamp.unwrap_or_else(|| p.next_timestamp());
    let now_seconds = opts
        .now_in_seconds
        .unwrap_or_else(|| varve_types::time::now_seconds() as i32);
    let mut plans = Vec::new();
    let mut warnings = Vec::new();
    for e in entries {
        let entry_opts = QueryOptions {
            values: e.values.clone(),
            names: None,
            ..Default::default()
        };
        let mut ctx = Ctx {
            schema: schema.clone(),
            creator: None,
            values: order_values(&e.spec_names, &entry_opts)?,
            keyspace: e.keyspace.clone(),
            opts,
            timestamp_micros: timestamp,
            now_seconds,
            warnings: Vec::new(),
            allow_filtering: false,
            read_shape: None,
        };
        if !matches!(
            e.parsed.statement,
            Statement::Insert(_) | Statement::Update(_) | Statement::Delete(_)
        ) {
            return Err(QueryError::Invalid("Invalid statement in batch: only UPDATE, INSERT and DELETE statements are allowed.".into()));
        }
        plans.push(plan(p, &mut ctx, &e.parsed.statement, Some(timestamp)).await?);
        warnings.append(&mut ctx.warnings);
    }
    crate::batch_size::check(&plans, &mut warnings)?;
    let mut ctx = Ctx {
        schema: schema.clone(),
        creator: None,
        values: Vec::new(),
        keyspace: None,
        opts,
        timestamp_micros: timestamp,
        now_seconds,
        warnings,
        allow_filtering: false,
        read_shape: None,
    };
    let result = finish_batch(p, &mut ctx, plans, kind == BatchType::Logged).await?;
    Ok(crate::api::Outcome {
        result,
        warnings: ctx.warnings,
    })
}

/// Applies a batch's planned updates; `logged`: a LOGGED batch (its writes
/// are all-or-nothing; on one node each update is atomic by itself and the
/// commitlog holds them all before the answer).
async fn finish_batch(
    p: &Processor,
    ctx: &mut Ctx<'_>,
    plans: Vec<Planned>,
    logged: bool,
) -> Result<QueryResult> {
    let conditional = plans.iter().any(|pl| pl.cas.is_some());
    for pl in &plans {
        match conditional {
            true => crate::consistency::check_cas(p, ctx, &pl.table)?,
            false => crate::consistency::check_write(p, ctx, &pl.table)?,
        }
    }
    if conditional {
        let mut checks = Vec::new();
        let mut groups = Vec::new();
        for pl in plans {
            if let Some(c) = pl.cas {
                checks.push(c);
            }
            groups.push((pl.table, pl.updates));
        }
        return Box::pin(cas::run(p, ctx, groups, checks, true)).await;
    }
    let kind = match logged {
        true => WriteKind::LoggedBatch,
        false => WriteKind::UnloggedBatch,
    };
    // Every partition's replicas checked before the first is written, so
    // a batch with one partition short of replicas changes nothing.
    let partitions: usize = plans.iter().map(|pl| pl.updates.len()).sum();
    if p.data_path().checks_replicas() && partitions > 1 {
        let consistency = crate::consistency::level(ctx.opts.consistency)?;
        for pl in &plans {
            for (key, _) in &pl.updates {
                p.data_path()
                    .assure_live(pl.table.id, key.token, consistency)?;
            }
        }
    }
    if logged && partitions > 1 {
        let consistency = crate::consistency::level(ctx.opts.consistency)?;
        crate::trace::event(|| "Determining replicas for mutation".into());
        let writes = plans
            .into_iter()
            .flat_map(|pl| {
                let table = pl.table.id;
                pl.updates
                    .into_iter()
                    .map(move |(key, update)| WriteCommand {
                        table,
                        key,
                        update,
                        consistency,
                        kind,
                    })
            })
            .collect();
        p.data.write_logged_batch(writes).await?;
        return Ok(QueryResult::Void);
    }
    for pl in plans {
        apply(p, ctx, &pl.table, pl.updates, kind).await?;
    }
    Ok(QueryResult::Void)
}

/// Writes updates through the data path at the statement's level.
pub async fn apply(
    p: &Processor,
    ctx: &Ctx<'_>,
    table: &Table,
    updates: Vec<(PartitionKey, Partition)>,
    kind: WriteKind,
) -> Result<()> {
    let consistency = crate::consistency::level(ctx.opts.consistency)?;
    crate::trace::event(|| "Determining replicas for mutation".into());
    for (key, update) in updates {
        let command = WriteCommand {
            table: table.id,
            key,
            update,
            consistency,
            kind,
        };
        p.data.write(command).await?;
    }
    Ok(())
}

/// Turns one modification statement into updates (and its condition),
/// reading first the lists it needs (see [`crate::read_lists`]).
pub async fn plan(
    p: &Processor,
    ctx: &mut Ctx<'_>,
    stmt: &Statement,
    batch_ts: Option<i64>,
) -> Result<Planned> {
    let mut lists = ReadLists::default();
    loop {
        let planned = plan_with(ctx, stmt, batch_ts, &lists);
        let Some(list) = lists.take_missing() else {
            return planned;
        };
        let table = writable_table(ctx, statement_table(stmt)?)?;
        let elements = read_list(p, ctx, &table, &list).await?;
        lists.insert(list, elements);
    }
}

/// PREPARE's dry run of a modification (see [`crate::dry_run`]): its plan
/// with the context's placeholder values. A plan that needs a list read
/// first passes: its outcome depends on the list.
pub fn check(ctx: &mut Ctx<'_>, stmt: &Statement) -> Result<()> {
    let mut lists = ReadLists::default();
    let planned = plan_with(ctx, stmt, None, &lists);
    match lists.take_missing() {
        Some(_) => Ok(()),
        None => planned.map(|_| ()),
    }
}

/// [`plan`] with the lists read so far.
fn plan_with(
    ctx: &mut Ctx<'_>,
    stmt: &Statement,
    batch_ts: Option<i64>,
    lists: &ReadLists,
) -> Result<Planned> {
    match stmt {
        Statement::Insert(i) => plan_insert(ctx, i, batch_ts),
        Statement::Update(u) => plan_update(ctx, u, batch_ts, lists),
        Statement::Delete(d) => plan_delete(ctx, d, batch_ts, lists),
        _ => Err(QueryError::Invalid(
            "Invalid statement in batch: only UPDATE, INSERT and DELETE statements are allowed."
                .into(),
        )),
    }
}

/// The table a modification statement names.
fn statement_table(stmt: &Statement) -> Result<&varve_cql::ast::QualifiedName> {
    match stmt {
        Statement::Insert(i) => Ok(&i.table),
        Statement::Update(u) => Ok(&u.table),
        Statement::Delete(d) => Ok(&d.table),
        _ => Err(QueryError::Server("not a modification statement".into())),
    }
}

/// A list's current elements, read before a write that needs them. Boxed:
/// the read is rare, and its future would otherwise enlarge every write's.
async fn read_list(
    p: &Processor,
    ctx: &Ctx<'_>,
    table: &Table,
    list: &ListRef,
) -> Result<collections::ListElements> {
    let col = table
        .column(&list.column)
        .ok_or_else(|| QueryError::Server(format!("column {} vanished", list.column)))?;
    Box::pin(collections::current_elements(
        p,
        ctx,
        table,
        &list.key,
        list.prefix.as_ref(),
        col,
    ))
    .await
}

fn writable_table(ctx: &Ctx, name: &varve_cql::ast::QualifiedName) -> Result<Arc<Table>> {
    let t = ctx.table(name)?;
    if t.is_virtual {
        return Err(QueryError::Unauthorized(format!(
            "Modification is not supported on virtual or system table {}.{}",
            t.keyspace, t.name
        )));
    }
    Ok(t)
}

fn timestamp_of(ctx: &Ctx, term: &Term) -> Result<i64> {
    match eval(ctx, term, &CqlType::BigInt, "[timestamp]")? {
        Evaluated::Value(Value::BigInt(t)) => {
            if t == i64::MIN {
                return Err(QueryError::Invalid(
                    "Invalid timestamp: the minimum value is reserved".into(),
                ));
            }
            Ok(t)
        }
        Evaluated::Null => Err(QueryError::Invalid(
            "Invalid null value of timestamp".into(),
        )),
        _ => Err(QueryError::Invalid(
            "Invalid unset value for timestamp".into(),
        )),
    }
}

/// Timestamp and TTL from USING (or defaults).
pub(crate) fn using(
    ctx: &Ctx,
    table: &Table,
    u: &Using,
    batch_ts: Option<i64>,
    conditional: bool,
) -> Result<(i64, i32)> {
    let ts = match &u.timestamp {
        Some(_) if conditional => {
            return Err(QueryError::Invalid(
                "Cannot provide custom timestamp for conditional updates".into(),
            ))
        }
        Some(t) => timestamp_of(ctx, t)?,
        None => batch_ts.unwrap_or(ctx.timestamp_micros),
    };
    let ttl = match &u.ttl {
        Some(t) => match eval(ctx, t, &CqlType::Int, "[ttl]")? {
            Evaluated::Value(Value::Int(v)) => {
                if v < 0 {
                    return Err(QueryError::Invalid(format!(
                        "A TTL must be greater or equal to 0, but was {v}"
                    )));
                }
                if v > MAX_TTL_SECONDS {
                    return Err(QueryError::Invalid(format!(
                        "ttl is too large. requested ({v}) maximum ({MAX_TTL_SECONDS})"
                    )));
                }
                v
            }
            Evaluated::Null => 0,
            _ => table.options.default_time_to_live,
        },
        None => table.options.default_time_to_live,
    };
    Ok((ts, ttl))
}

fn plan_insert(ctx: &mut Ctx<'_>, ins: &Insert, batch_ts: Option<i64>) -> Result<Planned> {
    let table = writable_table(ctx, &ins.table)?;
    if let Some(c) = &*insert_plan::compiled(&table, ins) {
        return insert_plan::plan(ctx, &table, ins, c, batch_ts);
    }
    let expanded;
    // JSON names a dense table's hidden value too (`compact_writes`).
    let from_json = ins.json.is_some();
    let ins = if from_json {
        expanded = crate::json::expand_insert(ctx, &table, ins)?;
        &expanded
    } else {
        ins
    };
    if ins.columns.len() != ins.values.len() {
        return Err(QueryError::Invalid("Unmatched column names/values".into()));
    }
    let conditional = ins.conditions != Conditions::None;
    let (ts, ttl) = using(ctx, &table, &ins.using, batch_ts, conditional)?;
    // Key columns become EQ relations; the rest are assignments.
    let mut relations = Vec::new();
    let mut assignments = Vec::new();
    for (name, term) in ins.columns.iter().zip(&ins.values) {
        let hidden = || from_json.then(|| table.column_any(name)).flatten();
        let col = table.column(name).or_else(hidden).ok_or_else(|| {
            QueryError::Invalid(format!(
                "Undefined column name {name} in table {}.{}",
                table.keyspace, table.name
            ))
        })?;
        if ins.columns.iter().filter(|c| *c == name).count() > 1 {
            return Err(QueryError::Invalid(format!(
                "Multiple definitions found for column {name}"
            )));
        }
        if col.is_primary_key() {
            relations.push(Relation {
                lhs: RelationLhs::Column(name.clone()),
                op: varve_cql::ast::Operator::Eq,
                rhs: term.clone(),
            });
        } else {
            assignments.push(Assignment::Set {
                column: name.clone(),
                value: term.clone(),
            });
        }
    }
    let missing: Vec<&str> = table
        .partition_key()
        .filter(|c| !ins.columns.contains(&c.name))
        .map(|c| c.name.as_str())
        .collect();
    if !missing.is_empty() {
        return Err(QueryError::Invalid(format!(
            "Some partition key parts are missing: {}",
            missing.join(", ")
        )));
    }
    let only_static = !assignments.is_empty() && assignments.iter().all(|a| matches!(a, Assignment::Set { column, .. } if table.column(column).map(|c| c.kind) == Some(ColumnKind::Static)));
    let missing_ck: Vec<&str> = table
        .clustering()
        .filter(|c| !ins.columns.contains(&c.name))
        .map(|c| c.name.as_str())
        .collect();
    let statics_without_clustering = only_static && missing_ck.len() == table.clustering_len();
    if !missing_ck.is_empty() && !statics_without_clustering {
        return Err(QueryError::Invalid(format!(
            "Some clustering keys are missing: {}",
            missing_ck.join(", ")
        )));
    }
    compact_writes::complete_insert(&table, &mut assignments)?;
    // An INSERT assigns whole values: it never reads a list.
    build(
        ctx,
        &table,
        &relations,
        &assignments,
        (ts, ttl, true),
        &ins.conditions,
        &ReadLists::default(),
    )
}

fn plan_update(
    ctx: &mut Ctx<'_>,
    up: &Update,
    batch_ts: Option<i64>,
    lists: &ReadLists,
) -> Result<Planned> {
    let table = writable_table(ctx, &up.table)?;
    let conditional = up.conditions != Conditions::None;
    let (ts, ttl) = using(ctx, &table, &up.using, batch_ts, conditional)?;
    for a in &up.assignments {
        let name = assignment_column(a);
        let col = table.column(name).ok_or_else(|| {
            QueryError::Invalid(format!(
                "Undefined column name {name} in table {}.{}",
                table.keyspace, table.name
            ))
        })?;
        if col.is_primary_key() {
            return Err(QueryError::Invalid(format!(
                "PRIMARY KEY part {name} found in SET part"
            )));
        }
    }
    build(
        ctx,
        &table,
        &up.where_clause,
        &up.assignments,
        (ts, ttl, false),
        &up.conditions,
        lists,
    )
}

fn assignment_column(a: &Assignment) -> &str {
    match a {
        Assignment::Set { column, .. }
        | Assignment::SetElement { column, .. }
        | Assignment::Add { column, .. }
        | Assignment::Prepend { column, .. }
        | Assignment::Remove { column, .. }
        | Assignment::SetField { column, .. } => column,
    }
}

/// Validates a write's WHERE clause: every partition key column, and every
/// clustering column unless only static columns are written; `kind`:
/// UPDATE or DELETE, for the error on a partition key slice.
fn write_selection(
    ctx: &Ctx,
    table: &Table,
    relations: &[Relation],
    kind: &str,
) -> Result<restrictions::Selection> {
    for r in relations {
        match &r.lhs {
            RelationLhs::Column(n) => {
                let col = table.column(n).ok_or_else(|| QueryError::Invalid(format!("Undefined column name {n} in table {}.{}", table.keyspace, table.name)))?;
                if !col.is_primary_key() {
                    return Err(QueryError::Invalid(format!("Non PRIMARY KEY columns found in where clause: {n} ")));
                }
            }
            RelationLhs::Token(_) => return Err(QueryError::Invalid("The token function cannot be used in WHERE clauses for UPDATE and DELETE statements".into())),
            _ => {}
        }
    }
    let sel = restrictions::analyse(ctx, table, relations)?;
    compact_writes::check_clustering(table, &sel)?;
    if !sel.partition_exact {
        let missing: Vec<&str> = table
            .partition_key()
            .filter(|c| {
                !relations
                    .iter()
                    .any(|r| r.lhs == RelationLhs::Column(c.name.clone()))
            })
            .map(|c| c.name.as_str())
            .collect();
        if missing.is_empty() {
            return Err(QueryError::Invalid(format!("Only EQ and IN relation are supported on the partition key (unless you use the token() function) for {kind} statements")));
        }
        return Err(QueryError::Invalid(format!(
            "Some partition key parts are missing: {}",
            missing.join(", ")
        )));
    }
    Ok(sel)
}

/// The updates of an INSERT or UPDATE; `(ts, ttl, marker)`: the write's
/// timestamp and TTL, and whether it writes a row marker (INSERT).
fn build(
    ctx: &mut Ctx<'_>,
    table: &Arc<Table>,
    relations: &[Relation],
    assignments: &[Assignment],
    (ts, ttl, marker): (i64, i32, bool),
    conditions: &Conditions,
    lists: &ReadLists,
) -> Result<Planned> {
    let sel = write_selection(ctx, table, relations, "UPDATE")?;
    let PartitionSelection::Keys(keys) = &sel.partitions else {
        unreachable!("checked exact")
    };
    // Assignments name visible columns (checked by the callers), or the
    // hidden value of a dense table an INSERT writes.
    let statics_only = assignments.iter().all(|a| {
        table.column_any(assignment_column(a)).map(|c| c.kind) == Some(ColumnKind::Static)
    }) && !assignments.is_empty();
    let exact = sel.clustering.is_exact(table);
    if !(exact || statics_only && sel.clustering.is_unrestricted()) {
        if sel.clustering.lower.is_some() || sel.clustering.upper.is_some() {
            return Err(QueryError::Invalid("Slice restrictions are not supported on the clustering columns in UPDATE statements".to_string()));
        }
        return Err(missing_clustering(table, &sel));
    }
    // A condition on a regular column names the row the statics are
    // written beside (Cassandra 5.0.4 accepts it then).
    let regular_condition = matches!(conditions, Conditions::If(list) if list.iter().any(|c| table.column(&c.column).is_some_and(|col| col.kind != ColumnKind::Static)));
    if statics_only && !sel.clustering.is_unrestricted() && !marker && !regular_condition {
        return Err(QueryError::Invalid(
            "Invalid restrictions on clustering columns since the UPDATE statement modifies only static columns".into(),
        ));
    }
    let cmp = crate::comparator::of(table);
    let mut updates = Vec::new();
    let now = ctx.now_seconds;
    for key in keys {
        let mut partition = Partition::default();
        let prefixes = if statics_only && sel.clustering.is_unrestricted() {
            vec![]
        } else {
            sel.clustering.prefixes.clone()
        };
        let mut static_row = Row::default();
        // Sized for one cell per assignment, so a plain INSERT allocates
        // its cells exactly once and the memtable keeps no spare slots.
        let mut rows: Vec<(Vec<Bytes>, Row)> = prefixes
            .iter()
            .map(|p| {
                let row = Row {
                    cells: CellMap::with_capacity(assignments.len()),
                    ..Row::default()
                };
                (p.clone(), row)
            })
            .collect();
        // COMPACT STORAGE tables have no row markers.
        if marker && !table.is_compact() {
            for (_, row) in rows.iter_mut() {
                row.liveness = Some(LivenessInfo::new(ts, ttl, now));
            }
        }
        for a in assignments {
            let col = table
                .column_any(assignment_column(a))
                .ok_or_else(|| QueryError::Server("column vanished".into()))?;
            if col.kind == ColumnKind::Static {
                let current = match collections::assign_reads_list(col, a) {
                    true => Some(lists.need(key, None, col)?),
                    false => None,
                };
                collections::assign(ctx, col, a, ts, ttl, current, &mut static_row)?;
            } else {
                // No rows: the clustering was fixed by an empty IN, which
                // Cassandra takes as a write of nothing (differential
                // corpus 13_issue21_writes).
                for (prefix, row) in rows.iter_mut() {
                    let current = match collections::assign_reads_list(col, a) {
                        true => Some(lists.need(key, Some(prefix), col)?),
                        false => None,
                    };
                    collections::assign(ctx, col, a, ts, ttl, current, row)?;
                }
            }
        }
        if !static_row.is_empty() {
            partition.static_row = Some(static_row);
        }
        for (prefix, row) in rows {
            if !row.is_empty() {
                partition.rows.insert(ClusteringKey::row(prefix, &cmp), row);
            }
        }
        updates.push((value_slab::copy_key(key), partition));
    }
    let cas = cas::check_for(
        if marker { "INSERT" } else { "UPDATE" },
        ctx,
        table,
        keys,
        &sel,
        (conditions, statics_only),
    )?;
    Ok(Planned {
        table: table.clone(),
        updates,
        cas,
    })
}

/// The error for a write whose WHERE fixes only a prefix of the clustering.
fn missing_clustering(table: &Table, sel: &restrictions::Selection) -> QueryError {
    let missing: Vec<&str> = table
        .clustering()
        .skip(sel.clustering.eq_len)
        .map(|c| c.name.as_str())
        .collect();
    QueryError::Invalid(format!(
        "Some clustering keys are missing: {}",
        missing.join(", ")
    ))
}

fn plan_delete(
    ctx: &mut Ctx<'_>,
    del: &Delete,
    batch_ts: Option<i64>,
    lists: &ReadLists,
) -> Result<Planned> {
    let table = writable_table(ctx, &del.table)?;
    let conditional = del.conditions != Conditions::None;
    if del.using.ttl.is_some() {
        return Err(QueryError::Invalid(
            "TTL attribute is not allowed for deletes".into(),
        ));
    }
    let (ts, _) = using(ctx, &table, &del.using, batch_ts, conditional)?;
    let sel = write_selection(ctx, &table, &del.where_clause, "DELETE")?;
    let PartitionSelection::Keys(keys) = &sel.partitions else {
        unreachable!("checked exact")
    };
    let cmp = crate::comparator::of(&table);
    let now = ctx.now_seconds;
    let deletion = DeletionTime::new(ts, now);
    let mut updates = Vec::new();
    type Target<'a> = (Column, (Option<&'a Term>, Option<&'a str>));
    let targets: Vec<Target> = del
        .targets
        .iter()
        .map(|t| {
            let col = table.column(&t.column).cloned().ok_or_else(|| {
                QueryError::Invalid(format!(
                    "Undefined column name {} in table {}.{}",
                    t.column, table.keyspace, table.name
                ))
            })?;
            if col.is_primary_key() {
                return Err(QueryError::Invalid(format!(
                    "Invalid identifier {} for deletion (should not be a PRIMARY KEY part)",
                    t.column
                )));
            }
            Ok((col, (t.element.as_ref(), t.field.as_deref())))
        })
        .collect::<Result<_>>()?;
    let exact = sel.clustering.is_exact(&table);
    let statics_only =
        !targets.is_empty() && targets.iter().all(|(c, _)| c.kind == ColumnKind::Static);
    if statics_only && !sel.clustering.is_unrestricted() {
        return Err(QueryError::Invalid(
            "Invalid restrictions on clustering columns since the DELETE statement modifies only static columns".into(),
        ));
    }
    for key in keys {
        let mut partition = Partition::default();
        if targets.is_empty() {
            if sel.clustering.is_unrestricted() {
                partition.deletion = deletion;
            } else if exact {
                for prefix in &sel.clustering.prefixes {
                    let row = Row {
                        deletion: Some(deletion),
                        ..Row::default()
                    };
                    partition
                        .rows
                        .insert(ClusteringKey::row(prefix.clone(), &cmp), row);
                }
            } else {
                for slice in sel.clustering.slices(&cmp) {
                    partition
                        .range_tombstones
                        .push(RangeTombstone { slice, deletion });
                }
            }
        } else {
            if !(exact || statics_only && sel.clustering.is_unrestricted()) {
                // Cassandra refuses it at execution, not at PREPARE.
                return Err(QueryError::Invalid(
                    "Range deletions are not supported for specific columns".into(),
                ));
            }
            let mut static_row = Row::default();
            let mut rows: Vec<(Vec<Bytes>, Row)> =
                if statics_only && sel.clustering.is_unrestricted() {
                    vec![]
                } else {
                    sel.clustering
                        .prefixes
                        .iter()
                        .map(|p| (p.clone(), Row::default()))
                        .collect()
                };
            for (col, (element, field)) in &targets {
                let target = (*element, *field);
                if col.kind == ColumnKind::Static {
                    let current = match collections::delete_reads_list(col, *element) {
                        true => Some(lists.need(key, None, col)?),
                        false => None,
                    };
                    collections::delete_target(ctx, col, target, ts, current, &mut static_row)?;
                } else {
                    for (prefix, row) in rows.iter_mut() {
                        let current = match collections::delete_reads_list(col, *element) {
                            true => Some(lists.need(key, Some(prefix), col)?),
                            false => None,
                        };
                        collections::delete_target(ctx, col, target, ts, current, row)?;
                    }
                }
            }
            if !static_row.is_empty() {
                partition.static_row = Some(static_row);
            }
            for (prefix, row) in rows {
                partition.rows.insert(ClusteringKey::row(prefix, &cmp), row);
            }
        }
        updates.push((key.clone(), partition));
    }
    let cas = cas::check_for(
        "DELETE",
        ctx,
        &table,
        keys,
        &sel,
        (&del.conditions, statics_only),
    )?;
    Ok(Planned {
        table,
        updates,
        cas,
    })
}
