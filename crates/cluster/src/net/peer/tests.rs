//! Tests of routing and backoff.

use super::*;
use crate::net::limits::{RECONNECT_BACKOFF_MAX, RECONNECT_BACKOFF_MIN};

#[test]
fn bulk_threshold_at_n_and_n_plus_one() {
    let n = BULK_THRESHOLD_BYTES;
    assert_eq!(route(Verb::MUTATION, Flags::NONE, n), Route::Normal);
    assert_eq!(route(Verb::MUTATION, Flags::NONE, n + 1), Route::Bulk);
    assert_eq!(route(Verb::ECHO, Flags::NONE, n + 1), Route::Bulk);
    assert_eq!(route(Verb::READ_RSP, Flags::NONE, n + 1), Route::Bulk);
}

#[test]
fn urgent_and_normal_frames() {
    assert_eq!(route(Verb::GOSSIP, Flags::ONE_WAY, 500), Route::Urgent);
    assert_eq!(route(Verb::ECHO, Flags::NONE, 0), Route::Urgent);
    assert_eq!(route(Verb::RAFT_VOTE, Flags::NONE, 40), Route::Urgent);
    assert_eq!(route(Verb::MUTATION_RSP, Flags::NONE, 0), Route::Urgent);
    assert_eq!(route(Verb::READ_RSP, Flags::FAILURE, 30), Route::Urgent);
    assert_eq!(route(Verb::READ_RSP, Flags::NONE, 30), Route::Normal);
    assert_eq!(route(Verb::READ, Flags::NONE, 30), Route::Normal);
    assert_eq!(route(Verb::HINT, Flags::NONE, 10), Route::Bulk, "replay");
}

#[test]
fn backoff_doubles_up_to_its_maximum() {
    let mut b = Backoff::new(RECONNECT_BACKOFF_MIN, RECONNECT_BACKOFF_MAX);
    assert_eq!(b.delay(), None, "the first attempt waits for nothing");
    let mut waits = Vec::new();
    for _ in 0..10 {
        b.failed();
        waits.extend(b.delay());
    }
    let ms: Vec<u128> = waits.iter().map(|d| d.as_millis()).collect();
    assert_eq!(ms, [100, 200, 400, 800, 1600, 3200, 5000, 5000, 5000, 5000]);
    b.succeeded();
    assert_eq!(b.delay(), None);
    b.refused();
    assert_eq!(b.delay(), Some(RECONNECT_BACKOFF_MAX));
}

mod timeouts {
    //! `CONNECT_TIMEOUT` and `WRITE_TIMEOUT` at N and N + 1, through a
    //! fake [`Network`] whose connections open after a set delay, to an
    //! acceptor that stops reading after the handshake: the seam a
    //! simulation uses.

    use super::super::*;
    use crate::env::BoxFuture;
    use crate::env::{BoxStream, Clock, Env, Listener, Network, SeededRng, SystemClock};
    use crate::net::connection::handshake_inbound;
    use crate::net::frame::FrameHeader;
    use crate::net::handshake::{HostId, LocalIdentity};
    use crate::net::limits::{CONNECT_TIMEOUT, WRITE_TIMEOUT};
    use crate::net::messaging::MessagingConfig;
    use crate::net::shared::Shared;
    use std::io;

    /// Connections that open `delay` after they are asked for, to an
    /// acceptor that does the handshake and then stays silent.
    struct SlowNetwork {
        delay: Duration,
        acceptor: LocalIdentity,
    }

    impl Network for SlowNetwork {
        fn bind(&self, _addr: SocketAddr) -> BoxFuture<'_, io::Result<Box<dyn Listener>>> {
            Box::pin(async { Err(io::ErrorKind::Unsupported.into()) })
        }

        fn connect(&self, _addr: SocketAddr) -> BoxFuture<'_, io::Result<BoxStream>> {
            let (delay, acceptor) = (self.delay, self.acceptor.clone());
            Box::pin(async move {
                SystemClock.sleep(delay).await;
                let (near, mut far) = tokio::io::duplex(4096);
                tokio::spawn(async move {
                    let _ = handshake_inbound(&mut far, &acceptor, false).await;
                    std::future::pending::<()>().await;
                });
                Ok(Box::new(near) as BoxStream)
            })
        }
    }

    const PEER: ([u8; 4], u16) = ([127, 0, 0, 2], 7000);

    fn shared_over(delay: Duration) -> Arc<Shared> {
        let peer: SocketAddr = PEER.into();
        let acceptor = LocalIdentity::new("c", HostId([2; 16]), peer);
        let env = Env {
            net: Arc::new(SlowNetwork { delay, acceptor }),
            clock: Arc::new(SystemClock),
            rng: Arc::new(SeededRng::new(1)),
        };
        let me: SocketAddr = ([127, 0, 0, 1], 7000).into();
        let config = MessagingConfig::new("c", HostId([1; 16]), me);
        let identity = LocalIdentity::new("c", HostId([1; 16]), me);
        Arc::new(Shared::new(env, identity, config))
    }

    async fn open_after(delay: Duration) -> Result<u8, OpenError> {
        open(
            &shared_over(delay),
            PEER.into(),
            ConnectionKind::Small,
            None,
        )
        .await
        .map(|(_, version)| version)
    }

    #[tokio::test(start_paused = true)]
    async fn connect_timeout_at_n_and_n_plus_one() {
        let ms = Duration::from_millis(1);
        assert_eq!(open_after(CONNECT_TIMEOUT - ms).await.ok(), Some(1));
        assert!(matches!(
            open_after(CONNECT_TIMEOUT + ms).await,
            Err(OpenError::ConnectTimeout)
        ));
    }

    /// A write the peer never reads past (64 KiB into a 4 KiB pipe) closes
    /// its connection once `WRITE_TIMEOUT` passes, not before, and the
    /// lane opens a new one for the frames that follow.
    #[tokio::test(start_paused = true)]
    async fn write_timeout_at_n_and_n_plus_one() {
        let ms = Duration::from_millis(1);
        let shared = shared_over(Duration::ZERO);
        let header = FrameHeader {
            version: crate::net::frame::MAX_VERSION,
            flags: Flags::ONE_WAY,
            verb: Verb::MUTATION,
            request_id: 0,
            epoch: 0,
            timeout_ms: 0,
        };
        let far = SystemClock.now() + Duration::from_secs(3600);
        let payload = bytes::Bytes::from(vec![7u8; 15 * 1024]);
        for _ in 0..4 {
            shared
                .send(PEER.into(), header, payload.clone(), far)
                .expect("queued");
        }
        let start = SystemClock.now();
        SystemClock.sleep(WRITE_TIMEOUT - ms).await;
        assert_eq!(shared.counters.write_timeouts(), 0);
        assert_eq!(shared.counters.connections(ConnectionKind::Small), 1);
        SystemClock.sleep(2 * ms).await;
        assert_eq!(
            shared.counters.write_timeouts(),
            1,
            "{:?}",
            SystemClock.now() - start
        );
        shared
            .send(PEER.into(), header, payload, far)
            .expect("queued");
        SystemClock.sleep(ms).await;
        assert_eq!(shared.counters.connections(ConnectionKind::Small), 2);
        for task in shared.close() {
            let _ = task.await;
        }
    }
}
