//! Selecting collection elements and slices (`m['k']`, `s[e]`,
//! `m['a'..'c']`, `m[?..]`) and the cell information of elements and
//! slices (`writetime(m['k'])`, `ttl(m['a'..'c'])`, `maxwritetime(...)`),
//! as Cassandra 5.0 answers them.
//!
//! Only maps and sets (frozen or not) take an element or a slice; a list is
//! refused by name. A key is typed by the collection (`key(m)` for a map,
//! `value(s)` for a set, which is also the name of its bind marker). The
//! compiled selection is shared by every execution of a statement, so a
//! bind marker key stays a [`Bound::Term`] there and [`bind`] resolves it
//! per execution; literal keys resolve the same way, and refuse a value of
//! the wrong type when the statement is prepared.

pub use super::element_bytes::key_type;
use super::element_bytes::{self, value_type};
use super::selectors::{Projection, Sel};
use crate::context::Ctx;
use crate::error::{QueryError, Result};
use crate::rows::RowView;
use crate::terms::{eval, Evaluated};
use bytes::Bytes;
use varve_cql::ast::{CellInfoKind, Term};
use varve_schema::Column;
use varve_storage::Cell;
use varve_types::{codec, CqlType, Value};

/// One key of an element or one bound of a slice.
#[derive(Debug, Clone)]
pub enum Bound {
    /// Not evaluated yet (a literal or a bind marker of the statement).
    Term(Term),
    /// The serialized key.
    Value(Bytes),
    /// A slice bound left out (`m['a'..]`, or an unset marker).
    Open,
}

impl Bound {
    fn bytes(&self) -> Option<&[u8]> {
        match self {
            Bound::Value(b) => Some(b),
            _ => None,
        }
    }
}

/// What of a column `writetime()`, `ttl()` or `maxwritetime()` looks at.
#[derive(Debug, Clone)]
pub enum Pick {
    Whole,
    Element(Bound),
    Slice(Bound, Bound),
}

/// The collection type `name` of type `ty` must be to take `[...]`, or
/// Cassandra's refusal. `what` is `Element` or `Slice`.
pub fn check_collection(name: &str, ty: &CqlType, what: &str) -> Result<()> {
    match ty.unfrozen() {
        CqlType::Map(..) | CqlType::Set(_) => Ok(()),
        CqlType::List(_) => Err(QueryError::Invalid(format!(
            "{what} selection is only allowed on sets and maps, but {name} is a list"
        ))),
        other => Err(QueryError::Invalid(if what == "Element" {
            format!("Invalid element selection: {name} is of type {other} is not a collection")
        } else {
            format!("Invalid slice selection: {name} of type {other} is not a collection")
        })),
    }
}

/// The name a key of `name`'s collection goes by (in errors and prepared
/// metadata): `key(m)` for a map, `value(s)` for a set.
pub fn key_receiver(name: &str, coll: &CqlType) -> String {
    match coll.unfrozen() {
        CqlType::Map(..) => format!("key({name})"),
        _ => format!("value({name})"),
    }
}

/// How Cassandra shows a key in a column name: the literal as written,
/// `?` for any bind marker.
pub fn key_text(term: &Term) -> String {
    match term {
        Term::Literal(lit) => super::selectors::literal_text(lit),
        Term::Bind(_) => "?".into(),
        Term::Negate(inner) => format!("-{}", key_text(inner)),
        Term::Operation { op, left, right } => {
            format!("{} {} {}", key_text(left), op.symbol(), key_text(right))
        }
        Term::Cast { ty, term } => format!("({ty}){}", key_text(term)),
        other => format!("{other:?}"),
    }
}

/// The column name of `name[from..to]`.
pub fn slice_text(name: &str, from: Option<&Term>, to: Option<&Term>) -> String {
    let side = |t: Option<&Term>| t.map(key_text).unwrap_or_default();
    format!("{name}[{}..{}]", side(from), side(to))
}

/// Whether a compiled selector still holds keys to evaluate.
fn unbound(sel: &Sel) -> bool {
    let term = |b: &Bound| matches!(b, Bound::Term(_));
    match sel {
        Sel::Element { inner, key, .. } => term(key) || unbound(inner),
        Sel::Slice {
            inner, from, to, ..
        } => term(from) || term(to) || unbound(inner),
        Sel::CellInfo { pick, .. } => match pick {
            Pick::Whole => false,
            Pick::Element(k) => term(k),
            Pick::Slice(f, t) => term(f) || term(t),
        },
        Sel::Func { args, .. } => args.iter().any(unbound),
        Sel::Cast { inner, .. } | Sel::Field { inner, .. } => unbound(inner),
        Sel::Aggregate { arg: Some(a), .. } => unbound(a),
        Sel::Marker { .. } => true,
        _ => false,
    }
}

/// The projection with every element key and slice bound evaluated for
/// this execution; `None` when it has none.
pub fn bind(projection: &Projection, ctx: &Ctx) -> Result<Option<Projection>> {
    if !projection.selectors.iter().any(unbound) {
        return Ok(None);
    }
    let selectors = projection
        .selectors
        .iter()
        .map(|s| bind_sel(s, ctx))
        .collect::<Result<_>>()?;
    Ok(Some(Projection {
        selectors,
        specs: projection.specs.clone(),
        aggregate: projection.aggregate,
    }))
}

/// One selector with its element keys, slice bounds and markers bound
/// for this execution.
pub fn bind_one(sel: &Sel, ctx: &Ctx) -> Result<Sel> {
    if unbound(sel) {
        bind_sel(sel, ctx)
    } else {
        Ok(sel.clone())
    }
}

fn bind_sel(sel: &Sel, ctx: &Ctx) -> Result<Sel> {
    let boxed = |s: &Sel| bind_sel(s, ctx).map(Box::new);
    Ok(match sel {
        Sel::Element {
            inner,
            coll,
            name,
            key,
        } => Sel::Element {
            inner: boxed(inner)?,
            coll: coll.clone(),
            name: name.clone(),
            key: bind_key(ctx, key, coll, name, "element")?,
        },
        Sel::Slice {
            inner,
            coll,
            name,
            from,
            to,
        } => Sel::Slice {
            inner: boxed(inner)?,
            coll: coll.clone(),
            name: name.clone(),
            from: bind_key(ctx, from, coll, name, "slice")?,
            to: bind_key(ctx, to, coll, name, "slice")?,
        },
        Sel::CellInfo { kind, column, pick } => {
            let (coll, name) = (&column.ty, &column.name);
            let pick = match pick {
                Pick::Whole => Pick::Whole,
                Pick::Element(k) => Pick::Element(bind_key(ctx, k, coll, name, "element")?),
                Pick::Slice(f, t) => Pick::Slice(
                    bind_key(ctx, f, coll, name, "slice")?,
                    bind_key(ctx, t, coll, name, "slice")?,
                ),
            };
            Sel::CellInfo {
                kind: *kind,
                column: column.clone(),
                pick,
            }
        }
        Sel::Func { name, args } => Sel::Func {
            name: name.clone(),
            args: args
                .iter()
                .map(|a| bind_sel(a, ctx))
                .collect::<Result<_>>()?,
        },
        Sel::Cast { inner, ty } => Sel::Cast {
            inner: boxed(inner)?,
            ty: ty.clone(),
        },
        Sel::Field { inner, index, ty } => Sel::Field {
            inner: boxed(inner)?,
            index: *index,
            ty: ty.clone(),
        },
        Sel::Aggregate { kind, arg } => Sel::Aggregate {
            kind: *kind,
            arg: arg.as_deref().map(boxed).transpose()?,
        },
        Sel::Marker { term, ty, receiver } => {
            let bytes = match eval(ctx, term, ty, receiver)? {
                Evaluated::Value(v) => Some(Bytes::from(codec::serialize(&v))),
                Evaluated::Null => None,
                Evaluated::Unset => {
                    return Err(QueryError::Invalid(format!(
                        "Invalid unset value for {receiver}"
                    )))
                }
            };
            Sel::Const(ty.clone(), bytes)
        }
        other => other.clone(),
    })
}

/// Evaluates one key or bound. A null is refused; an unset marker is an
/// open bound of a slice (Cassandra's own "no bound") and refused as an
/// element key.
fn bind_key(ctx: &Ctx, key: &Bound, coll: &CqlType, name: &str, what: &str) -> Result<Bound> {
    let Bound::Term(term) = key else {
        return Ok(key.clone());
    };
    let receiver = key_receiver(name, coll);
    match eval(ctx, term, &key_type(coll), &receiver)? {
        Evaluated::Value(v) => Ok(Bound::Value(Bytes::from(codec::serialize(&v)))),
        Evaluated::Unset if what == "slice" => Ok(Bound::Open),
        Evaluated::Null => Err(QueryError::Invalid(format!(
            "Invalid null value for {what} selection on {name}"
        ))),
        Evaluated::Unset => Err(QueryError::Invalid(format!(
            "Invalid unset value for {what} selection on {name}"
        ))),
    }
}

/// `collection[key]`: the value, or null.
pub fn eval_element(
    coll: &CqlType,
    collection: Option<Bytes>,
    key: &Bound,
) -> Result<Option<Bytes>> {
    match (collection, key.bytes()) {
        (Some(c), Some(k)) => element_bytes::element(coll, &c, k),
        _ => Ok(None),
    }
}

/// `collection[from..to]`: the entries between the bounds, or null.
pub fn eval_slice(
    coll: &CqlType,
    collection: Option<Bytes>,
    from: &Bound,
    to: &Bound,
) -> Result<Option<Bytes>> {
    match collection {
        Some(c) => element_bytes::slice(coll, &c, from.bytes(), to.bytes()),
        None => Ok(None),
    }
}

/// The type `writetime()`, `ttl()` or `maxwritetime()` of `pick` gives: a
/// list per element for a slice of a non-frozen collection (and a whole
/// one, which has its own selector), one value otherwise.
pub fn cell_info_type(kind: CellInfoKind, column: &Column, pick: &Pick) -> CqlType {
    let one = match kind {
        CellInfoKind::Ttl => CqlType::Int,
        _ => CqlType::BigInt,
    };
    let per_element = kind != CellInfoKind::MaxWriteTime
        && column.ty.is_multi_cell()
        && !matches!(pick, Pick::Element(_));
    if per_element {
        CqlType::List(Box::new(one))
    } else {
        one
    }
}

/// Evaluates `writetime()`, `ttl()` or `maxwritetime()` of `pick` on a row.
pub fn eval_cell_info(
    kind: CellInfoKind,
    column: &Column,
    pick: &Pick,
    view: &RowView,
    now: i32,
) -> Result<Option<Bytes>> {
    let cells = picked_cells(column, pick, view)?;
    if cells.is_empty() {
        return Ok(None);
    }
    let ttl = |cell: &Cell| {
        cell.is_expiring()
            .then(|| (cell.local_deletion_time - now).max(0))
    };
    let value = match kind {
        CellInfoKind::MaxWriteTime => {
            let max = cells.iter().map(|c| c.timestamp).max();
            max.map(Value::BigInt)
        }
        _ if cell_info_type(kind, column, pick) != CqlType::BigInt
            && cell_info_type(kind, column, pick) != CqlType::Int =>
        {
            let items: Vec<Option<Value>> = match kind {
                CellInfoKind::Ttl => {
                    if !cells.iter().any(|c| c.is_expiring()) {
                        return Ok(None);
                    }
                    cells.iter().map(|c| ttl(c).map(Value::Int)).collect()
                }
                _ => cells
                    .iter()
                    .map(|c| Some(Value::BigInt(c.timestamp)))
                    .collect(),
            };
            return Ok(Some(list_bytes(items)));
        }
        CellInfoKind::Ttl => ttl(cells[0]).map(Value::Int),
        CellInfoKind::WriteTime => Some(Value::BigInt(cells[0].timestamp)),
    };
    Ok(value.map(|v| Bytes::from(codec::serialize(&v))))
}

/// The cells `pick` covers: the element cells in the slice or the one of
/// the key for a non-frozen collection; for a frozen one (or any single
/// cell) its cell, when the element is there or the slice is not empty.
fn picked_cells<'a>(column: &Column, pick: &Pick, view: &RowView<'a>) -> Result<Vec<&'a Cell>> {
    let coll = &column.ty;
    if coll.is_multi_cell() {
        let cells = view.element_cells_with_paths(column);
        let kept = cells.into_iter().filter(|(path, _)| match pick {
            Pick::Whole => true,
            Pick::Element(k) => k
                .bytes()
                .is_some_and(|k| element_bytes::in_slice(coll, path, Some(k), Some(k))),
            Pick::Slice(f, t) => element_bytes::in_slice(coll, path, f.bytes(), t.bytes()),
        });
        return Ok(kept.map(|(_, c)| c).collect());
    }
    let Some(cell) = view.cell(column) else {
        return Ok(Vec::new());
    };
    let present = match pick {
        Pick::Whole => true,
        Pick::Element(k) => eval_element(coll, Some(cell.value.clone()), k)?.is_some(),
        Pick::Slice(f, t) => match eval_slice(coll, Some(cell.value.clone()), f, t)? {
            Some(b) => !element_bytes::entries(coll, &b)?.is_empty(),
            None => false,
        },
    };
    Ok(if present { vec![cell] } else { Vec::new() })
}

/// A serialized list whose items may be null.
fn list_bytes(items: Vec<Option<Value>>) -> Bytes {
    let mut out = Vec::new();
    out.extend_from_slice(&(items.len() as i32).to_be_bytes());
    for it in items {
        match it {
            Some(v) => {
                let b = codec::serialize(&v);
                out.extend_from_slice(&(b.len() as i32).to_be_bytes());
                out.extend_from_slice(&b);
            }
            None => out.extend_from_slice(&(-1i32).to_be_bytes()),
        }
    }
    Bytes::from(out)
}

/// The result type of `[key]` on a collection of type `coll`.
pub fn element_type(coll: &CqlType) -> CqlType {
    value_type(coll)
}
