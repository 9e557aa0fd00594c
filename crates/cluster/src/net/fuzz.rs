//! One entry point that runs the internode decoders on arbitrary bytes,
//! for the `internode_frame` fuzz target and the no-panic property test.
//!
//! The first two bytes choose the piece sizes; the rest is the stream. The
//! frame decoder sees the stream whole and again in pieces, under the
//! handshake rules and the established ones, and must give the same frames
//! and the same end either way. The handshake, failure, GOSSIP and
//! metadata log (`crate::metadata::fuzz`), Paxos, STREAM_PULL and
//! STREAM_FILE decoders see the stream as a
//! payload, and whatever they accept must
//! encode and decode again to the same value. Any disagreement panics:
//! that is the bug report.

use bytes::BytesMut;

use super::failure::Failure;
use super::frame::{decode_frame, take_frame, Decoded, Frame, FrameRules, InvalidReason};
use super::handshake::{Hello, HelloAck, HelloReject};
use crate::membership::codec::GossipMessage;

/// How a stream ended: what was left undecoded.
#[derive(Debug, PartialEq, Eq)]
enum End {
    Incomplete,
    Invalid(InvalidReason),
}

/// Runs every decoder on `data`. Panics only on a decoder bug.
pub fn fuzz_decode(data: &[u8]) {
    let (sizes, stream) = match data {
        [a, b, rest @ ..] => ([usize::from(*a), usize::from(*b)], rest),
        _ => ([1, 1], data),
    };
    for rules in [FrameRules::HANDSHAKE, FrameRules::established(1)] {
        let whole = decode_stream(stream, &rules, &[stream.len().max(1)]);
        let pieces = decode_stream(stream, &rules, &[sizes[0] % 17 + 1, sizes[1] + 1]);
        assert_eq!(whole, pieces, "decoding depends on how the bytes arrive");
        let bytewise = decode_stream(stream, &rules, &[1]);
        assert_eq!(whole, bytewise, "decoding depends on how the bytes arrive");
    }
    payload_round_trips(stream);
}

/// Feeds `stream` in pieces whose sizes cycle through `sizes`, taking
/// frames as they complete.
fn decode_stream(stream: &[u8], rules: &FrameRules, sizes: &[usize]) -> (Vec<Frame>, End) {
    let mut buf = BytesMut::new();
    let mut frames = Vec::new();
    let mut rest = stream;
    let mut turn = 0;
    loop {
        match take_frame(&mut buf, rules) {
            Ok(Some(frame)) => {
                frames.push(frame);
                continue;
            }
            Err(reason) => return (frames, End::Invalid(reason)),
            Ok(None) => {}
        }
        if rest.is_empty() {
            check_incomplete(&buf, rules);
            return (frames, End::Incomplete);
        }
        let n = sizes[turn % sizes.len()].min(rest.len());
        turn += 1;
        buf.extend_from_slice(&rest[..n]);
        rest = &rest[n..];
    }
}

/// An incomplete answer asks for more than the buffer holds.
fn check_incomplete(buf: &[u8], rules: &FrameRules) {
    match decode_frame(buf, rules) {
        Decoded::Incomplete { need } => assert!(need > buf.len(), "need {need} <= {}", buf.len()),
        other => panic!("expected Incomplete, got {other:?}"),
    }
}

fn payload_round_trips(payload: &[u8]) {
    if let Ok(hello) = Hello::decode(payload) {
        assert_eq!(Hello::decode(&hello.encode()).as_ref(), Ok(&hello));
    }
    if let Ok(ack) = HelloAck::decode(payload) {
        assert_eq!(HelloAck::decode(&ack.encode()), Ok(ack));
    }
    if let Ok(reject) = HelloReject::decode(payload) {
        assert_eq!(HelloReject::decode(&reject.encode()).as_ref(), Ok(&reject));
    }
    if let Ok(failure) = Failure::decode(payload) {
        assert_eq!(Failure::decode(&failure.encode()).as_ref(), Ok(&failure));
    }
    if let Ok(gossip) = GossipMessage::decode(payload) {
        assert_eq!(
            GossipMessage::decode(&gossip.encode()).as_ref(),
            Ok(&gossip)
        );
    }
    crate::metadata::fuzz::fuzz_decode(payload);
    crate::paxos::codec::fuzz_decode(payload);
    crate::paxos::forward::fuzz_decode(payload);
    crate::verbs::stream::fuzz_decode(payload);
    crate::verbs::range_rows::fuzz_decode(payload);
    crate::verbs::stream_file::fuzz_decode(payload);
    crate::repair::validate::fuzz_decode(payload);
    crate::repair::incremental::fuzz_decode(payload);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::frame::{encode_frame, FrameHeader};
    use crate::net::handshake::{ConnectionKind, HostId, LocalIdentity};
    use crate::net::verb::Verb;
    use proptest::prelude::*;

    #[test]
    fn valid_streams_decode_the_same_in_any_pieces() {
        let me = LocalIdentity::new("c", HostId([1; 16]), ([127, 0, 0, 1], 7000).into());
        let hello = me.hello(ConnectionKind::Small).encode();
        let mut stream = vec![3, 250];
        let header = FrameHeader::handshake(Verb::HELLO);
        for _ in 0..3 {
            stream.extend(encode_frame(&header, &hello).expect("small"));
        }
        stream.extend_from_slice(b"trailing garbage");
        fuzz_decode(&stream);
        fuzz_decode(&hello);
    }

    /// Found by fuzzing: a HELLO whose release holds invalid UTF-8 became
    /// longer than its limit as text, so it did not encode back to itself.
    #[test]
    fn regression_release_lossy_utf8_longer_than_limit() {
        let data = include_bytes!(
            "../../../../fuzz/regressions/internode_frame/release-lossy-utf8-longer-than-limit"
        );
        fuzz_decode(data);
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(data in prop::collection::vec(any::<u8>(), 0..512)) {
            fuzz_decode(&data);
            let mut framed = b"\x05\x07VRVN\x01".to_vec();
            framed.extend_from_slice(&data);
            fuzz_decode(&framed);
        }
    }
}
