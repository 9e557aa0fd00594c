//! The SELECT clause: what each output column is, its name and type, and
//! how it is computed from a row (or, for aggregates, from all rows).

pub use super::markers::{has_marker, marker};
pub use super::selector_eval::{cast, eval, type_of};

use super::aggregation::contains_aggregate;
use super::elements::{self, Bound, Pick};
use crate::api::ColumnSpec;
use crate::error::{QueryError, Result};
use crate::functions;
use bytes::Bytes;
use varve_cql::ast::{CellInfoKind, Selection, SelectorExpr};
use varve_schema::{Column, Table};
use varve_types::{codec, CqlType};

/// One compiled selector.
#[derive(Debug, Clone)]
pub enum Sel {
    /// A literal in the selection, already converted to its type.
    Const(CqlType, Option<Bytes>),
    Column(Column),
    WriteTime(Column),
    Ttl(Column),
    /// token(pk...)
    Token,
    Func {
        name: String,
        args: Vec<Sel>,
    },
    Cast {
        inner: Box<Sel>,
        ty: CqlType,
    },
    /// writetime() (`ttl: false`) or ttl() of field `index` of a user type
    /// column: its own cell when the column is not frozen.
    FieldCell {
        column: Column,
        index: usize,
        ttl: bool,
    },
    /// Field `index` of a user type value, of type `ty`.
    Field {
        inner: Box<Sel>,
        index: usize,
        ty: CqlType,
    },
    Aggregate {
        kind: Agg,
        arg: Option<Box<Sel>>,
    },
    /// `inner[key]` of a map or set (`coll`) shown as `name`
    /// (select/elements.rs).
    Element {
        inner: Box<Sel>,
        coll: CqlType,
        name: String,
        key: Bound,
    },
    /// `inner[from..to]` of a map or set.
    Slice {
        inner: Box<Sel>,
        coll: CqlType,
        name: String,
        from: Bound,
        to: Bound,
    },
    /// `writetime()`, `ttl()` or `maxwritetime()` of an element, a slice,
    /// or (maxwritetime) a whole column.
    CellInfo {
        kind: CellInfoKind,
        column: Column,
        pick: Pick,
    },
    /// A term with bind markers (`?`, or a vector literal holding some) as
    /// a function's argument: a value of `ty`, bound into a [`Sel::Const`]
    /// at each execution (`elements::bind`). `receiver` is the marker's
    /// name in the prepared metadata, as Cassandra names a function's
    /// arguments: `arg<i>(<function>)`.
    Marker {
        term: varve_cql::ast::Term,
        ty: CqlType,
        receiver: String,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agg {
    CountRows,
    Count,
    Min,
    Max,
    Sum,
    Avg,
}

/// The compiled SELECT clause.
pub struct Projection {
    pub selectors: Vec<Sel>,
    pub specs: std::sync::Arc<[ColumnSpec]>,
    pub aggregate: bool,
}

pub fn compile(table: &Table, selection: &Selection) -> Result<Projection> {
    let spec = |name: String, ty: CqlType| ColumnSpec {
        keyspace: table.keyspace.clone(),
        table: table.name.clone(),
        name,
        ty,
    };
    let mut selectors = Vec::new();
    let mut specs = Vec::new();
    match selection {
        Selection::Wildcard => {
            for c in table.visible_columns() {
                selectors.push(Sel::Column(c.clone()));
                specs.push(spec(c.name.clone(), c.ty.clone()));
            }
        }
        Selection::Items(items) => {
            for item in items {
                if let SelectorExpr::Paren(_) = &item.expr {
                    // Cassandra 5.0.4 takes a parenthesised selector of its
                    // own for a one-element tuple it cannot type.
                    let (_, name, _) = compile_expr(table, &item.expr)?;
                    return Err(QueryError::Invalid(format!(
                        "Cannot infer type for term {name} in selection clause (try using a cast to force a type)"
                    )));
                }
                let (sel, name, ty) = compile_expr(table, &item.expr)?;
                specs.push(spec(item.alias.clone().unwrap_or(name), ty));
                selectors.push(sel);
            }
        }
    }
    // writetime() and ttl() beside an aggregate show the first row's
    // value, as any other selector without an aggregate does (Cassandra
    // 5.0.4, tests/differential 12_writetime_with_aggregates).
    let aggregate = selectors.iter().any(contains_aggregate);
    Ok(Projection {
        selectors,
        specs: specs.into(),
        aggregate,
    })
}

fn column<'t>(table: &'t Table, name: &str) -> Result<&'t Column> {
    table.column(name).ok_or_else(|| {
        QueryError::Invalid(format!(
            "Undefined column name {name} in table {}.{}",
            table.keyspace, table.name
        ))
    })
}

pub(crate) fn compile_expr(table: &Table, expr: &SelectorExpr) -> Result<(Sel, String, CqlType)> {
    Ok(match expr {
        SelectorExpr::Operation { op, left, right } => {
            super::arithmetic::compile_operation(table, *op, left, right)?
        }
        SelectorExpr::Negate(x) => super::arithmetic::compile_negation(table, x)?,
        SelectorExpr::Paren(x) => {
            let (sel, name, ty) = compile_expr(table, x)?;
            (sel, format!("({name})"), ty)
        }
        SelectorExpr::Element { expr, key } => {
            let (inner, name, ty) = compile_expr(table, expr)?;
            elements::check_collection(&name, &ty, "Element")?;
            let shown = format!("{name}[{}]", elements::key_text(key));
            let result = elements::element_type(&ty);
            (
                Sel::Element {
                    inner: Box::new(inner),
                    coll: ty,
                    name,
                    key: Bound::Term(key.clone()),
                },
                shown,
                result,
            )
        }
        SelectorExpr::Slice { expr, from, to } => {
            let (inner, name, ty) = compile_expr(table, expr)?;
            elements::check_collection(&name, &ty, "Slice")?;
            let shown = elements::slice_text(&name, from.as_ref(), to.as_ref());
            let bound = |t: &Option<varve_cql::ast::Term>| match t {
                Some(t) => Bound::Term(t.clone()),
                None => Bound::Open,
            };
            (
                Sel::Slice {
                    inner: Box::new(inner),
                    coll: ty.clone(),
                    name,
                    from: bound(from),
                    to: bound(to),
                },
                shown,
                ty,
            )
        }
        SelectorExpr::CellInfo { kind, arg } => compile_cell_info(table, *kind, arg)?,
        SelectorExpr::Column(n) => {
            let c = column(table, n)?;
            (Sel::Column(c.clone()), c.name.clone(), c.ty.clone())
        }
        SelectorExpr::WriteTime(n) | SelectorExpr::Ttl(n) => {
            let c = column(table, n)?;
            let is_wt = matches!(expr, SelectorExpr::WriteTime(_));
            let fname = if is_wt { "writetime" } else { "ttl" };
            if c.is_primary_key() {
                return Err(QueryError::Invalid(format!(
                    "Cannot use selection function {fname} on PRIMARY KEY part {n}"
                )));
            }
            if c.ty.is_multi_cell() {
                // Cassandra 5.0: one value per element, as a list.
                let (sel, elem) = if is_wt {
                    (Sel::WriteTime(c.clone()), CqlType::BigInt)
                } else {
                    (Sel::Ttl(c.clone()), CqlType::Int)
                };
                return Ok((sel, format!("{fname}({n})"), CqlType::List(Box::new(elem))));
            }
            if is_wt {
                (
                    Sel::WriteTime(c.clone()),
                    format!("writetime({n})"),
                    CqlType::BigInt,
                )
            } else {
                (Sel::Ttl(c.clone()), format!("ttl({n})"), CqlType::Int)
            }
        }
        SelectorExpr::CountStar => (
            Sel::Aggregate {
                kind: Agg::CountRows,
                arg: None,
            },
            "count".into(),
            CqlType::BigInt,
        ),
        SelectorExpr::FieldWriteTime {
            column: n,
            field,
            ttl,
        } => crate::user_types::fields::compile_cell_info(column(table, n)?, field, *ttl)?,
        SelectorExpr::Field { expr, field } => {
            let (inner, name, ty) = compile_expr(table, expr)?;
            let (index, fty) = crate::user_types::fields::field_of(&name, &ty, field)?;
            (
                Sel::Field {
                    inner: Box::new(inner),
                    index,
                    ty: fty.clone(),
                },
                format!("{name}.{}", crate::describe::quote(field)),
                fty,
            )
        }
        SelectorExpr::Cast { expr, ty } => {
            let (inner, name, from) = compile_expr(table, expr)?;
            if from.vector().is_some() {
                return Err(super::similarity::vector_cast_error(&name, ty));
            }
            // A cast to the type it has is no cast: Cassandra names the
            // column as the bare selector.
            if super::cast::check(&name, &from, ty)? {
                return Ok((inner, name, from));
            }
            (
                Sel::Cast {
                    inner: Box::new(inner),
                    ty: ty.clone(),
                },
                format!("cast({name} as {ty})"),
                ty.clone(),
            )
        }
        // A bare literal has no type of its own in a selection (Cassandra
        // 5.0.4); a cast gives it one.
        SelectorExpr::Term(varve_cql::ast::Term::Literal(lit)) => {
            return Err(QueryError::Invalid(format!(
                "Cannot infer type for term {} in selection clause (try using a cast to force a type)",
                literal_text(lit).replace("null", "NULL")
            )));
        }
        SelectorExpr::Term(term @ varve_cql::ast::Term::List(_)) => {
            return Err(QueryError::Invalid(format!(
                "Cannot infer type for term {} in selection clause (try using a cast to force a type)",
                crate::vectors::term_text(term)
            )));
        }
        SelectorExpr::Term(term) => {
            let ty = crate::functions::natural_type(term);
            constant(term, ty)?
        }
        SelectorExpr::FunctionCall { name, args }
            if crate::vectors::is_similarity(&name.to_ascii_lowercase()) =>
        {
            super::similarity::compile(table, &name.to_ascii_lowercase(), args)?
        }
        SelectorExpr::FunctionCall { name, args } => {
            let lname = name.to_ascii_lowercase();
            check_json_function(&lname, args)?;
            let mut compiled = Vec::new();
            let mut names = Vec::new();
            let mut types = Vec::new();
            for (i, a) in args.iter().enumerate() {
                let (s, n, t) = match a {
                    SelectorExpr::Term(term) => {
                        let ty = crate::functions::argument_type(&lname, i, term, types.first())
                            .unwrap_or_else(|| crate::functions::natural_type(term));
                        constant(term, ty.clone()).map_err(|e| match lname.as_str() {
                            "mask_replace" => QueryError::Invalid(format!(
                                "Type error: {} cannot be passed as argument {i} of function system.{lname} of type {ty}",
                                crate::vectors::term_text(term)
                            )),
                            _ => e,
                        })?
                    }
                    _ => compile_expr(table, a)?,
                };
                compiled.push(s.named_in_selection());
                names.push(n);
                types.push(t);
            }
            let shown = format!("system.{lname}({})", names.join(", "));
            let agg = match lname.as_str() {
                "count" => Some(Agg::Count),
                "min" => Some(Agg::Min),
                "max" => Some(Agg::Max),
                "sum" => Some(Agg::Sum),
                "avg" => Some(Agg::Avg),
                _ => None,
            };
            if let Some(kind) = agg {
                if compiled.iter().any(contains_aggregate) {
                    return Err(QueryError::Invalid(
                        "aggregate functions cannot be used as arguments of aggregate functions"
                            .into(),
                    ));
                }
                if compiled.len() != 1 {
                    return Err(QueryError::Invalid(format!("Invalid number of arguments in call to function system.{lname}: 1 required but {} provided", compiled.len())));
                }
                let ty = if kind == Agg::Count {
                    CqlType::BigInt
                } else {
                    types[0].clone()
                };
                if matches!(kind, Agg::Sum | Agg::Avg) && !is_numeric(&ty) {
                    return Err(QueryError::Invalid(format!(
                        "Invalid call to function {lname}: argument of type {ty} is not numeric"
                    )));
                }
                let shown = if kind == Agg::Count && names[0] == "1" {
                    "count".to_string()
                } else {
                    shown
                };
                return Ok((
                    Sel::Aggregate {
                        kind,
                        arg: Some(Box::new(compiled.remove(0))),
                    },
                    shown,
                    ty,
                ));
            }
            if lname == "token" {
                let pk: Vec<&str> = table.partition_key().map(|c| c.name.as_str()).collect();
                if names.iter().map(String::as_str).collect::<Vec<_>>() != pk {
                    return Err(QueryError::Invalid(format!("Invalid arguments for token(): the partition key ({}) must be given in order", pk.join(", "))));
                }
                return Ok((Sel::Token, shown, CqlType::BigInt));
            }
            if crate::mask_fns::is_mask_function(&lname) {
                let first_is_null = matches!(
                    args.first(),
                    Some(SelectorExpr::Term(varve_cql::ast::Term::Literal(
                        varve_cql::ast::Literal::Null
                    )))
                );
                crate::mask_fns::check(&lname, &names, &types, first_is_null)?;
            }
            if crate::collection_fns::is_collection_function(&lname) && names.len() == 1 {
                crate::collection_fns::return_type(&lname, &names[0], &types[0])?;
            }
            crate::functions::check_arguments(&lname, &types)?;
            // Find the return type by applying the function to nulls.
            let probe: Vec<functions::Typed> = types.iter().map(|t| (t.clone(), None)).collect();
            let (ret, _) = functions::apply(&lname, probe)?;
            (
                Sel::Func {
                    name: lname,
                    args: compiled,
                },
                shown,
                ret,
            )
        }
    })
}

/// `writetime()`, `ttl()` or `maxwritetime()` of an element or a slice of
/// a column, or `maxwritetime()` of a column or a field.
fn compile_cell_info(
    table: &Table,
    kind: CellInfoKind,
    arg: &SelectorExpr,
) -> Result<(Sel, String, CqlType)> {
    let fname = kind.name();
    let (column_name, bound_of) = match arg {
        SelectorExpr::Column(c) => (c, None),
        SelectorExpr::Element { expr, .. }
        | SelectorExpr::Slice { expr, .. }
        | SelectorExpr::Field { expr, .. } => match &**expr {
            SelectorExpr::Column(c) => (c, Some(arg)),
            _ => return Err(cell_info_refused(table, kind, arg)),
        },
        _ => return Err(cell_info_refused(table, kind, arg)),
    };
    let c = column(table, column_name)?;
    if c.is_primary_key() {
        return Err(QueryError::Invalid(format!(
            "Cannot use selection function {fname} on PRIMARY KEY part {}",
            c.name
        )));
    }
    // Checks the selection itself (a list, a key of the wrong kind) and
    // gives its name.
    let (_, shown, _) = compile_expr(table, arg)?;
    let name = format!("{fname}({shown})");
    let pick = match bound_of {
        None => Pick::Whole,
        Some(SelectorExpr::Element { key, .. }) => Pick::Element(Bound::Term(key.clone())),
        Some(SelectorExpr::Slice { from, to, .. }) => {
            let bound = |t: &Option<varve_cql::ast::Term>| match t {
                Some(t) => Bound::Term(t.clone()),
                None => Bound::Open,
            };
            Pick::Slice(bound(from), bound(to))
        }
        Some(SelectorExpr::Field { field, .. }) => {
            // maxwritetime of one field: its cell's writetime.
            let (sel, _, ty) = crate::user_types::fields::compile_cell_info(c, field, false)?;
            return Ok((sel, name, ty));
        }
        Some(_) => return Err(cell_info_refused(table, kind, arg)),
    };
    let ty = elements::cell_info_type(kind, c, &pick);
    let sel = Sel::CellInfo {
        kind,
        column: c.clone(),
        pick,
    };
    Ok((sel, name, ty))
}

/// `writetime()` and its kin of something that is not (an element, a
/// slice or a field of) a column.
fn cell_info_refused(table: &Table, kind: CellInfoKind, arg: &SelectorExpr) -> QueryError {
    match compile_expr(table, arg) {
        Err(e) => e,
        Ok((_, shown, _)) => QueryError::Invalid(format!(
            "Invalid argument {shown} for {}(): only a column, one of its elements or slices, or a field",
            kind.name()
        )),
    }
}

/// `fromJson()` has no place in a selection; `toJson()` takes one argument
/// of a known type.
fn check_json_function(lname: &str, args: &[SelectorExpr]) -> Result<()> {
    use varve_cql::ast::{Literal, Term};
    match crate::functions::canonical(lname).as_str() {
        "fromjson" => Err(QueryError::Invalid(format!(
            "{lname}() cannot be used in the selection clause of a SELECT statement"
        ))),
        "tojson" if args.len() != 1 => Err(QueryError::Invalid(
            "Invalid number of arguments for function system.tojson(any)".into(),
        )),
        "tojson" if matches!(args[0], SelectorExpr::Term(Term::Literal(Literal::Null))) => {
            Err(QueryError::Invalid("Cannot infer type of argument NULL in call to function system.tojson(any): use type casts to disambiguate".into()))
        }
        _ => Ok(()),
    }
}

/// A literal selector: its value, the name Cassandra shows, its type.
pub(super) fn constant(term: &varve_cql::ast::Term, ty: CqlType) -> Result<(Sel, String, CqlType)> {
    use varve_cql::ast::Term;
    let (lit, ty, shown) = match term {
        Term::Literal(lit) => (lit, ty, literal_text(lit)),
        Term::Bind(_) => return Ok(marker(term, ty, "?".into())),
        Term::Cast { ty, term } => match &**term {
            Term::Bind(_) => return Ok(marker(term, ty.clone(), format!("({ty})?"))),
            Term::Literal(lit) => (lit, ty.clone(), format!("({ty}){}", literal_text(lit))),
            Term::List(_) if ty.vector().is_some() => {
                return super::similarity::vector_constant(ty, term)
            }
            inner if is_composite_literal(inner, ty) => {
                // A tuple cast is named as written (`(tuple<int, text>)`),
                // not frozen as its column type prints.
                let written = ty.cql_name();
                let written = match ty {
                    CqlType::Tuple(_) => written
                        .strip_prefix("frozen<")
                        .and_then(|w| w.strip_suffix('>'))
                        .unwrap_or(&written)
                        .to_string(),
                    _ => written,
                };
                let shown = format!("({written}){}", crate::vectors::term_text(inner));
                return composite_constant(inner, ty.clone(), shown);
            }
            _ => return Err(only_literals()),
        },
        composite if is_composite_literal(composite, &ty) => {
            let shown = crate::vectors::term_text(composite);
            return composite_constant(composite, ty, shown);
        }
        _ => return Err(only_literals()),
    };
    let value = crate::terms::eval_literal(lit, &ty, "selection")?;
    let bytes = value.map(|v| Bytes::from(codec::serialize(&v)));
    Ok((Sel::Const(ty.clone(), bytes), shown, ty))
}

/// A collection or tuple literal without markers, given where its type is
/// known (a function's argument typed by the function, or a cast).
fn is_composite_literal(term: &varve_cql::ast::Term, ty: &CqlType) -> bool {
    use varve_cql::ast::Term;
    let shaped = matches!(
        term,
        Term::List(_) | Term::Set(_) | Term::Map(_) | Term::Tuple(_)
    );
    let typed = matches!(
        ty.unfrozen(),
        CqlType::List(_) | CqlType::Set(_) | CqlType::Map(..) | CqlType::Tuple(_) | CqlType::Udt(_)
    );
    shaped && typed && !super::markers::has_marker(term)
}

/// The constant of a collection or tuple literal of type `ty`, evaluated
/// as a write's value is (no marker is left to bind).
fn composite_constant(
    term: &varve_cql::ast::Term,
    ty: CqlType,
    shown: String,
) -> Result<(Sel, String, CqlType)> {
    let opts = crate::api::QueryOptions::default();
    let ctx = crate::context::Ctx {
        schema: Default::default(),
        creator: None,
        values: Vec::new(),
        keyspace: None,
        opts: &opts,
        timestamp_micros: 0,
        now_seconds: 0,
        warnings: Vec::new(),
        allow_filtering: false,
        read_shape: None,
    };
    let value = crate::terms::eval(&ctx, term, &ty, "selection")?.into_option();
    let bytes = value.map(|v| Bytes::from(codec::serialize(&v)));
    Ok((Sel::Const(ty.clone(), bytes), shown, ty))
}

fn only_literals() -> QueryError {
    QueryError::Invalid("Only literals are supported as terms in the selection clause".into())
}

/// A literal as written, which is how Cassandra names its column.
pub(crate) fn literal_text(lit: &varve_cql::ast::Literal) -> String {
    use varve_cql::ast::Literal;
    match lit {
        Literal::String(s) => format!("'{}'", s.replace('\'', "''")),
        Literal::Integer(s) | Literal::Float(s) | Literal::Duration(s) => s.clone(),
        Literal::Boolean(b) => b.to_string(),
        Literal::Uuid(u) => varve_types::time::format_uuid(u),
        Literal::Blob(b) => format!(
            "0x{}",
            b.iter().map(|x| format!("{x:02x}")).collect::<String>()
        ),
        Literal::Null => "NULL".into(),
    }
}

fn is_numeric(ty: &CqlType) -> bool {
    matches!(
        ty,
        CqlType::TinyInt
            | CqlType::SmallInt
            | CqlType::Int
            | CqlType::BigInt
            | CqlType::Varint
            | CqlType::Float
            | CqlType::Double
            | CqlType::Decimal
            | CqlType::Counter
    )
}
