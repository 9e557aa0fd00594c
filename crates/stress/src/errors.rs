//! Failed operations, counted by kind. The kinds are those of the run
//! directory format (`error_kinds` in summary.json); [`classify`] is the one
//! place that maps the driver's errors onto them.

use std::fmt;

use scylla::errors::{DbError, ExecutionError, RequestAttemptError};

/// What went wrong with one operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ErrorKind {
    Timeout,
    Unavailable,
    Overloaded,
    ReadFailure,
    WriteFailure,
    Invalid,
    Connection,
    Other,
}

impl ErrorKind {
    /// All kinds, in report order.
    pub const ALL: [ErrorKind; 8] = [
        ErrorKind::Timeout,
        ErrorKind::Unavailable,
        ErrorKind::Overloaded,
        ErrorKind::ReadFailure,
        ErrorKind::WriteFailure,
        ErrorKind::Invalid,
        ErrorKind::Connection,
        ErrorKind::Other,
    ];

    /// The name in summary.json.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Timeout => "timeout",
            ErrorKind::Unavailable => "unavailable",
            ErrorKind::Overloaded => "overloaded",
            ErrorKind::ReadFailure => "read_failure",
            ErrorKind::WriteFailure => "write_failure",
            ErrorKind::Invalid => "invalid",
            ErrorKind::Connection => "connection",
            ErrorKind::Other => "other",
        }
    }

    /// Position in [`ErrorKind::ALL`] (for counters kept in arrays).
    pub fn slot(self) -> usize {
        self as usize
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Maps a driver error to its kind.
pub fn classify(error: &ExecutionError) -> ErrorKind {
    match error {
        ExecutionError::RequestTimeout(_) => ErrorKind::Timeout,
        ExecutionError::ConnectionPoolError(_) | ExecutionError::EmptyPlan => ErrorKind::Connection,
        ExecutionError::BadQuery(_) | ExecutionError::PrepareError(_) => ErrorKind::Invalid,
        ExecutionError::LastAttemptError(attempt) => classify_attempt(attempt),
        _ => ErrorKind::Other,
    }
}

fn classify_attempt(error: &RequestAttemptError) -> ErrorKind {
    match error {
        RequestAttemptError::DbError(db, _) => classify_db(db),
        RequestAttemptError::BrokenConnectionError(_)
        | RequestAttemptError::UnableToAllocStreamId => ErrorKind::Connection,
        RequestAttemptError::SerializationError(_)
        | RequestAttemptError::CqlRequestSerialization(_) => ErrorKind::Invalid,
        _ => ErrorKind::Other,
    }
}

/// Maps a server error code to its kind.
pub fn classify_db(error: &DbError) -> ErrorKind {
    match error {
        DbError::ReadTimeout { .. } | DbError::WriteTimeout { .. } => ErrorKind::Timeout,
        DbError::Unavailable { .. } => ErrorKind::Unavailable,
        DbError::Overloaded | DbError::RateLimitReached { .. } | DbError::IsBootstrapping => {
            ErrorKind::Overloaded
        }
        DbError::ReadFailure { .. } => ErrorKind::ReadFailure,
        DbError::WriteFailure { .. } => ErrorKind::WriteFailure,
        DbError::SyntaxError
        | DbError::Invalid
        | DbError::AlreadyExists { .. }
        | DbError::ConfigError
        | DbError::Unauthorized
        | DbError::Unprepared { .. } => ErrorKind::Invalid,
        _ => ErrorKind::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use scylla::errors::{OperationType, WriteType};
    use scylla::frame::types::Consistency;

    #[test]
    fn server_errors_map_to_their_kind() {
        let cases = [
            (
                DbError::WriteTimeout {
                    consistency: Consistency::One,
                    received: 0,
                    required: 1,
                    write_type: WriteType::Simple,
                },
                ErrorKind::Timeout,
            ),
            (
                DbError::Unavailable {
                    consistency: Consistency::All,
                    required: 3,
                    alive: 1,
                },
                ErrorKind::Unavailable,
            ),
            (DbError::Overloaded, ErrorKind::Overloaded),
            (DbError::Invalid, ErrorKind::Invalid),
            (DbError::ServerError, ErrorKind::Other),
            (
                DbError::FunctionFailure {
                    keyspace: String::new(),
                    function: String::new(),
                    arg_types: vec![],
                },
                ErrorKind::Other,
            ),
        ];
        for (db, kind) in cases {
            assert_eq!(classify_db(&db), kind, "{db:?}");
            let err =
                ExecutionError::LastAttemptError(RequestAttemptError::DbError(db, String::new()));
            assert_eq!(classify(&err), kind);
        }
        let _ = OperationType::Read;
        assert_eq!(
            classify(&ExecutionError::RequestTimeout(
                std::time::Duration::from_secs(1)
            )),
            ErrorKind::Timeout
        );
        assert_eq!(classify(&ExecutionError::EmptyPlan), ErrorKind::Connection);
    }

    #[test]
    fn slots_follow_all() {
        for (i, kind) in ErrorKind::ALL.iter().enumerate() {
            assert_eq!(kind.slot(), i);
        }
    }
}
