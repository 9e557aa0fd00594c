//! Schema errors, each mapped by the query layer to a CQL error code.

#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum Error {
    /// InvalidRequest in CQL.
    #[error("{0}")]
    Invalid(String),
    /// ConfigurationException in CQL.
    #[error("{0}")]
    Config(String),
    /// SyntaxException in CQL (e.g. an unknown property).
    #[error("{0}")]
    Syntax(String),
}

pub type Result<T> = std::result::Result<T, Error>;

impl From<crate::options::OptionError> for Error {
    fn from(e: crate::options::OptionError) -> Self {
        match e {
            crate::options::OptionError::Syntax(m) => Error::Syntax(m),
            crate::options::OptionError::Config(m) => Error::Config(m),
        }
    }
}
