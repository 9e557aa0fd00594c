//! Tests of one connection's I/O over in-memory pipes.

use super::*;
use crate::env::{timeout, Clock, SystemClock};
use crate::net::frame::FRAME_TRAILER_BYTES;
use crate::net::handshake::{HostId, RejectReason};
use crate::net::limits::HANDSHAKE_TIMEOUT;
use bytes::Bytes;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::duplex;

fn identity(host: u8, cluster: &str) -> LocalIdentity {
    let addr: SocketAddr = ([127, 0, 0, 1], 7000 + u16::from(host)).into();
    LocalIdentity::new(cluster, HostId([host; 16]), addr)
}

fn request(verb: Verb, id: u64, payload: &'static [u8], deadline: Instant) -> Outbound {
    let header = FrameHeader {
        version: 0,
        flags: Flags::NONE,
        verb,
        request_id: id,
        epoch: 9,
        timeout_ms: 0,
    };
    Outbound::new(header, Bytes::from_static(payload), deadline).expect("small")
}

#[tokio::test]
async fn both_sides_agree_on_a_handshake() {
    let (mut a, mut b) = duplex(64);
    let connector = identity(1, "c");
    let acceptor = identity(2, "c");
    let (out, inb) = tokio::join!(
        handshake_outbound(&mut a, &connector, ConnectionKind::Bulk),
        handshake_inbound(&mut b, &acceptor, false),
    );
    let ack = out.expect("accepted");
    assert_eq!(ack.host_id, acceptor.host_id);
    let accepted = inb.expect("accepted");
    assert_eq!(accepted.hello.kind, ConnectionKind::Bulk);
    assert_eq!(accepted.hello.address, connector.address);
    assert_eq!(accepted.version, ack.version);
}

#[tokio::test]
async fn a_rejected_hello_is_explained_to_the_connector() {
    let (mut a, mut b) = duplex(4096);
    let (one, two) = (identity(1, "one"), identity(2, "two"));
    let (out, inb) = tokio::join!(
        handshake_outbound(&mut a, &one, ConnectionKind::Small),
        handshake_inbound(&mut b, &two, false),
    );
    match out {
        Err(ConnectError::Answer(AnswerError::Rejected(r))) => {
            assert_eq!(r.reason, RejectReason::CLUSTER_NAME_DIFFERS)
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(inb, Err(AcceptError::Rejected(_))));
}

/// A refusal by the check (clear text from a peer that must use TLS)
/// comes before every other one: the cluster names differ here too.
#[tokio::test]
async fn a_checked_handshake_refuses_before_anything_else_is_looked_at() {
    let (mut a, mut b) = duplex(4096);
    let (one, two) = (identity(1, "one"), identity(2, "two"));
    let refuse = |hello: &Hello| {
        (hello.address == one.address)
            .then(|| HelloReject::new(RejectReason::ENCRYPTION_REQUIRED, "TLS only"))
    };
    let (out, inb) = tokio::join!(
        handshake_outbound(&mut a, &one, ConnectionKind::Small),
        handshake_inbound_checked(&mut b, &two, false, refuse),
    );
    match out {
        Err(ConnectError::Answer(AnswerError::Rejected(r))) => {
            assert_eq!(r.reason, RejectReason::ENCRYPTION_REQUIRED);
            assert_eq!(r.message, "TLS only");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(inb, Err(AcceptError::Rejected(_))));
    // The check passing leaves the usual answer.
    let (mut a, mut b) = duplex(4096);
    let (three, four) = (identity(3, "one"), identity(4, "one"));
    let (out, inb) = tokio::join!(
        handshake_outbound(&mut a, &three, ConnectionKind::Small),
        handshake_inbound_checked(&mut b, &four, false, refuse),
    );
    assert!(out.is_ok() && inb.is_ok());
}

#[tokio::test]
async fn frames_survive_partial_writes() {
    // A pipe of 7 bytes forces many partial vectored writes.
    let (mut a, mut b) = duplex(7);
    let now = SystemClock.now();
    let deadline = now + Duration::from_millis(1500);
    let batch = vec![
        request(Verb::ECHO, 1, b"", deadline),
        request(Verb::MUTATION, 2, b"some payload bytes", deadline),
        request(Verb::ECHO, 3, b"x", deadline),
    ];
    let writer = async {
        write_batch(&mut a, &batch, 1, now).await.expect("written");
        drop(a);
    };
    let reader = async {
        let mut r = FrameReader::new(FrameRules::established(1));
        let mut got = Vec::new();
        loop {
            match r.next(&mut b).await {
                Ok(frame) => got.push(frame),
                Err(ReadError::Closed { mid_frame: false }) => return got,
                Err(e) => panic!("{e}"),
            }
        }
    };
    let ((), got) = tokio::join!(writer, reader);
    assert_eq!(got.len(), 3);
    for (frame, sent) in got.iter().zip(&batch) {
        assert_eq!(frame.header.request_id, sent.header.request_id);
        assert_eq!(frame.header.version, 1);
        assert_eq!(frame.header.timeout_ms, 1500, "time left at write");
        assert_eq!(frame.payload, sent.payload);
    }
}

#[tokio::test]
async fn responses_and_one_way_frames_carry_no_timeout() {
    let (mut a, mut b) = duplex(1024);
    let now = SystemClock.now();
    let mut response = request(Verb::ECHO_RSP, 1, b"", now + Duration::from_secs(1));
    response.header.flags = Flags::NONE;
    let mut gossip = request(Verb::GOSSIP, 0, b"g", now + Duration::from_secs(1));
    gossip.header.flags = Flags::ONE_WAY;
    write_batch(&mut a, &[response, gossip], 1, now)
        .await
        .expect("written");
    let mut r = FrameReader::new(FrameRules::established(1));
    assert_eq!(r.next(&mut b).await.expect("frame").header.timeout_ms, 0);
    assert_eq!(r.next(&mut b).await.expect("frame").header.timeout_ms, 0);
}

#[tokio::test]
async fn a_stream_closed_mid_frame_is_told_apart() {
    let (mut a, mut b) = duplex(1024);
    let bytes = encode_frame(&FrameHeader::handshake(Verb::HELLO), b"abc").expect("small");
    a.write_all(&bytes[..FRAME_HEADER_BYTES + FRAME_TRAILER_BYTES])
        .await
        .expect("written");
    drop(a);
    let mut r = FrameReader::new(FrameRules::HANDSHAKE);
    assert!(matches!(
        r.next(&mut b).await,
        Err(ReadError::Closed { mid_frame: true })
    ));
}

#[tokio::test]
async fn garbage_is_invalid_before_a_whole_header_arrives() {
    let (mut a, mut b) = duplex(1024);
    a.write_all(b"GET").await.expect("written");
    let mut r = FrameReader::new(FrameRules::HANDSHAKE);
    assert!(matches!(
        r.next(&mut b).await,
        Err(ReadError::Invalid(InvalidReason::BadMagic))
    ));
}

/// A HELLO sent `delay` after the connection opened, against the
/// acceptor's handshake timeout.
async fn hello_after(delay: Duration) -> bool {
    let (mut a, mut b) = duplex(4096);
    let clock = SystemClock;
    tokio::spawn(async move {
        SystemClock.sleep(delay).await;
        let _ = handshake_outbound(&mut a, &identity(1, "c"), ConnectionKind::Small).await;
    });
    let acceptor = identity(2, "c");
    let outcome = timeout(
        &clock,
        HANDSHAKE_TIMEOUT,
        handshake_inbound(&mut b, &acceptor, false),
    );
    matches!(outcome.await, Ok(Ok(_)))
}

#[tokio::test(start_paused = true)]
async fn handshake_timeout_at_n_and_n_plus_one() {
    let ms = Duration::from_millis(1);
    assert!(hello_after(HANDSHAKE_TIMEOUT - ms).await, "in time");
    assert!(!hello_after(HANDSHAKE_TIMEOUT + ms).await, "too late");
}
