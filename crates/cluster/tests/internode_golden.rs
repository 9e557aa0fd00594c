//! Golden bytes of one internode frame per verb
//! (`fixtures/internode_frames_v1.hex`), so an accidental change to the
//! frame layout, a verb code, a flag or a handshake payload fails here.
//! A deliberate change is a new version (docs/format/internode.md,
//! section 8); rewrite the file with `VARVE_BLESS=1` only then.

use std::net::SocketAddr;
use std::path::PathBuf;

use bytes::BytesMut;
use varve_cluster::net::frame::{encode_frame, FrameHeader, FrameRules};
use varve_cluster::net::{
    take_frame, ClusterId, ConnectionKind, Failure, FailureReason, Flags, Hello, HelloAck,
    HelloReject, HostId, RejectReason, Verb,
};

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/internode_frames_v1.hex")
}

fn hello() -> Vec<u8> {
    Hello {
        min_version: 1,
        max_version: 1,
        kind: ConnectionKind::Small,
        cluster_name: "Test Cluster".into(),
        cluster_id: ClusterId([0x22; 16]),
        host_id: HostId([0x11; 16]),
        generation: 1_700_000_000,
        address: SocketAddr::from(([127, 0, 0, 1], 7000)),
        release: "varve 0.1.0".into(),
    }
    .encode()
}

/// The header and payload of the golden frame of `verb`.
fn golden(verb: Verb) -> (FrameHeader, Vec<u8>) {
    if verb.is_handshake() {
        let payload = match verb {
            Verb::HELLO => hello(),
            Verb::HELLO_ACK => HelloAck {
                version: 1,
                host_id: HostId([0x33; 16]),
                cluster_id: ClusterId([0x22; 16]),
                generation: 1_700_000_001,
            }
            .encode(),
            _ => HelloReject::new(RejectReason::CLUSTER_NAME_DIFFERS, "wrong cluster").encode(),
        };
        return (FrameHeader::handshake(verb), payload);
    }
    let mut header = FrameHeader {
        version: 1,
        flags: Flags::NONE,
        verb,
        request_id: 0x0102_0304_0506_0708,
        epoch: 42,
        timeout_ms: 2000,
    };
    if verb.is_response() {
        header.timeout_ms = 0;
        if verb == Verb::READ_RSP {
            header.flags = Flags::FAILURE;
            let failure = Failure::new(FailureReason::TIMEOUT, "timed out");
            return (header, failure.encode());
        }
        return (header, Vec::new());
    }
    if verb.is_one_way() {
        header.flags = Flags::ONE_WAY;
        header.request_id = 0;
        header.timeout_ms = 0;
    }
    (header, b"payload".to_vec())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn render() -> String {
    let mut out = String::from(
        "# One internode frame (version 1) per verb: name, then the frame in hex.\n\
         # Written by crates/cluster/tests/internode_golden.rs with VARVE_BLESS=1.\n",
    );
    for (verb, name) in Verb::KNOWN {
        let (header, payload) = golden(verb);
        let frame = encode_frame(&header, &payload).expect("small");
        out.push_str(&format!("{name} {}\n", hex(&frame)));
    }
    out
}

#[test]
fn every_verb_encodes_to_its_golden_bytes() {
    let want = render();
    if std::env::var_os("VARVE_BLESS").is_some() {
        std::fs::write(fixture(), &want).expect("fixture written");
    }
    let have = std::fs::read_to_string(fixture()).expect("fixture present");
    for (line_want, line_have) in want.lines().zip(have.lines()) {
        assert_eq!(
            line_have, line_want,
            "layout changed (see docs/format/internode.md, section 8)"
        );
    }
    assert_eq!(
        have.lines().count(),
        want.lines().count(),
        "verbs added or removed"
    );
}

#[test]
fn golden_frames_decode_to_their_headers() {
    let text = std::fs::read_to_string(fixture()).expect("fixture present");
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let (name, hex_bytes) = line.split_once(' ').expect("name and bytes");
        let bytes: Vec<u8> = (0..hex_bytes.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex_bytes[i..i + 2], 16).expect("hex"))
            .collect();
        let verb = Verb::KNOWN
            .iter()
            .find(|(_, n)| *n == name)
            .map(|(v, _)| *v)
            .expect("a known verb");
        let rules = if verb.is_handshake() {
            FrameRules::HANDSHAKE
        } else {
            FrameRules::established(1)
        };
        let mut buf = BytesMut::from(&bytes[..]);
        let frame = take_frame(&mut buf, &rules).expect("valid").expect("whole");
        let (header, payload) = golden(verb);
        assert_eq!(frame.header, header, "{name}");
        assert_eq!(frame.payload.as_ref(), payload.as_slice(), "{name}");
        assert!(buf.is_empty());
    }
}
