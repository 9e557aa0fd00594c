//! Unit and property tests of the frame codec.

use super::*;
use crate::net::limits::{MAX_FRAME_PAYLOAD_BYTES, MAX_HANDSHAKE_PAYLOAD_BYTES};
use proptest::prelude::*;

fn echo(request_id: u64) -> FrameHeader {
    FrameHeader {
        version: 1,
        flags: Flags::NONE,
        verb: Verb::ECHO,
        request_id,
        epoch: 7,
        timeout_ms: 2000,
    }
}

const ESTABLISHED: FrameRules = FrameRules {
    version: 1,
    max_payload_bytes: MAX_FRAME_PAYLOAD_BYTES,
    handshake: false,
};

fn invalid(buf: &[u8], rules: &FrameRules) -> InvalidReason {
    match decode_frame(buf, rules) {
        Decoded::Invalid { reason } => reason,
        other => panic!("expected Invalid, got {other:?}"),
    }
}

/// A header whose CRC is recomputed after `edit`.
fn edited_header(edit: impl FnOnce(&mut [u8; FRAME_HEADER_BYTES])) -> [u8; FRAME_HEADER_BYTES] {
    let mut head = echo(1).encode(0);
    edit(&mut head);
    let crc = crc32(&head[..32]);
    head[32..].copy_from_slice(&crc.to_be_bytes());
    head
}

#[test]
fn crc_is_ieee() {
    assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
}

#[test]
fn a_frame_round_trips() {
    let bytes = encode_frame(&echo(42), b"hello").expect("encodes");
    assert_eq!(bytes.len(), FRAME_HEADER_BYTES + 5 + FRAME_TRAILER_BYTES);
    assert_eq!(&bytes[..4], b"VRVN");
    match decode_frame(&bytes, &ESTABLISHED) {
        Decoded::Frame { header, frame_len } => {
            assert_eq!(header, echo(42));
            assert_eq!(frame_len, bytes.len());
        }
        other => panic!("{other:?}"),
    }
    let mut buf = BytesMut::from(&bytes[..]);
    buf.extend_from_slice(&bytes);
    for _ in 0..2 {
        let frame = take_frame(&mut buf, &ESTABLISHED)
            .expect("valid")
            .expect("whole");
        assert_eq!(frame.payload, Bytes::from_static(b"hello"));
    }
    assert!(buf.is_empty());
}

#[test]
fn every_prefix_is_incomplete() {
    let bytes = encode_frame(&echo(1), &[9; 20]).expect("encodes");
    for cut in 0..bytes.len() {
        let need = if cut < FRAME_HEADER_BYTES {
            FRAME_HEADER_BYTES
        } else {
            bytes.len()
        };
        assert_eq!(
            decode_frame(&bytes[..cut], &ESTABLISHED),
            Decoded::Incomplete { need },
            "cut at {cut}"
        );
    }
}

#[test]
fn wrong_magic_is_invalid_from_its_first_byte() {
    assert_eq!(invalid(b"X", &ESTABLISHED), InvalidReason::BadMagic);
    assert_eq!(invalid(b"VRVX", &ESTABLISHED), InvalidReason::BadMagic);
    assert_eq!(
        invalid(b"GET / HTTP/1.1\r\n", &ESTABLISHED),
        InvalidReason::BadMagic
    );
}

#[test]
fn any_damaged_header_bit_is_caught() {
    let bytes = encode_frame(&echo(1), b"x").expect("encodes");
    for bit in 0..FRAME_HEADER_BYTES * 8 {
        let mut damaged = bytes.clone();
        damaged[bit / 8] ^= 1 << (bit % 8);
        let reason = invalid(&damaged, &ESTABLISHED);
        let expected = if bit < 32 {
            InvalidReason::BadMagic
        } else {
            InvalidReason::HeaderCrc
        };
        assert_eq!(reason, expected, "bit {bit}");
    }
}

#[test]
fn a_damaged_payload_is_caught() {
    let mut bytes = encode_frame(&echo(1), b"payload").expect("encodes");
    bytes[FRAME_HEADER_BYTES + 3] ^= 0x10;
    assert_eq!(invalid(&bytes, &ESTABLISHED), InvalidReason::PayloadCrc);
    let mut bytes = encode_frame(&echo(1), b"").expect("encodes");
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    assert_eq!(invalid(&bytes, &ESTABLISHED), InvalidReason::PayloadCrc);
}

#[test]
fn header_fields_are_checked_after_the_crc() {
    let v2 = edited_header(|h| h[4] = 2);
    assert_eq!(
        invalid(&v2, &ESTABLISHED),
        InvalidReason::WrongVersion {
            got: 2,
            expected: 1
        }
    );
    let flags = edited_header(|h| h[5] = 0x04);
    assert_eq!(
        invalid(&flags, &ESTABLISHED),
        InvalidReason::UnknownFlags(0x04)
    );
    let failure_on_request = edited_header(|h| h[5] = Flags::FAILURE.0);
    assert!(matches!(
        invalid(&failure_on_request, &ESTABLISHED),
        InvalidReason::FlagNotAllowed { .. }
    ));
    let hello = edited_header(|h| h[6..8].copy_from_slice(&Verb::HELLO.0.to_be_bytes()));
    assert_eq!(
        invalid(&hello, &ESTABLISHED),
        InvalidReason::HandshakeAgain(Verb::HELLO)
    );
    let echo = echo(1).encode(0);
    assert_eq!(
        invalid(&echo, &FrameRules::HANDSHAKE),
        InvalidReason::NotHandshake(Verb::ECHO)
    );
}

fn with_len(len: u32) -> [u8; FRAME_HEADER_BYTES] {
    echo(1).encode(len)
}

#[test]
fn frame_payload_limit_at_n_and_n_plus_one() {
    let n = MAX_FRAME_PAYLOAD_BYTES as u32;
    // At N the decoder waits for the bytes, without reserving them.
    assert_eq!(
        decode_frame(&with_len(n), &ESTABLISHED),
        Decoded::Incomplete {
            need: FRAME_HEADER_BYTES + MAX_FRAME_PAYLOAD_BYTES + FRAME_TRAILER_BYTES
        }
    );
    assert_eq!(
        invalid(&with_len(n + 1), &ESTABLISHED),
        InvalidReason::PayloadTooLarge {
            len: n + 1,
            max: MAX_FRAME_PAYLOAD_BYTES
        }
    );
    assert!(invalid(&with_len(u32::MAX), &ESTABLISHED) != InvalidReason::HeaderCrc);
    // The encoder refuses what the decoder would.
    let at_n = Bytes::from(vec![0u8; MAX_FRAME_PAYLOAD_BYTES]);
    let frame = EncodedFrame::new(&echo(1), at_n).expect("N is accepted");
    let bytes = frame.to_vec();
    assert!(matches!(
        decode_frame(&bytes, &ESTABLISHED),
        Decoded::Frame { .. }
    ));
    let over = Bytes::from(vec![0u8; MAX_FRAME_PAYLOAD_BYTES + 1]);
    assert!(EncodedFrame::new(&echo(1), over.clone()).is_err());
    assert!(encode_frame(&echo(1), &over).is_err());
}

#[test]
fn handshake_payload_limit_at_n_and_n_plus_one() {
    let hello = |len| FrameHeader::handshake(Verb::HELLO).encode(len);
    let n = MAX_HANDSHAKE_PAYLOAD_BYTES as u32;
    assert!(matches!(
        decode_frame(&hello(n), &FrameRules::HANDSHAKE),
        Decoded::Incomplete { .. }
    ));
    assert!(matches!(
        invalid(&hello(n + 1), &FrameRules::HANDSHAKE),
        InvalidReason::PayloadTooLarge { .. }
    ));
}

#[test]
fn reason_labels_are_distinct() {
    let mut labels = InvalidReason::LABELS.to_vec();
    labels.sort_unstable();
    labels.dedup();
    assert_eq!(labels.len(), InvalidReason::LABELS.len());
    assert_eq!(InvalidReason::PayloadCrc.label(), "payload_crc");
}

fn arb_header() -> impl Strategy<Value = FrameHeader> {
    (
        any::<u16>(),
        any::<u64>(),
        any::<u64>(),
        any::<u32>(),
        0u8..3,
    )
        .prop_map(|(code, request_id, epoch, timeout_ms, flag_pick)| {
            let verb = Verb(code.max(4));
            let flags = match flag_pick {
                1 if verb.is_response() => Flags::FAILURE,
                2 if !verb.is_response() => Flags::ONE_WAY,
                _ => Flags::NONE,
            };
            FrameHeader {
                version: 1,
                flags,
                verb,
                request_id,
                epoch,
                timeout_ms,
            }
        })
}

proptest! {
    #[test]
    fn frames_round_trip_in_any_pieces(
        frames in prop::collection::vec((arb_header(), prop::collection::vec(any::<u8>(), 0..300)), 1..6),
        piece in 1usize..64,
    ) {
        let mut stream = Vec::new();
        for (h, p) in &frames {
            stream.extend_from_slice(&encode_frame(h, p).expect("small"));
        }
        let mut buf = BytesMut::new();
        let mut got = Vec::new();
        for chunk in stream.chunks(piece) {
            buf.extend_from_slice(chunk);
            while let Some(frame) = take_frame(&mut buf, &ESTABLISHED).expect("valid") {
                got.push((frame.header, frame.payload.to_vec()));
            }
        }
        prop_assert!(buf.is_empty());
        prop_assert_eq!(got, frames);
    }
}
