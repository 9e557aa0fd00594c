//! Tests of the frame envelope and version handling.

use super::*;
use crate::primitives::Reader;

fn header(version: u8, body_len: u32) -> FrameHeader {
    FrameHeader {
        version,
        is_response: false,
        flags: 0,
        stream: 42,
        opcode: opcode::OPTIONS,
        body_len,
    }
}

#[test]
fn header_round_trips() {
    let h = FrameHeader {
        version: 5,
        is_response: true,
        flags: 0x0a,
        stream: -1,
        opcode: 0x0c,
        body_len: 77,
    };
    let bytes = h.encode();
    assert_eq!(bytes[0], 0x85);
    assert_eq!(FrameHeader::decode(&bytes), Ok(h));
    assert_eq!(
        FrameHeader::decode(&bytes[..8]),
        Err(ProtocolError::Incomplete)
    );
}

#[test]
fn envelope_waits_then_takes_exactly_one_frame() {
    let mut wire = header(4, 3).encode().to_vec();
    wire.extend_from_slice(b"abc");
    wire.extend_from_slice(&header(4, 0).encode());
    for cut in 0..12 {
        let mut buf = BytesMut::from(&wire[..cut]);
        assert_eq!(
            decode_envelope(&mut buf, MAX_FRAME_BODY_BYTES),
            Ok(None),
            "cut {cut}"
        );
    }
    let mut buf = BytesMut::from(wire.as_slice());
    let f = decode_envelope(&mut buf, MAX_FRAME_BODY_BYTES)
        .expect("ok")
        .expect("frame");
    assert_eq!(f.body.as_ref(), b"abc");
    assert_eq!(buf.len(), HEADER_LEN);
}

#[test]
fn body_limit_at_n_and_n_plus_one() {
    let at = header(4, MAX_FRAME_BODY_BYTES as u32).encode();
    let mut buf = BytesMut::from(at.as_slice());
    assert_eq!(
        decode_envelope(&mut buf, MAX_FRAME_BODY_BYTES),
        Ok(None),
        "accepted, waits for body"
    );
    let over = header(4, MAX_FRAME_BODY_BYTES as u32 + 1).encode();
    let mut buf = BytesMut::from(over.as_slice());
    assert_eq!(
        decode_envelope(&mut buf, MAX_FRAME_BODY_BYTES),
        Err(ProtocolError::BodyTooLarge {
            stream: 42,
            body_len: MAX_FRAME_BODY_BYTES as u32 + 1,
            max: MAX_FRAME_BODY_BYTES
        })
    );
    assert_eq!(buf.len(), HEADER_LEN, "nothing consumed");
}

#[test]
fn envelope_decoder_skips_an_oversized_frame_and_continues() {
    let mut dec = EnvelopeDecoder::new(4);
    let mut wire = header(4, 10).encode().to_vec();
    wire.extend_from_slice(&[9; 10]);
    wire.extend_from_slice(&header(4, 2).encode());
    wire.extend_from_slice(b"ok");
    let mut buf = BytesMut::from(&wire[..12]);
    assert!(matches!(
        dec.decode(&mut buf),
        Err(ProtocolError::BodyTooLarge { stream: 42, .. })
    ));
    assert_eq!(dec.discarding(), 7);
    buf.extend_from_slice(&wire[12..]);
    let f = dec.decode(&mut buf).expect("ok").expect("next frame");
    assert_eq!(f.body.as_ref(), b"ok");
    assert!(buf.is_empty());
}

#[test]
fn unsupported_versions_are_reported_with_their_stream() {
    for (version, stream) in [(7u8, 42i16), (6, 42), (0x42, 42)] {
        let mut buf = BytesMut::from(header(version, 0).encode().as_slice());
        assert_eq!(
            decode_envelope(&mut buf, MAX_FRAME_BODY_BYTES),
            Err(ProtocolError::UnsupportedVersion { version, stream })
        );
    }
    // v1/v2 have an 8-byte header with a one-byte stream id.
    let v2 = [0x02, 0x00, 0x07, 0x05, 0, 0, 0, 0];
    assert_eq!(
        decode_envelope(&mut BytesMut::from(&v2[..7]), MAX_FRAME_BODY_BYTES),
        Ok(None)
    );
    assert_eq!(
        decode_envelope(&mut BytesMut::from(&v2[..]), MAX_FRAME_BODY_BYTES),
        Err(ProtocolError::UnsupportedVersion {
            version: 2,
            stream: 7
        })
    );
}

#[test]
fn beta_flag_is_ignored_on_v5() {
    let mut h = header(5, 0);
    h.flags = flags::USE_BETA;
    let mut buf = BytesMut::from(h.encode().as_slice());
    assert!(decode_envelope(&mut buf, MAX_FRAME_BODY_BYTES)
        .expect("accepted")
        .is_some());
}

#[test]
fn unsupported_version_reply_is_readable_by_the_client() {
    let expected_msg =
        "Invalid or unsupported protocol version (2); supported versions are (3/v3, 4/v4, 5/v5)";
    let reply = encode_unsupported_version_error(2, 9);
    assert_eq!(
        &reply[..4],
        &[0x82, 0x00, 0x09, opcode::ERROR],
        "old versions get a reply in their own version and layout (one-byte stream)"
    );
    let len = u32::from_be_bytes([reply[4], reply[5], reply[6], reply[7]]) as usize;
    assert_eq!(len, reply.len() - LEGACY_HEADER_LEN);
    let mut r = Reader::new(&reply[LEGACY_HEADER_LEN..]);
    assert_eq!(r.read_int(), Ok(0x000A));
    assert_eq!(r.read_string().as_deref(), Ok(expected_msg));

    let reply = encode_unsupported_version_error(6, 1);
    assert_eq!(reply[0], 0x85, "newer versions get our highest version");
    let h = FrameHeader::decode(&reply).expect("header");
    assert_eq!(
        (h.stream, h.opcode, h.body_len as usize),
        (1, opcode::ERROR, reply.len() - HEADER_LEN)
    );

    let reply = encode_unsupported_version_error(1, 3);
    assert_eq!(&reply[..4], &[0x81, 0x00, 0x03, opcode::ERROR]);
}

#[test]
fn v3_frames_are_accepted_and_v1_v2_refused() {
    for version in [3, 4, 5] {
        let mut buf = BytesMut::from(header(version, 0).encode().as_slice());
        let frame = decode_envelope(&mut buf, MAX_FRAME_BODY_BYTES)
            .expect("accepted")
            .expect("a whole frame");
        assert_eq!(frame.header.version, version);
    }
    for version in [1u8, 2] {
        // Their 8-byte header: version, flags, one-byte stream, opcode, length.
        let wire = [version, 0, 7, opcode::OPTIONS, 0, 0, 0, 0];
        let mut buf = BytesMut::from(&wire[..]);
        assert_eq!(
            decode_envelope(&mut buf, MAX_FRAME_BODY_BYTES),
            Err(ProtocolError::UnsupportedVersion { version, stream: 7 })
        );
    }
}

#[test]
fn too_large_error_matches_cassandra_wording() {
    let e = body_too_large_error(100, 50);
    assert_eq!(e.code, ErrorCode::INVALID);
    assert_eq!(
        e.message,
        "Request is too big: length 109 exceeds maximum allowed length 59."
    );
}
