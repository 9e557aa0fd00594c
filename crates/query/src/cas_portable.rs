//! A conditional statement's decision as bytes, so that a cluster can hand
//! the statement to its partition's home replica (docs/design/paxos.md,
//! section 7.1) and the home's query layer rebuilds the same decider
//! there: the checks with their evaluated values, the planned update and
//! the timestamp it was planned with. Byte layout: docs/format/cas-decider.md.
//!
//! Values travel in their CQL serialization; the rebuilding node reads
//! them with the types its own schema gives the columns, so a column it
//! does not know (a schema change not yet there) refuses the statement,
//! which then runs where it came from.

use std::sync::Arc;

use bytes::Bytes;
use varve_cql::ast::Operator;
use varve_schema::{Schema, Table};
use varve_storage::encoding::{self, Reader, PARTITION_ENCODING_VERSION};
use varve_storage::PartitionKey;
use varve_types::{codec, CqlType, Value};

use crate::cas::{CasCheck, CasKind, Cond, StatementDecider};
use crate::data_path::{CasDecider, TableId};

/// The layout's version, first byte of every encoding.
pub const CAS_DECIDER_VERSION: u8 = 1;

/// The most checks (statements of a conditional batch) and conditions
/// per check, and values per condition, a rebuilt decider may hold.
pub const MAX_CAS_ITEMS: usize = 65_535;

const NOT_EXISTS: u8 = 0;
const EXISTS: u8 = 1;
const CONDITIONS: u8 = 2;

const OPERATORS: [Operator; 9] = [
    Operator::Eq,
    Operator::Ne,
    Operator::Lt,
    Operator::Le,
    Operator::Gt,
    Operator::Ge,
    Operator::In,
    Operator::Contains,
    Operator::ContainsKey,
];

/// The decider's bytes.
pub(crate) fn encode(d: &StatementDecider) -> Bytes {
    let mut out = Vec::with_capacity(128);
    out.push(CAS_DECIDER_VERSION);
    out.extend_from_slice(&d.table.id.to_be_bytes());
    out.extend_from_slice(&d.planned_micros.to_be_bytes());
    out.push(u8::from(d.is_batch));
    out.push(PARTITION_ENCODING_VERSION);
    let mut update = Vec::new();
    encoding::encode_partition(&mut update, &d.update);
    put_bytes(&mut out, &update);
    put_count(&mut out, d.checks.len());
    for c in &d.checks {
        put_check(&mut out, c);
    }
    Bytes::from(out)
}

fn put_count(out: &mut Vec<u8>, n: usize) {
    encoding::put_varint(out, n as u64);
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_count(out, b.len());
    out.extend_from_slice(b);
}

fn put_value(out: &mut Vec<u8>, v: Option<&Value>) {
    match v {
        None => out.push(0),
        Some(v) => {
            out.push(1);
            put_bytes(out, &codec::serialize(v));
        }
    }
}

fn put_check(out: &mut Vec<u8>, c: &CasCheck) {
    put_bytes(out, &c.key.key);
    out.extend_from_slice(&c.key.token.to_be_bytes());
    match &c.clustering {
        None => out.push(0),
        Some(ck) => {
            out.push(1);
            put_count(out, ck.len());
            for v in ck {
                put_bytes(out, v);
            }
        }
    }
    match &c.kind {
        CasKind::NotExists => out.push(NOT_EXISTS),
        CasKind::Exists => out.push(EXISTS),
        CasKind::Conditions(conds) => {
            out.push(CONDITIONS);
            put_count(out, conds.len());
            for cond in conds {
                put_bytes(out, cond.column.name.as_bytes());
                put_value(out, cond.element.as_ref());
                let op = OPERATORS.iter().position(|o| *o == cond.op);
                out.push(op.map_or(u8::MAX, |i| i as u8));
                put_count(out, cond.values.len());
                for v in &cond.values {
                    put_value(out, v.as_ref());
                }
            }
        }
    }
}

/// Rebuilds the decider `bytes` encode, for `table` of `schema`.
pub fn rebuild(
    schema: &Schema,
    table: TableId,
    bytes: &[u8],
) -> Result<Arc<dyn CasDecider>, String> {
    let mut r = Reader::new(bytes);
    let bad = |e: encoding::DecodeError| format!("conditional statement: {e}");
    let version = r.u8().map_err(bad)?;
    if version != CAS_DECIDER_VERSION {
        return Err(format!("conditional statement layout {version}"));
    }
    let id = u128::from_be_bytes(take_array(&mut r)?);
    if id != table {
        return Err(format!(
            "a statement of table {id:032x} sent for {table:032x}"
        ));
    }
    let table = schema
        .table_by_id(id)
        .ok_or_else(|| format!("unknown table {id:032x}"))?
        .clone();
    let planned_micros = r.i64().map_err(bad)?;
    let is_batch = read_flag(&mut r)?;
    let partition_version = r.u8().map_err(bad)?;
    let update_bytes = read_bytes(&mut r)?;
    let cmp = crate::comparator::of(&table);
    let update =
        encoding::decode_partition_v(&mut Reader::new(update_bytes), &cmp, partition_version)
            .map_err(bad)?;
    let n = read_count(&mut r)?;
    let mut checks = Vec::with_capacity(n.min(16));
    for _ in 0..n {
        checks.push(read_check(&mut r, &table)?);
    }
    if !r.is_empty() {
        return Err("conditional statement: bytes after its end".into());
    }
    if checks.is_empty() {
        return Err("conditional statement without a check".into());
    }
    Ok(Arc::new(StatementDecider {
        table,
        checks,
        update,
        planned_micros,
        is_batch,
    }))
}

fn take_array<const N: usize>(r: &mut Reader<'_>) -> Result<[u8; N], String> {
    let b = r
        .take(N)
        .map_err(|e| format!("conditional statement: {e}"))?;
    let mut a = [0u8; N];
    a.copy_from_slice(b);
    Ok(a)
}

fn read_count(r: &mut Reader<'_>) -> Result<usize, String> {
    let n = r
        .varint()
        .map_err(|e| format!("conditional statement: {e}"))?;
    usize::try_from(n)
        .ok()
        .filter(|&n| n <= MAX_CAS_ITEMS)
        .ok_or_else(|| format!("conditional statement: {n} items (at most {MAX_CAS_ITEMS})"))
}

fn read_bytes<'a>(r: &mut Reader<'a>) -> Result<&'a [u8], String> {
    let n = r
        .varint()
        .map_err(|e| format!("conditional statement: {e}"))?;
    let n = usize::try_from(n).map_err(|_| "conditional statement: length".to_string())?;
    r.take(n).map_err(|e| format!("conditional statement: {e}"))
}

fn read_flag(r: &mut Reader<'_>) -> Result<bool, String> {
    match r.u8().map_err(|e| format!("conditional statement: {e}"))? {
        0 => Ok(false),
        1 => Ok(true),
        b => Err(format!("conditional statement: flag {b}")),
    }
}

fn read_value(r: &mut Reader<'_>, ty: &CqlType) -> Result<Option<Value>, String> {
    if !read_flag(r)? {
        return Ok(None);
    }
    let b = read_bytes(r)?;
    codec::deserialize(ty, b)
        .map(Some)
        .map_err(|e| format!("conditional statement: a value of type {ty:?}: {e}"))
}

fn read_check(r: &mut Reader<'_>, table: &Arc<Table>) -> Result<CasCheck, String> {
    let key = PartitionKey::new(Bytes::copy_from_slice(read_bytes(r)?));
    let token = r.i64().map_err(|e| format!("conditional statement: {e}"))?;
    if token != key.token {
        return Err(format!(
            "conditional statement: token {token} is not the key's ({})",
            key.token
        ));
    }
    let clustering = if read_flag(r)? {
        let n = read_count(r)?;
        let mut ck = Vec::with_capacity(n.min(16));
        for _ in 0..n {
            ck.push(Bytes::copy_from_slice(read_bytes(r)?));
        }
        Some(ck)
    } else {
        None
    };
    let kind = match r.u8().map_err(|e| format!("conditional statement: {e}"))? {
        NOT_EXISTS => CasKind::NotExists,
        EXISTS => CasKind::Exists,
        CONDITIONS => {
            let n = read_count(r)?;
            let mut conds = Vec::with_capacity(n.min(16));
            for _ in 0..n {
                conds.push(read_condition(r, table)?);
            }
            CasKind::Conditions(conds)
        }
        k => return Err(format!("conditional statement: check kind {k}")),
    };
    Ok(CasCheck {
        table: Arc::clone(table),
        key,
        clustering,
        kind,
    })
}

fn read_condition(r: &mut Reader<'_>, table: &Table) -> Result<Cond, String> {
    let name = String::from_utf8_lossy(read_bytes(r)?).into_owned();
    let column = table
        .column(&name)
        .cloned()
        .ok_or_else(|| format!("unknown column {name} in {}.{}", table.keyspace, table.name))?;
    let element_ty = match column.ty.unfrozen() {
        CqlType::Map(k, _) => (**k).clone(),
        _ => CqlType::Int,
    };
    let element = read_value(r, &element_ty)?;
    let code = r.u8().map_err(|e| format!("conditional statement: {e}"))?;
    let op = *OPERATORS
        .get(usize::from(code))
        .ok_or_else(|| format!("conditional statement: operator {code}"))?;
    let ty = value_type(&column.ty, element.as_ref(), op)
        .ok_or_else(|| format!("conditional statement: {op:?} on {name}"))?;
    let n = read_count(r)?;
    let mut values = Vec::with_capacity(n.min(16));
    for _ in 0..n {
        values.push(read_value(r, &ty)?);
    }
    if values.is_empty() && op != Operator::In {
        return Err(format!("conditional statement: {op:?} without a value"));
    }
    Ok(Cond {
        column,
        element,
        op,
        values,
    })
}

/// The type of a condition's values: the element's (of a map or list
/// element), a collection's element or key (CONTAINS, CONTAINS KEY), or
/// the column's. `None` for an operator the column's type cannot take.
fn value_type(column: &CqlType, element: Option<&Value>, op: Operator) -> Option<CqlType> {
    let t = column.unfrozen();
    if let (CqlType::Udt(u), Some(Value::Int(i)), false) = (t, element, is_contains(op)) {
        // A user type's field, named by its position.
        return u.field_types.get(usize::try_from(*i).ok()?).cloned();
    }
    Some(match (op, element.is_some(), t) {
        (Operator::Contains, false, CqlType::List(e) | CqlType::Set(e)) => (**e).clone(),
        (Operator::Contains, false, CqlType::Map(_, v)) => (**v).clone(),
        (Operator::ContainsKey, false, CqlType::Map(k, _)) => (**k).clone(),
        (Operator::Contains | Operator::ContainsKey, _, _) => return None,
        (_, true, CqlType::Map(_, v)) => (**v).clone(),
        (_, true, CqlType::List(e)) => (**e).clone(),
        (_, true, _) => return None,
        (_, false, _) => column.clone(),
    })
}

fn is_contains(op: Operator) -> bool {
    matches!(op, Operator::Contains | Operator::ContainsKey)
}

#[cfg(test)]
mod tests;
