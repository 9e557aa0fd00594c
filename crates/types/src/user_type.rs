//! User-defined types (UDTs): a named, keyspace-scoped record of typed
//! fields. A UDT value is encoded exactly as a tuple of its field types
//! (each field `[int length][bytes]`, -1 for null, missing trailing fields
//! read as null), so [`crate::Value::Tuple`] carries UDT values too; the
//! field names live only in the type.
//!
//! The CQL parser cannot see the schema, so it names a UDT with a
//! [`UserTypeRef`]; the query layer resolves that against the keyspace's
//! types into a [`UserType`] before anything is stored or encoded.

/// A resolved user-defined type: its keyspace, name and fields in order.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct UserType {
    pub keyspace: String,
    pub name: String,
    pub field_names: Vec<String>,
    pub field_types: Vec<crate::CqlType>,
}

impl UserType {
    /// The position of field `name`, if the type has it.
    pub fn field_index(&self, name: &str) -> Option<usize> {
        self.field_names.iter().position(|f| f == name)
    }

    /// The name as CQL prints it: bare when it is a lower-case identifier,
    /// double-quoted otherwise.
    pub fn cql_name(&self) -> String {
        quote_if_needed(&self.name)
    }

    /// Whether this type names `other` among its fields, at any depth.
    pub fn references(&self, keyspace: &str, other: &str) -> bool {
        self.field_types
            .iter()
            .any(|t| t.references_user_type(keyspace, other))
    }
}

/// A user type as written in a statement, before it is looked up.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct UserTypeRef {
    /// `ks.name` names the keyspace; `None` means the statement's.
    pub keyspace: Option<String>,
    pub name: String,
}

/// `name` bare when it is a lower-case identifier, else in double quotes
/// (with inner quotes doubled), as Cassandra prints identifiers.
pub fn quote_if_needed(name: &str) -> String {
    let plain = name.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if plain {
        name.to_string()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CqlType;

    fn addr() -> UserType {
        UserType {
            keyspace: "ks".into(),
            name: "addr".into(),
            field_names: vec!["street".into(), "zip".into()],
            field_types: vec![CqlType::Text, CqlType::Int],
        }
    }

    #[test]
    fn fields_are_found_by_name() {
        assert_eq!(addr().field_index("zip"), Some(1));
        assert_eq!(addr().field_index("nope"), None);
    }

    #[test]
    fn names_are_quoted_when_cassandra_quotes_them() {
        assert_eq!(quote_if_needed("addr_2"), "addr_2");
        assert_eq!(quote_if_needed("Addr"), "\"Addr\"");
        assert_eq!(quote_if_needed("a\"b"), "\"a\"\"b\"");
        assert_eq!(quote_if_needed("2a"), "\"2a\"");
    }
}
