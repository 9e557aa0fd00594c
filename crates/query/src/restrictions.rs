//! WHERE clauses: which partitions, which clustering slices, and which
//! filters a statement selects.

use crate::clustering_slices::{self, Bound};
use crate::context::Ctx;
use crate::error::{QueryError, Result};
use crate::terms::{bound_verbatim, eval, Evaluated};
use bytes::Bytes;
use std::sync::Arc;
use varve_cql::ast::{Operator, Relation, RelationLhs, Term};
use varve_schema::{Column, ColumnKind, Table};
use varve_storage::{ClusteringComparator, PartitionKey, Slice, TokenBound};
use varve_types::{codec, token, CqlType, Value};

/// The largest partition key or clustering value (Cassandra: 64 KiB - 1).
pub const MAX_KEY_BYTES: usize = 65_535;

/// Most partition keys or clustering prefixes an IN product may produce.
pub const MAX_IN_PRODUCT: usize = 10_000;

/// Which partitions a statement touches.
#[derive(Debug, Clone)]
pub enum PartitionSelection {
    /// These exact keys (sorted, deduplicated, in the order of the IN).
    Keys(Vec<PartitionKey>),
    /// A range of tokens (a full scan when both ends are unbounded).
    Range { start: TokenBound, end: TokenBound },
}

/// A relation evaluated after reading (ALLOW FILTERING).
#[derive(Debug, Clone)]
pub struct Filter {
    pub column: Column,
    pub op: Operator,
    /// One value, or several for IN.
    pub values: Vec<Value>,
    /// `m[key] = v`
    pub element: Option<Value>,
}

/// Clustering restrictions: EQ/IN prefixes, then at most one range.
#[derive(Debug, Clone, Default)]
pub struct ClusteringSelection {
    /// Prefixes fixed by EQ/IN (one empty prefix when none).
    pub prefixes: Vec<Vec<Bytes>>,
    /// Number of columns the prefixes fix.
    pub eq_len: usize,
    /// Bounds on the columns after the prefix, compared as tuples in the
    /// columns' natural order: (values, inclusive).
    pub lower: Option<Bound>,
    pub upper: Option<Bound>,
}

impl ClusteringSelection {
    /// True when every clustering column is fixed (one row per prefix).
    pub fn is_exact(&self, table: &Table) -> bool {
        self.eq_len == table.clustering_len() && self.lower.is_none() && self.upper.is_none()
    }

    pub fn is_unrestricted(&self) -> bool {
        self.eq_len == 0 && self.lower.is_none() && self.upper.is_none()
    }

    /// The slices to read, sorted in clustering order and disjoint.
    pub fn slices(&self, cmp: &Arc<ClusteringComparator>) -> Vec<Slice> {
        let mut out = Vec::with_capacity(self.prefixes.len());
        for p in &self.prefixes {
            out.extend(clustering_slices::bounded(
                p,
                self.lower.as_ref(),
                self.upper.as_ref(),
                cmp,
            ));
        }
        clustering_slices::merge(out)
    }
}

/// The analysed WHERE clause.
#[derive(Debug, Clone)]
pub struct Selection {
    pub partitions: PartitionSelection,
    pub clustering: ClusteringSelection,
    pub filters: Vec<Filter>,
    /// True when running it needs ALLOW FILTERING.
    pub needs_filtering: bool,
    /// True when every partition key column is restricted by EQ/IN.
    pub partition_exact: bool,
}

fn undefined(table: &Table, name: &str) -> QueryError {
    QueryError::Invalid(format!(
        "Undefined column name {name} in table {}.{}",
        table.keyspace, table.name
    ))
}

fn column<'t>(table: &'t Table, name: &str) -> Result<&'t Column> {
    table.column(name).ok_or_else(|| undefined(table, name))
}

/// Evaluates a key value: never null or unset, at most [`MAX_KEY_BYTES`].
pub fn key_value(ctx: &Ctx, term: &Term, col: &Column) -> Result<Bytes> {
    if let Some(bytes) = bound_verbatim(ctx, term, &col.ty, &col.name) {
        let bytes = bytes?;
        if bytes.len() > MAX_KEY_BYTES {
            return Err(QueryError::Invalid(format!(
                "Key length of {} is longer than maximum of {MAX_KEY_BYTES}",
                bytes.len()
            )));
        }
        // A copy: the request's buffer is not kept alive by a stored key.
        return Ok(Bytes::copy_from_slice(bytes));
    }
    match eval(ctx, term, &col.ty, &col.name)? {
        Evaluated::Value(v) => {
            let bytes = codec::serialize(&v);
            if bytes.len() > MAX_KEY_BYTES {
                return Err(QueryError::Invalid(format!(
                    "Key length of {} is longer than maximum of {MAX_KEY_BYTES}",
                    bytes.len()
                )));
            }
            Ok(Bytes::from(bytes))
        }
        Evaluated::Null => Err(QueryError::Invalid(format!(
            "Invalid null value in condition for column {}",
            col.name
        ))),
        Evaluated::Unset => Err(QueryError::Invalid(format!(
            "Invalid unset value for column {}",
            col.name
        ))),
    }
}

/// The values of an IN list (or a single bound list).
fn in_values(ctx: &Ctx, term: &Term, col: &Column) -> Result<Vec<Bytes>> {
    match term {
        Term::Tuple(items) | Term::List(items) => {
            items.iter().map(|t| key_value(ctx, t, col)).collect()
        }
        other => {
            let list_ty = CqlType::List(Box::new(col.ty.clone()));
            match eval(ctx, other, &list_ty, &col.name)? {
                Evaluated::Value(Value::List(vs)) => vs
                    .iter()
                    .map(|v| Ok(Bytes::from(codec::serialize(v))))
                    .collect(),
                Evaluated::Unset => Err(QueryError::Invalid(format!(
                    "Invalid unset value for column {}",
                    col.name
                ))),
                _ => Err(QueryError::Invalid(format!(
                    "Invalid null value for IN restriction on column {}",
                    col.name
                ))),
            }
        }
    }
}

/// Builds the serialized partition key from its component values.
pub fn partition_key(components: &[Bytes]) -> Result<PartitionKey> {
    let key = match components {
        [single] => single.clone(),
        _ => Bytes::from(token::partition_key(components)),
    };
    if key.is_empty() {
        return Err(QueryError::Invalid("Key may not be empty".into()));
    }
    if key.len() > MAX_KEY_BYTES {
        return Err(QueryError::Invalid(format!(
            "Key length of {} is longer than maximum of {MAX_KEY_BYTES}",
            key.len()
        )));
    }
    Ok(PartitionKey::new(key))
}

fn cartesian(acc: Vec<Vec<Bytes>>, options: &[Vec<Bytes>]) -> Result<Vec<Vec<Bytes>>> {
    let mut out = Vec::with_capacity(acc.len() * options.len().max(1));
    for a in &acc {
        for o in options {
            let mut v = a.clone();
            v.extend(o.iter().cloned());
            out.push(v);
            if out.len() > MAX_IN_PRODUCT {
                return Err(QueryError::Invalid(format!(
                    "IN restrictions select more than {MAX_IN_PRODUCT} keys or clustering prefixes"
                )));
            }
        }
    }
    Ok(out)
}

/// Analyses `relations` against `table`.
pub fn analyse(ctx: &Ctx, table: &Table, relations: &[Relation]) -> Result<Selection> {
    match single_key(ctx, table, relations) {
        Some(selection) => selection,
        None => analyse_all(ctx, table, relations),
    }
}

/// The point lookup `WHERE k = <term>` on a table whose partition key is
/// the one column `k`, and nothing else: what [`analyse_all`] gives for it,
/// without building its lists of options, keys and types (they were 3% of
/// a 180 B point read's CPU). `None` for any other WHERE clause.
fn single_key(ctx: &Ctx, table: &Table, relations: &[Relation]) -> Option<Result<Selection>> {
    let [rel] = relations else {
        return None;
    };
    let RelationLhs::Column(name) = &rel.lhs else {
        return None;
    };
    if rel.op != Operator::Eq || table.partition_key_len() != 1 {
        return None;
    }
    let col = table.column(name)?;
    if col.kind != ColumnKind::PartitionKey {
        return None;
    }
    let selection = key_value(ctx, &rel.rhs, col).and_then(|value| {
        let key = partition_key(std::slice::from_ref(&value))?;
        let (clustering, _) = clustering_selection(ctx, table, &[])?;
        Ok(Selection {
            partitions: PartitionSelection::Keys(vec![key]),
            clustering,
            filters: Vec::new(),
            needs_filtering: false,
            partition_exact: true,
        })
    });
    Some(selection)
}

/// Analyses any WHERE clause.
fn analyse_all(ctx: &Ctx, table: &Table, relations: &[Relation]) -> Result<Selection> {
    let mut pk_options: Vec<Option<Vec<Vec<Bytes>>>> = vec![None; table.partition_key_len()];
    let mut token_start = TokenBound::Unbounded;
    let mut token_end = TokenBound::Unbounded;
    let mut has_token = false;
    let mut filters = Vec::new();
    let mut needs_filtering = false;
    let mut ck_rel: Vec<&Relation> = Vec::new();

    for rel in relations {
        match &rel.lhs {
            RelationLhs::Token(cols) => {
                let pk: Vec<&str> = table.partition_key().map(|c| c.name.as_str()).collect();
                if cols.iter().map(String::as_str).collect::<Vec<_>>() != pk {
                    return Err(QueryError::Invalid(format!(
                        "The token function arguments must be in the partition key order: {}",
                        pk.join(", ")
                    )));
                }
                let t = token_value(ctx, table, &rel.rhs)?;
                has_token = true;
                match rel.op {
                    Operator::Gt => token_start = TokenBound::TokenExclusive(t),
                    Operator::Ge => token_start = TokenBound::TokenInclusive(t),
                    Operator::Lt => token_end = TokenBound::TokenExclusive(t),
                    Operator::Le => token_end = TokenBound::TokenInclusive(t),
                    Operator::Eq => {
                        token_start = TokenBound::TokenInclusive(t);
                        token_end = TokenBound::TokenInclusive(t);
                    }
                    op => {
                        return Err(QueryError::Invalid(format!(
                            "Unsupported {op:?} relation on token"
                        )))
                    }
                }
            }
            RelationLhs::Column(name) => {
                let col = column(table, name)?;
                match col.kind {
                    ColumnKind::PartitionKey if matches!(rel.op, Operator::Eq | Operator::In) => {
                        let opts = if rel.op == Operator::Eq {
                            vec![vec![key_value(ctx, &rel.rhs, col)?]]
                        } else {
                            in_values(ctx, &rel.rhs, col)?
                                .into_iter()
                                .map(|b| vec![b])
                                .collect()
                        };
                        let slot = &mut pk_options[col.position as usize];
                        if slot.is_some() {
                            return Err(QueryError::Invalid(format!("{} cannot be restricted by more than one relation if it includes an Equal", col.name)));
                        }
                        *slot = Some(opts);
                    }
                    ColumnKind::Clustering => ck_rel.push(rel),
                    _ => {
                        filters.push(filter(ctx, col, rel)?);
                        needs_filtering = true;
                    }
                }
            }
            RelationLhs::Columns(cols) => {
                for c in cols {
                    let col = column(table, c)?;
                    if col.kind != ColumnKind::Clustering {
                        return Err(QueryError::Invalid(format!("Multi-column relations can only be applied to clustering columns but was applied to: {c}")));
                    }
                }
                ck_rel.push(rel);
            }
            RelationLhs::MapElement { column: name, key } => {
                let col = column(table, name)?;
                filters.push(map_entry_filter(ctx, col, key, rel)?);
                needs_filtering = true;
            }
        }
    }

    let restricted = pk_options.iter().filter(|o| o.is_some()).count();
    let partition_exact = restricted == pk_options.len();
    let partitions = if partition_exact {
        let mut keys = vec![Vec::new()];
        for o in &pk_options {
            keys = cartesian(keys, o.as_ref().map(Vec::as_slice).unwrap_or(&[]))?;
        }
        // Cassandra returns IN partitions in key order (each component by
        // its type), whatever order the IN lists them in.
        let types: Vec<CqlType> = table.partition_key().map(|c| c.ty.clone()).collect();
        keys.sort_by(|a, b| {
            for ((x, y), ty) in a.iter().zip(b.iter()).zip(&types) {
                let o = varve_types::compare::compare(ty, x, y);
                if o != std::cmp::Ordering::Equal {
                    return o;
                }
            }
            std::cmp::Ordering::Equal
        });
        let mut pks = Vec::with_capacity(keys.len());
        for k in keys {
            let pk = partition_key(&k)?;
            if !pks.contains(&pk) {
                pks.push(pk);
            }
        }
        if has_token {
            // Both a token range and exact keys: the keys inside the range.
            pks.retain(|k| token_in(k.token, &token_start, &token_end));
        }
        PartitionSelection::Keys(pks)
    } else {
        if restricted > 0 {
            if has_token {
                return Err(QueryError::Invalid(
                    "Columns of the partition key cannot be restricted both by token and by value"
                        .into(),
                ));
            }
            // Partial partition key: filter on the restricted parts.
            needs_filtering = true;
            for (i, o) in pk_options.iter().enumerate() {
                if let Some(values) = o {
                    let col = table
                        .partition_key()
                        .nth(i)
                        .cloned()
                        .ok_or_else(|| QueryError::Server("pk position".into()))?;
                    let vals = values
                        .iter()
                        .filter_map(|v| v.first())
                        .map(|b| {
                            codec::deserialize(&col.ty, b)
                                .map_err(|e| QueryError::Invalid(e.to_string()))
                        })
                        .collect::<Result<Vec<_>>>()?;
                    filters.push(Filter {
                        column: col,
                        op: Operator::In,
                        values: vals,
                        element: None,
                    });
                }
            }
        }
        PartitionSelection::Range {
            start: token_start,
            end: token_end,
        }
    };

    check_filter_bounds(&filters)?;
    let (clustering, ck_filters) = clustering_selection(ctx, table, &ck_rel)?;
    if !ck_filters.is_empty() {
        needs_filtering = true;
        filters.extend(ck_filters);
    }
    if !partition_exact && !clustering.is_unrestricted() {
        needs_filtering = true;
    }
    Ok(Selection {
        partitions,
        clustering,
        filters,
        needs_filtering,
        partition_exact,
    })
}

fn token_in(t: i64, start: &TokenBound, end: &TokenBound) -> bool {
    let above = match start {
        TokenBound::TokenInclusive(s) => t >= *s,
        TokenBound::TokenExclusive(s) => t > *s,
        _ => true,
    };
    let below = match end {
        TokenBound::TokenInclusive(e) => t <= *e,
        TokenBound::TokenExclusive(e) => t < *e,
        _ => true,
    };
    above && below
}

/// Rejects two relations on the same bound of one filtered column.
fn check_filter_bounds(filters: &[Filter]) -> Result<()> {
    for (i, f) in filters.iter().enumerate() {
        for g in &filters[i + 1..] {
            if f.column.name != g.column.name || f.element.is_some() || g.element.is_some() {
                continue;
            }
            let start = |op| matches!(op, Operator::Gt | Operator::Ge);
            let end = |op| matches!(op, Operator::Lt | Operator::Le);
            if start(f.op) && start(g.op) {
                return Err(QueryError::Invalid(format!(
                    "More than one restriction was found for the start bound on {}",
                    f.column.name
                )));
            }
            if end(f.op) && end(g.op) {
                return Err(QueryError::Invalid(format!(
                    "More than one restriction was found for the end bound on {}",
                    f.column.name
                )));
            }
            if matches!(f.op, Operator::Eq | Operator::In)
                || matches!(g.op, Operator::Eq | Operator::In)
            {
                return Err(QueryError::Invalid(format!(
                    "{} cannot be restricted by more than one relation if it includes an Equal",
                    f.column.name
                )));
            }
        }
    }
    Ok(())
}

/// The token a `token(...) op rhs` relation compares with.
fn token_value(ctx: &Ctx, table: &Table, rhs: &Term) -> Result<i64> {
    if let Term::FunctionCall { name, args } = rhs {
        if name.eq_ignore_ascii_case("token") {
            let cols: Vec<&Column> = table.partition_key().collect();
            if args.len() != cols.len() {
                return Err(QueryError::Invalid(
                    "Invalid number of arguments to token()".into(),
                ));
            }
            let mut parts = Vec::new();
            for (a, c) in args.iter().zip(cols) {
                parts.push(key_value(ctx, a, c)?);
            }
            return Ok(partition_key(&parts)?.token);
        }
    }
    match eval(ctx, rhs, &CqlType::BigInt, "partition key token")? {
        Evaluated::Value(Value::BigInt(t)) => Ok(t),
        _ => Err(QueryError::Invalid(
            "Invalid null value for partition key token".into(),
        )),
    }
}

/// `m[key] = value` in a WHERE clause: an equality on one entry of a
/// non-frozen map, with Cassandra's refusals for anything else.
fn map_entry_filter(ctx: &Ctx, col: &Column, key: &Term, rel: &Relation) -> Result<Filter> {
    let name = &col.name;
    let refuse = |m: String| Err(QueryError::Invalid(m));
    let (kt, vt) = match &col.ty.unfrozen() {
        CqlType::List(_) => {
            return refuse(format!(
                "Indexes on list entries ({name}[index] = value) are not currently supported."
            ))
        }
        CqlType::Map(k, v) => ((**k).clone(), (**v).clone()),
        _ => return refuse(format!("Column {name} cannot be used as a map")),
    };
    if !col.ty.is_multi_cell() {
        return refuse(format!(
            "Map-entry equality predicates on frozen map column {name} are not supported"
        ));
    }
    match rel.op {
        Operator::Eq => {}
        Operator::Ne => {
            let side = crate::select::elements::key_text;
            return refuse(format!(
                "Unsupported \"!=\" relation: {name}[{}] != {}",
                side(key),
                side(&rel.rhs)
            ));
        }
        _ => return refuse("Only EQ relations are supported on map entries".into()),
    }
    let entry = |term: &Term, ty: &CqlType, what: &str| -> Result<Value> {
        match eval(ctx, term, ty, &format!("{what}({name})"))? {
            Evaluated::Value(v) => Ok(v),
            Evaluated::Null => Err(QueryError::Invalid(format!(
                "Unsupported null map {what} for column {name}"
            ))),
            Evaluated::Unset => Err(QueryError::Invalid(format!(
                "Unsupported unset map {what} for column {name}"
            ))),
        }
    };
    let element = entry(key, &kt, "key")?;
    let value = entry(&rel.rhs, &vt, "value")?;
    Ok(Filter {
        column: col.clone(),
        op: Operator::Eq,
        values: vec![value],
        element: Some(element),
    })
}

fn filter(ctx: &Ctx, col: &Column, rel: &Relation) -> Result<Filter> {
    let values = match rel.op {
        Operator::In => in_values(ctx, &rel.rhs, col)?
            .iter()
            .map(|b| codec::deserialize(&col.ty, b).map_err(|e| QueryError::Invalid(e.to_string())))
            .collect::<Result<Vec<_>>>()?,
        Operator::Contains => {
            let elem = match col.ty.unfrozen() {
                CqlType::List(e) | CqlType::Set(e) => (**e).clone(),
                CqlType::Map(_, v) => (**v).clone(),
                _ => {
                    return Err(QueryError::Invalid(format!(
                        "Cannot use CONTAINS on non-collection column {}",
                        col.name
                    )))
                }
            };
            vec![contained(ctx, &rel.rhs, &elem, col)?]
        }
        Operator::ContainsKey => {
            let CqlType::Map(k, _) = col.ty.unfrozen() else {
                return Err(QueryError::Invalid(format!(
                    "Cannot use CONTAINS KEY on non-map column {}",
                    col.name
                )));
            };
            vec![contained(ctx, &rel.rhs, k, col)?]
        }
        Operator::Ne => return Err(QueryError::Invalid("Unsupported \"!=\" relation".into())),
        // Durations have no order (1mo is not a number of days).
        Operator::Lt | Operator::Le | Operator::Gt | Operator::Ge
            if col.ty.unfrozen() == &CqlType::Duration =>
        {
            return Err(QueryError::Invalid(
                "Slice restrictions are not supported on duration columns".into(),
            ))
        }
        Operator::IsNot => {
            return Err(QueryError::Invalid(
                "Unsupported restriction: IS NOT NULL".into(),
            ))
        }
        Operator::Like => {
            return Err(QueryError::Invalid(
                "LIKE restriction is only supported on properly indexed columns".into(),
            ))
        }
        _ => match eval(ctx, &rel.rhs, &col.ty, &col.name)? {
            Evaluated::Value(v) => vec![v],
            Evaluated::Null => {
                return Err(QueryError::Invalid(format!(
                    "Invalid null value in condition for column {}",
                    col.name
                )))
            }
            Evaluated::Unset => {
                return Err(QueryError::Invalid(format!(
                    "Invalid unset value for column {}",
                    col.name
                )))
            }
        },
    };
    Ok(Filter {
        column: col.clone(),
        op: rel.op,
        values,
        element: None,
    })
}

/// The value of a CONTAINS or CONTAINS KEY relation: never null or unset
/// (Cassandra: "Unsupported null value for column s").
fn contained(ctx: &Ctx, rhs: &Term, ty: &CqlType, col: &Column) -> Result<Value> {
    match eval(ctx, rhs, ty, &col.name)? {
        Evaluated::Value(v) => Ok(v),
        Evaluated::Null => Err(QueryError::Invalid(format!(
            "Unsupported null value for column {}",
            col.name
        ))),
        Evaluated::Unset => Err(QueryError::Invalid(format!(
            "Unsupported unset value for column {}",
            col.name
        ))),
    }
}

/// The clustering prefixes and bounds, plus relations left to filter.
fn clustering_selection(
    ctx: &Ctx,
    table: &Table,
    rels: &[&Relation],
) -> Result<(ClusteringSelection, Vec<Filter>)> {
    let ck: Vec<&Column> = table.clustering().collect();
    let mut sel = ClusteringSelection {
        prefixes: vec![Vec::new()],
        ..Default::default()
    };
    let mut used = vec![false; rels.len()];
    let mut stopped_at: Option<(usize, bool)> = None; // (column index, stopped by a slice)
    let mut i = 0;
    while i < ck.len() {
        let col = ck[i];
        // A multi-column relation starting at this column?
        let multi = rels.iter().enumerate().find(|(j, r)| {
            !used[*j] && matches!(&r.lhs, RelationLhs::Columns(cs) if cs.first() == Some(&col.name))
        });
        if let Some((j, rel)) = multi {
            let RelationLhs::Columns(names) = &rel.lhs else {
                unreachable!()
            };
            let cols = multi_columns(table, names, i)?;
            used[j] = true;
            let tuple = |t: &Term| tuple_values(ctx, t, &cols);
            let other_end = |other: &Relation| match &other.lhs {
                RelationLhs::Columns(names) => {
                    tuple_values(ctx, &other.rhs, &multi_columns(table, names, i)?)
                }
                _ => Ok(vec![key_value(ctx, &other.rhs, col)?]),
            };
            match rel.op {
                Operator::Eq => {
                    let v = tuple(&rel.rhs)?;
                    sel.prefixes = cartesian(sel.prefixes, &[v])?;
                    sel.eq_len += cols.len();
                    i += cols.len();
                    continue;
                }
                Operator::In => {
                    let options = match &rel.rhs {
                        Term::Tuple(items) => {
                            items.iter().map(&tuple).collect::<Result<Vec<_>>>()?
                        }
                        other => {
                            let ty = CqlType::List(Box::new(CqlType::Tuple(
                                cols.iter().map(|c| c.ty.clone()).collect(),
                            )));
                            match eval(ctx, other, &ty, "in")? {
                                Evaluated::Value(Value::List(items)) => items
                                    .into_iter()
                                    .map(|it| match it {
                                        Value::Tuple(vs) => vs
                                            .into_iter()
                                            .map(|v| {
                                                v.map(|v| Bytes::from(codec::serialize(&v)))
                                                    .ok_or_else(|| {
                                                        QueryError::Invalid(
                                                            "Invalid null value in IN tuple".into(),
                                                        )
                                                    })
                                            })
                                            .collect(),
                                        _ => Err(QueryError::Invalid("Invalid IN tuple".into())),
                                    })
                                    .collect::<Result<Vec<_>>>()?,
                                _ => {
                                    return Err(QueryError::Invalid(
                                        "Invalid null value for IN restriction".into(),
                                    ))
                                }
                            }
                        }
                    };
                    sel.prefixes = cartesian(sel.prefixes, &options)?;
                    sel.eq_len += cols.len();
                    i += cols.len();
                    continue;
                }
                Operator::Gt | Operator::Ge | Operator::Lt | Operator::Le => {
                    let v = tuple(&rel.rhs)?;
                    set_bound(&mut sel, rel.op, v, col)?;
                    // The other end: a slice on the same first column, of any length.
                    for (k, other) in rels.iter().enumerate() {
                        if !used[k]
                            && starts_at(&other.lhs, &col.name)
                            && matches!(
                                other.op,
                                Operator::Gt | Operator::Ge | Operator::Lt | Operator::Le
                            )
                        {
                            used[k] = true;
                            let v = other_end(other)?;
                            set_bound(&mut sel, other.op, v, col)?;
                        }
                    }
                    stopped_at = Some((i, true));
                    break;
                }
                op => {
                    return Err(QueryError::Invalid(format!(
                        "Unsupported {op:?} multi-column relation"
                    )))
                }
            }
        }
        let mine: Vec<usize> = rels
            .iter()
            .enumerate()
            .filter(|(j, r)| !used[*j] && r.lhs == RelationLhs::Column(col.name.clone()))
            .map(|(j, _)| j)
            .collect();
        if mine.is_empty() {
            stopped_at = Some((i, false));
            break;
        }
        let eq = mine
            .iter()
            .find(|j| matches!(rels[**j].op, Operator::Eq | Operator::In));
        if let Some(&j) = eq {
            used[j] = true;
            let options: Vec<Vec<Bytes>> = if rels[j].op == Operator::Eq {
                vec![vec![key_value(ctx, &rels[j].rhs, col)?]]
            } else {
                in_values(ctx, &rels[j].rhs, col)?
                    .into_iter()
                    .map(|b| vec![b])
                    .collect()
            };
            sel.prefixes = cartesian(sel.prefixes, &options)?;
            sel.eq_len += 1;
            if mine.len() > 1 {
                return Err(QueryError::Invalid(format!(
                    "{} cannot be restricted by more than one relation if it includes an Equal",
                    col.name
                )));
            }
            i += 1;
            continue;
        }
        for &j in &mine {
            let op = rels[j].op;
            if !matches!(
                op,
                Operator::Gt | Operator::Ge | Operator::Lt | Operator::Le
            ) {
                continue;
            }
            used[j] = true;
            let v = key_value(ctx, &rels[j].rhs, col)?;
            set_bound(&mut sel, op, vec![v], col)?;
        }
        stopped_at = Some((i, true));
        break;
    }
    // Whatever was not used becomes a filter.
    let mut filters = Vec::new();
    for (j, rel) in rels.iter().enumerate() {
        if used[j] {
            continue;
        }
        let RelationLhs::Column(name) = &rel.lhs else {
            return Err(QueryError::Invalid("Mixing single column relations and multi column relations on clustering columns is not allowed".into()));
        };
        let col = column(table, name)?;
        if let Some((k, by_slice)) = stopped_at {
            if ctx_allows_filtering(ctx)
                || rel.op == Operator::Contains
                || rel.op == Operator::ContainsKey
            {
                filters.push(filter(ctx, col, rel)?);
                continue;
            }
            let prev = ck[k.min(ck.len() - 1)];
            return Err(QueryError::Invalid(if by_slice {
                format!("Clustering column \"{}\" cannot be restricted (preceding column \"{}\" is restricted by a non-EQ relation)", col.name, prev.name)
            } else {
                format!("PRIMARY KEY column \"{}\" cannot be restricted as preceding column \"{}\" is not restricted", col.name, prev.name)
            }));
        }
        filters.push(filter(ctx, col, rel)?);
    }
    Ok((sel, filters))
}

/// The columns of a multi-column relation, which must be clustering
/// columns in PRIMARY KEY order from position `first`.
fn multi_columns<'t>(table: &'t Table, names: &[String], first: usize) -> Result<Vec<&'t Column>> {
    let cols: Vec<&Column> = names
        .iter()
        .map(|n| column(table, n))
        .collect::<Result<_>>()?;
    for (k, c) in cols.iter().enumerate() {
        if c.position as usize != first + k {
            return Err(QueryError::Invalid(format!(
                "Clustering columns must appear in the PRIMARY KEY order in multi-column relations: {}",
                names.join(", ")
            )));
        }
    }
    Ok(cols)
}

/// True when `lhs` is the column `name`, or a multi-column relation whose
/// first column is `name` (Cassandra takes either as the other end of a
/// multi-column slice).
fn starts_at(lhs: &RelationLhs, name: &str) -> bool {
    match lhs {
        RelationLhs::Columns(cs) => cs.first().is_some_and(|c| c == name),
        RelationLhs::Column(c) => c == name,
        _ => false,
    }
}

/// The values of the tuple a multi-column relation compares with.
fn tuple_values(ctx: &Ctx, t: &Term, cols: &[&Column]) -> Result<Vec<Bytes>> {
    let null = || QueryError::Invalid("Invalid null value in multi-column relation".into());
    match t {
        Term::Tuple(items) if items.len() == cols.len() => items
            .iter()
            .zip(cols)
            .map(|(t, c)| key_value(ctx, t, c))
            .collect(),
        other => {
            let ty = CqlType::Tuple(cols.iter().map(|c| c.ty.clone()).collect());
            match eval(ctx, other, &ty, "tuple")? {
                Evaluated::Value(Value::Tuple(vs)) => vs
                    .into_iter()
                    .map(|v| {
                        v.map(|v| Bytes::from(codec::serialize(&v)))
                            .ok_or_else(null)
                    })
                    .collect(),
                _ => Err(null()),
            }
        }
    }
}

/// Statements pass their ALLOW FILTERING flag through the context's
/// options; writes never allow it.
fn ctx_allows_filtering(ctx: &Ctx) -> bool {
    ctx.allow_filtering
}

/// Sets one end of the clustering range; a second relation on the same end
/// is refused, as Cassandra refuses it.
fn set_bound(
    sel: &mut ClusteringSelection,
    op: Operator,
    v: Vec<Bytes>,
    col: &Column,
) -> Result<()> {
    let (slot, end) = match op {
        Operator::Gt | Operator::Ge => (&mut sel.lower, "start"),
        Operator::Lt | Operator::Le => (&mut sel.upper, "end"),
        _ => return Ok(()),
    };
    if slot.is_some() {
        return Err(QueryError::Invalid(format!(
            "More than one restriction was found for the {end} bound on {}",
            col.name
        )));
    }
    *slot = Some((v, matches!(op, Operator::Ge | Operator::Le)));
    Ok(())
}

#[cfg(test)]
#[path = "restrictions_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "restrictions_slice_model_tests.rs"]
mod slice_model_tests;
