//! Peers that must be refused: garbage, wrong magic, a damaged frame, a
//! frame before the handshake, a silent connection, another cluster's
//! name, this node's own host id. Each is closed and counted, and the
//! node keeps serving its good peers throughout.

mod support;

use std::time::Duration;

use bytes::Bytes;
use support::*;
use tokio::io::AsyncWriteExt;
use varve_cluster::net::connection::FrameReader;
use varve_cluster::net::frame::{encode_frame, FrameHeader, FrameRules};
use varve_cluster::net::{
    ConnectionKind, Flags, HelloReject, HostId, InvalidReason, LocalIdentity, Messaging,
    RejectReason, RequestError, Verb,
};

/// A node under attack and a good peer of it.
async fn pair() -> (Messaging, Messaging) {
    (node(1).await, node(2).await)
}

fn hello_from(host: u8, cluster: &str) -> Vec<u8> {
    let me = LocalIdentity::new(cluster, HostId([host; 16]), ([127, 0, 0, 1], 9).into());
    handshake_frame(Verb::HELLO, &me.hello(ConnectionKind::Small).encode())
}

/// The HELLO_REJECT a raw client got back.
fn reject_in(bytes: &[u8]) -> HelloReject {
    let mut buf = bytes::BytesMut::from(bytes);
    let frame = varve_cluster::net::take_frame(&mut buf, &FrameRules::HANDSHAKE)
        .expect("a valid frame")
        .expect("a whole frame");
    assert_eq!(frame.header.verb, Verb::HELLO_REJECT);
    HelloReject::decode(&frame.payload).expect("a reject body")
}

#[tokio::test]
async fn garbage_wrong_magic_and_damaged_frames_close_only_their_connection() {
    let (b, good) = pair().await;
    let to = b.local_addr();
    assert!(echo(&good, &b).await);

    let garbage: Vec<u8> = (0..200u32).map(|i| (i * 7919 % 251) as u8).collect();
    assert!(send_and_read_to_close(to, &garbage).await.is_empty());

    let mut wrong_magic = hello_from(9, CLUSTER);
    wrong_magic[3] = b'X';
    assert!(send_and_read_to_close(to, &wrong_magic).await.is_empty());

    let mut bad_crc = hello_from(9, CLUSTER);
    let last = bad_crc.len() - 1;
    bad_crc[last] ^= 0xff;
    assert!(send_and_read_to_close(to, &bad_crc).await.is_empty());

    let echo_first = encode_frame(
        &FrameHeader {
            version: 1,
            flags: Flags::NONE,
            verb: Verb::ECHO,
            request_id: 1,
            epoch: 0,
            timeout_ms: 1000,
        },
        b"",
    )
    .expect("small");
    assert!(send_and_read_to_close(to, &echo_first).await.is_empty());

    let c = b.counters();
    assert_eq!(c.invalid_frames(InvalidReason::BadMagic), 2);
    assert_eq!(c.invalid_frames(InvalidReason::PayloadCrc), 1);
    assert_eq!(c.invalid_frames(InvalidReason::NotHandshake(Verb::ECHO)), 1);
    assert!(echo(&good, &b).await, "still serving");
    assert!(echo(&b, &good).await);
    b.shutdown().await;
    good.shutdown().await;
}

#[tokio::test]
async fn an_invalid_frame_after_the_handshake_closes_that_connection() {
    let (b, good) = pair().await;
    let mut stream = raw_connect(b.local_addr()).await;
    stream
        .write_all(&hello_from(9, CLUSTER))
        .await
        .expect("sent");
    let mut reader = FrameReader::new(FrameRules::HANDSHAKE);
    let ack = reader.next(&mut stream).await.expect("answered");
    assert_eq!(ack.header.verb, Verb::HELLO_ACK);
    // A frame of an unknown version.
    let mut header = FrameHeader::handshake(Verb::ECHO);
    header.version = 9;
    header.timeout_ms = 1000;
    let frame = encode_frame(&header, b"").expect("small");
    stream.write_all(&frame).await.expect("sent");
    assert!(read_to_close(&mut stream).await.is_empty());
    let wrong = InvalidReason::WrongVersion {
        got: 9,
        expected: 1,
    };
    assert_eq!(b.counters().invalid_frames(wrong), 1);
    assert!(echo(&good, &b).await);
    b.shutdown().await;
    good.shutdown().await;
}

#[tokio::test]
async fn a_connection_without_a_hello_is_closed_after_the_handshake_timeout() {
    let mut short = config(CLUSTER, 1);
    short.handshake_timeout = Duration::from_millis(100);
    let b = start(short, 1).await;
    let good = node(2).await;
    let mut silent = raw_connect(b.local_addr()).await;
    assert!(read_to_close(&mut silent).await.is_empty());
    assert_eq!(b.counters().handshake_timeouts(), 1);
    assert!(echo(&good, &b).await);
    b.shutdown().await;
    good.shutdown().await;
}

#[tokio::test]
async fn another_clusters_name_is_rejected_with_its_reason() {
    let (b, good) = pair().await;
    let answer = send_and_read_to_close(b.local_addr(), &hello_from(9, "Other")).await;
    assert_eq!(
        reject_in(&answer).reason,
        RejectReason::CLUSTER_NAME_DIFFERS
    );

    // A whole node of the other cluster: refused, and it backs off.
    let stranger = start(config("Other", 3), 3).await;
    let r = stranger.request(
        b.local_addr(),
        Verb::ECHO,
        Bytes::new(),
        Duration::from_millis(300),
    );
    assert_eq!(
        r.expect("queued").await.map(|_| ()),
        Err(RequestError::Timeout)
    );
    let why = RejectReason::CLUSTER_NAME_DIFFERS;
    assert!(eventually(|| stranger.counters().rejected_by_peer(why) >= 1).await);
    assert!(eventually(|| b.counters().rejected(why) >= 2).await);
    assert!(echo(&good, &b).await);
    b.shutdown().await;
    good.shutdown().await;
    stranger.shutdown().await;
}

#[tokio::test]
async fn a_peer_with_this_nodes_host_id_is_rejected() {
    let (b, good) = pair().await;
    let answer = send_and_read_to_close(b.local_addr(), &hello_from(1, CLUSTER)).await;
    assert_eq!(reject_in(&answer).reason, RejectReason::SAME_HOST_ID);

    let twin = start(config(CLUSTER, 1), 4).await;
    let r = twin.request(
        b.local_addr(),
        Verb::ECHO,
        Bytes::new(),
        Duration::from_millis(300),
    );
    assert_eq!(
        r.expect("queued").await.map(|_| ()),
        Err(RequestError::Timeout)
    );
    let why = RejectReason::SAME_HOST_ID;
    assert!(eventually(|| b.counters().rejected(why) >= 2).await);
    assert!(echo(&good, &b).await);
    b.shutdown().await;
    good.shutdown().await;
    twin.shutdown().await;
}

#[tokio::test]
async fn a_malformed_hello_is_rejected() {
    let (b, good) = pair().await;
    let answer =
        send_and_read_to_close(b.local_addr(), &handshake_frame(Verb::HELLO, b"\x01")).await;
    assert_eq!(reject_in(&answer).reason, RejectReason::MALFORMED_HELLO);
    assert_eq!(b.counters().rejected(RejectReason::MALFORMED_HELLO), 1);
    assert!(echo(&good, &b).await);
    b.shutdown().await;
    good.shutdown().await;
}
