//! The one place where errors become CQL ERROR bodies: query errors from
//! `varve-query`, codec errors from `varve-protocol`, and the server's own
//! (overload, state machine, panics).

use varve_protocol::error::ProtocolError;
use varve_protocol::error_code::{ErrorBody, ErrorCode, ErrorExtra};
use varve_protocol::frame::body_too_large_error;
use varve_query::QueryError;

/// The ERROR body for a failed statement.
pub fn query_error(e: &QueryError) -> ErrorBody {
    let message = e.to_string();
    match e {
        QueryError::Syntax(_) => ErrorBody::new(ErrorCode::SYNTAX_ERROR, message),
        QueryError::Invalid(_) => ErrorBody::new(ErrorCode::INVALID, message),
        QueryError::Config(_) => ErrorBody::new(ErrorCode::CONFIG_ERROR, message),
        QueryError::Unauthorized(_) => ErrorBody::new(ErrorCode::UNAUTHORIZED, message),
        QueryError::AlreadyExists {
            keyspace, table, ..
        } => ErrorBody {
            code: ErrorCode::ALREADY_EXISTS,
            message,
            extra: ErrorExtra::AlreadyExists {
                keyspace: keyspace.clone(),
                table: table.clone(),
            },
        },
        QueryError::Unprepared { id } => ErrorBody {
            code: ErrorCode::UNPREPARED,
            message,
            extra: ErrorExtra::Unprepared { id: id.clone() },
        },
        // Cassandra's ReadFailure carries replica counts; on one node the
        // one replica failed: received 0 of block_for 1, one failure.
        QueryError::ReadFailure { .. } => ErrorBody {
            code: ErrorCode::READ_FAILURE,
            message,
            extra: ErrorExtra::ReadFailure {
                consistency: varve_protocol::consistency::Consistency::One,
                received: 0,
                block_for: 1,
                failures: one_failure(),
                data_present: false,
            },
        },
        // Likewise for a write: the one replica could not store it.
        QueryError::WriteFailure { .. } => ErrorBody {
            code: ErrorCode::WRITE_FAILURE,
            message,
            extra: ErrorExtra::WriteFailure {
                consistency: varve_protocol::consistency::Consistency::One,
                received: 0,
                block_for: 1,
                failures: one_failure(),
                write_type: "SIMPLE".into(),
            },
        },
        QueryError::Unavailable(u) => ErrorBody {
            code: ErrorCode::UNAVAILABLE,
            message,
            extra: ErrorExtra::Unavailable {
                consistency: u.consistency,
                required: u.required as i32,
                alive: u.alive as i32,
            },
        },
        QueryError::WriteTimeout(t) => ErrorBody {
            code: ErrorCode::WRITE_TIMEOUT,
            message,
            extra: ErrorExtra::WriteTimeout {
                consistency: t.consistency,
                received: t.received as i32,
                block_for: t.block_for as i32,
                write_type: t.write_type.name().into(),
                contentions: None,
            },
        },
        // v4 has no such error: the body encodes as a WriteTimeout CAS there.
        QueryError::CasWriteUnknown(t) => ErrorBody {
            code: ErrorCode::CAS_WRITE_UNKNOWN,
            message,
            extra: ErrorExtra::CasWriteUnknown {
                consistency: t.consistency,
                received: t.received as i32,
                block_for: t.block_for as i32,
            },
        },
        QueryError::ReadTimeout(t) => ErrorBody {
            code: ErrorCode::READ_TIMEOUT,
            message,
            extra: ErrorExtra::ReadTimeout {
                consistency: t.consistency,
                received: t.received as i32,
                block_for: t.block_for as i32,
                data_present: t.data_present,
            },
        },
        QueryError::Overloaded(_) => ErrorBody::new(ErrorCode::OVERLOADED, message),
        QueryError::FunctionFailure {
            keyspace,
            function,
            arg_types,
            ..
        } => ErrorBody {
            code: ErrorCode::FUNCTION_FAILURE,
            message,
            extra: ErrorExtra::FunctionFailure {
                keyspace: keyspace.clone(),
                function: function.clone(),
                arg_types: arg_types.clone(),
            },
        },
        QueryError::Server(_) => ErrorBody::new(ErrorCode::SERVER_ERROR, message),
        // Never meant for a client: the server runs such a statement again
        // on the read stage (statements.rs). Seen by one, it is a bug.
        QueryError::WouldBlock(_) => ErrorBody::new(ErrorCode::SERVER_ERROR, message),
    }
}

/// The failures of a request whose one replica (this node) failed.
fn one_failure() -> varve_protocol::error_code::Failures {
    varve_protocol::error_code::Failures {
        num_failures: 1,
        reasons: Vec::new(),
    }
}

/// The ERROR body for a frame the codec refused (the connection stays
/// open; fatal cases are decided by the caller).
pub fn protocol_error(e: &ProtocolError) -> ErrorBody {
    match e {
        ProtocolError::BodyTooLarge { body_len, max, .. } => body_too_large_error(*body_len, *max),
        other => ErrorBody::new(ErrorCode::PROTOCOL_ERROR, other.to_string()),
    }
}

/// Protocol error with a message of ours.
pub fn protocol_message(message: impl Into<String>) -> ErrorBody {
    ErrorBody::new(ErrorCode::PROTOCOL_ERROR, message)
}

/// Overloaded error with a message naming the limit.
pub fn overloaded(message: impl Into<String>) -> ErrorBody {
    ErrorBody::new(ErrorCode::OVERLOADED, message)
}

/// ServerError for a request whose task panicked or vanished.
pub fn server_error(message: impl Into<String>) -> ErrorBody {
    ErrorBody::new(ErrorCode::SERVER_ERROR, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    #[test]
    fn every_query_error_has_its_code() {
        let cases = [
            (QueryError::Syntax("s".into()), 0x2000),
            (QueryError::Invalid("i".into()), 0x2200),
            (QueryError::Config("c".into()), 0x2300),
            (QueryError::Unauthorized("u".into()), 0x2100),
            (
                QueryError::AlreadyExists {
                    keyspace: "k".into(),
                    table: "t".into(),
                    message: "m".into(),
                },
                0x2400,
            ),
            (
                QueryError::Unprepared {
                    id: Bytes::from_static(&[1, 2]),
                },
                0x2500,
            ),
            (
                QueryError::ReadFailure {
                    message: "r".into(),
                },
                0x1300,
            ),
            (
                QueryError::WriteFailure {
                    message: "w".into(),
                },
                0x1500,
            ),
            (QueryError::Overloaded("o".into()), 0x1001),
            (
                QueryError::FunctionFailure {
                    keyspace: "system".into(),
                    function: "fromjson".into(),
                    arg_types: vec!["text".into()],
                    message: "f".into(),
                },
                0x1400,
            ),
            (QueryError::Server("x".into()), 0x0000),
        ];
        for (e, code) in cases {
            let body = query_error(&e);
            assert_eq!(body.code.0, code, "{e:?}");
            assert!(!body.message.is_empty());
        }
        let body = query_error(&QueryError::AlreadyExists {
            keyspace: "ks".into(),
            table: "".into(),
            message: "Cannot add existing keyspace \"ks\"".into(),
        });
        assert_eq!(
            body.extra,
            ErrorExtra::AlreadyExists {
                keyspace: "ks".into(),
                table: "".into()
            }
        );
        let body = query_error(&QueryError::Unprepared {
            id: Bytes::from_static(&[0xab]),
        });
        assert_eq!(
            body.extra,
            ErrorExtra::Unprepared {
                id: Bytes::from_static(&[0xab])
            }
        );
        assert!(body.message.contains("ab"));
    }

    #[test]
    fn timeouts_carry_their_counts_and_write_type() {
        use varve_types::consistency::Consistency;
        use varve_types::data_error::{ReadTimeout, WriteTimeout, WriteType};
        let body = query_error(&QueryError::WriteTimeout(WriteTimeout {
            consistency: Consistency::Quorum,
            received: 1,
            block_for: 2,
            write_type: WriteType::UnloggedBatch,
        }));
        assert_eq!(body.code.0, 0x1100);
        assert_eq!(
            body.extra,
            ErrorExtra::WriteTimeout {
                consistency: Consistency::Quorum,
                received: 1,
                block_for: 2,
                write_type: "UNLOGGED_BATCH".into(),
                contentions: None,
            }
        );
        let body = query_error(&QueryError::ReadTimeout(ReadTimeout {
            consistency: Consistency::All,
            received: 2,
            block_for: 3,
            data_present: true,
        }));
        assert_eq!(body.code.0, 0x1200);
        assert_eq!(
            body.extra,
            ErrorExtra::ReadTimeout {
                consistency: Consistency::All,
                received: 2,
                block_for: 3,
                data_present: true,
            }
        );
    }

    #[test]
    fn oversized_frame_is_invalid_not_protocol() {
        let body = protocol_error(&ProtocolError::BodyTooLarge {
            stream: 1,
            body_len: 100,
            max: 10,
        });
        assert_eq!(body.code, ErrorCode::INVALID);
        let body = protocol_error(&ProtocolError::invalid("bad"));
        assert_eq!(body.code, ErrorCode::PROTOCOL_ERROR);
    }
}
