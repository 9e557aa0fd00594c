//! ERROR message bodies (spec section 9): an `[int]` code, a `[string]`
//! message and code-specific fields.
//!
//! v4 and v5 differ in two places: Read_failure and Write_failure carry a
//! failure count in v4 and a reason map (`[int]` n, then n pairs of
//! `[inetaddr]` and `[short]` code) in v5; and in v5 a Write_timeout whose
//! write type is `CAS` ends with a `[short]` count of contentions.
//!
//! Older clients get the errors their version has, as Cassandra's
//! `getBackwardsCompatibleException` sends them: before v5 a
//! Cas_write_unknown is a Write_timeout of write type `CAS`; before v4 (the
//! version that added them) a Read_failure is a Read_timeout and a
//! Write_failure a Write_timeout with the same counts, and a
//! Function_failure or CDC_write_failure is an Invalid whose message is
//! `ERROR FUNCTION_FAILURE: <message>` (the name of its code, then its own).

use std::net::IpAddr;

use bytes::Bytes;

use crate::consistency::Consistency;
use crate::error::Result;
use crate::primitives::{
    put_consistency, put_inetaddr, put_int, put_short, put_short_bytes, put_string,
    put_string_list, put_u8, Reader,
};

/// An error code. A newtype so unknown codes from a peer survive decoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ErrorCode(pub i32);

impl ErrorCode {
    pub const SERVER_ERROR: ErrorCode = ErrorCode(0x0000);
    pub const PROTOCOL_ERROR: ErrorCode = ErrorCode(0x000A);
    pub const BAD_CREDENTIALS: ErrorCode = ErrorCode(0x0100);
    pub const UNAVAILABLE: ErrorCode = ErrorCode(0x1000);
    pub const OVERLOADED: ErrorCode = ErrorCode(0x1001);
    pub const IS_BOOTSTRAPPING: ErrorCode = ErrorCode(0x1002);
    pub const TRUNCATE_ERROR: ErrorCode = ErrorCode(0x1003);
    pub const WRITE_TIMEOUT: ErrorCode = ErrorCode(0x1100);
    pub const READ_TIMEOUT: ErrorCode = ErrorCode(0x1200);
    pub const READ_FAILURE: ErrorCode = ErrorCode(0x1300);
    pub const FUNCTION_FAILURE: ErrorCode = ErrorCode(0x1400);
    pub const WRITE_FAILURE: ErrorCode = ErrorCode(0x1500);
    pub const CDC_WRITE_FAILURE: ErrorCode = ErrorCode(0x1600);
    pub const CAS_WRITE_UNKNOWN: ErrorCode = ErrorCode(0x1700);
    pub const SYNTAX_ERROR: ErrorCode = ErrorCode(0x2000);
    pub const UNAUTHORIZED: ErrorCode = ErrorCode(0x2100);
    pub const INVALID: ErrorCode = ErrorCode(0x2200);
    pub const CONFIG_ERROR: ErrorCode = ErrorCode(0x2300);
    pub const ALREADY_EXISTS: ErrorCode = ErrorCode(0x2400);
    pub const UNPREPARED: ErrorCode = ErrorCode(0x2500);
}

/// Replica failures of Read_failure / Write_failure. v4 sends only
/// `num_failures`; v5 sends only `reasons` (decoding v5 sets
/// `num_failures` to the number of reasons).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Failures {
    pub num_failures: i32,
    pub reasons: Vec<(IpAddr, u16)>,
}

/// The code-specific fields of an ERROR.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ErrorExtra {
    None,
    Unavailable {
        consistency: Consistency,
        required: i32,
        alive: i32,
    },
    WriteTimeout {
        consistency: Consistency,
        received: i32,
        block_for: i32,
        write_type: String,
        contentions: Option<u16>,
    },
    ReadTimeout {
        consistency: Consistency,
        received: i32,
        block_for: i32,
        data_present: bool,
    },
    ReadFailure {
        consistency: Consistency,
        received: i32,
        block_for: i32,
        failures: Failures,
        data_present: bool,
    },
    WriteFailure {
        consistency: Consistency,
        received: i32,
        block_for: i32,
        failures: Failures,
        write_type: String,
    },
    CasWriteUnknown {
        consistency: Consistency,
        received: i32,
        block_for: i32,
    },
    FunctionFailure {
        keyspace: String,
        function: String,
        arg_types: Vec<String>,
    },
    AlreadyExists {
        keyspace: String,
        table: String,
    },
    Unprepared {
        id: Bytes,
    },
}

/// A whole ERROR body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorBody {
    pub code: ErrorCode,
    pub message: String,
    pub extra: ErrorExtra,
}

/// The write type that carries a contention count in v5.
pub const CAS_WRITE_TYPE: &str = "CAS";

impl ErrorBody {
    /// An error without extra fields.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ErrorBody {
            code,
            message: message.into(),
            extra: ErrorExtra::None,
        }
    }

    /// Appends the body for `version`. `extra` should match `code`; it is
    /// written as given.
    pub fn encode(&self, version: u8, out: &mut Vec<u8>) {
        if let Some(older) = self.as_older_version(version) {
            return older.encode(version, out);
        }
        put_int(out, self.code.0);
        put_string(out, &self.message);
        match &self.extra {
            ErrorExtra::None => {}
            ErrorExtra::Unavailable {
                consistency,
                required,
                alive,
            } => {
                put_consistency(out, *consistency);
                put_int(out, *required);
                put_int(out, *alive);
            }
            ErrorExtra::WriteTimeout {
                consistency,
                received,
                block_for,
                write_type,
                contentions,
            } => {
                put_consistency(out, *consistency);
                put_int(out, *received);
                put_int(out, *block_for);
                put_string(out, write_type);
                if version >= 5 && write_type == CAS_WRITE_TYPE {
                    put_short(out, contentions.unwrap_or(0));
                }
            }
            ErrorExtra::ReadTimeout {
                consistency,
                received,
                block_for,
                data_present,
            } => {
                put_consistency(out, *consistency);
                put_int(out, *received);
                put_int(out, *block_for);
                put_u8(out, u8::from(*data_present));
            }
            ErrorExtra::ReadFailure {
                consistency,
                received,
                block_for,
                failures,
                data_present,
            } => {
                put_consistency(out, *consistency);
                put_int(out, *received);
                put_int(out, *block_for);
                put_failures(out, version, failures);
                put_u8(out, u8::from(*data_present));
            }
            ErrorExtra::WriteFailure {
                consistency,
                received,
                block_for,
                failures,
                write_type,
            } => {
                put_consistency(out, *consistency);
                put_int(out, *received);
                put_int(out, *block_for);
                put_failures(out, version, failures);
                put_string(out, write_type);
            }
            ErrorExtra::CasWriteUnknown {
                consistency,
                received,
                block_for,
            } => {
                put_consistency(out, *consistency);
                put_int(out, *received);
                put_int(out, *block_for);
            }
            ErrorExtra::FunctionFailure {
                keyspace,
                function,
                arg_types,
            } => {
                put_string(out, keyspace);
                put_string(out, function);
                put_string_list(out, arg_types);
            }
            ErrorExtra::AlreadyExists { keyspace, table } => {
                put_string(out, keyspace);
                put_string(out, table);
            }
            ErrorExtra::Unprepared { id } => put_short_bytes(out, id),
        }
    }

    /// The error a client of `version` gets instead of this one, when its
    /// version does not have this one (see the module doc).
    fn as_older_version(&self, version: u8) -> Option<ErrorBody> {
        let with = |code: ErrorCode, extra: ErrorExtra| ErrorBody {
            code,
            message: self.message.clone(),
            extra,
        };
        match &self.extra {
            ErrorExtra::CasWriteUnknown {
                consistency,
                received,
                block_for,
            } if version < 5 => Some(with(
                ErrorCode::WRITE_TIMEOUT,
                ErrorExtra::WriteTimeout {
                    consistency: *consistency,
                    received: *received,
                    block_for: *block_for,
                    write_type: CAS_WRITE_TYPE.into(),
                    contentions: None,
                },
            )),
            _ if version >= 4 => None,
            ErrorExtra::ReadFailure {
                consistency,
                received,
                block_for,
                data_present,
                ..
            } => Some(with(
                ErrorCode::READ_TIMEOUT,
                ErrorExtra::ReadTimeout {
                    consistency: *consistency,
                    received: *received,
                    block_for: *block_for,
                    data_present: *data_present,
                },
            )),
            ErrorExtra::WriteFailure {
                consistency,
                received,
                block_for,
                write_type,
                ..
            } => Some(with(
                ErrorCode::WRITE_TIMEOUT,
                ErrorExtra::WriteTimeout {
                    consistency: *consistency,
                    received: *received,
                    block_for: *block_for,
                    write_type: write_type.clone(),
                    contentions: None,
                },
            )),
            _ => {
                let name = match self.code {
                    ErrorCode::FUNCTION_FAILURE => "FUNCTION_FAILURE",
                    ErrorCode::CDC_WRITE_FAILURE => "CDC_WRITE_FAILURE",
                    _ => return None,
                };
                Some(ErrorBody {
                    code: ErrorCode::INVALID,
                    message: format!("ERROR {name}: {}", self.message),
                    extra: ErrorExtra::None,
                })
            }
        }
    }

    /// Reads a body of `version`.
    pub fn decode(version: u8, r: &mut Reader<'_>) -> Result<ErrorBody> {
        let code = ErrorCode(r.read_int()?);
        let message = r.read_string()?;
        let extra = match code {
            ErrorCode::UNAVAILABLE => ErrorExtra::Unavailable {
                consistency: r.read_consistency()?,
                required: r.read_int()?,
                alive: r.read_int()?,
            },
            ErrorCode::WRITE_TIMEOUT => {
                let (consistency, received, block_for) =
                    (r.read_consistency()?, r.read_int()?, r.read_int()?);
                let write_type = r.read_string()?;
                let contentions = if version >= 5 && write_type == CAS_WRITE_TYPE {
                    Some(r.read_short()?)
                } else {
                    None
                };
                ErrorExtra::WriteTimeout {
                    consistency,
                    received,
                    block_for,
                    write_type,
                    contentions,
                }
            }
            ErrorCode::READ_TIMEOUT => ErrorExtra::ReadTimeout {
                consistency: r.read_consistency()?,
                received: r.read_int()?,
                block_for: r.read_int()?,
                data_present: r.read_u8()? != 0,
            },
            ErrorCode::READ_FAILURE => ErrorExtra::ReadFailure {
                consistency: r.read_consistency()?,
                received: r.read_int()?,
                block_for: r.read_int()?,
                failures: read_failures(r, version)?,
                data_present: r.read_u8()? != 0,
            },
            ErrorCode::WRITE_FAILURE => ErrorExtra::WriteFailure {
                consistency: r.read_consistency()?,
                received: r.read_int()?,
                block_for: r.read_int()?,
                failures: read_failures(r, version)?,
                write_type: r.read_string()?,
            },
            ErrorCode::CAS_WRITE_UNKNOWN => ErrorExtra::CasWriteUnknown {
                consistency: r.read_consistency()?,
                received: r.read_int()?,
                block_for: r.read_int()?,
            },
            ErrorCode::FUNCTION_FAILURE => ErrorExtra::FunctionFailure {
                keyspace: r.read_string()?,
                function: r.read_string()?,
                arg_types: r.read_string_list()?,
            },
            ErrorCode::ALREADY_EXISTS => ErrorExtra::AlreadyExists {
                keyspace: r.read_string()?,
                table: r.read_string()?,
            },
            ErrorCode::UNPREPARED => ErrorExtra::Unprepared {
                id: r.read_short_bytes()?,
            },
            _ => ErrorExtra::None,
        };
        Ok(ErrorBody {
            code,
            message,
            extra,
        })
    }
}

fn put_failures(out: &mut Vec<u8>, version: u8, failures: &Failures) {
    if version >= 5 {
        put_int(
            out,
            i32::try_from(failures.reasons.len()).unwrap_or(i32::MAX),
        );
        for (ip, code) in &failures.reasons {
            put_inetaddr(out, ip);
            put_short(out, *code);
        }
    } else {
        put_int(out, failures.num_failures);
    }
}

fn read_failures(r: &mut Reader<'_>, version: u8) -> Result<Failures> {
    let n = r.read_int()?;
    if version < 5 {
        return Ok(Failures {
            num_failures: n,
            reasons: Vec::new(),
        });
    }
    let count = r.check_count(usize::try_from(n).unwrap_or(usize::MAX), 7)?;
    let reasons = (0..count)
        .map(|_| Ok((r.read_inetaddr()?, r.read_short()?)))
        .collect::<Result<Vec<_>>>()?;
    Ok(Failures {
        num_failures: n,
        reasons,
    })
}
