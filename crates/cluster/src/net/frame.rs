//! The internode frame (docs/format/internode.md, section 2): a 36-byte
//! header with its own CRC, the payload, and the payload's CRC.
//!
//! A pure codec, no I/O. [`decode_frame`] looks at the bytes received so
//! far and answers [`Decoded::Incomplete`] (read more), [`Decoded::Invalid`]
//! (the connection can no longer be trusted) or [`Decoded::Frame`]. It
//! checks the magic as soon as its bytes arrive and the header CRC before
//! it believes the payload length, and it allocates nothing: the caller
//! grows its buffer by what actually arrives.
//!
//! Layout (big-endian):
//!
//! ```text
//!  0  magic "VRVN"   4  version   5  flags   6  verb (u16)
//!  8  request id (u64)           16  epoch (u64)
//! 24  timeout_ms (u32)           28  payload length n (u32)
//! 32  header CRC32 of bytes 0..32
//! 36  payload (n bytes)          36 + n  payload CRC32
//! ```

use bytes::{Bytes, BytesMut};
use thiserror::Error;

use super::limits::{MAX_FRAME_PAYLOAD_BYTES, MAX_HANDSHAKE_PAYLOAD_BYTES};
use super::verb::{Flags, Verb};

/// "VRVN".
pub const FRAME_MAGIC: u32 = 0x5652_564E;
pub const FRAME_HEADER_BYTES: usize = 36;
pub const FRAME_TRAILER_BYTES: usize = 4;
/// The frame version of the handshake frames, forever.
pub const HANDSHAKE_VERSION: u8 = 1;
/// The oldest and newest frame versions this node speaks.
pub const MIN_VERSION: u8 = 1;
pub const MAX_VERSION: u8 = 1;

const MAGIC_BYTES: [u8; 4] = FRAME_MAGIC.to_be_bytes();
const CRC_OFFSET: usize = 32;

/// The CRC32 (IEEE) every Varve format uses.
pub fn crc32(bytes: &[u8]) -> u32 {
    crc32fast::hash(bytes)
}

/// A frame header, without the payload length (which the payload gives)
/// and the CRC (which the encoder computes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHeader {
    pub version: u8,
    pub flags: Flags,
    pub verb: Verb,
    /// Chosen by a request's sender; repeated by its response; 0 for the
    /// handshake and for one-way frames.
    pub request_id: u64,
    /// The sender's last applied metadata epoch.
    pub epoch: u64,
    /// Requests: how long the sender still waits, in milliseconds.
    pub timeout_ms: u32,
}

impl FrameHeader {
    /// The header of a handshake frame: version 1, everything else zero.
    pub fn handshake(verb: Verb) -> FrameHeader {
        FrameHeader {
            version: HANDSHAKE_VERSION,
            flags: Flags::NONE,
            verb,
            request_id: 0,
            epoch: 0,
            timeout_ms: 0,
        }
    }

    /// The 36 header bytes for a payload of `payload_len` bytes.
    pub fn encode(&self, payload_len: u32) -> [u8; FRAME_HEADER_BYTES] {
        let mut out = [0u8; FRAME_HEADER_BYTES];
        out[0..4].copy_from_slice(&MAGIC_BYTES);
        out[4] = self.version;
        out[5] = self.flags.0;
        out[6..8].copy_from_slice(&self.verb.0.to_be_bytes());
        out[8..16].copy_from_slice(&self.request_id.to_be_bytes());
        out[16..24].copy_from_slice(&self.epoch.to_be_bytes());
        out[24..28].copy_from_slice(&self.timeout_ms.to_be_bytes());
        out[28..32].copy_from_slice(&payload_len.to_be_bytes());
        let crc = crc32(&out[..CRC_OFFSET]);
        out[CRC_OFFSET..].copy_from_slice(&crc.to_be_bytes());
        out
    }

    /// The fields of a header whose CRC has been checked, and its payload
    /// length.
    fn parse(h: &[u8; FRAME_HEADER_BYTES]) -> (FrameHeader, u32) {
        let u16_at = |i: usize| u16::from_be_bytes([h[i], h[i + 1]]);
        let u32_at = |i: usize| u32::from_be_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
        let u64_at = |i: usize| (u64::from(u32_at(i)) << 32) | u64::from(u32_at(i + 4));
        let header = FrameHeader {
            version: h[4],
            flags: Flags(h[5]),
            verb: Verb(u16_at(6)),
            request_id: u64_at(8),
            epoch: u64_at(16),
            timeout_ms: u32_at(24),
        };
        (header, u32_at(28))
    }
}

/// Why bytes are not a frame. The connection is closed on any of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum InvalidReason {
    #[error("wrong magic")]
    BadMagic,
    #[error("header CRC mismatch")]
    HeaderCrc,
    #[error("version {got}, expected {expected}")]
    WrongVersion { got: u8, expected: u8 },
    #[error("unknown flag bits {0:#04x}")]
    UnknownFlags(u8),
    #[error("flags {flags:#04x} not allowed on {verb}")]
    FlagNotAllowed { verb: Verb, flags: u8 },
    #[error("payload of {len} bytes over the limit of {max}")]
    PayloadTooLarge { len: u32, max: usize },
    #[error("payload CRC mismatch")]
    PayloadCrc,
    #[error("{0} before the handshake")]
    NotHandshake(Verb),
    #[error("{0} after the handshake")]
    HandshakeAgain(Verb),
}

impl InvalidReason {
    /// Every reason's label, in [`InvalidReason::index`] order.
    pub const LABELS: [&'static str; 9] = [
        "bad_magic",
        "header_crc",
        "wrong_version",
        "unknown_flags",
        "flag_not_allowed",
        "payload_too_large",
        "payload_crc",
        "not_handshake",
        "handshake_again",
    ];

    /// A small index for counters.
    pub fn index(&self) -> usize {
        match self {
            InvalidReason::BadMagic => 0,
            InvalidReason::HeaderCrc => 1,
            InvalidReason::WrongVersion { .. } => 2,
            InvalidReason::UnknownFlags(_) => 3,
            InvalidReason::FlagNotAllowed { .. } => 4,
            InvalidReason::PayloadTooLarge { .. } => 5,
            InvalidReason::PayloadCrc => 6,
            InvalidReason::NotHandshake(_) => 7,
            InvalidReason::HandshakeAgain(_) => 8,
        }
    }

    /// The label of this reason (for counters and logs).
    pub fn label(&self) -> &'static str {
        InvalidReason::LABELS[self.index()]
    }
}

/// Which frames a connection accepts at this point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameRules {
    /// The only version accepted.
    pub version: u8,
    /// The longest payload accepted.
    pub max_payload_bytes: usize,
    /// Before the handshake only handshake verbs; after it none.
    pub handshake: bool,
}

impl FrameRules {
    /// Before the handshake succeeded.
    pub const HANDSHAKE: FrameRules = FrameRules {
        version: HANDSHAKE_VERSION,
        max_payload_bytes: MAX_HANDSHAKE_PAYLOAD_BYTES,
        handshake: true,
    };

    /// After a handshake that chose `version`.
    pub fn established(version: u8) -> FrameRules {
        FrameRules {
            version,
            max_payload_bytes: MAX_FRAME_PAYLOAD_BYTES,
            handshake: false,
        }
    }

    fn check(&self, header: &FrameHeader, payload_len: u32) -> Result<(), InvalidReason> {
        if header.version != self.version {
            return Err(InvalidReason::WrongVersion {
                got: header.version,
                expected: self.version,
            });
        }
        let unknown = header.flags.unknown_bits();
        if unknown != 0 {
            return Err(InvalidReason::UnknownFlags(unknown));
        }
        if !header.flags.allowed_on(header.verb) {
            return Err(InvalidReason::FlagNotAllowed {
                verb: header.verb,
                flags: header.flags.0,
            });
        }
        match (self.handshake, header.verb.is_handshake()) {
            (true, false) => return Err(InvalidReason::NotHandshake(header.verb)),
            (false, true) => return Err(InvalidReason::HandshakeAgain(header.verb)),
            _ => {}
        }
        // Widened, never narrowed: a u32 always fits a usize here.
        if u64::from(payload_len) > self.max_payload_bytes as u64 {
            return Err(InvalidReason::PayloadTooLarge {
                len: payload_len,
                max: self.max_payload_bytes,
            });
        }
        Ok(())
    }
}

/// The decoder's answer about the bytes at the front of a buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decoded {
    /// Not a whole frame yet: the buffer must hold at least `need` bytes
    /// before the decoder can say more.
    Incomplete { need: usize },
    /// Not a frame; the stream can no longer be trusted.
    Invalid { reason: InvalidReason },
    /// A whole frame: its header, and `frame_len` bytes in all (the
    /// payload is `buf[FRAME_HEADER_BYTES..frame_len - FRAME_TRAILER_BYTES]`).
    Frame {
        header: FrameHeader,
        frame_len: usize,
    },
}

/// Decodes the frame at the front of `buf` under `rules`.
pub fn decode_frame(buf: &[u8], rules: &FrameRules) -> Decoded {
    let seen = buf.len().min(MAGIC_BYTES.len());
    if buf[..seen] != MAGIC_BYTES[..seen] {
        return Decoded::Invalid {
            reason: InvalidReason::BadMagic,
        };
    }
    let Some(head) = buf.first_chunk::<FRAME_HEADER_BYTES>() else {
        return Decoded::Incomplete {
            need: FRAME_HEADER_BYTES,
        };
    };
    let stored_crc = u32::from_be_bytes([head[32], head[33], head[34], head[35]]);
    if crc32(&head[..CRC_OFFSET]) != stored_crc {
        return Decoded::Invalid {
            reason: InvalidReason::HeaderCrc,
        };
    }
    let (header, payload_len) = FrameHeader::parse(head);
    if let Err(reason) = rules.check(&header, payload_len) {
        return Decoded::Invalid { reason };
    }
    // Checked against the limit above, so this cannot overflow.
    let payload_end = FRAME_HEADER_BYTES + payload_len as usize;
    let frame_len = payload_end + FRAME_TRAILER_BYTES;
    let (Some(payload), Some(trailer)) = (
        buf.get(FRAME_HEADER_BYTES..payload_end),
        buf.get(payload_end..frame_len),
    ) else {
        return Decoded::Incomplete { need: frame_len };
    };
    let stored = u32::from_be_bytes([trailer[0], trailer[1], trailer[2], trailer[3]]);
    if crc32(payload) != stored {
        return Decoded::Invalid {
            reason: InvalidReason::PayloadCrc,
        };
    }
    Decoded::Frame { header, frame_len }
}

/// A decoded frame that owns its payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub header: FrameHeader,
    pub payload: Bytes,
}

/// Takes the frame at the front of `buf` off it, without copying the
/// payload: `Ok(None)` while it is incomplete.
pub fn take_frame(buf: &mut BytesMut, rules: &FrameRules) -> Result<Option<Frame>, InvalidReason> {
    match decode_frame(buf, rules) {
        Decoded::Incomplete { .. } => Ok(None),
        Decoded::Invalid { reason } => Err(reason),
        Decoded::Frame { header, frame_len } => {
            let mut whole = buf.split_to(frame_len);
            whole.truncate(frame_len - FRAME_TRAILER_BYTES);
            let payload = whole.split_off(FRAME_HEADER_BYTES).freeze();
            Ok(Some(Frame { header, payload }))
        }
    }
}

/// A frame's payload is longer than a frame may carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[error("payload of {len} bytes over the frame limit of {max}")]
pub struct PayloadTooLarge {
    pub len: usize,
    pub max: usize,
}

/// An encoded frame kept in three pieces, so the payload is never copied
/// and a writer can hand all three to one vectored write.
#[derive(Debug, Clone)]
pub struct EncodedFrame {
    pub head: [u8; FRAME_HEADER_BYTES],
    pub payload: Bytes,
    pub trailer: [u8; FRAME_TRAILER_BYTES],
}

impl EncodedFrame {
    /// Encodes `header` with `payload`; refuses a payload over
    /// [`MAX_FRAME_PAYLOAD_BYTES`].
    pub fn new(header: &FrameHeader, payload: Bytes) -> Result<EncodedFrame, PayloadTooLarge> {
        let len = checked_len(payload.len())?;
        Ok(EncodedFrame {
            head: header.encode(len),
            trailer: crc32(&payload).to_be_bytes(),
            payload,
        })
    }

    /// Bytes on the wire.
    pub fn len(&self) -> usize {
        FRAME_HEADER_BYTES + self.payload.len() + FRAME_TRAILER_BYTES
    }

    /// Never true: a frame has at least its header.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The frame as one contiguous buffer.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len());
        out.extend_from_slice(&self.head);
        out.extend_from_slice(&self.payload);
        out.extend_from_slice(&self.trailer);
        out
    }
}

/// Encodes one frame into a contiguous buffer.
pub fn encode_frame(header: &FrameHeader, payload: &[u8]) -> Result<Vec<u8>, PayloadTooLarge> {
    let len = checked_len(payload.len())?;
    let mut out = Vec::with_capacity(FRAME_HEADER_BYTES + payload.len() + FRAME_TRAILER_BYTES);
    out.extend_from_slice(&header.encode(len));
    out.extend_from_slice(payload);
    out.extend_from_slice(&crc32(payload).to_be_bytes());
    Ok(out)
}

/// A payload length as the header carries it, if a frame may carry it.
fn checked_len(len: usize) -> Result<u32, PayloadTooLarge> {
    let too_large = PayloadTooLarge {
        len,
        max: MAX_FRAME_PAYLOAD_BYTES,
    };
    if len > MAX_FRAME_PAYLOAD_BYTES {
        return Err(too_large);
    }
    u32::try_from(len).map_err(|_| too_large)
}

#[cfg(test)]
mod tests;
