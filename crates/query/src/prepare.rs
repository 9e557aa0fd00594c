//! What PREPARE tells the driver: the name and type of every bind marker,
//! and which markers carry the partition key (for token-aware routing).

use crate::api::ColumnSpec;
use crate::error::{QueryError, Result};
use bytes::Bytes;
use varve_cql::ast::{
    Assignment, Conditions, Operator, Parsed, QualifiedName, Relation, RelationLhs, Statement,
    Term, Using,
};
use varve_schema::{ColumnKind, Schema, Table};
use varve_types::CqlType;

/// Result shapes whose metadata id a thread remembers: a node serves few
/// distinct SELECT shapes, and every read returns one.
const METADATA_ID_MEMO_ENTRIES: usize = 16;

thread_local! {
    static METADATA_IDS: std::cell::RefCell<Vec<(Vec<ColumnSpec>, Bytes)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// A digest of result columns (the v5 result metadata id). Remembered per
/// thread for the last [`METADATA_ID_MEMO_ENTRIES`] shapes (compared in
/// full, so a hit is always the right id): hashing on every read cost more
/// than the read's own CPU share of decoding.
pub fn metadata_id(columns: &[ColumnSpec]) -> Bytes {
    let hit = METADATA_IDS.with(|memo| {
        let memo = memo.borrow();
        memo.iter()
            .find(|(specs, _)| specs.as_slice() == columns)
            .map(|(_, id)| id.clone())
    });
    if let Some(id) = hit {
        return id;
    }
    let id = digest(columns);
    METADATA_IDS.with(|memo| {
        let mut memo = memo.borrow_mut();
        if memo.len() >= METADATA_ID_MEMO_ENTRIES {
            memo.remove(0);
        }
        memo.push((columns.to_vec(), id.clone()));
    });
    id
}

fn digest(columns: &[ColumnSpec]) -> Bytes {
    use md5::{Digest, Md5};
    let mut h = Md5::new();
    for c in columns {
        h.update(c.keyspace.as_bytes());
        h.update([0]);
        h.update(c.table.as_bytes());
        h.update([0]);
        h.update(c.name.as_bytes());
        h.update([0]);
        h.update(c.ty.cql_name().as_bytes());
        h.update([1]);
    }
    Bytes::copy_from_slice(&h.finalize())
}

struct Specs<'a> {
    table: Option<&'a Table>,
    specs: Vec<Option<ColumnSpec>>,
    /// marker index bound by `pk = ?` per partition key position
    pk: Vec<Option<u16>>,
    /// The first invalid term met (reported once the walk is done).
    error: Option<QueryError>,
}

impl Specs<'_> {
    fn set(&mut self, index: usize, name: &str, ty: &CqlType) {
        let Some(t) = self.table else { return };
        if let Some(slot) = self.specs.get_mut(index) {
            *slot = Some(ColumnSpec {
                keyspace: t.keyspace.clone(),
                table: t.name.clone(),
                name: name.to_string(),
                ty: ty.unfrozen().clone(),
            });
        }
    }

    fn term(&mut self, term: &Term, name: &str, ty: &CqlType) {
        if let Err(e) = crate::terms::check_collection_literal(term, ty, name) {
            self.error.get_or_insert(e);
        }
        match term {
            Term::Bind(i) => self.set(*i, name, ty),
            // Cassandra names a marker inside a vector literal `value(v)`.
            Term::List(items) if ty.vector().is_some() => {
                let elem = ty.vector().map(|(e, _)| e.clone()).unwrap_or(CqlType::Blob);
                let inner = format!("value({name})");
                for it in items {
                    self.term(it, &inner, &elem);
                }
            }
            Term::List(items) | Term::Set(items) => {
                let elem = match ty.unfrozen() {
                    CqlType::List(e) | CqlType::Set(e) => (**e).clone(),
                    _ => CqlType::Blob,
                };
                for it in items {
                    self.term(it, name, &elem);
                }
            }
            Term::Map(entries) => {
                let (k, v) = match ty.unfrozen() {
                    CqlType::Map(k, v) => ((**k).clone(), (**v).clone()),
                    _ => (CqlType::Blob, CqlType::Blob),
                };
                for (kt, vt) in entries {
                    self.term(kt, name, &k);
                    self.term(vt, name, &v);
                }
            }
            Term::UserType(fields) => {
                let u = ty.user_type().cloned();
                for (f, it) in fields {
                    let fty = u
                        .as_ref()
                        .and_then(|u| Some(u.field_types[u.field_index(f)?].clone()))
                        .unwrap_or(CqlType::Blob);
                    self.term(it, &format!("{name}.{f}"), &fty);
                }
            }
            Term::Tuple(items) => {
                let types = match ty.tuple_fields() {
                    Some(ts) => ts.to_vec(),
                    None => vec![ty.unfrozen().clone(); items.len()],
                };
                for (it, t) in items.iter().zip(types.iter()) {
                    self.term(it, name, t);
                }
            }
            Term::FunctionCall { name: f, args } if f == "token" => {
                if let Some(t) = self.table {
                    let pk: Vec<(String, CqlType)> = t
                        .partition_key()
                        .map(|c| (c.name.clone(), c.ty.clone()))
                        .collect();
                    for (a, (n, ty)) in args.iter().zip(pk) {
                        self.term(a, &n, &ty);
                    }
                }
            }
            Term::FunctionCall { name: f, args }
                if crate::functions::canonical(f) == "fromjson" =>
            {
                for a in args {
                    self.term(a, crate::json::FROM_JSON_ARG, &CqlType::Text);
                }
            }
            Term::FunctionCall { args, .. } => {
                for a in args {
                    let ty = crate::functions::natural_type(a);
                    self.term(a, name, &ty);
                }
            }
            Term::Cast { ty, term } => self.term(term, name, ty),
            Term::Negate(inner) => {
                let arg = crate::arith::terms::argument_name(crate::arith::NEGATE, 0);
                self.term(inner, &arg, ty)
            }
            Term::Operation { op, left, right } => {
                let (lt, rt) = match crate::arith::terms::signature(*op, left, right, ty) {
                    Ok(sig) => (sig.left, sig.right),
                    Err(_) => (ty.clone(), ty.clone()),
                };
                let f = op.function_name();
                self.term(left, &crate::arith::terms::argument_name(f, 0), &lt);
                self.term(right, &crate::arith::terms::argument_name(f, 1), &rt);
            }
            Term::Literal(_) => {}
        }
    }

    /// Markers in a selection: the keys of element and slice selectors,
    /// named and typed by their collection (`key(m)`, `value(s)`).
    fn selector(&mut self, expr: &varve_cql::ast::SelectorExpr) {
        use crate::select::elements;
        use varve_cql::ast::SelectorExpr as E;
        let Some(t) = self.table else { return };
        match expr {
            E::Element { expr, key } => {
                self.selector(expr);
                if let Ok((_, name, ty)) = crate::select::selectors::compile_expr(t, expr) {
                    let receiver = elements::key_receiver(&name, &ty);
                    self.term(key, &receiver, &elements::key_type(&ty));
                }
            }
            E::Slice { expr, from, to } => {
                self.selector(expr);
                if let Ok((_, name, ty)) = crate::select::selectors::compile_expr(t, expr) {
                    let receiver = elements::key_receiver(&name, &ty);
                    for bound in [from, to].into_iter().flatten() {
                        self.term(bound, &receiver, &elements::key_type(&ty));
                    }
                }
            }
            E::FunctionCall { args, .. } => args.iter().for_each(|a| self.selector(a)),
            E::Cast { expr, .. }
            | E::Field { expr, .. }
            | E::CellInfo { arg: expr, .. }
            | E::Negate(expr)
            | E::Paren(expr) => self.selector(expr),
            E::Operation { left, right, .. } => {
                self.selector(left);
                self.selector(right);
            }
            _ => {}
        }
    }

    /// The markers among the arguments of the selection's functions and
    /// operations, typed by the compiled selection (an error there is
    /// reported by the statement's own compilation).
    fn selection_markers(&mut self, t: &Table, selection: &varve_cql::ast::Selection) {
        use crate::select::selectors::{compile, Sel};
        let Ok(projection) = compile(t, selection) else {
            return;
        };
        let mut markers = Vec::new();
        for sel in &projection.selectors {
            sel.markers(&mut markers);
        }
        for m in markers {
            if let Sel::Marker { term, ty, receiver } = m {
                self.term(term, receiver, ty);
            }
        }
    }

    /// The markers of a GROUP BY function (`floor(t, ?)`).
    fn group_by_markers(&mut self, t: &Table, group_by: &[varve_cql::ast::SelectorExpr]) {
        use crate::select::selectors::{compile_expr, Sel};
        for item in group_by {
            let Ok((sel, _, _)) = compile_expr(t, item) else {
                continue;
            };
            let mut markers = Vec::new();
            sel.markers(&mut markers);
            for m in markers {
                if let Sel::Marker { term, ty, receiver } = m {
                    self.term(term, receiver, ty);
                }
            }
        }
    }

    fn using(&mut self, u: &Using) {
        if let Some(t) = &u.ttl {
            self.term(t, "[ttl]", &CqlType::Int);
        }
        if let Some(t) = &u.timestamp {
            self.term(t, "[timestamp]", &CqlType::BigInt);
        }
    }

    fn relations(&mut self, rels: &[Relation]) {
        let Some(t) = self.table else { return };
        for r in rels {
            match &r.lhs {
                RelationLhs::Column(n) => {
                    let Some(c) = t.column(n) else { continue };
                    match r.op {
                        Operator::In => match &r.rhs {
                            Term::Bind(i) => self.set(
                                *i,
                                &format!("in({n})"),
                                &CqlType::List(Box::new(c.ty.clone())),
                            ),
                            other => self.term(other, n, &c.ty),
                        },
                        Operator::Contains => {
                            let e = match c.ty.unfrozen() {
                                CqlType::List(e) | CqlType::Set(e) | CqlType::Map(_, e) => {
                                    (**e).clone()
                                }
                                other => other.clone(),
                            };
                            self.term(&r.rhs, n, &e)
                        }
                        Operator::ContainsKey => {
                            let k = match c.ty.unfrozen() {
                                CqlType::Map(k, _) => (**k).clone(),
                                other => other.clone(),
                            };
                            self.term(&r.rhs, n, &k)
                        }
                        _ => {
                            if r.op == Operator::Eq && c.kind == ColumnKind::PartitionKey {
                                if let Term::Bind(i) = &r.rhs {
                                    if let Some(slot) = self.pk.get_mut(c.position as usize) {
                                        *slot = Some(*i as u16);
                                    }
                                }
                            }
                            self.term(&r.rhs, n, &c.ty)
                        }
                    }
                }
                RelationLhs::Columns(names) => {
                    let types: Vec<CqlType> = names
                        .iter()
                        .filter_map(|n| t.column(n).map(|c| c.ty.clone()))
                        .collect();
                    let tuple = CqlType::Tuple(types);
                    let shown = format!("({})", names.join(","));
                    match (&r.op, &r.rhs) {
                        (Operator::In, Term::Bind(i)) => {
                            self.set(*i, &format!("in({shown})"), &CqlType::List(Box::new(tuple)))
                        }
                        (Operator::In, Term::Tuple(items)) => {
                            for it in items {
                                self.term(it, &shown, &tuple);
                            }
                        }
                        (_, rhs) => self.term(rhs, &shown, &tuple),
                    }
                }
                RelationLhs::Token(_) => match &r.rhs {
                    Term::FunctionCall { .. } => {
                        self.term(&r.rhs, "partition key token", &CqlType::BigInt)
                    }
                    other => self.term(other, "partition key token", &CqlType::BigInt),
                },
                RelationLhs::MapElement { column, key } => {
                    if let Some(CqlType::Map(k, v)) =
                        t.column(column).map(|c| c.ty.unfrozen().clone())
                    {
                        self.term(key, &format!("key({column})"), &k);
                        self.term(&r.rhs, &format!("value({column})"), &v);
                    }
                }
            }
        }
    }

    fn conditions(&mut self, conds: &Conditions) {
        let (Conditions::If(list), Some(t)) = (conds, self.table) else {
            return;
        };
        for c in list {
            let Some(col) = t.column(&c.column) else {
                continue;
            };
            let ty = match (&c.element, col.ty.unfrozen()) {
                (Some(k), CqlType::Map(kt, vt)) => {
                    self.term(k, &format!("key({})", c.column), kt);
                    (**vt).clone()
                }
                (Some(i), CqlType::List(et)) => {
                    self.term(i, &format!("idx({})", c.column), &CqlType::Int);
                    (**et).clone()
                }
                _ => match crate::user_types::fields::condition_field(col, c.field.as_deref()) {
                    Ok((fty, _)) if c.field.is_some() => fty,
                    _ => col.ty.clone(),
                },
            };
            // An element's values are `value(m)`, as Cassandra names them.
            let receiver = match c.element {
                Some(_) => format!("value({})", c.column),
                None => c.column.clone(),
            };
            match (&c.op, &c.rhs) {
                (Operator::In, Term::Bind(i)) => {
                    self.set(*i, &format!("in({receiver})"), &CqlType::List(Box::new(ty)))
                }
                (Operator::In, Term::Tuple(items)) => {
                    for it in items {
                        self.term(it, &receiver, &ty);
                    }
                }
                (_, rhs) => self.term(rhs, &receiver, &ty),
            }
        }
    }
}

fn table<'s>(
    schema: &'s Schema,
    keyspace: Option<&str>,
    name: &QualifiedName,
) -> Result<&'s Table> {
    let ks = name.keyspace.as_deref().or(keyspace).ok_or_else(|| {
        QueryError::Invalid("No keyspace has been specified. USE a keyspace, or explicitly specify keyspace.tablename".into())
    })?;
    let k = schema
        .keyspace(ks)
        .ok_or_else(|| QueryError::Invalid(format!("Keyspace {ks} does not exist")))?;
    k.tables
        .get(&name.name)
        .map(|t| t.as_ref())
        .ok_or_else(|| QueryError::Invalid(format!("table {} does not exist", name.name)))
}

/// The bind specs of a statement and its partition key marker indices.
pub fn bind_specs(
    schema: &Schema,
    keyspace: Option<&str>,
    parsed: &Parsed,
) -> Result<(Vec<ColumnSpec>, Vec<u16>)> {
    let n = parsed.bind_markers.len();
    let mut tables: Vec<&Table> = Vec::new();
    let mut specs = Specs {
        table: None,
        specs: vec![None; n],
        pk: Vec::new(),
        error: None,
    };
    let mut pk_indices = Vec::new();
    let mut statements: Vec<&Statement> = vec![&parsed.statement];
    if let Statement::Batch(b) = &parsed.statement {
        statements = b.statements.iter().collect();
        specs.using(&b.using);
    }
    for (si, stmt) in statements.iter().enumerate() {
        let t = match stmt {
            Statement::Select(s) => Some(table(schema, keyspace, &s.table)?),
            Statement::Insert(i) => Some(table(schema, keyspace, &i.table)?),
            Statement::Update(u) => Some(table(schema, keyspace, &u.table)?),
            Statement::Delete(d) => Some(table(schema, keyspace, &d.table)?),
            _ => None,
        };
        let Some(t) = t else { continue };
        tables.push(t);
        specs.table = Some(t);
        specs.pk = vec![None; t.partition_key_len()];
        match stmt {
            Statement::Select(s) => {
                if let varve_cql::ast::Selection::Items(items) = &s.selection {
                    for item in items {
                        specs.selector(&item.expr);
                    }
                }
                specs.selection_markers(t, &s.selection);
                specs.relations(&s.where_clause);
                specs.group_by_markers(t, &s.group_by);
                if let Some(l) = &s.limit {
                    specs.term(l, "[limit]", &CqlType::Int);
                }
                if let Some(l) = &s.per_partition_limit {
                    specs.term(l, "[per_partition_limit]", &CqlType::Int);
                }
            }
            Statement::Insert(i) => {
                if let Some(j) = &i.json {
                    crate::json::check_insert_literal(t, i)?;
                    specs.term(j, crate::json::JSON_COLUMN, &CqlType::Text);
                }
                for (c, v) in i.columns.iter().zip(&i.values) {
                    if let Some(col) = t.column(c) {
                        if col.kind == ColumnKind::PartitionKey {
                            if let Term::Bind(b) = v {
                                if let Some(slot) = specs.pk.get_mut(col.position as usize) {
                                    *slot = Some(*b as u16);
                                }
                            }
                        }
                        specs.term(v, c, &col.ty);
                    }
                }
                specs.using(&i.using);
            }
            Statement::Update(u) => {
                specs.using(&u.using);
                for a in &u.assignments {
                    assignment(&mut specs, t, a);
                }
                specs.relations(&u.where_clause);
                specs.conditions(&u.conditions);
            }
            Statement::Delete(d) => {
                for target in &d.targets {
                    if let (Some(el), Some(col)) = (&target.element, t.column(&target.column)) {
                        match col.ty.unfrozen() {
                            CqlType::Map(k, _) => specs.term(el, &format!("key({})", col.name), k),
                            CqlType::Set(e) => specs.term(el, &col.name, e),
                            _ => specs.term(el, &format!("idx({})", col.name), &CqlType::Int),
                        }
                    }
                }
                specs.using(&d.using);
                specs.relations(&d.where_clause);
                specs.conditions(&d.conditions);
            }
            _ => {}
        }
        if si == 0 && specs.pk.iter().all(Option::is_some) && !specs.pk.is_empty() {
            pk_indices = specs.pk.iter().flatten().copied().collect();
        }
    }
    if let Some(e) = specs.error.take() {
        return Err(e);
    }
    let fallback = tables.first().copied();
    let out = specs
        .specs
        .into_iter()
        .enumerate()
        .map(|(i, s)| {
            s.unwrap_or_else(|| ColumnSpec {
                keyspace: fallback.map(|t| t.keyspace.clone()).unwrap_or_default(),
                table: fallback.map(|t| t.name.clone()).unwrap_or_default(),
                name: parsed
                    .bind_markers
                    .get(i)
                    .cloned()
                    .flatten()
                    .unwrap_or_else(|| format!("[{i}]")),
                ty: CqlType::Blob,
            })
        })
        .map(|mut s| {
            // A named marker keeps its own name.
            s.name = s.name.clone();
            s
        })
        .collect::<Vec<_>>();
    let mut out = out;
    for (i, m) in parsed.bind_markers.iter().enumerate() {
        if let (Some(name), Some(spec)) = (m, out.get_mut(i)) {
            spec.name = name.clone();
        }
    }
    Ok((out, pk_indices))
}

fn assignment(specs: &mut Specs, t: &Table, a: &Assignment) {
    match a {
        Assignment::Set { column, value }
        | Assignment::Add { column, value }
        | Assignment::Prepend { column, value } => {
            if let Some(c) = t.column(column) {
                specs.term(value, column, &c.ty);
            }
        }
        Assignment::Remove { column, value } => {
            if let Some(c) = t.column(column) {
                let ty = match c.ty.unfrozen() {
                    CqlType::Map(k, _) => CqlType::Set(k.clone()),
                    other => other.clone(),
                };
                specs.term(value, column, &ty);
            }
        }
        Assignment::SetField {
            column,
            field,
            value,
        } => {
            let fty = t.column(column).and_then(|c| {
                let u = c.ty.user_type()?;
                Some(u.field_types[u.field_index(field)?].clone())
            });
            if let Some(fty) = fty {
                specs.term(value, &format!("{column}.{field}"), &fty);
            }
        }
        Assignment::SetElement { column, key, value } => {
            if let Some(c) = t.column(column) {
                match c.ty.unfrozen() {
                    CqlType::Map(k, v) => {
                        specs.term(key, &format!("key({column})"), k);
                        specs.term(value, &format!("value({column})"), v);
                    }
                    CqlType::List(e) => {
                        specs.term(key, &format!("idx({column})"), &CqlType::Int);
                        specs.term(value, &format!("value({column})"), e);
                    }
                    _ => {}
                }
            }
        }
    }
}

#[cfg(test)]
mod metadata_id_tests {
    use super::*;

    fn spec(name: &str, ty: CqlType) -> ColumnSpec {
        ColumnSpec {
            keyspace: "ks".into(),
            table: "t".into(),
            name: name.into(),
            ty,
        }
    }

    #[test]
    fn remembered_ids_equal_fresh_digests_for_every_shape() {
        // More shapes than the memo holds, each asked twice, interleaved:
        // every answer must equal the digest computed from scratch.
        let shapes: Vec<Vec<ColumnSpec>> = (0..METADATA_ID_MEMO_ENTRIES + 5)
            .map(|i| {
                vec![
                    spec("k", CqlType::Int),
                    spec(&format!("c{i}"), CqlType::Text),
                ]
            })
            .collect();
        for round in 0..2 {
            for s in &shapes {
                assert_eq!(metadata_id(s), digest(s), "round {round}");
            }
        }
        let a = vec![spec("v", CqlType::Int)];
        let b = vec![spec("v", CqlType::BigInt)];
        assert_ne!(
            metadata_id(&a),
            metadata_id(&b),
            "a type change changes the id"
        );
    }
}
