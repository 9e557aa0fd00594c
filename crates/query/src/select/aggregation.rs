//! Aggregate queries: the running state of every aggregate in the SELECT
//! clause, and the one row it ends in.
//!
//! A selector may hold aggregates anywhere inside it: `todate(min(b))`,
//! `cast(avg(d) as int)`. Cassandra evaluates the aggregate over the rows
//! and the scalar function over its result. So each selector is cut into
//! *slots*, walking it depth first: an aggregate, or a part with no
//! aggregate in it (a column, a constant, `writetime(v)`...), which shows
//! its value on the first row. Rows feed the slots; the result evaluates
//! the functions and casts above the slots on their values.

use super::selectors::{self, cast, type_of, Agg, Projection, Sel};
use crate::error::{QueryError, Result};
use crate::functions;
use crate::rows::RowView;
use crate::sum_avg::SumAvg;
use bytes::Bytes;
use std::cmp::Ordering;
use varve_types::{codec, compare, CqlType, Value};

/// What one slot keeps.
#[derive(Debug, Clone)]
enum Slot {
    Aggregate(AggState),
    /// The value on the first row (`None` until a row comes).
    First(Option<Option<Bytes>>),
}

/// The running state of an aggregate query's SELECT clause.
#[derive(Debug, Clone)]
pub struct Aggregation {
    slots: Vec<Slot>,
}

/// True when `sel` has an aggregate anywhere inside it.
pub fn contains_aggregate(sel: &Sel) -> bool {
    match sel {
        Sel::Aggregate { .. } => true,
        Sel::Func { args, .. } => args.iter().any(contains_aggregate),
        Sel::Cast { inner, .. } => contains_aggregate(inner),
        _ => false,
    }
}

/// Calls `f` on each slot of `sel`, depth first (see the module doc).
fn for_each_slot<'s>(sel: &'s Sel, f: &mut impl FnMut(&'s Sel)) {
    match sel {
        Sel::Func { args, .. } if contains_aggregate(sel) => {
            args.iter().for_each(|a| for_each_slot(a, f));
        }
        Sel::Cast { inner, .. } if contains_aggregate(sel) => for_each_slot(inner, f),
        _ => f(sel),
    }
}

impl Aggregation {
    pub fn new(projection: &Projection) -> Self {
        let mut slots = Vec::new();
        for sel in &projection.selectors {
            for_each_slot(sel, &mut |s| {
                slots.push(match s {
                    Sel::Aggregate { .. } => Slot::Aggregate(AggState::default()),
                    _ => Slot::First(None),
                })
            });
        }
        Aggregation { slots }
    }

    /// Feeds one row to every slot.
    pub fn add(
        &mut self,
        projection: &Projection,
        view: &RowView,
        token: i64,
        now: i32,
    ) -> Result<()> {
        let mut slots = self.slots.iter_mut();
        let mut result = Ok(());
        for sel in &projection.selectors {
            for_each_slot(sel, &mut |s| {
                let Some(slot) = slots.next() else {
                    return;
                };
                if result.is_err() {
                    return;
                }
                result = match slot {
                    Slot::Aggregate(state) => accumulate(s, state, view, token, now),
                    Slot::First(Some(_)) => Ok(()),
                    Slot::First(first) => {
                        selectors::eval(s, view, token, now).map(|v| *first = Some(v))
                    }
                };
            });
        }
        result
    }

    /// The one result row.
    pub fn row(&self, projection: &Projection) -> Result<Vec<Option<Bytes>>> {
        let mut slots = self.slots.iter();
        projection
            .selectors
            .iter()
            .map(|sel| value(sel, &mut slots))
            .collect()
    }
}

/// The value of `sel` from its slots, applying the functions and casts
/// above them.
fn value<'a>(sel: &Sel, slots: &mut impl Iterator<Item = &'a Slot>) -> Result<Option<Bytes>> {
    match sel {
        Sel::Func { name, args } if contains_aggregate(sel) => {
            let mut typed = Vec::with_capacity(args.len());
            for a in args {
                let ty = type_of(a);
                let v = value(a, slots)?.map(|b| decode(&ty, &b)).transpose()?;
                typed.push((ty, v));
            }
            let (_, v) = functions::apply(name, typed)?;
            Ok(v.map(|v| Bytes::from(codec::serialize(&v))))
        }
        Sel::Cast { inner, ty } if contains_aggregate(sel) => {
            let Some(bytes) = value(inner, slots)? else {
                return Ok(None);
            };
            let v = cast(&type_of(inner), &bytes, ty)?;
            Ok(Some(Bytes::from(codec::serialize(&v))))
        }
        _ => Ok(match slots.next() {
            Some(Slot::Aggregate(state)) => finish(sel, state),
            Some(Slot::First(first)) => first.clone().flatten(),
            None => None,
        }),
    }
}

fn decode(ty: &CqlType, bytes: &[u8]) -> Result<Value> {
    codec::deserialize(ty, bytes).map_err(|e| QueryError::Server(e.to_string()))
}

/// The running state of one aggregate.
#[derive(Debug, Clone, Default)]
struct AggState {
    count: i64,
    best: Option<Bytes>,
    /// sum and avg: the running sum and mean (see [`crate::sum_avg`]).
    numbers: Option<Box<SumAvg>>,
}

fn accumulate(sel: &Sel, state: &mut AggState, view: &RowView, token: i64, now: i32) -> Result<()> {
    let Sel::Aggregate { kind, arg } = sel else {
        return Ok(());
    };
    let Some(arg) = arg else {
        state.count += 1;
        return Ok(());
    };
    let Some(value) = selectors::eval(arg, view, token, now)? else {
        return Ok(());
    };
    state.count += 1;
    let ty = type_of(arg);
    match kind {
        Agg::Min | Agg::Max => {
            let replace = match &state.best {
                None => true,
                Some(b) => {
                    let ord = compare::compare(&ty, &value, b);
                    (*kind == Agg::Min && ord == Ordering::Less)
                        || (*kind == Agg::Max && ord == Ordering::Greater)
                }
            };
            if replace {
                state.best = Some(value);
            }
        }
        Agg::Sum | Agg::Avg => {
            let v = decode(&ty, &value)?;
            state
                .numbers
                .get_or_insert_with(|| Box::new(SumAvg::new(&ty)))
                .add(&v)
                .map_err(QueryError::Invalid)?;
        }
        _ => {}
    }
    Ok(())
}

fn finish(sel: &Sel, state: &AggState) -> Option<Bytes> {
    let Sel::Aggregate { kind, arg } = sel else {
        return None;
    };
    let ty = arg.as_ref().map(|a| type_of(a)).unwrap_or(CqlType::BigInt);
    let value = match kind {
        Agg::Count | Agg::CountRows => Value::BigInt(state.count),
        Agg::Min | Agg::Max => return state.best.clone(),
        Agg::Sum | Agg::Avg => {
            let numbers = state
                .numbers
                .as_deref()
                .cloned()
                .unwrap_or_else(|| SumAvg::new(&ty));
            if *kind == Agg::Avg {
                numbers.avg()
            } else {
                numbers.sum()
            }
        }
    };
    Some(Bytes::from(codec::serialize(&value)))
}
