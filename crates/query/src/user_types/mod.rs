//! User-defined types in statements: looking up the types a statement
//! names ([`resolve`]), and CREATE / ALTER / DROP TYPE ([`ddl`]).

pub mod cells;
pub mod ddl;
pub mod fields;
pub mod values;

use crate::error::{QueryError, Result};
use varve_schema::Keyspace;
use varve_types::CqlType;

/// `ty` with every [`CqlType::UserRef`] replaced by the keyspace's type of
/// that name, as Cassandra prepares a type for a statement on `ks`.
pub fn resolve(ty: &CqlType, ks: &Keyspace) -> Result<CqlType> {
    let sub = |t: &CqlType| resolve(t, ks).map(Box::new);
    Ok(match ty {
        CqlType::UserRef(r) => {
            if let Some(other) = r.keyspace.as_deref().filter(|o| *o != ks.name) {
                return Err(QueryError::Invalid(format!(
                    "Statement on keyspace {} cannot refer to a user type in keyspace {other}; \
                     user types can only be used in the keyspace they are defined in",
                    ks.name
                )));
            }
            let u = ks.types.get(&r.name).ok_or_else(|| {
                QueryError::Invalid(format!("Unknown type {}.{}", ks.name, r.name))
            })?;
            CqlType::Udt(u.clone())
        }
        CqlType::Frozen(t) => CqlType::Frozen(sub(t)?),
        CqlType::List(t) => CqlType::List(sub(t)?),
        CqlType::Set(t) => CqlType::Set(sub(t)?),
        CqlType::Map(k, v) => CqlType::Map(sub(k)?, sub(v)?),
        CqlType::Tuple(items) => CqlType::Tuple(
            items
                .iter()
                .map(|t| resolve(t, ks))
                .collect::<Result<_>>()?,
        ),
        other => other.clone(),
    })
}

/// Whether `ty` names a user type anywhere (so it needs [`resolve`]).
pub fn names_user_type(ty: &CqlType) -> bool {
    match ty {
        CqlType::UserRef(_) | CqlType::Udt(_) => true,
        CqlType::Frozen(t) | CqlType::List(t) | CqlType::Set(t) => names_user_type(t),
        CqlType::Map(k, v) => names_user_type(k) || names_user_type(v),
        CqlType::Tuple(items) => items.iter().any(names_user_type),
        _ => false,
    }
}

#[cfg(test)]
mod tests;
