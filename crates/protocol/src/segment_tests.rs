//! Tests of v5 segments.

use super::*;
use crate::assembler::FrameAssembler;
use crate::frame::{Frame, FrameHeader, MAX_FRAME_BODY_BYTES};
use proptest::prelude::*;

/// CRC24 written independently: one message bit at a time, MSB first,
/// as polynomial division with the top bit of the register.
fn reference_crc24(bytes: &[u8]) -> u32 {
    let mut crc: u32 = CRC24_INIT;
    for &b in bytes {
        for i in (0..8).rev() {
            let top = ((crc >> 23) & 1) ^ u32::from((b >> i) & 1);
            crc = (crc << 1) & 0xFF_FFFF;
            if top == 1 {
                crc ^= CRC24_POLY & 0xFF_FFFF;
            }
        }
    }
    crc
}

/// Bitwise reflected CRC32 (IEEE 0xEDB88320), independent of crc32fast.
fn reference_crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

fn frame_bytes(stream: i16, body_len: usize) -> Vec<u8> {
    let body: Vec<u8> = (0..body_len).map(|i| (i * 7 % 256) as u8).collect();
    let header = FrameHeader {
        version: 5,
        is_response: true,
        flags: 0,
        stream,
        opcode: 0x08,
        body_len: 0,
    };
    Frame {
        header,
        body: Bytes::from(body),
    }
    .to_bytes()
}

fn decode_all(codec: SegmentCodec, bytes: &[u8]) -> Vec<Segment> {
    let mut buf = BytesMut::from(bytes);
    let mut out = Vec::new();
    while let Some(s) = codec.decode(&mut buf).expect("valid segments") {
        out.push(s);
    }
    assert!(buf.is_empty(), "trailing bytes");
    out
}

#[test]
fn crc24_known_answers() {
    // Header of a self-contained 5-byte payload: 05 00 02 (little-endian).
    let header = [0x05, 0x00, 0x02];
    assert_eq!(crc24(&header), 0x9A_9919);
    assert_eq!(reference_crc24(&header), 0x9A_9919);
    assert_eq!(crc24(&[]), CRC24_INIT);
    let seg = SegmentCodec::new(Compression::None)
        .encode_segment(b"hello", true)
        .expect("fits");
    assert_eq!(&seg[..6], &[0x05, 0x00, 0x02, 0x19, 0x99, 0x9A]);
}

#[test]
fn crc32_known_answer() {
    assert_eq!(crc32(b"hello"), 0xB60E_8074);
    let mut all = CRC32_PREFIX.to_vec();
    all.extend_from_slice(b"hello");
    assert_eq!(reference_crc32(&all), 0xB60E_8074);
    let seg = SegmentCodec::new(Compression::None)
        .encode_segment(b"hello", true)
        .expect("fits");
    assert_eq!(&seg[11..], &0xB60E_8074u32.to_le_bytes());
}

#[test]
fn round_trip_several_frames_both_compressions() {
    for c in [Compression::None, Compression::Lz4] {
        let codec = SegmentCodec::new(c);
        let frames = [frame_bytes(1, 10), frame_bytes(2, 0), frame_bytes(3, 5000)];
        let refs: Vec<&[u8]> = frames.iter().map(Vec::as_slice).collect();
        let wire = codec.encode_frames(&refs);
        let segs = decode_all(codec, &wire);
        assert_eq!(segs.len(), 1);
        assert!(segs[0].self_contained);
        let mut asm = FrameAssembler::new(MAX_FRAME_BODY_BYTES);
        let got = asm.push(segs[0].clone()).expect("frames");
        assert_eq!(
            got.iter().map(|f| f.to_bytes()).collect::<Vec<_>>(),
            frames.to_vec()
        );
    }
}

#[test]
fn large_frame_spans_segments_both_compressions() {
    for c in [Compression::None, Compression::Lz4] {
        let codec = SegmentCodec::new(c);
        let big = frame_bytes(7, 300 * 1024);
        let small = frame_bytes(8, 3);
        let wire = codec.encode_frames(&[&small, &big, &small]);
        let segs = decode_all(codec, &wire);
        let flags: Vec<bool> = segs.iter().map(|s| s.self_contained).collect();
        assert_eq!(flags, vec![true, false, false, false, true]);
        let mut asm = FrameAssembler::new(MAX_FRAME_BODY_BYTES);
        let mut frames = Vec::new();
        for s in segs {
            frames.extend(asm.push(s).expect("valid"));
        }
        let streams: Vec<i16> = frames.iter().map(|f| f.header.stream).collect();
        assert_eq!(streams, vec![8, 7, 8]);
        assert_eq!(frames[1].to_bytes(), big);
    }
}

#[test]
fn payload_limit_at_n_and_n_plus_one() {
    for c in [Compression::None, Compression::Lz4] {
        let codec = SegmentCodec::new(c);
        let max: Vec<u8> = (0..MAX_SEGMENT_PAYLOAD_BYTES)
            .map(|i| (i % 13) as u8)
            .collect();
        let seg = codec.encode_segment(&max, true).expect("max fits");
        let back = decode_all(codec, &seg);
        assert_eq!(back[0].payload.as_ref(), max.as_slice());
        let over = vec![0u8; MAX_SEGMENT_PAYLOAD_BYTES + 1];
        assert!(codec.encode_segment(&over, true).is_err());
        // A frame of exactly the limit stays self-contained; one more byte
        // splits it.
        let f = frame_bytes(1, MAX_SEGMENT_PAYLOAD_BYTES - 9);
        assert_eq!(decode_all(codec, &codec.encode_frames(&[&f])).len(), 1);
        let f = frame_bytes(1, MAX_SEGMENT_PAYLOAD_BYTES - 8);
        let segs = decode_all(codec, &codec.encode_frames(&[&f]));
        assert_eq!(
            segs.iter().map(|s| s.self_contained).collect::<Vec<_>>(),
            vec![false, false]
        );
    }
}

#[test]
fn every_flipped_byte_is_an_error_naming_the_crc() {
    for c in [Compression::None, Compression::Lz4] {
        let codec = SegmentCodec::new(c);
        let payload = b"some payload bytes, some payload bytes, some payload bytes".to_vec();
        let seg = codec.encode_segment(&payload, true).expect("fits");
        let hlen = codec.header_len();
        for i in 0..seg.len() {
            for bit in [0x01u8, 0x80] {
                let mut bad = seg.clone();
                bad[i] ^= bit;
                let result = codec.decode(&mut BytesMut::from(bad.as_slice()));
                let which = match result {
                    Err(ProtocolError::ChecksumMismatch { which, .. }) => which,
                    other => panic!("flip at {i} gave {other:?}"),
                };
                let expected = if i < hlen {
                    Checksum::HeaderCrc24
                } else {
                    Checksum::PayloadCrc32
                };
                assert_eq!(which, expected, "flip at byte {i}");
            }
        }
    }
}

#[test]
fn partial_segments_wait_for_more_bytes() {
    let codec = SegmentCodec::new(Compression::Lz4);
    let seg = codec
        .encode_segment(b"abcdefabcdefabcdefabcdef", true)
        .expect("fits");
    for cut in 0..seg.len() {
        let mut buf = BytesMut::from(&seg[..cut]);
        assert_eq!(codec.decode(&mut buf), Ok(None), "cut at {cut}");
        assert_eq!(buf.len(), cut);
    }
}

proptest! {
    #[test]
    fn crc24_matches_reference(bytes in proptest::collection::vec(any::<u8>(), 0..16)) {
        prop_assert_eq!(crc24(&bytes), reference_crc24(&bytes));
    }

    #[test]
    fn segments_round_trip(payload in proptest::collection::vec(0u8..4, 0..3000), sc in any::<bool>(), lz4 in any::<bool>()) {
        let codec = SegmentCodec::new(if lz4 { Compression::Lz4 } else { Compression::None });
        let seg = codec.encode_segment(&payload, sc)?;
        let mut buf = BytesMut::from(seg.as_slice());
        let back = codec.decode(&mut buf)?.expect("whole segment");
        prop_assert_eq!(back.payload.as_ref(), payload.as_slice());
        prop_assert_eq!(back.self_contained, sc);
        prop_assert!(buf.is_empty());
    }
}
