//! Errors of the types crate.

/// What can go wrong decoding or converting a value.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum Error {
    /// Bytes that are not a valid encoding of the type.
    #[error("invalid {ty} value: {reason}")]
    InvalidValue { ty: String, reason: String },
}

pub type Result<T> = std::result::Result<T, Error>;
