//! Messaging between real nodes over TCP on 127.0.0.1: requests and
//! responses, one-way frames, handlers and failures, timeouts,
//! reconnection, the bulk connection beside the small one, and full
//! queues. Outcomes and order are asserted, never durations (but the
//! floor a send delay puts under a round trip).

mod support;

use std::time::Duration;

use bytes::Bytes;
use support::*;
use tokio::sync::{mpsc, oneshot};
use varve_cluster::net::{
    ConnectionKind, DropReason, Failure, FailureReason, HostId, Messaging, Request, RequestError,
    SendError, Verb,
};

#[tokio::test]
async fn two_nodes_exchange_echo_requests() {
    let a = node(1).await;
    let b = node(2).await;
    let response = a
        .request(b.local_addr(), Verb::ECHO, Bytes::new(), PATIENCE)
        .expect("queued")
        .await
        .expect("answered");
    assert_eq!(response.from, b.local_addr());
    assert_eq!(response.header.verb, Verb::ECHO_RSP);
    assert!(response.payload.is_empty());
    assert!(echo(&b, &a).await, "the other way too");
    // Many at once, over the same connections.
    let many: Vec<_> = (0..50)
        .map(|_| a.request(b.local_addr(), Verb::ECHO, Bytes::new(), PATIENCE))
        .collect();
    for r in many {
        r.expect("queued").await.expect("answered");
    }
    assert_eq!(a.counters().connections(ConnectionKind::Small), 1);
    assert_eq!(a.pending_requests(), 0);
    a.shutdown().await;
    b.shutdown().await;
}

/// A response names who answered: the host id and generation of the
/// responder's HELLO, so a node restarted on the address asked is told
/// apart from the one the request was meant for (membership's ECHO
/// relies on it).
#[tokio::test]
async fn a_response_names_the_responders_host_and_generation() {
    let a = node(1).await;
    let mut b_config = config(CLUSTER, 2);
    b_config.generation = 42;
    let b = start(b_config, 2).await;
    let response = a
        .request(b.local_addr(), Verb::ECHO, Bytes::new(), PATIENCE)
        .expect("queued")
        .await
        .expect("answered");
    assert_eq!(response.from_host, HostId([2; 16]));
    assert_eq!(response.from_generation, 42);
    a.shutdown().await;
    b.shutdown().await;
}

#[tokio::test]
async fn handlers_answer_with_payloads_and_failures() {
    let a = node(1).await;
    let b = node(2).await;
    b.register(Verb::MUTATION, |r: Request| async move {
        let mut reversed = r.payload.to_vec();
        reversed.reverse();
        Some(Ok(Bytes::from(reversed)))
    });
    b.register(Verb::READ, |_r: Request| async {
        Some(Err(Failure::new(FailureReason::OVERLOADED, "busy")))
    });
    let to = b.local_addr();
    let ok = a.request(to, Verb::MUTATION, Bytes::from_static(b"abc"), PATIENCE);
    let ok = ok.expect("queued").await.expect("answered");
    assert_eq!(ok.header.verb, Verb::MUTATION_RSP);
    assert_eq!(ok.payload, Bytes::from_static(b"cba"));
    let failed = a.request(to, Verb::READ, Bytes::new(), PATIENCE);
    match failed.expect("queued").await {
        Err(RequestError::Failure(f)) => {
            assert_eq!(f.reason, FailureReason::OVERLOADED);
            assert_eq!(f.message, "busy");
        }
        other => panic!("{other:?}"),
    }
    a.shutdown().await;
    b.shutdown().await;
}

#[tokio::test]
async fn unknown_verbs_get_an_unknown_verb_failure() {
    let a = node(1).await;
    let b = node(2).await;
    for verb in [Verb(0x0060), Verb::TRUNCATE] {
        let answer = a.request(b.local_addr(), verb, Bytes::new(), PATIENCE);
        match answer.expect("queued").await {
            Err(RequestError::Failure(f)) => assert_eq!(f.reason, FailureReason::UNKNOWN_VERB),
            other => panic!("{verb}: {other:?}"),
        }
    }
    assert_eq!(b.counters().unknown_verbs(), 2);
    assert!(echo(&a, &b).await, "the connection goes on");
    a.shutdown().await;
    b.shutdown().await;
}

#[tokio::test]
async fn one_way_frames_reach_their_handler_and_get_no_answer() {
    let a = node(1).await;
    let b = node(2).await;
    let (tx, mut rx) = mpsc::unbounded_channel();
    b.register(Verb::GOSSIP, move |r: Request| {
        let tx = tx.clone();
        async move {
            let _ = tx.send((r.is_one_way(), r.from, r.from_host, r.payload));
            // Ignored for a one-way frame.
            Some(Ok(Bytes::from_static(b"never sent")))
        }
    });
    a.send_one_way(
        b.local_addr(),
        Verb::GOSSIP,
        Bytes::from_static(b"g1"),
        PATIENCE,
    )
    .expect("queued");
    let (one_way, from, host, payload) = rx.recv().await.expect("delivered");
    assert!(one_way);
    assert_eq!(from, a.local_addr());
    assert_eq!(host, HostId([1; 16]));
    assert_eq!(payload, Bytes::from_static(b"g1"));
    // Requests after it still work, and nothing came back for the gossip.
    assert!(echo(&a, &b).await);
    assert_eq!(a.counters().dropped_total(DropReason::LateResponse), 0);
    a.shutdown().await;
    b.shutdown().await;
}

#[tokio::test]
async fn a_request_to_a_peer_that_never_answers_times_out() {
    let a = node(1).await;
    let b = node(2).await;
    b.register(Verb::MUTATION, |_r: Request| std::future::pending());
    let r = a.request(
        b.local_addr(),
        Verb::MUTATION,
        Bytes::new(),
        Duration::from_millis(200),
    );
    assert_eq!(
        r.expect("queued").await.map(|_| ()),
        Err(RequestError::Timeout)
    );
    assert_eq!(a.pending_requests(), 0, "the callback is gone");

    // A listener that accepts but never completes a handshake.
    let silent = varve_cluster::env::Network::bind(
        &varve_cluster::env::TokioNetwork::ANY_SOURCE,
        loopback(),
    )
    .await
    .expect("bind");
    let to = silent.local_addr().expect("addr");
    let r = a.request(to, Verb::ECHO, Bytes::new(), Duration::from_millis(200));
    assert_eq!(
        r.expect("queued").await.map(|_| ()),
        Err(RequestError::Timeout)
    );
    a.shutdown().await;
    b.shutdown().await;
}

#[tokio::test]
async fn a_peer_killed_and_restarted_is_reconnected() {
    let a = node(1).await;
    let b = node(2).await;
    let addr = b.local_addr();
    assert!(echo(&a, &b).await);
    b.shutdown().await;

    let mut again = config(CLUSTER, 2);
    again.listen = addr;
    let b2 = start(again, 22).await;
    assert_eq!(b2.local_addr(), addr);
    let mut answered = false;
    for _ in 0..20 {
        let r = a.request(addr, Verb::ECHO, Bytes::new(), Duration::from_millis(500));
        if r.expect("queued").await.is_ok() {
            answered = true;
            break;
        }
    }
    assert!(answered, "no answer from the restarted peer");
    assert!(a.counters().connections(ConnectionKind::Small) >= 2);
    a.shutdown().await;
    b2.shutdown().await;
}

#[tokio::test]
async fn a_large_payload_goes_bulk_while_urgent_messages_flow() {
    let a = node(1).await;
    let b = node(2).await;
    let (gate_tx, gate_rx) = oneshot::channel::<()>();
    let (started_tx, mut started) = mpsc::unbounded_channel::<usize>();
    let gate = std::sync::Mutex::new(Some(gate_rx));
    b.register(Verb::MUTATION, move |r: Request| {
        let wait = gate.lock().ok().and_then(|mut g| g.take());
        let _ = started_tx.send(r.payload.len());
        async move {
            if let Some(wait) = wait {
                let _ = wait.await;
            }
            Some(Ok(Bytes::from(
                (r.payload.len() as u64).to_be_bytes().to_vec(),
            )))
        }
    });
    let big = Bytes::from(vec![7u8; 32 * 1024]);
    let mutation = a
        .request(b.local_addr(), Verb::MUTATION, big, PATIENCE)
        .expect("queued");
    let mutation = tokio::spawn(mutation);
    assert_eq!(started.recv().await, Some(32 * 1024), "arrived whole");
    for _ in 0..20 {
        assert!(echo(&a, &b).await);
    }
    assert!(!mutation.is_finished(), "held by its handler all along");
    let counters = a.counters();
    assert!(eventually(|| counters.frames_written(ConnectionKind::Bulk) == 1).await);
    assert!(counters.frames_written(ConnectionKind::Small) >= 20);
    gate_tx.send(()).expect("handler waiting");
    let response = mutation.await.expect("task").expect("answered");
    assert_eq!(response.payload.as_ref(), (32u64 * 1024).to_be_bytes());
    a.shutdown().await;
    b.shutdown().await;
}

#[tokio::test]
async fn a_full_queue_fails_at_once_and_counts_the_drop() {
    let a = node(1).await;
    let nobody = dead_address().await;
    // 16 KiB payloads stay on the small connection; nothing drains it.
    let payload = Bytes::from(vec![1u8; 16 * 1024]);
    let mut queued = Vec::new();
    let error = loop {
        match a.request(
            nobody,
            Verb::MUTATION,
            payload.clone(),
            Duration::from_secs(60),
        ) {
            Ok(r) => queued.push(r),
            Err(e) => break e,
        }
        assert!(queued.len() < 1000, "the queue never filled");
    };
    assert_eq!(error, SendError::QueueFull);
    // SMALL_QUEUE_BYTES_MAX / (16 KiB + 40 bytes of frame).
    assert_eq!(queued.len(), 255);
    assert_eq!(
        a.counters().dropped(Verb::MUTATION, DropReason::QueueFull),
        1
    );
    assert_eq!(
        a.pending_requests(),
        255,
        "the refused request left nothing"
    );
    // The bulk connection's queue is separate.
    let big = Bytes::from(vec![2u8; 32 * 1024]);
    assert!(a
        .request(nobody, Verb::MUTATION, big, Duration::from_secs(60))
        .is_ok());
    drop(queued);
    assert_eq!(a.pending_requests(), 0);
    a.shutdown().await;
}

#[tokio::test]
async fn shutdown_fails_waiting_requests() {
    let a = node(1).await;
    let nobody = dead_address().await;
    let r = a
        .request(nobody, Verb::ECHO, Bytes::new(), Duration::from_secs(60))
        .expect("queued");
    a.shutdown().await;
    assert_eq!(r.await.map(|_| ()), Err(RequestError::Shutdown));
    assert_eq!(
        a.request(nobody, Verb::ECHO, Bytes::new(), PATIENCE)
            .map(|_| ()),
        Err(SendError::Shutdown)
    );
}

#[tokio::test]
async fn responses_and_self_sends_are_not_requests() {
    let a: Messaging = node(1).await;
    let to = dead_address().await;
    let rsp = a.request(to, Verb::ECHO_RSP, Bytes::new(), PATIENCE);
    assert_eq!(rsp.map(|_| ()), Err(SendError::NotARequest(Verb::ECHO_RSP)));
    let me = a.request(a.local_addr(), Verb::ECHO, Bytes::new(), PATIENCE);
    assert_eq!(me.map(|_| ()), Err(SendError::ToSelf));
    a.shutdown().await;
}

/// `send_delay` holds every frame that long before it is written, as a
/// distant link would: a request is answered no sooner than two delays (a
/// floor, which no slowness of the machine can break), and requests sent
/// together travel together rather than one delay after another.
#[tokio::test]
async fn a_send_delay_makes_each_round_trip_take_two_delays_and_pipelines() {
    let delay = Duration::from_millis(150);
    let delayed = |host: u8| {
        let mut c = config(CLUSTER, host);
        c.send_delay = delay;
        start(c, u64::from(host))
    };
    let (a, b) = (delayed(1).await, delayed(2).await);
    assert!(echo(&a, &b).await, "connected");
    let clock = varve_cluster::env::SystemClock;
    let started = varve_cluster::env::Clock::now(&clock);
    let many: Vec<_> = (0..20)
        .map(|_| a.request(b.local_addr(), Verb::ECHO, Bytes::new(), PATIENCE))
        .collect();
    for r in many {
        r.expect("queued").await.expect("answered");
    }
    let took = varve_cluster::env::Clock::now(&clock) - started;
    assert!(took >= 2 * delay, "answered in {took:?}, under two delays");
    assert!(
        took < 20 * delay,
        "{took:?}: the requests waited for each other"
    );
    a.shutdown().await;
    b.shutdown().await;
}
