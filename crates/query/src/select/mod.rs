//! SELECT: choosing partitions and slices, reading and resolving them,
//! filtering, projecting, limiting and paging.

mod aggregation;
mod arithmetic;
mod cast;
mod compiled;
mod element_bytes;
pub mod elements;
mod grouping;
mod markers;
mod prefetch;
mod selector_eval;
pub mod selectors;
mod similarity;

use crate::api::{ColumnSpec, QueryResult, ResultRows};
use crate::context::Ctx;
use crate::data_path::{DataPath, KeyScan, ReadCommand, RowScan};
use crate::dropped_cells::DroppedCells;
use crate::error::{QueryError, Result};
use crate::local::LocalNode;
use crate::paging::PagingState;
use crate::processor::Processor;
use crate::restrictions::{self, Filter, PartitionSelection};
use crate::rows::{key_components, RowView};
use crate::system;
use crate::terms::{eval, Evaluated};
use aggregation::Aggregation;
use bytes::Bytes;
use selectors::Projection;
use std::cmp::Ordering;
use std::sync::Arc;
use varve_cql::ast::{Operator, Order, Select, Term};
use varve_schema::{ColumnKind, Schema, Table};
use varve_storage::{ClusteringKey, PartitionKey, Slice, TokenBound};
use varve_types::Consistency;
use varve_types::{codec, compare, CqlType, Value};

/// Past this many tombstones read by one query, warn the client.
pub const TOMBSTONE_WARN_THRESHOLD: u64 = 1_000;
/// Past this many tombstones read by one query, fail it (ReadFailure).
pub const TOMBSTONE_FAILURE_THRESHOLD: u64 = 100_000;
/// Live rows read from storage per step when filters or aggregates decide
/// how many rows are needed.
const FILTERING_CHUNK_ROWS: usize = 1_000;
/// Partition keys fetched per step of a range scan.
const SCAN_BATCH: usize = 128;

/// The result columns of a SELECT (for PREPARE).
pub fn result_columns(
    schema: &Schema,
    keyspace: Option<&str>,
    s: &Select,
) -> Result<Vec<ColumnSpec>> {
    let ks = s.table.keyspace.as_deref().or(keyspace).ok_or_else(|| {
        QueryError::Invalid("No keyspace has been specified. USE a keyspace, or explicitly specify keyspace.tablename".into())
    })?;
    let table = schema
        .table(ks, &s.table.name)
        .ok_or_else(|| QueryError::Invalid(format!("table {} does not exist", s.table.name)))?;
    if s.distinct {
        check_distinct(table, s)?;
    }
    let specs = selectors::compile(table, &s.selection)?.specs;
    if s.json {
        return Ok(crate::json::select_specs(&specs, &table.keyspace, &table.name).to_vec());
    }
    Ok(specs.to_vec())
}

fn check_distinct(table: &Table, s: &Select) -> Result<()> {
    let proj = selectors::compile(table, &s.selection)?;
    let requested: Vec<&str> = proj
        .selectors
        .iter()
        .filter_map(|sel| match sel {
            selectors::Sel::Column(c) => Some(c.name.as_str()),
            _ => None,
        })
        .collect();
    for sel in &proj.selectors {
        if let selectors::Sel::Column(c) = sel {
            if !matches!(c.kind, ColumnKind::PartitionKey | ColumnKind::Static) {
                return Err(QueryError::Invalid(format!("SELECT DISTINCT queries must only request partition key columns and/or static columns (not {})", c.name)));
            }
        }
    }
    // Over a range of partitions every key column must come back (so rows
    // need no grouping); with the partition named, its static columns
    // alone may (Cassandra 5.0.4).
    if partitions_named(table, &s.where_clause) {
        return Ok(());
    }
    let missing: Vec<&str> = table
        .partition_key()
        .map(|c| c.name.as_str())
        .filter(|n| !requested.contains(n))
        .collect();
    if !missing.is_empty() && !requested.is_empty() {
        return Err(QueryError::Invalid(format!(
            "SELECT DISTINCT queries must request all the partition key columns (missing {})",
            missing.join(", ")
        )));
    }
    Ok(())
}

/// Whether every partition key column is restricted by `=` or `IN`: the
/// query names its partitions rather than a range of them.
fn partitions_named(table: &Table, relations: &[varve_cql::ast::Relation]) -> bool {
    table.partition_key().all(|k| {
        relations.iter().any(|r| {
            matches!(&r.lhs, varve_cql::ast::RelationLhs::Column(n) if *n == k.name)
                && matches!(
                    r.op,
                    varve_cql::ast::Operator::Eq | varve_cql::ast::Operator::In
                )
        })
    })
}

fn positive(ctx: &Ctx, t: &Option<Term>, what: &str) -> Result<Option<usize>> {
    let Some(t) = t else { return Ok(None) };
    match eval(
        ctx,
        t,
        &CqlType::Int,
        &format!("[{}]", what.to_lowercase().replace(' ', "_")),
    )? {
        Evaluated::Value(Value::Int(n)) if n > 0 => Ok(Some(n as usize)),
        Evaluated::Value(_) => Err(QueryError::Invalid(format!(
            "{what} must be strictly positive"
        ))),
        Evaluated::Null => Err(QueryError::Invalid(format!(
            "Invalid null value of {}",
            what.to_lowercase()
        ))),
        Evaluated::Unset => Ok(None),
    }
}

/// What a query reads from: the node's data path, or a snapshot of a
/// virtual table.
enum Source<'a> {
    Real(&'a dyn DataPath),
    Virtual(LocalNode),
}

impl Source<'_> {
    fn data(&self) -> &dyn DataPath {
        match self {
            Source::Real(d) => *d,
            Source::Virtual(d) => d,
        }
    }
}

/// What a SELECT settles before it reads anything.
struct Analysed {
    table: Arc<Table>,
    sel: restrictions::Selection,
    group: Option<grouping::Grouping>,
    compiled: Arc<compiled::Compiled>,
    limit: Option<usize>,
    per_partition: Option<usize>,
    reversed: bool,
}

/// A SELECT's analysis: its table, WHERE, GROUP BY, selection, limits and
/// ORDER BY, refused as Cassandra refuses them; reads nothing.
fn analyse(ctx: &mut Ctx<'_>, s: &Select) -> Result<Analysed> {
    let table = ctx.table(&s.table)?;
    if s.distinct {
        check_distinct(&table, s)?;
    }
    ctx.allow_filtering = s.allow_filtering;
    let sel = restrictions::analyse(ctx, &table, &s.where_clause);
    ctx.allow_filtering = false;
    let sel = sel?;
    if sel.needs_filtering && !s.allow_filtering && !table.is_virtual {
        return Err(QueryError::Invalid("Cannot execute this query as it might involve data filtering and thus may have unpredictable performance. If you want to execute this query despite the performance unpredictability, use ALLOW FILTERING".into()));
    }
    if s.distinct && !sel.clustering.is_unrestricted() {
        return Err(QueryError::Invalid("SELECT DISTINCT with WHERE clause only supports restriction by partition key and/or static columns.".into()));
    }
    let mut group = grouping::plan(&table, &sel, &s.group_by, s.distinct)?;
    if let Some(g) = &mut group {
        if let Some(f) = &g.key_fn {
            g.key_fn = Some(elements::bind_one(f, ctx)?);
        }
    }
    let compiled = compiled::compiled(&table, &s.selection)?;
    // Element keys and slice bounds are evaluated per execution.
    let compiled = match elements::bind(&compiled.projection, ctx)? {
        None => compiled,
        Some(projection) => Arc::new(compiled::Compiled {
            projection,
            metadata_id: compiled.metadata_id.clone(),
        }),
    };
    let limit = positive(ctx, &s.limit, "LIMIT")?;
    let per_partition = positive(ctx, &s.per_partition_limit, "PER PARTITION LIMIT")?;
    let reversed = order(&table, s, &sel.partitions)?;
    Ok(Analysed {
        table,
        sel,
        group,
        compiled,
        limit,
        per_partition,
        reversed,
    })
}

/// PREPARE's dry run of a SELECT (see [`crate::dry_run`]): its analysis
/// with the context's placeholder values.
pub fn check(ctx: &mut Ctx<'_>, s: &Select) -> Result<()> {
    analyse(ctx, s).map(|_| ())
}

pub async fn execute(p: &Processor, ctx: &mut Ctx<'_>, s: &Select) -> Result<QueryResult> {
    let Analysed {
        table,
        sel,
        group,
        compiled,
        limit,
        per_partition,
        reversed,
    } = analyse(ctx, s)?;
    let projection = &compiled.projection;
    crate::consistency::check_read(p, ctx, &table)?;

    let table_metrics = if table.is_virtual {
        None
    } else {
        let single = matches!(&sel.partitions, PartitionSelection::Keys(k) if k.len() == 1);
        ctx.read_shape = Some(single);
        Some(p.metrics.table(table.id, &table.keyspace, &table.name))
    };
    let source = if table.is_virtual {
        Source::Virtual(LocalNode::new(
            system::materialize(p, &table, ctx)?.engine(),
        ))
    } else {
        Source::Real(p.data.as_ref())
    };
    let data = source.data();
    let consistency = crate::consistency::level(ctx.opts.consistency)?;
    let cmp = crate::comparator::of(&table);
    let slices = sel.clustering.slices(&cmp);

    let page_size = ctx.opts.page_size.filter(|n| *n > 0).map(|n| n as usize);
    let page_size = if projection.aggregate && group.is_none() {
        None
    } else {
        page_size
    };
    let resume = match &ctx.opts.paging_state {
        Some(b) if !b.is_empty() => Some(PagingState::decode(b)?),
        _ => None,
    };
    let multi_key_order = !s.order_by.is_empty()
        && matches!(&sel.partitions, PartitionSelection::Keys(k) if k.len() > 1);
    if multi_key_order && page_size.is_some() && (!projection.aggregate || group.is_some()) {
        return Err(QueryError::Invalid("Cannot page queries with both ORDER BY and a IN restriction on the partition key; you must either remove the ORDER BY or the IN and sort client side, or disable paging for this query".into()));
    }

    let mut run = Run {
        table: &table,
        projection,
        filters: &sel.filters,
        now: ctx.now_seconds,
        distinct: s.distinct,
        clustering_restricted: !sel.clustering.is_unrestricted(),
        rows: Vec::new(),
        sort_keys: Vec::new(),
        agg: Aggregation::new(projection),
        group,
        // With ORDER BY over several partitions, LIMIT applies after the merge.
        remaining: if multi_key_order {
            None
        } else {
            resume
                .as_ref()
                .map(|r| r.remaining)
                .filter(|r| *r >= 0)
                .map(|r| r as usize)
                .or(limit)
        },
        page_size,
        per_partition,
        tombstones: 0,
        last: None,
        keep_sort_keys: multi_key_order,
        sstables: 0,
        consistency,
    };

    let mut done = true;
    match &sel.partitions {
        PartitionSelection::Keys(keys) => {
            let start = resume.as_ref().map(|r| r.key_index as usize).unwrap_or(0);
            for (i, key) in keys.iter().enumerate().skip(start) {
                let after = resume
                    .as_ref()
                    .filter(|r| r.key_index as usize == i && r.partition_key == key.key);
                if after.is_some_and(|r| r.clustering.is_none()) {
                    continue;
                }
                let resumed_quota = after.map(|r| r.remaining_in_partition);
                run.sstables = 0;
                let more = run
                    .partition(
                        data,
                        key,
                        &slices,
                        after.and_then(|r| r.clustering.as_ref()),
                        reversed,
                        resumed_quota,
                        i as u32,
                        None,
                    )
                    .await;
                // SSTablesPerRead: one value per partition read by key.
                if let Some(m) = &table_metrics {
                    m.sstables_per_read.record(u64::from(run.sstables));
                }
                if !more? {
                    done = false;
                    break;
                }
            }
        }
        PartitionSelection::Range { start, end } => {
            let mut from = start.clone();
            if let Some(r) = &resume {
                let key = PartitionKey::new(r.partition_key.clone());
                if let Some(ck) = &r.clustering {
                    if !run
                        .partition(
                            data,
                            &key,
                            &slices,
                            Some(ck),
                            reversed,
                            Some(r.remaining_in_partition),
                            0,
                            None,
                        )
                        .await?
                    {
                        done = false;
                    }
                }
                from = TokenBound::AfterKey(key);
            }
            'scan: while done {
                let ahead = run.chunk_size(run.per_partition);
                let ranges = RowScan {
                    table: table.id,
                    start: &from,
                    end,
                    slices: &slices,
                    reversed,
                    now_seconds: run.now,
                    row_limit: ahead,
                    total_rows: run.rows_wanted(ahead),
                    limit: SCAN_BATCH,
                    consistency,
                };
                let scanned = match data.scan_rows(ranges) {
                    Some(reading) => Some(reading.await?),
                    None => None,
                };
                if let Some(found) = scanned {
                    let resume = found.partitions.last().map(|(k, _)| k.clone());
                    for (key, read) in found.partitions {
                        let prefetched = prefetch::Prefetched {
                            found: read,
                            row_limit: ahead,
                        };
                        let more = run
                            .partition(
                                data,
                                &key,
                                &slices,
                                None,
                                reversed,
                                None,
                                0,
                                Some(prefetched),
                            )
                            .await?;
                        if !more {
                            done = false;
                            break 'scan;
                        }
                    }
                    match resume {
                        Some(k) if found.more => from = TokenBound::AfterKey(k),
                        _ => break,
                    }
                    continue;
                }
                let scan = KeyScan {
                    table: table.id,
                    start: &from,
                    end,
                    limit: SCAN_BATCH,
                    consistency,
                };
                let keys = data.scan_keys(scan).await?;
                if keys.is_empty() {
                    break;
                }
                let first = ReadCommand {
                    table: table.id,
                    key: &keys[0],
                    slices: &slices,
                    reversed,
                    now_seconds: run.now,
                    row_limit: ahead,
                    consistency,
                };
                let mut batch = prefetch::Batch::start(data, &keys, first).await?;
                for key in &keys {
                    let prefetched = batch.next(ahead).await?;
                    let more = run
                        .partition(data, key, &slices, None, reversed, None, 0, prefetched)
                        .await?;
                    if !more {
                        done = false;
                        break 'scan;
                    }
                }
                match keys.last() {
                    Some(k) if keys.len() == SCAN_BATCH => from = TokenBound::AfterKey(k.clone()),
                    _ => break,
                }
            }
        }
    }

    if let Some(m) = &table_metrics {
        m.tombstones_scanned.record(run.tombstones);
    }
    if run.tombstones > TOMBSTONE_WARN_THRESHOLD {
        ctx.warnings.push(format!(
            "Read {} live rows and {} tombstone cells for query {} (see tombstone_warn_threshold)",
            run.rows.len(),
            run.tombstones,
            describe_query(&table)
        ));
    }
    if multi_key_order {
        run.sort_rows(&cmp, reversed);
        if let Some(l) = limit {
            run.rows.truncate(l);
        }
    }
    let exhausted = run.remaining == Some(0);
    // A page that ends full carries a paging state even when the data
    // ended with it, as Cassandra's does: the client's next page is then
    // empty (differential corpus 24_issue21_paging). Only the statement's
    // LIMIT, reached, ends the paging at a full page.
    let page_full = run.page_size.is_some_and(|n| run.rows.len() >= n);
    let paging_state = if exhausted || (done && !page_full) {
        None
    } else {
        run.last.take().map(|l| l.encode())
    };
    let rows = if projection.aggregate && run.group.is_none() {
        vec![run.agg.row(projection)?]
    } else {
        run.rows
    };
    if s.json {
        let columns = crate::json::select_specs(&projection.specs, &table.keyspace, &table.name);
        return Ok(QueryResult::Rows(ResultRows {
            rows: crate::json::rows_to_json(&projection.specs, rows)?,
            metadata_id: crate::prepare::metadata_id(&columns),
            columns,
            paging_state,
        }));
    }
    Ok(QueryResult::Rows(ResultRows {
        columns: std::sync::Arc::clone(&projection.specs),
        rows,
        paging_state,
        metadata_id: compiled.metadata_id.clone(),
    }))
}

fn describe_query(table: &Table) -> String {
    format!("SELECT * FROM {}.{}", table.keyspace, table.name)
}

/// Checks ORDER BY; returns true when rows are read in reverse.
fn order(table: &Table, s: &Select, partitions: &PartitionSelection) -> Result<bool> {
    if s.order_by.is_empty() {
        return Ok(false);
    }
    if !matches!(partitions, PartitionSelection::Keys(_)) {
        return Err(QueryError::Invalid(
            "ORDER BY is only supported when the partition key is restricted by an EQ or an IN."
                .into(),
        ));
    }
    let ck: Vec<_> = table.clustering().collect();
    let mut reversed = None;
    for (i, (name, ord)) in s.order_by.iter().enumerate() {
        let col = table.column(name).ok_or_else(|| {
            QueryError::Invalid(format!(
                "Undefined column name {name} in table {}.{}",
                table.keyspace, table.name
            ))
        })?;
        if col.kind != ColumnKind::Clustering {
            return Err(QueryError::Invalid(format!("Order by is currently only supported on the clustered columns of the PRIMARY KEY, got {name}")));
        }
        if ck.get(i).map(|c| &c.name) != Some(name) {
            return Err(QueryError::Invalid("Order by currently only supports the ordering of columns following their declared order in the PRIMARY KEY".into()));
        }
        let rev = (*ord == Order::Desc) != col.descending;
        if *reversed.get_or_insert(rev) != rev {
            return Err(QueryError::Invalid("Unsupported order by relation".into()));
        }
    }
    Ok(reversed.unwrap_or(false))
}

/// The state of one SELECT while partitions stream through it.
struct Run<'a> {
    table: &'a Arc<Table>,
    projection: &'a Projection,
    filters: &'a [Filter],
    now: i32,
    distinct: bool,
    clustering_restricted: bool,
    rows: Vec<Vec<Option<Bytes>>>,
    sort_keys: Vec<Vec<Bytes>>,
    /// With aggregates: the running state of the SELECT clause.
    agg: Aggregation,
    /// With GROUP BY: the group open.
    group: Option<grouping::Grouping>,
    remaining: Option<usize>,
    page_size: Option<usize>,
    per_partition: Option<usize>,
    tombstones: u64,
    last: Option<PagingState>,
    keep_sort_keys: bool,
    /// SSTables the reads of the current partition touched.
    sstables: u32,
    /// The statement's level.
    consistency: Consistency,
}

impl Run<'_> {
    fn full(&self) -> bool {
        self.remaining == Some(0) || self.page_size.is_some_and(|n| self.rows.len() >= n)
    }

    /// Reads one partition and emits its rows. Returns false when the
    /// page is full (the paging state then points after the last row).
    /// `prefetched`: its first read, made ahead (a range scan's).
    #[allow(clippy::too_many_arguments)]
    async fn partition(
        &mut self,
        data: &dyn DataPath,
        key: &PartitionKey,
        slices: &[Slice],
        after: Option<&Vec<Bytes>>,
        reversed: bool,
        quota: Option<i32>,
        key_index: u32,
        prefetched: Option<prefetch::Prefetched>,
    ) -> Result<bool> {
        let more = self
            .partition_rows(
                data, key, slices, after, reversed, quota, key_index, prefetched,
            )
            .await?;
        // A group never spans partitions.
        self.close_group()?;
        Ok(more)
    }

    /// [`Run::partition`] without closing its last group.
    #[allow(clippy::too_many_arguments)]
    async fn partition_rows(
        &mut self,
        data: &dyn DataPath,
        key: &PartitionKey,
        slices: &[Slice],
        after: Option<&Vec<Bytes>>,
        reversed: bool,
        quota: Option<i32>,
        key_index: u32,
        mut prefetched: Option<prefetch::Prefetched>,
    ) -> Result<bool> {
        if self.full() {
            return Ok(false);
        }
        let cmp = crate::comparator::of(self.table);
        let dropped = DroppedCells::of(self.table);
        let pk = key_components(self.table, key);
        let mut quota = match quota {
            Some(q) if q >= 0 => Some(q as usize),
            _ => self.per_partition,
        };
        let mut after: Option<Vec<Bytes>> = after.cloned();
        let mut first_chunk = true;
        loop {
            let chunk = self.chunk_size(quota);
            let sliced = restrict_after(slices, after.as_ref(), reversed, &cmp);
            let read = ReadCommand {
                table: self.table.id,
                key,
                slices: &sliced,
                reversed,
                now_seconds: self.now,
                row_limit: chunk,
                consistency: self.consistency,
            };
            let ahead = prefetched
                .take()
                .filter(|_| after.is_none())
                .and_then(|p| p.into_read_of(chunk, reversed));
            let found = match ahead {
                Some(found) => found,
                None => data.read(read).await?,
            };
            self.sstables += found.sstables;
            let (Some(mut live), complete) = (found.partition, found.complete) else {
                return Ok(true);
            };
            if let Some(d) = &dropped {
                d.static_row(&mut live);
            }
            self.count_tombstones(found.tombstones)?;
            // A read cut short before its first row (a range read's short
            // read protection can cut there) is not a static-only one.
            let static_only = first_chunk
                && complete
                && live.rows.is_empty()
                && live.static_row.is_some()
                && !self.clustering_restricted
                && after.is_none();
            if self.distinct || static_only {
                if live.rows.is_empty() && live.static_row.is_none() {
                    return Ok(true);
                }
                let view = RowView {
                    pk: &pk,
                    clustering: None,
                    row: None,
                    static_row: live.static_row.as_ref(),
                };
                if self.group.is_some() {
                    return self.static_group(&view, key, key_index);
                }
                if self.emit(&view, key, None)? {
                    self.mark(key, key_index, None, None);
                }
                return Ok(true);
            }
            first_chunk = false;
            // `live.rows` is in clustering order; walk it in the query's order.
            let rows: Box<dyn Iterator<Item = (&ClusteringKey, &varve_storage::Row)>> = if reversed
            {
                Box::new(live.rows.iter().rev())
            } else {
                Box::new(live.rows.iter())
            };
            for (ck, row) in rows {
                let row = match &dropped {
                    None => std::borrow::Cow::Borrowed(row),
                    Some(d) => match d.row(row) {
                        Some(row) => row,
                        None => {
                            after = Some(ck.values.clone());
                            continue;
                        }
                    },
                };
                let view = RowView {
                    pk: &pk,
                    clustering: Some(&ck.values),
                    row: Some(&*row),
                    static_row: live.static_row.as_ref(),
                };
                if self.group.is_some() && !self.filters.iter().all(|f| passes(f, &view)) {
                    after = Some(ck.values.clone());
                    continue;
                }
                let group_key = self.group_key(&ck.values, &view)?;
                let starts_group = self.starts_group(&group_key);
                if starts_group {
                    self.close_group()?;
                }
                if starts_group && quota == Some(0) {
                    return Ok(true);
                }
                if starts_group && self.full() {
                    return Ok(false);
                }
                if self.group.is_some() {
                    if starts_group {
                        self.open_group(group_key, &ck.values);
                        quota = quota.map(|q| q - 1);
                    }
                    self.agg.add(self.projection, &view, key.token, self.now)?;
                    self.mark(key, key_index, Some(ck.values.clone()), quota);
                } else if self.emit(&view, key, Some(&ck.values))? {
                    quota = quota.map(|q| q - 1);
                    self.mark(key, key_index, Some(ck.values.clone()), quota);
                }
                after = Some(ck.values.clone());
            }
            if complete {
                return Ok(true);
            }
        }
    }

    /// How many live rows to read from storage in one step: just enough for
    /// the page, LIMIT and PER PARTITION LIMIT when no filter can drop rows.
    fn chunk_size(&self, quota: Option<usize>) -> usize {
        if self.distinct {
            return 1;
        }
        if !self.filters.is_empty()
            || self.projection.aggregate
            || self.group.is_some()
            || self.keep_sort_keys
        {
            return FILTERING_CHUNK_ROWS;
        }
        let page_left = self.page_size.map(|n| n.saturating_sub(self.rows.len()));
        [page_left, self.remaining, quota]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(FILTERING_CHUNK_ROWS)
            .clamp(1, FILTERING_CHUNK_ROWS)
    }

    /// How many live rows a range read should bring at once: what the page
    /// and LIMIT still take, at least `chunk`; no limit when neither
    /// bounds it.
    fn rows_wanted(&self, chunk: usize) -> usize {
        let page_left = self.page_size.map(|n| n.saturating_sub(self.rows.len()));
        [page_left, self.remaining]
            .into_iter()
            .flatten()
            .min()
            .map_or(usize::MAX, |n| n.max(chunk))
    }

    fn count_tombstones(&mut self, n: u64) -> Result<()> {
        self.tombstones += n;
        if self.tombstones > TOMBSTONE_FAILURE_THRESHOLD {
            return Err(QueryError::ReadFailure {
                message: format!(
                    "Scanned over {TOMBSTONE_FAILURE_THRESHOLD} tombstones during query {}; query aborted (see tombstone_failure_threshold)",
                    describe_query(self.table)
                ),
            });
        }
        Ok(())
    }

    /// Records where the next page starts: after the row just emitted.
    fn mark(
        &mut self,
        key: &PartitionKey,
        key_index: u32,
        clustering: Option<Vec<Bytes>>,
        quota: Option<usize>,
    ) {
        self.last = Some(PagingState {
            key_index,
            partition_key: key.key.clone(),
            clustering,
            remaining: self.remaining.map(|r| r as i32).unwrap_or(-1),
            remaining_in_partition: quota.map(|q| q as i32).unwrap_or(-1),
        });
    }

    /// Filters and projects one row. Returns true when it was emitted.
    fn emit(
        &mut self,
        view: &RowView,
        key: &PartitionKey,
        ck: Option<&Vec<Bytes>>,
    ) -> Result<bool> {
        for f in self.filters {
            if !passes(f, view) {
                return Ok(false);
            }
        }
        if self.projection.aggregate {
            // Plain columns beside an aggregate show the first row's value.
            self.agg.add(self.projection, view, key.token, self.now)?;
        } else {
            let mut out = Vec::with_capacity(self.projection.selectors.len());
            for sel in &self.projection.selectors {
                out.push(selectors::eval(sel, view, key.token, self.now)?);
            }
            self.rows.push(out);
            if self.keep_sort_keys {
                self.sort_keys.push(ck.cloned().unwrap_or_default());
            }
        }
        if let Some(r) = &mut self.remaining {
            *r = r.saturating_sub(1);
        }
        Ok(true)
    }

    fn sort_rows(&mut self, cmp: &Arc<varve_storage::ClusteringComparator>, reversed: bool) {
        let mut pairs: Vec<(Vec<Bytes>, Vec<Option<Bytes>>)> = std::mem::take(&mut self.sort_keys)
            .into_iter()
            .zip(std::mem::take(&mut self.rows))
            .collect();
        pairs.sort_by(|a, b| {
            let o = ClusteringKey::row(a.0.clone(), cmp).cmp(&ClusteringKey::row(b.0.clone(), cmp));
            if reversed {
                o.reverse()
            } else {
                o
            }
        });
        self.rows = pairs.into_iter().map(|(_, r)| r).collect();
    }
}

/// The slices narrowed to what lies after `after` in the query's order.
fn restrict_after(
    slices: &[Slice],
    after: Option<&Vec<Bytes>>,
    reversed: bool,
    cmp: &Arc<varve_storage::ClusteringComparator>,
) -> Vec<Slice> {
    let Some(ck) = after else {
        return slices.to_vec();
    };
    slices
        .iter()
        .map(|s| {
            let mut s = s.clone();
            if reversed {
                let bound = ClusteringKey::before(ck.clone(), cmp);
                if bound < s.end {
                    s.end = bound;
                }
            } else {
                let bound = ClusteringKey::after(ck.clone(), cmp);
                if bound > s.start {
                    s.start = bound;
                }
            }
            s
        })
        .collect()
}

/// Whether a row passes an ALLOW FILTERING relation.
fn passes(f: &Filter, view: &RowView) -> bool {
    let Some(bytes) = view.value(&f.column) else {
        return false;
    };
    let ty = f.column.ty.clone();
    let cmp_with = |ty: &CqlType, have: &[u8], want: &Value| {
        compare::compare(ty, have, &codec::serialize(want))
    };
    match f.op {
        Operator::Contains | Operator::ContainsKey => {
            let Ok(v) = codec::deserialize(&ty, &bytes) else {
                return false;
            };
            let Some(want) = f.values.first() else {
                return false;
            };
            match (v, f.op) {
                (Value::List(items) | Value::Set(items), Operator::Contains) => {
                    items.iter().any(|i| i == want)
                }
                (Value::Map(entries), Operator::Contains) => entries.iter().any(|(_, v)| v == want),
                (Value::Map(entries), Operator::ContainsKey) => {
                    entries.iter().any(|(k, _)| k == want)
                }
                _ => false,
            }
        }
        _ => {
            let (ty, have) = match &f.element {
                None => (ty, bytes.to_vec()),
                Some(el) => {
                    let Ok(Value::Map(entries)) = codec::deserialize(&ty, &bytes) else {
                        return false;
                    };
                    let CqlType::Map(_, vt) = ty.unfrozen() else {
                        return false;
                    };
                    match entries.into_iter().find(|(k, _)| k == el) {
                        Some((_, v)) => ((**vt).clone(), codec::serialize(&v)),
                        None => return false,
                    }
                }
            };
            match f.op {
                Operator::Eq => cmp_with(&ty, &have, &f.values[0]) == Ordering::Equal,
                Operator::In => f
                    .values
                    .iter()
                    .any(|v| cmp_with(&ty, &have, v) == Ordering::Equal),
                Operator::Lt => cmp_with(&ty, &have, &f.values[0]) == Ordering::Less,
                Operator::Le => cmp_with(&ty, &have, &f.values[0]) != Ordering::Greater,
                Operator::Gt => cmp_with(&ty, &have, &f.values[0]) == Ordering::Greater,
                Operator::Ge => cmp_with(&ty, &have, &f.values[0]) != Ordering::Less,
                _ => false,
            }
        }
    }
}
