//! Tests of the handshake payloads and the acceptor's decision.

use super::*;
use crate::net::limits::{MAX_CLUSTER_NAME_BYTES, MAX_HANDSHAKE_PAYLOAD_BYTES, MAX_RELEASE_BYTES};
use crate::net::wire::{put_bytes, WireError};
use proptest::prelude::*;
use std::net::{IpAddr, Ipv6Addr};

fn addr(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

fn node(host: u8, port: u16) -> LocalIdentity {
    LocalIdentity::new("Test Cluster", HostId([host; 16]), addr(port))
}

fn hello_header() -> FrameHeader {
    FrameHeader::handshake(Verb::HELLO)
}

#[test]
fn payloads_round_trip() {
    let mut me = node(1, 7000);
    me.cluster_id = ClusterId([9; 16]);
    me.generation = -5;
    me.address = SocketAddr::new(IpAddr::V6(Ipv6Addr::LOCALHOST), 7001);
    for kind in [ConnectionKind::Small, ConnectionKind::Bulk] {
        let hello = me.hello(kind);
        assert_eq!(Hello::decode(&hello.encode()), Ok(hello));
    }
    let ack = HelloAck {
        version: 1,
        host_id: HostId([3; 16]),
        cluster_id: ClusterId([4; 16]),
        generation: 1234,
    };
    assert_eq!(HelloAck::decode(&ack.encode()), Ok(ack));
    let reject = HelloReject::new(RejectReason::SAME_HOST_ID, "no");
    assert_eq!(HelloReject::decode(&reject.encode()), Ok(reject));
}

#[test]
fn an_acceptable_hello_gets_the_highest_common_version() {
    let acceptor = node(1, 7000);
    let mut peer = node(2, 7001);
    peer.max_version = 9;
    let hello = peer.hello(ConnectionKind::Small);
    let (ack, got) =
        accept_hello(&acceptor, &hello_header(), &hello.encode(), false).expect("accepted");
    assert_eq!(ack.version, acceptor.max_version);
    assert_eq!(ack.host_id, acceptor.host_id);
    assert_eq!(got, hello);
    let answer = FrameHeader::handshake(Verb::HELLO_ACK);
    assert_eq!(check_answer(&peer, &answer, &ack.encode()), Ok(ack));
}

fn rejected(acceptor: &LocalIdentity, peer: &LocalIdentity) -> RejectReason {
    let hello = peer.hello(ConnectionKind::Bulk).encode();
    match accept_hello(acceptor, &hello_header(), &hello, false) {
        Err(reject) => reject.reason,
        Ok(_) => panic!("accepted"),
    }
}

#[test]
fn each_reject_reason() {
    let acceptor = node(1, 7000);

    let mut newer = node(2, 7001);
    newer.min_version = 2;
    newer.max_version = 3;
    assert_eq!(rejected(&acceptor, &newer), RejectReason::NO_COMMON_VERSION);

    let mut other_name = node(2, 7001);
    other_name.cluster_name = "Other".into();
    assert_eq!(
        rejected(&acceptor, &other_name),
        RejectReason::CLUSTER_NAME_DIFFERS
    );

    let mut with_id = acceptor.clone();
    with_id.cluster_id = ClusterId([1; 16]);
    let mut other_id = node(2, 7001);
    other_id.cluster_id = ClusterId([2; 16]);
    assert_eq!(
        rejected(&with_id, &other_id),
        RejectReason::CLUSTER_ID_DIFFERS
    );
    // Either side without an id yet is no conflict.
    assert!(decide(&acceptor, &other_id.hello(ConnectionKind::Small)).is_ok());
    assert!(decide(&with_id, &node(2, 7001).hello(ConnectionKind::Small)).is_ok());

    assert_eq!(
        rejected(&acceptor, &node(1, 7001)),
        RejectReason::SAME_HOST_ID
    );

    let garbage = accept_hello(&acceptor, &hello_header(), b"\x01\x01\x07", false);
    assert_eq!(
        garbage.map(|_| ()).map_err(|r| r.reason),
        Err(RejectReason::MALFORMED_HELLO)
    );
    let mut not_zero = hello_header();
    not_zero.request_id = 5;
    let hello = node(2, 7001).hello(ConnectionKind::Small).encode();
    let bad_header = accept_hello(&acceptor, &not_zero, &hello, false);
    assert_eq!(
        bad_header.map(|_| ()).map_err(|r| r.reason),
        Err(RejectReason::MALFORMED_HELLO)
    );

    let closing = accept_hello(&acceptor, &hello_header(), &hello, true);
    assert_eq!(
        closing.map(|_| ()).map_err(|r| r.reason),
        Err(RejectReason::SHUTTING_DOWN)
    );
}

#[test]
fn the_connector_reads_a_reject() {
    let me = node(2, 7001);
    let reject = HelloReject::new(RejectReason::CLUSTER_NAME_DIFFERS, "wrong name");
    let header = FrameHeader::handshake(Verb::HELLO_REJECT);
    assert_eq!(
        check_answer(&me, &header, &reject.encode()),
        Err(AnswerError::Rejected(reject))
    );
    let ack = HelloAck {
        version: 7,
        host_id: HostId([1; 16]),
        cluster_id: ClusterId::default(),
        generation: 0,
    };
    let header = FrameHeader::handshake(Verb::HELLO_ACK);
    assert!(matches!(
        check_answer(&me, &header, &ack.encode()),
        Err(AnswerError::Malformed(_))
    ));
}

#[test]
fn cluster_name_limit_at_n_and_n_plus_one() {
    let mut peer = node(2, 7001);
    peer.cluster_name = "n".repeat(MAX_CLUSTER_NAME_BYTES);
    let at_n = peer.hello(ConnectionKind::Small);
    let bytes = at_n.encode();
    assert!(bytes.len() <= MAX_HANDSHAKE_PAYLOAD_BYTES);
    assert_eq!(Hello::decode(&bytes), Ok(at_n));

    // Hand-built: name of N + 1 bytes.
    let mut over = vec![1, 1, 0];
    put_bytes(&mut over, "n".repeat(MAX_CLUSTER_NAME_BYTES + 1).as_bytes());
    over.extend_from_slice(&bytes[3 + 2 + MAX_CLUSTER_NAME_BYTES..]);
    assert!(matches!(
        Hello::decode(&over),
        Err(WireError::TooLong { .. })
    ));
}

#[test]
fn release_limit_at_n_and_n_plus_one() {
    let mut peer = node(2, 7001);
    peer.release = "r".repeat(MAX_RELEASE_BYTES);
    let at_n = peer.hello(ConnectionKind::Small);
    let bytes = at_n.encode();
    assert_eq!(Hello::decode(&bytes), Ok(at_n));
    // The release is the last field: rebuild it one byte longer.
    let mut over = bytes[..bytes.len() - 1 - MAX_RELEASE_BYTES].to_vec();
    put_bytes(&mut over, "r".repeat(MAX_RELEASE_BYTES + 1).as_bytes());
    assert!(matches!(
        Hello::decode(&over),
        Err(WireError::TooLong { .. })
    ));
}

#[test]
fn bad_hello_fields_are_errors() {
    let good = node(2, 7001).hello(ConnectionKind::Small).encode();
    let mut kind = good.clone();
    kind[2] = 2;
    assert_eq!(
        Hello::decode(&kind),
        Err(WireError::BadValue("connection kind"))
    );
    let mut range = good.clone();
    range[0] = 2;
    assert_eq!(
        Hello::decode(&range),
        Err(WireError::BadValue("version range"))
    );
    let mut trailing = good.clone();
    trailing.push(0);
    assert_eq!(Hello::decode(&trailing), Err(WireError::Trailing(1)));
    for cut in 0..good.len() {
        assert!(Hello::decode(&good[..cut]).is_err(), "cut at {cut}");
    }
}

#[test]
fn reject_labels() {
    assert_eq!(
        RejectReason::NO_COMMON_VERSION.label(),
        Some("no_common_version")
    );
    assert_eq!(RejectReason::SHUTTING_DOWN.label(), Some("shutting_down"));
    assert_eq!(
        RejectReason::ENCRYPTION_REQUIRED.label(),
        Some("encryption_required")
    );
    assert_eq!(RejectReason(0).label(), None);
    assert_eq!(RejectReason(8).label(), None);
}

proptest! {
    #[test]
    fn hellos_round_trip(
        name in "[a-zA-Z0-9 ]{0,40}",
        host in any::<[u8; 16]>(),
        id in any::<[u8; 16]>(),
        generation in any::<i64>(),
        port in any::<u16>(),
        v6 in any::<bool>(),
        bulk in any::<bool>(),
    ) {
        let ip = if v6 { IpAddr::V6(Ipv6Addr::from(host)) } else { IpAddr::from([10, 1, 2, host[0]]) };
        let hello = Hello {
            min_version: 1,
            max_version: 1 + host[1] % 3,
            kind: if bulk { ConnectionKind::Bulk } else { ConnectionKind::Small },
            cluster_name: name,
            cluster_id: ClusterId(id),
            host_id: HostId(host),
            generation,
            address: SocketAddr::new(ip, port),
            release: "varve test".into(),
        };
        prop_assert_eq!(Hello::decode(&hello.encode()), Ok(hello));
    }

    #[test]
    fn handshake_decoders_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        let _ = Hello::decode(&bytes);
        let _ = HelloAck::decode(&bytes);
        let _ = HelloReject::decode(&bytes);
    }
}

#[test]
fn host_ids_print_as_uuids() {
    let mut bytes = [0u8; 16];
    for (i, b) in bytes.iter_mut().enumerate() {
        *b = u8::try_from(i).expect("small") * 17;
    }
    assert_eq!(
        HostId(bytes).to_string(),
        "00112233-4455-6677-8899-aabbccddeeff"
    );
}
