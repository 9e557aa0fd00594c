//! The crate's error type. Recording cannot fail; only registering a name
//! twice with two different kinds can.

/// Errors of the metrics library.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// `name` is already registered as another kind of metric.
    #[error("metric {name} is registered as a {registered}, not a {requested}")]
    KindConflict {
        name: String,
        registered: &'static str,
        requested: &'static str,
    },
}

/// Result with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
