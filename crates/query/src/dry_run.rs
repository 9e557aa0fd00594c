//! PREPARE's dry run: a prepared statement is refused when its execution
//! would refuse it whatever values were bound, as Cassandra refuses it.
//!
//! The statement is analysed (SELECT) or planned (INSERT, UPDATE, DELETE and
//! each statement of a BATCH) with a placeholder for every bind marker — a
//! valid, non-null value of the marker's type — reading and writing nothing.
//! Only the errors Cassandra gives at PREPARE refuse it ([`structural`]): an
//! error that may come from the placeholders (a value, a list to read first)
//! lets the PREPARE through, execution judges the real values. DDL, USE,
//! auth statements and system keyspaces get no dry run.

use crate::api::{BoundValue, ColumnSpec, QueryOptions};
use crate::context::Ctx;
use crate::error::{QueryError, Result};
use crate::{select, write};
use bytes::Bytes;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use varve_cql::ast::{QualifiedName, Statement};
use varve_schema::Schema;
use varve_types::{codec, CqlType, Value};

/// Refuses `statement` when its dry run fails with a [`structural`] error;
/// `bind` are its bind specs, in marker order.
pub fn check(
    schema: Arc<Schema>,
    keyspace: Option<String>,
    statement: &Statement,
    bind: &[ColumnSpec],
) -> Result<()> {
    let Some(values) = placeholders(bind) else {
        return Ok(());
    };
    let opts = QueryOptions::default();
    let mut ctx = Ctx {
        schema,
        creator: None,
        values,
        keyspace,
        opts: &opts,
        timestamp_micros: 1,
        now_seconds: varve_types::time::now_seconds() as i32,
        warnings: Vec::new(),
        allow_filtering: false,
        read_shape: None,
    };
    match run(&mut ctx, statement) {
        Err(e) if structural(&e) => Err(e),
        _ => Ok(()),
    }
}

/// The statement's analysis or plan, for the kinds that have a dry run.
fn run(ctx: &mut Ctx<'_>, statement: &Statement) -> Result<()> {
    match statement {
        Statement::Select(s) if user_table(ctx, &s.table) => select::check(ctx, s),
        Statement::Insert(i) if user_table(ctx, &i.table) => write::check(ctx, statement),
        Statement::Update(u) if user_table(ctx, &u.table) => write::check(ctx, statement),
        Statement::Delete(d) if user_table(ctx, &d.table) => write::check(ctx, statement),
        Statement::Batch(b) => b.statements.iter().try_for_each(|st| run(ctx, st)),
        _ => Ok(()),
    }
}

/// Whether `name` is a table of a user keyspace (not `system*`, not virtual).
fn user_table(ctx: &Ctx, name: &QualifiedName) -> bool {
    match ctx.table(name) {
        Ok(t) => !t.is_virtual && !t.keyspace.starts_with("system"),
        Err(_) => false,
    }
}

/// The messages Cassandra 5.0 gives when it refuses a PREPARE (differential
/// corpus 18_issue21_prepare): they depend on the statement alone.
const PREPARE_REFUSALS: &[&str] = &[
    "Some partition key parts are missing",
    "Some clustering keys are missing",
    "Undefined column name",
    "PRIMARY KEY part",
    "PRIMARY KEY column",
    "Only EQ and IN relation are supported on the partition key",
    "Non PRIMARY KEY columns found in where clause",
    "Cannot execute this query as it might involve data filtering",
    "ORDER BY is only supported when the partition key is restricted",
    "Order by is currently only supported on the clustered columns",
    "Group by is currently only supported on the columns of the PRIMARY KEY",
    "Slice restrictions are not supported on the clustering columns",
    "Element selection is only allowed on sets and maps",
    "Slice selection is only allowed on sets and maps",
    "Invalid element selection: ",
    "Invalid slice selection: ",
    "Only EQ relations are supported on map entries",
    "Indexes on list entries",
    "Map-entry equality predicates on frozen map column",
    "Invalid element access syntax for",
    "Invalid negative list index",
    // Arithmetic typed at PREPARE, as Cassandra resolves its functions.
    "Ambiguous '",
    "Ambiguous negation",
    "Invalid call to function system._negate",
];

/// Whether an error of the dry run refuses the PREPARE: one of
/// [`PREPARE_REFUSALS`], or a literal of the wrong type.
pub(crate) fn structural(e: &QueryError) -> bool {
    let QueryError::Invalid(message) = e else {
        return false;
    };
    let bad_literal = message.starts_with("Invalid ") && message.contains(" constant (");
    let unsupported_operation =
        message.starts_with("the '") && message.contains("' operation is not supported between");
    // `WHERE s['k'] = ?` on a column that is no map.
    let not_a_map = message.starts_with("Column ") && message.ends_with(" cannot be used as a map");
    bad_literal
        || unsupported_operation
        || not_a_map
        || PREPARE_REFUSALS.iter().any(|p| message.starts_with(p))
}

/// The largest vector a placeholder is built for.
const PLACEHOLDER_VECTOR_DIMENSION_MAX: usize = 4096;

/// A placeholder for every spec; `None` when a type has none.
fn placeholders(bind: &[ColumnSpec]) -> Option<Vec<BoundValue>> {
    bind.iter()
        .map(|spec| {
            let value = placeholder(&spec.ty)?;
            Some(BoundValue::Value(Bytes::from(codec::serialize(&value))))
        })
        .collect()
}

/// A valid value of `ty`: one for numbers (a LIMIT must be positive), empty
/// text and blobs, one-element collections (an `IN ?` of one key).
fn placeholder(ty: &CqlType) -> Option<Value> {
    let one = || num_bigint::BigInt::from(1);
    Some(match ty {
        CqlType::Ascii => Value::Ascii(String::new()),
        CqlType::Text => Value::Text(String::new()),
        CqlType::Blob => Value::Blob(Vec::new()),
        CqlType::Custom(class) if class == varve_types::cql_type::LEXICAL_UUID_CLASS => {
            Value::Uuid([0; 16])
        }
        CqlType::Custom(_) => Value::Blob(Vec::new()),
        CqlType::Boolean => Value::Boolean(false),
        CqlType::TinyInt => Value::TinyInt(1),
        CqlType::SmallInt => Value::SmallInt(1),
        CqlType::Int => Value::Int(1),
        CqlType::BigInt => Value::BigInt(1),
        CqlType::Counter => Value::Counter(1),
        CqlType::Varint => Value::Varint(one()),
        CqlType::Float => Value::Float(1.0),
        CqlType::Double => Value::Double(1.0),
        CqlType::Decimal => Value::Decimal {
            unscaled: one(),
            scale: 0,
        },
        CqlType::Uuid => Value::Uuid(TIMEUUID),
        CqlType::Timeuuid => Value::Timeuuid(TIMEUUID),
        CqlType::Timestamp => Value::Timestamp(0),
        CqlType::Date => Value::Date(1 << 31),
        CqlType::Time => Value::Time(0),
        CqlType::Duration => Value::Duration {
            months: 0,
            days: 0,
            nanos: 0,
        },
        CqlType::Inet => Value::Inet(IpAddr::V4(Ipv4Addr::LOCALHOST)),
        CqlType::List(e) => Value::List(vec![placeholder(e)?]),
        CqlType::Set(e) => Value::Set(vec![placeholder(e)?]),
        CqlType::Map(k, v) => Value::Map(vec![(placeholder(k)?, placeholder(v)?)]),
        CqlType::Tuple(types) => Value::Tuple(fields(types)?),
        CqlType::Udt(u) => Value::Tuple(fields(&u.field_types)?),
        CqlType::Frozen(inner) => placeholder(inner)?,
        CqlType::UserRef(_) => return None,
        // A vector may have millions of elements; no dry run for those.
        CqlType::Vector(e, n) if *n <= PLACEHOLDER_VECTOR_DIMENSION_MAX => {
            Value::Vector(vec![placeholder(e)?; *n])
        }
        CqlType::Vector(_, _) => return None,
    })
}

fn fields(types: &[CqlType]) -> Option<Vec<Option<Value>>> {
    types.iter().map(|t| placeholder(t).map(Some)).collect()
}

/// A version-1 (time-based) UUID, valid as a `timeuuid` and a `uuid`.
const TIMEUUID: [u8; 16] = [0, 0, 0, 0, 0, 0, 0x10, 0, 0x80, 0, 0, 0, 0, 0, 0, 0];

#[cfg(test)]
mod tests {
    use super::*;

    fn every_type() -> Vec<CqlType> {
        use CqlType::*;
        let list = List(Box::new(Int));
        vec![
            Ascii,
            Text,
            Blob,
            Boolean,
            TinyInt,
            SmallInt,
            Int,
            BigInt,
            Varint,
            Float,
            Double,
            Decimal,
            Uuid,
            Timeuuid,
            Timestamp,
            Date,
            Time,
            Duration,
            Inet,
            Counter,
            Set(Box::new(Text)),
            Map(Box::new(Text), Box::new(list.clone())),
            Tuple(vec![Int, Text]),
            Frozen(Box::new(list)),
        ]
    }

    #[test]
    fn placeholders_decode_as_their_type() {
        for ty in every_type() {
            let bytes = codec::serialize(&placeholder(&ty).expect("placeholder"));
            codec::deserialize(&ty, &bytes).unwrap_or_else(|e| panic!("{ty:?}: {e:?}"));
        }
    }

    #[test]
    fn only_statement_errors_refuse() {
        let invalid = |m: &str| QueryError::Invalid(m.into());
        assert!(structural(&invalid(
            "Some partition key parts are missing: p"
        )));
        assert!(structural(&invalid(
            "Invalid STRING constant (x) for \"v\" of type int"
        )));
        assert!(!structural(&invalid(
            "List index 5 out of bound, list has size 2"
        )));
        assert!(!structural(&invalid(
            "Invalid null value in condition for column p"
        )));
        assert!(!structural(&QueryError::Server(
            "Undefined column name".into()
        )));
    }
}
