//! v5 framing: segments that carry frames, each protected by checksums.
//!
//! **When segments start.** A v5 connection begins in legacy framing: the
//! client's OPTIONS and STARTUP, and the server's SUPPORTED and its reply to
//! STARTUP (READY, or AUTHENTICATE, or an ERROR), are plain frames as in v4.
//! Right after the server has written READY or AUTHENTICATE, both directions
//! switch to segments (the client switches once it reads that reply): every
//! later byte, the AUTH_RESPONSE exchange included, travels in segments.
//! v4 connections never use segments.
//!
//! Uncompressed segment (all multi-byte fields little-endian):
//!
//! ```text
//! bytes 0-2   bits 0-16 payload length, bit 17 self-contained, 6 bits padding
//! bytes 3-5   CRC24 of bytes 0-2
//! payload     at most MAX_SEGMENT_PAYLOAD_BYTES
//! 4 bytes     CRC32 of FA 2D 55 CA followed by the payload
//! ```
//!
//! LZ4 segment:
//!
//! ```text
//! bytes 0-4   bits 0-16 compressed length, bits 17-33 uncompressed length
//!             (0 = payload stored uncompressed), bit 34 self-contained,
//!             5 bits padding
//! bytes 5-7   CRC24 of bytes 0-4
//! payload     compressed length bytes (a raw LZ4 block, or stored bytes)
//! 4 bytes     CRC32 of FA 2D 55 CA followed by the payload as sent
//! ```
//!
//! A self-contained segment holds one or more whole frames. A frame larger
//! than one payload is cut into several segments that are not
//! self-contained; [`crate::assembler::FrameAssembler`] puts it back.

use bytes::{Buf, Bytes, BytesMut};

use crate::compress::{decompress_block, Compression};
use crate::error::{Checksum, ProtocolError, Result};

/// Largest segment payload (17-bit length): 128 KiB - 1.
pub const MAX_SEGMENT_PAYLOAD_BYTES: usize = 128 * 1024 - 1;
/// Header length of an uncompressed segment (3 bytes + CRC24).
pub const SEGMENT_HEADER_LEN: usize = 6;
/// Header length of an LZ4 segment (5 bytes + CRC24).
pub const COMPRESSED_SEGMENT_HEADER_LEN: usize = 8;
/// Length of the payload CRC32 trailer.
pub const SEGMENT_TRAILER_LEN: usize = 4;
/// CRC24 polynomial (Cassandra's `Crc.CRC24_POLY`).
pub const CRC24_POLY: u32 = 0x197_4F0B;
/// CRC24 initial value.
pub const CRC24_INIT: u32 = 0x87_5060;
/// Bytes fed to the CRC32 before the payload.
pub const CRC32_PREFIX: [u8; 4] = [0xFA, 0x2D, 0x55, 0xCA];

const SELF_CONTAINED_BIT_PLAIN: u32 = 1 << 17;
const SELF_CONTAINED_BIT_LZ4: u64 = 1 << 34;
const LEN_MASK: u64 = 0x1_FFFF;

/// CRC24 of `bytes` in wire order: each byte is folded in at bits 16-23,
/// then shifted out MSB first through the 25-bit polynomial.
pub fn crc24(bytes: &[u8]) -> u32 {
    let mut crc = CRC24_INIT;
    for &b in bytes {
        crc ^= u32::from(b) << 16;
        for _ in 0..8 {
            crc <<= 1;
            if crc & 0x100_0000 != 0 {
                crc ^= CRC24_POLY;
            }
        }
    }
    crc & 0xFF_FFFF
}

/// CRC32 (IEEE) of [`CRC32_PREFIX`] followed by `payload`.
pub fn crc32(payload: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&CRC32_PREFIX);
    h.update(payload);
    h.finalize()
}

/// One decoded segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// The payload, decompressed.
    pub payload: Bytes,
    /// True when the payload holds only whole frames.
    pub self_contained: bool,
}

/// Encoder and decoder of v5 segments for one connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SegmentCodec {
    pub compression: Compression,
}

fn le_u64(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .rev()
        .fold(0u64, |acc, &b| (acc << 8) | u64::from(b))
}

fn check(which: Checksum, expected: u32, actual: u32) -> Result<()> {
    if expected == actual {
        Ok(())
    } else {
        Err(ProtocolError::ChecksumMismatch {
            which,
            expected,
            actual,
        })
    }
}

impl SegmentCodec {
    /// A codec for the given compression.
    pub fn new(compression: Compression) -> Self {
        SegmentCodec { compression }
    }

    fn header_len(&self) -> usize {
        match self.compression {
            Compression::None => SEGMENT_HEADER_LEN,
            Compression::Lz4 => COMPRESSED_SEGMENT_HEADER_LEN,
        }
    }

    /// Takes one segment off `buf`; `Ok(None)` when more bytes are needed.
    /// A checksum failure names the checksum; nothing is consumed on error
    /// (the connection cannot resynchronise and must be closed).
    pub fn decode(&self, buf: &mut BytesMut) -> Result<Option<Segment>> {
        let hlen = self.header_len();
        if buf.len() < hlen {
            return Ok(None);
        }
        let fields_len = hlen - 3;
        let fields = le_u64(&buf[..fields_len]);
        let wire_crc = le_u64(&buf[fields_len..hlen]) as u32;
        check(Checksum::HeaderCrc24, wire_crc, crc24(&buf[..fields_len]))?;
        let (wire_len, uncompressed_len, self_contained) = match self.compression {
            Compression::None => (
                (fields & LEN_MASK) as usize,
                0,
                fields as u32 & SELF_CONTAINED_BIT_PLAIN != 0,
            ),
            Compression::Lz4 => (
                (fields & LEN_MASK) as usize,
                ((fields >> 17) & LEN_MASK) as usize,
                fields & SELF_CONTAINED_BIT_LZ4 != 0,
            ),
        };
        let total = hlen + wire_len + SEGMENT_TRAILER_LEN;
        if buf.len() < total {
            return Ok(None);
        }
        let payload = &buf[hlen..hlen + wire_len];
        let trailer = &buf[hlen + wire_len..total];
        check(
            Checksum::PayloadCrc32,
            le_u64(trailer) as u32,
            crc32(payload),
        )?;
        let payload = if uncompressed_len == 0 {
            Bytes::copy_from_slice(payload)
        } else {
            Bytes::from(decompress_block(
                payload,
                uncompressed_len,
                MAX_SEGMENT_PAYLOAD_BYTES,
            )?)
        };
        buf.advance(total);
        Ok(Some(Segment {
            payload,
            self_contained,
        }))
    }

    /// Appends one segment holding `payload` (at most
    /// [`MAX_SEGMENT_PAYLOAD_BYTES`]; longer input is cut by the callers in
    /// this module, never here).
    fn put_segment(&self, out: &mut Vec<u8>, payload: &[u8], self_contained: bool) {
        debug_assert!(payload.len() <= MAX_SEGMENT_PAYLOAD_BYTES);
        let len = payload.len() as u64 & LEN_MASK;
        match self.compression {
            Compression::None => {
                let fields = len
                    | if self_contained {
                        u64::from(SELF_CONTAINED_BIT_PLAIN)
                    } else {
                        0
                    };
                let h = fields.to_le_bytes();
                out.extend_from_slice(&h[..3]);
                out.extend_from_slice(&crc24(&h[..3]).to_le_bytes()[..3]);
                out.extend_from_slice(payload);
                out.extend_from_slice(&crc32(payload).to_le_bytes());
            }
            Compression::Lz4 => {
                let compressed = lz4_flex::block::compress(payload);
                let (body, uncompressed_len): (&[u8], u64) = if compressed.len() < payload.len() {
                    (&compressed, len)
                } else {
                    (payload, 0)
                };
                let fields = (body.len() as u64 & LEN_MASK)
                    | (uncompressed_len << 17)
                    | if self_contained {
                        SELF_CONTAINED_BIT_LZ4
                    } else {
                        0
                    };
                let h = fields.to_le_bytes();
                out.extend_from_slice(&h[..5]);
                out.extend_from_slice(&crc24(&h[..5]).to_le_bytes()[..3]);
                out.extend_from_slice(body);
                out.extend_from_slice(&crc32(body).to_le_bytes());
            }
        }
    }

    /// Packs already-encoded frames (one slice per frame, in order) into
    /// segments: consecutive frames share self-contained segments up to the
    /// payload limit; a frame larger than the limit is cut into several
    /// segments that are not self-contained.
    pub fn encode_frames(&self, frames: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode_frames_into(frames, &mut out);
        out
    }

    /// [`SegmentCodec::encode_frames`], appending to `out`.
    pub fn encode_frames_into(&self, frames: &[&[u8]], out: &mut Vec<u8>) {
        let mut pending: Vec<u8> = Vec::new();
        for frame in frames {
            if frame.len() > MAX_SEGMENT_PAYLOAD_BYTES {
                if !pending.is_empty() {
                    self.put_segment(out, &pending, true);
                    pending.clear();
                }
                for chunk in frame.chunks(MAX_SEGMENT_PAYLOAD_BYTES) {
                    self.put_segment(out, chunk, false);
                }
                continue;
            }
            if pending.len() + frame.len() > MAX_SEGMENT_PAYLOAD_BYTES {
                self.put_segment(out, &pending, true);
                pending.clear();
            }
            pending.extend_from_slice(frame);
        }
        if !pending.is_empty() {
            self.put_segment(out, &pending, true);
        }
    }

    /// Encodes a single segment; `Invalid` when the payload is too large.
    pub fn encode_segment(&self, payload: &[u8], self_contained: bool) -> Result<Vec<u8>> {
        if payload.len() > MAX_SEGMENT_PAYLOAD_BYTES {
            return Err(ProtocolError::invalid(format!(
                "segment payload of {} bytes exceeds {MAX_SEGMENT_PAYLOAD_BYTES}",
                payload.len()
            )));
        }
        let mut out = Vec::new();
        self.put_segment(&mut out, payload, self_contained);
        Ok(out)
    }
}

#[cfg(test)]
#[path = "segment_tests.rs"]
mod tests;
