//! One entry point that runs every decoder on arbitrary bytes, for fuzz
//! targets and the no-panic property test.

use bytes::BytesMut;

use crate::assembler::FrameAssembler;
use crate::compress::{decompress_v4_body, Compression};
use crate::frame::{
    decode_envelope, EnvelopeDecoder, FrameHeader, HEADER_LEN, MAX_FRAME_BODY_BYTES,
    SUPPORTED_VERSIONS,
};
use crate::primitives::Reader;
use crate::request::{decode_request, Request};
use crate::response::{decode_response, Response};
use crate::segment::{SegmentCodec, MAX_SEGMENT_PAYLOAD_BYTES};
use crate::types::read_type;

/// Runs every decoder on `data` and discards the results. Must never panic.
pub fn fuzz_decode(data: &[u8]) {
    // Envelopes, with and without the stateful decoder.
    let mut buf = BytesMut::from(data);
    while let Ok(Some(frame)) = decode_envelope(&mut buf, MAX_FRAME_BODY_BYTES) {
        for c in [Compression::None, Compression::Lz4] {
            let _ = decode_request(&frame, c);
            let _ = decode_response(&frame, c);
        }
    }
    let mut dec = EnvelopeDecoder::new(64);
    let mut buf = BytesMut::from(data);
    for _ in 0..4 {
        let _ = dec.decode(&mut buf);
    }
    // Message bodies under every opcode and every version, taking the
    // header from the first bytes and the body from the rest.
    if data.len() >= HEADER_LEN {
        if let Ok(mut header) = FrameHeader::decode(data) {
            let body = &data[HEADER_LEN..];
            for version in SUPPORTED_VERSIONS {
                header.version = version;
                header.is_response = false;
                let _ = Request::decode(&header, body);
                header.is_response = true;
                let _ = Response::decode(&header, body);
            }
        }
    }
    // Segments and reassembly.
    for c in [Compression::None, Compression::Lz4] {
        let codec = SegmentCodec::new(c);
        let mut buf = BytesMut::from(data);
        let mut asm = FrameAssembler::new(MAX_FRAME_BODY_BYTES);
        while let Ok(Some(seg)) = codec.decode(&mut buf) {
            let _ = asm.push(seg);
        }
    }
    let mut asm = FrameAssembler::new(1024);
    for (i, chunk) in data.chunks(97).enumerate() {
        let seg = crate::segment::Segment {
            payload: bytes::Bytes::copy_from_slice(chunk),
            self_contained: i % 2 == 0,
        };
        let _ = asm.push(seg);
    }
    let _ = decompress_v4_body(data, MAX_SEGMENT_PAYLOAD_BYTES);
    let _ = read_type(&mut Reader::new(data));
}
