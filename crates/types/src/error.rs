//! Errors of the types crate.
//!
//! Two families: [`Error::InvalidValue`] for bytes that do not decode, and
//! the literal errors ([`Error::InvalidLiteral`], [`Error::Marshal`]) for CQL
//! text that cannot become a value of the target type. Literal errors carry
//! no column name; the query layer adds it with [`Error::message_for_column`].

/// What can go wrong decoding or converting a value.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum Error {
    /// Bytes that are not a valid encoding of the type.
    #[error("invalid {ty} value: {reason}")]
    InvalidValue { ty: String, reason: String },
    /// A literal of a kind the type cannot take at all, for example a string
    /// literal for an `int` column. `kind` is Cassandra's name for the literal
    /// kind: STRING, INTEGER, UUID, FLOAT, BOOLEAN, HEX or DURATION.
    #[error("Invalid {kind} constant ({literal}) of type {ty}")]
    InvalidLiteral {
        kind: &'static str,
        literal: String,
        ty: String,
    },
    /// A literal of an acceptable kind whose text does not parse or is out
    /// of range, worded like Cassandra's `MarshalException` messages, e.g.
    /// `Unable to make int from '2147483648'`.
    #[error("{0}")]
    Marshal(String),
}

impl Error {
    /// Shorthand for [`Error::InvalidValue`].
    pub fn invalid(ty: impl std::fmt::Display, reason: impl Into<String>) -> Error {
        Error::InvalidValue {
            ty: ty.to_string(),
            reason: reason.into(),
        }
    }

    /// The message Cassandra would give when this error concerns the column
    /// `column`. For [`Error::InvalidLiteral`] this is
    /// `Invalid INTEGER constant (2147483648) for "k" of type int`; the other
    /// errors do not mention the column in Cassandra either.
    pub fn message_for_column(&self, column: &str) -> String {
        match self {
            Error::InvalidLiteral { kind, literal, ty } => {
                format!("Invalid {kind} constant ({literal}) for \"{column}\" of type {ty}")
            }
            other => other.to_string(),
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_message_names_column() {
        let e = Error::InvalidLiteral {
            kind: "INTEGER",
            literal: "2147483648".into(),
            ty: "int".into(),
        };
        assert_eq!(
            e.message_for_column("k"),
            "Invalid INTEGER constant (2147483648) for \"k\" of type int"
        );
        assert_eq!(Error::Marshal("x".into()).message_for_column("k"), "x");
    }
}
