//! Helpers of the messaging tests: nodes on 127.0.0.1 ephemeral ports,
//! and a raw TCP client for speaking bad protocol at them.

#![allow(dead_code)]

pub mod nodes;

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use varve_cluster::env::{timeout, BoxStream, Env, Network, SystemClock, TokioNetwork};
use varve_cluster::net::frame::{encode_frame, FrameHeader};
use varve_cluster::net::{HostId, Messaging, MessagingConfig, Verb};

pub const CLUSTER: &str = "Test Cluster";

/// Long enough never to fire on a healthy loopback, short enough to keep
/// a failing test quick.
pub const PATIENCE: Duration = Duration::from_secs(5);

pub fn loopback() -> SocketAddr {
    ([127, 0, 0, 1], 0).into()
}

pub fn config(cluster: &str, host: u8) -> MessagingConfig {
    MessagingConfig::new(cluster, HostId([host; 16]), loopback())
}

pub async fn start(config: MessagingConfig, seed: u64) -> Messaging {
    Messaging::start(config, Env::tokio(seed))
        .await
        .expect("messaging starts")
}

/// A node of the test cluster with host id `[host; 16]`.
pub async fn node(host: u8) -> Messaging {
    start(config(CLUSTER, host), u64::from(host)).await
}

/// ECHO from `from` to `to`.
pub async fn echo(from: &Messaging, to: &Messaging) -> bool {
    match from.request(to.local_addr(), Verb::ECHO, Bytes::new(), PATIENCE) {
        Ok(response) => response.await.is_ok(),
        Err(_) => false,
    }
}

/// An address nothing listens on (bound, then closed).
pub async fn dead_address() -> SocketAddr {
    let listener = TokioNetwork::ANY_SOURCE
        .bind(loopback())
        .await
        .expect("bind");
    listener.local_addr().expect("addr")
}

pub async fn raw_connect(to: SocketAddr) -> BoxStream {
    TokioNetwork::ANY_SOURCE.connect(to).await.expect("connect")
}

/// Writes `bytes`, then reads until the node closes the connection.
pub async fn send_and_read_to_close(to: SocketAddr, bytes: &[u8]) -> Vec<u8> {
    let mut stream = raw_connect(to).await;
    // The node may close before reading everything: that is fine.
    let _ = stream.write_all(bytes).await;
    read_to_close(&mut stream).await
}

pub async fn read_to_close(stream: &mut BoxStream) -> Vec<u8> {
    let mut got = Vec::new();
    let read = timeout(&SystemClock, PATIENCE, stream.read_to_end(&mut got)).await;
    assert!(read.is_ok(), "the node did not close the connection");
    got
}

/// A handshake frame as the wire carries it.
pub fn handshake_frame(verb: Verb, payload: &[u8]) -> Vec<u8> {
    encode_frame(&FrameHeader::handshake(verb), payload).expect("small")
}

/// Polls `check` until it holds (counters are bumped by the node's tasks).
pub async fn eventually(mut check: impl FnMut() -> bool) -> bool {
    for _ in 0..200 {
        if check() {
            return true;
        }
        varve_cluster::env::Clock::sleep(&SystemClock, Duration::from_millis(10)).await;
    }
    check()
}
