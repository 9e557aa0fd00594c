//! The one error type of the protocol codec.
//!
//! A decoder tells apart `Incomplete` (wait for more bytes; only framing
//! layers return it to their caller) from every other variant (the bytes are
//! wrong; the connection must answer with an ERROR or close).

use thiserror::Error;

/// Which checksum of a v5 segment failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Checksum {
    /// The CRC24 that protects the segment header.
    HeaderCrc24,
    /// The CRC32 that protects the segment payload.
    PayloadCrc32,
}

impl std::fmt::Display for Checksum {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Checksum::HeaderCrc24 => f.write_str("segment header CRC24"),
            Checksum::PayloadCrc32 => f.write_str("segment payload CRC32"),
        }
    }
}

/// Everything that can go wrong while decoding or checking protocol bytes.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ProtocolError {
    /// More bytes are needed before the value can be decoded.
    #[error("incomplete input: more bytes are needed")]
    Incomplete,
    /// The bytes do not follow the protocol.
    #[error("invalid protocol message: {0}")]
    Invalid(String),
    /// The client opened with a protocol version we do not speak. Reply with
    /// [`crate::encode_unsupported_version_error`] and close the connection.
    #[error("{}", crate::frame::unsupported_version_message(*version))]
    UnsupportedVersion {
        /// The version number the client sent (direction bit removed).
        version: u8,
        /// The stream id of the offending frame, for the reply.
        stream: i16,
    },
    /// The frame body is larger than the configured maximum.
    #[error("Request is too big: body length {body_len} exceeds maximum allowed length {max}.")]
    BodyTooLarge {
        /// The stream id of the offending frame, for the reply.
        stream: i16,
        /// The body length announced by the header.
        body_len: u32,
        /// The limit that was exceeded.
        max: usize,
    },
    /// A request or response opcode that does not exist.
    #[error("unknown opcode 0x{opcode:02x}")]
    UnknownOpcode {
        /// The stream id of the offending frame.
        stream: i16,
        /// The opcode byte.
        opcode: u8,
    },
    /// A v5 segment checksum did not match.
    #[error("{which} mismatch: expected 0x{expected:08x}, computed 0x{actual:08x}")]
    ChecksumMismatch {
        /// Which checksum failed.
        which: Checksum,
        /// The value read from the wire.
        expected: u32,
        /// The value computed over the received bytes.
        actual: u32,
    },
    /// A protocol error worded as Cassandra words it, sent as it is (a v3
    /// frame with a flag v3 does not have, ...).
    #[error("{0}")]
    Refused(String),
    /// Compressed data could not be decompressed.
    #[error("decompression failed: {0}")]
    Compression(String),
}

impl ProtocolError {
    /// Shorthand for [`ProtocolError::Invalid`].
    pub fn invalid(msg: impl Into<String>) -> Self {
        ProtocolError::Invalid(msg.into())
    }

    /// The stream id a reply to this error should carry, when known.
    pub fn stream(&self) -> Option<i16> {
        match self {
            ProtocolError::UnsupportedVersion { stream, .. }
            | ProtocolError::BodyTooLarge { stream, .. }
            | ProtocolError::UnknownOpcode { stream, .. } => Some(*stream),
            _ => None,
        }
    }

    /// Turns `Incomplete` into `Invalid`: inside a complete frame body,
    /// running out of bytes means the body is malformed.
    pub(crate) fn truncated(self, what: &str) -> Self {
        match self {
            ProtocolError::Incomplete => {
                ProtocolError::Invalid(format!("{what}: body is truncated"))
            }
            other => other,
        }
    }
}

/// Result alias of this crate.
pub type Result<T> = std::result::Result<T, ProtocolError>;
