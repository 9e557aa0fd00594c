//! Compression negotiated in STARTUP (`"COMPRESSION": "lz4"`; snappy is
//! not offered).
//!
//! - v4: each frame body may be compressed (header flag 0x01); the body is
//!   then `[u32 big-endian uncompressed length][LZ4 block]`.
//! - v5: frames are never compressed; the segment layer compresses each
//!   segment payload instead (see [`crate::segment`]).

use crate::error::{ProtocolError, Result};
use crate::frame::{flags, FrameHeader, MAX_FRAME_BODY_BYTES};

/// The STARTUP option key that selects compression.
pub const STARTUP_COMPRESSION_KEY: &str = "COMPRESSION";
/// The only algorithm Varve offers.
pub const LZ4_NAME: &str = "lz4";

/// The compression of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compression {
    #[default]
    None,
    Lz4,
}

impl Compression {
    /// The algorithm for a STARTUP `COMPRESSION` value; unknown names
    /// (snappy included) are a protocol error.
    pub fn from_startup_name(name: &str) -> Result<Compression> {
        if name.eq_ignore_ascii_case(LZ4_NAME) {
            Ok(Compression::Lz4)
        } else {
            Err(ProtocolError::invalid(format!(
                "Unknown compression algorithm: {name}"
            )))
        }
    }
}

/// Compresses a v4 frame body: length prefix and LZ4 block.
pub fn compress_v4_body(body: &[u8]) -> Vec<u8> {
    let len = u32::try_from(body.len()).unwrap_or(u32::MAX);
    let mut out = len.to_be_bytes().to_vec();
    out.extend_from_slice(&lz4_flex::block::compress(body));
    out
}

/// Decompresses a v4 frame body, refusing to inflate past `max_len`.
pub fn decompress_v4_body(body: &[u8], max_len: usize) -> Result<Vec<u8>> {
    let (len, block) = match body {
        [a, b, c, d, rest @ ..] => (u32::from_be_bytes([*a, *b, *c, *d]) as usize, rest),
        _ => {
            return Err(ProtocolError::Compression(
                "compressed body shorter than its length prefix".into(),
            ))
        }
    };
    decompress_block(block, len, max_len)
}

/// Decompresses a raw LZ4 block that must inflate to exactly `len` bytes.
pub fn decompress_block(block: &[u8], len: usize, max_len: usize) -> Result<Vec<u8>> {
    if len > max_len {
        return Err(ProtocolError::Compression(format!(
            "uncompressed length {len} exceeds the limit of {max_len} bytes"
        )));
    }
    let out = lz4_flex::block::decompress(block, len)
        .map_err(|e| ProtocolError::Compression(e.to_string()))?;
    if out.len() != len {
        return Err(ProtocolError::Compression(format!(
            "block inflated to {} bytes, {len} announced",
            out.len()
        )));
    }
    Ok(out)
}

/// The plain body of a received frame: decompressed when the compression
/// flag is set. The flag is an error on v5 frames (segments compress there)
/// and when no compression was negotiated.
pub fn frame_body(header: &FrameHeader, body: &[u8], compression: Compression) -> Result<Vec<u8>> {
    if !header.has_flag(flags::COMPRESSION) {
        return Ok(body.to_vec());
    }
    if header.version >= 5 {
        return Err(ProtocolError::invalid(
            "v5 frames must not set the compression flag",
        ));
    }
    match compression {
        Compression::Lz4 => decompress_v4_body(body, MAX_FRAME_BODY_BYTES),
        Compression::None => Err(ProtocolError::invalid(
            "compressed frame received but no compression was negotiated",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v4_body_round_trips() {
        let body = b"SELECT * FROM t WHERE k = 1; SELECT * FROM t WHERE k = 1;".repeat(10);
        let c = compress_v4_body(&body);
        assert!(c.len() < body.len());
        assert_eq!(
            decompress_v4_body(&c, MAX_FRAME_BODY_BYTES).expect("inflates"),
            body
        );
    }

    #[test]
    fn lying_length_is_an_error_not_a_panic() {
        let mut c = compress_v4_body(b"hello hello hello hello");
        c[3] = c[3].wrapping_add(1);
        assert!(decompress_v4_body(&c, MAX_FRAME_BODY_BYTES).is_err());
        assert!(decompress_v4_body(&[0, 0], MAX_FRAME_BODY_BYTES).is_err());
        assert!(decompress_v4_body(&[0xff, 0xff, 0xff, 0xff, 0], MAX_FRAME_BODY_BYTES).is_err());
    }

    #[test]
    fn only_lz4_is_offered() {
        assert_eq!(Compression::from_startup_name("lz4"), Ok(Compression::Lz4));
        assert!(Compression::from_startup_name("snappy").is_err());
    }
}
