//! The frame envelope (spec section 2): a 9-byte header and a body.
//!
//! ```text
//! byte 0      version: bit 7 = direction (1 = response), bits 0-6 = version
//! byte 1      flags (0x01 compressed, 0x02 tracing, 0x04 custom payload,
//!             0x08 warning, 0x10 use-beta)
//! bytes 2-3   stream id, signed big-endian
//! byte 4      opcode
//! bytes 5-8   body length, unsigned big-endian
//! bytes 9..   body
//! ```
//!
//! Version policy: Varve speaks v3, v4 and v5 ([`SUPPORTED_VERSIONS`]), as
//! Cassandra 5.0 does (v3 shares v4's header; what differs is in the
//! messages, see `docs/format/native-protocol.md`). A frame
//! of any other version yields [`ProtocolError::UnsupportedVersion`] once its
//! header is complete (8 bytes for v1/v2, whose stream id is one byte; 9
//! otherwise). The server then writes
//! [`encode_unsupported_version_error`] and closes the connection, which is
//! what Cassandra does: the ERROR carries the client's own version when it
//! is an old one (1, 2), so the client can parse it, and our highest
//! version otherwise (the spec's rule for versions above the server's).
//! v5 is not a beta version, so the USE_BETA flag is accepted and ignored.
//!
//! Size policy: a body longer than the limit yields
//! [`ProtocolError::BodyTooLarge`] as soon as the header is read. Like
//! Cassandra, the connection survives: [`EnvelopeDecoder`] skips the body
//! and the server answers ERROR `Invalid` ("Request is too big ...") on the
//! frame's stream.

use bytes::{Buf, Bytes, BytesMut};

use crate::error::{ProtocolError, Result};
use crate::error_code::{ErrorBody, ErrorCode, ErrorExtra};
use crate::primitives::put_int;

/// Length of a v3+ frame header.
pub const HEADER_LEN: usize = 9;
/// Length of a v1/v2 frame header (one-byte stream id).
pub const LEGACY_HEADER_LEN: usize = 8;
/// Cassandra's default `native_transport_max_frame_size` (16 MiB).
pub const MAX_FRAME_BODY_BYTES: usize = 16 * 1024 * 1024;
/// The protocol versions Varve speaks.
pub const SUPPORTED_VERSIONS: [u8; 3] = [3, 4, 5];
/// Lowest supported version.
pub const MIN_VERSION: u8 = 3;
/// Highest supported version; also the version of ERROR replies to a
/// client that asked for a newer, unknown version.
pub const MAX_VERSION: u8 = 5;
/// The direction bit of byte 0.
pub const DIRECTION_RESPONSE: u8 = 0x80;
/// Mask of the version bits of byte 0.
pub const VERSION_MASK: u8 = 0x7f;
/// The stream id of server-pushed EVENT frames.
pub const EVENT_STREAM: i16 = -1;

/// Header flag bits.
pub mod flags {
    /// The body is compressed (v4 only in Varve).
    pub const COMPRESSION: u8 = 0x01;
    /// Tracing requested (request) / tracing id present (response).
    pub const TRACING: u8 = 0x02;
    /// A `[bytes map]` custom payload precedes the message.
    pub const CUSTOM_PAYLOAD: u8 = 0x04;
    /// A `[string list]` of warnings precedes the message (responses).
    pub const WARNING: u8 = 0x08;
    /// The client opts in to a beta protocol version.
    pub const USE_BETA: u8 = 0x10;
}

/// Opcodes (spec section 2.4).
pub mod opcode {
    pub const ERROR: u8 = 0x00;
    pub const STARTUP: u8 = 0x01;
    pub const READY: u8 = 0x02;
    pub const AUTHENTICATE: u8 = 0x03;
    pub const OPTIONS: u8 = 0x05;
    pub const SUPPORTED: u8 = 0x06;
    pub const QUERY: u8 = 0x07;
    pub const RESULT: u8 = 0x08;
    pub const PREPARE: u8 = 0x09;
    pub const EXECUTE: u8 = 0x0A;
    pub const REGISTER: u8 = 0x0B;
    pub const EVENT: u8 = 0x0C;
    pub const BATCH: u8 = 0x0D;
    pub const AUTH_CHALLENGE: u8 = 0x0E;
    pub const AUTH_RESPONSE: u8 = 0x0F;
    pub const AUTH_SUCCESS: u8 = 0x10;
}

/// True when Varve speaks `version`.
pub fn is_supported_version(version: u8) -> bool {
    SUPPORTED_VERSIONS.contains(&version)
}

/// The `PROTOCOL_VERSIONS` strings of SUPPORTED and of version errors.
pub fn supported_version_strings() -> Vec<String> {
    SUPPORTED_VERSIONS
        .iter()
        .map(|v| format!("{v}/v{v}"))
        .collect()
}

/// Cassandra's wording for a version it does not speak; drivers match on
/// "Invalid or unsupported protocol version" to decide to downgrade.
pub fn unsupported_version_message(version: u8) -> String {
    format!(
        "Invalid or unsupported protocol version ({version}); supported versions are ({})",
        supported_version_strings().join(", ")
    )
}

/// A decoded frame header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHeader {
    /// Protocol version, without the direction bit.
    pub version: u8,
    /// Direction bit of byte 0.
    pub is_response: bool,
    /// Flag bits, see [`flags`].
    pub flags: u8,
    /// Stream id.
    pub stream: i16,
    /// Opcode, see [`opcode`].
    pub opcode: u8,
    /// Length of the body that follows.
    pub body_len: u32,
}

impl FrameHeader {
    /// The 9-byte wire form.
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut out = [0u8; HEADER_LEN];
        out[0] = (self.version & VERSION_MASK)
            | if self.is_response {
                DIRECTION_RESPONSE
            } else {
                0
            };
        out[1] = self.flags;
        out[2..4].copy_from_slice(&self.stream.to_be_bytes());
        out[4] = self.opcode;
        out[5..9].copy_from_slice(&self.body_len.to_be_bytes());
        out
    }

    /// Parses the 9-byte form without judging version or size.
    pub fn decode(bytes: &[u8]) -> Result<FrameHeader> {
        let h: &[u8; HEADER_LEN] = bytes
            .get(..HEADER_LEN)
            .and_then(|s| s.try_into().ok())
            .ok_or(ProtocolError::Incomplete)?;
        Ok(FrameHeader {
            version: h[0] & VERSION_MASK,
            is_response: h[0] & DIRECTION_RESPONSE != 0,
            flags: h[1],
            stream: i16::from_be_bytes([h[2], h[3]]),
            opcode: h[4],
            body_len: u32::from_be_bytes([h[5], h[6], h[7], h[8]]),
        })
    }

    /// True when `flag` (one of [`flags`]) is set.
    pub fn has_flag(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }
}

/// One whole frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub header: FrameHeader,
    /// The body exactly as sent (possibly compressed).
    pub body: Bytes,
}

impl Frame {
    /// Header and body as wire bytes (the header's `body_len` is recomputed).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut header = self.header;
        header.body_len = u32::try_from(self.body.len()).unwrap_or(u32::MAX);
        let mut out = Vec::with_capacity(HEADER_LEN + self.body.len());
        out.extend_from_slice(&header.encode());
        out.extend_from_slice(&self.body);
        out
    }
}

/// Checks a complete header: version first, then size.
fn check_header(buf: &[u8], max_body: usize) -> Result<Option<FrameHeader>> {
    let Some(&first) = buf.first() else {
        return Ok(None);
    };
    let version = first & VERSION_MASK;
    if !is_supported_version(version) {
        let header_len = if version <= 2 {
            LEGACY_HEADER_LEN
        } else {
            HEADER_LEN
        };
        if buf.len() < header_len {
            return Ok(None);
        }
        let stream = if version <= 2 {
            i16::from(buf[2] as i8)
        } else {
            i16::from_be_bytes([buf[2], buf[3]])
        };
        return Err(ProtocolError::UnsupportedVersion { version, stream });
    }
    if buf.len() < HEADER_LEN {
        return Ok(None);
    }
    let header = FrameHeader::decode(buf)?;
    if header.body_len as usize > max_body {
        return Err(ProtocolError::BodyTooLarge {
            stream: header.stream,
            body_len: header.body_len,
            max: max_body,
        });
    }
    Ok(Some(header))
}

/// Takes one whole frame off the front of `buf`, or returns `Ok(None)` when
/// more bytes are needed. On error nothing is consumed; see
/// [`EnvelopeDecoder`] to skip an oversized frame and go on.
pub fn decode_envelope(buf: &mut BytesMut, max_body: usize) -> Result<Option<Frame>> {
    let Some(header) = check_header(buf, max_body)? else {
        return Ok(None);
    };
    let total = HEADER_LEN + header.body_len as usize;
    if buf.len() < total {
        return Ok(None);
    }
    buf.advance(HEADER_LEN);
    let body = buf.split_to(header.body_len as usize).freeze();
    Ok(Some(Frame { header, body }))
}

/// A stateful envelope decoder that, like Cassandra, survives an oversized
/// frame: it reports [`ProtocolError::BodyTooLarge`] once, then silently
/// discards the body as it arrives and resumes with the next frame.
#[derive(Debug, Clone)]
pub struct EnvelopeDecoder {
    max_body: usize,
    discard_remaining: u64,
}

impl EnvelopeDecoder {
    /// A decoder with the given body limit.
    pub fn new(max_body: usize) -> Self {
        EnvelopeDecoder {
            max_body,
            discard_remaining: 0,
        }
    }

    /// Like [`decode_envelope`], but an oversized frame is consumed (now or
    /// as its bytes arrive) after the error is returned.
    pub fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>> {
        if self.discard_remaining > 0 {
            let n = usize::try_from(self.discard_remaining)
                .unwrap_or(usize::MAX)
                .min(buf.len());
            buf.advance(n);
            self.discard_remaining -= n as u64;
            if self.discard_remaining > 0 {
                return Ok(None);
            }
        }
        match decode_envelope(buf, self.max_body) {
            Err(e @ ProtocolError::BodyTooLarge { body_len, .. }) => {
                self.discard_remaining = HEADER_LEN as u64 + u64::from(body_len);
                let n = usize::try_from(self.discard_remaining)
                    .unwrap_or(usize::MAX)
                    .min(buf.len());
                buf.advance(n);
                self.discard_remaining -= n as u64;
                Err(e)
            }
            other => other,
        }
    }

    /// Bytes still to be thrown away from an oversized frame.
    pub fn discarding(&self) -> u64 {
        self.discard_remaining
    }
}

/// The version an ERROR reply to a client that asked for `client_version`
/// must carry so that the client can read it.
pub fn unsupported_version_reply_version(client_version: u8) -> u8 {
    match client_version {
        1..=2 => client_version,
        _ => MAX_VERSION,
    }
}

/// The whole ERROR frame (code 0x000A Protocol error) answering a frame of
/// an unsupported version. v1/v2 replies use their 8-byte header layout.
pub fn encode_unsupported_version_error(client_version: u8, stream: i16) -> Vec<u8> {
    let reply_version = unsupported_version_reply_version(client_version);
    let mut body = Vec::new();
    let err = ErrorBody {
        code: ErrorCode::PROTOCOL_ERROR,
        message: unsupported_version_message(client_version),
        extra: ErrorExtra::None,
    };
    err.encode(reply_version, &mut body);
    let mut out = Vec::with_capacity(HEADER_LEN + body.len());
    out.push(reply_version | DIRECTION_RESPONSE);
    out.push(0);
    if reply_version <= 2 {
        out.push(stream.to_be_bytes()[1]);
    } else {
        out.extend_from_slice(&stream.to_be_bytes());
    }
    out.push(opcode::ERROR);
    put_int(&mut out, i32::try_from(body.len()).unwrap_or(i32::MAX));
    out.extend_from_slice(&body);
    out
}

/// The ERROR body Cassandra sends for an oversized frame (code `Invalid`).
pub fn body_too_large_error(body_len: u32, max: usize) -> ErrorBody {
    ErrorBody {
        code: ErrorCode::INVALID,
        message: format!(
            "Request is too big: length {} exceeds maximum allowed length {}.",
            u64::from(body_len) + HEADER_LEN as u64,
            max + HEADER_LEN
        ),
        extra: ErrorExtra::None,
    }
}

#[cfg(test)]
#[path = "frame_tests.rs"]
mod tests;
