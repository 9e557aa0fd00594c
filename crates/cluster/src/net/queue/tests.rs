//! Tests of the lane queues and the node's outbound budget.

use super::*;
use crate::env::{Clock, SystemClock};
use crate::net::limits::{BULK_QUEUE_BYTES_MAX, OUTBOUND_BYTES_MAX, SMALL_QUEUE_BYTES_MAX};
use crate::net::verb::{Flags, Verb};
use std::time::Duration;

const OVERHEAD: usize = FRAME_HEADER_BYTES + FRAME_TRAILER_BYTES;

fn header(verb: Verb, request_id: u64) -> FrameHeader {
    FrameHeader {
        version: 1,
        flags: Flags::NONE,
        verb,
        request_id,
        epoch: 0,
        timeout_ms: 0,
    }
}

/// A frame of exactly `wire` bytes, sharing `pool`'s memory.
fn frame_of(pool: &Bytes, wire: usize, deadline: Instant) -> Outbound {
    let payload = pool.slice(..wire - OVERHEAD);
    Outbound {
        header: header(Verb::MUTATION, 1),
        payload,
        payload_crc: 0,
        deadline,
        due: None,
    }
}

fn later() -> Instant {
    SystemClock.now() + Duration::from_secs(3600)
}

/// Fills a queue of `max` bytes with frames of `wire` bytes up to `max -
/// wire`, then checks a last frame of `wire` bytes fits (N) and one of
/// `wire + 1` does not (N + 1).
fn check_lane_limit(max: usize, wire: usize) {
    assert_eq!(max % wire, 0);
    let pool = Bytes::from(vec![0u8; wire + 1]);
    let budget = Arc::new(OutboundBudget::new(usize::MAX));
    let now = SystemClock.now();
    let mut q = LaneQueue::new(max, budget.clone());
    for _ in 0..max / wire - 1 {
        q.push(frame_of(&pool, wire, later()), Priority::Normal, now)
            .expect("below the limit");
    }
    let over = q.push(frame_of(&pool, wire + 1, later()), Priority::Normal, now);
    assert!(matches!(over, Err((Full::Lane, _))), "N + 1 refused");
    q.push(frame_of(&pool, wire, later()), Priority::Normal, now)
        .expect("N accepted");
    assert_eq!(q.bytes(), max);
    assert_eq!(budget.used(), max);
    drop(q);
    assert_eq!(budget.used(), 0, "dropping a queue gives its bytes back");
}

#[test]
fn small_queue_limit_at_n_and_n_plus_one() {
    check_lane_limit(SMALL_QUEUE_BYTES_MAX, 16 * 1024);
}

#[test]
fn bulk_queue_limit_at_n_and_n_plus_one() {
    check_lane_limit(BULK_QUEUE_BYTES_MAX, 1024 * 1024);
}

#[test]
fn outbound_budget_at_n_and_n_plus_one() {
    let budget = OutboundBudget::new(OUTBOUND_BYTES_MAX);
    assert!(budget.try_acquire(OUTBOUND_BYTES_MAX - 1));
    assert!(!budget.try_acquire(2), "N + 1 refused");
    assert!(budget.try_acquire(1), "N accepted");
    assert!(!budget.try_acquire(1));
    budget.release(OUTBOUND_BYTES_MAX);
    assert_eq!(budget.used(), 0);
    assert!(!budget.try_acquire(usize::MAX), "no overflow");
}

#[test]
fn the_node_budget_bounds_every_lane() {
    let budget = Arc::new(OutboundBudget::new(3 * 100));
    let pool = Bytes::from(vec![0u8; 100]);
    let now = SystemClock.now();
    let mut a = LaneQueue::new(1000, budget.clone());
    let mut b = LaneQueue::new(1000, budget.clone());
    a.push(frame_of(&pool, 100, later()), Priority::Normal, now)
        .expect("fits");
    b.push(frame_of(&pool, 100, later()), Priority::Normal, now)
        .expect("fits");
    a.push(frame_of(&pool, 100, later()), Priority::Urgent, now)
        .expect("fits");
    let full = b.push(frame_of(&pool, 100, later()), Priority::Normal, now);
    assert!(matches!(full, Err((Full::Node, _))));
}

#[test]
fn urgent_frames_are_taken_first() {
    let budget = Arc::new(OutboundBudget::new(usize::MAX));
    let mut q = LaneQueue::new(1 << 20, budget);
    let now = SystemClock.now();
    let deadline = later();
    for (id, priority) in [
        (1, Priority::Normal),
        (2, Priority::Urgent),
        (3, Priority::Normal),
        (4, Priority::Urgent),
    ] {
        let f = Outbound::new(header(Verb::ECHO, id), Bytes::new(), deadline).expect("small");
        q.push(f, priority, now).expect("fits");
    }
    let (batch, expired) = q.take_batch(now, 3, usize::MAX);
    let ids: Vec<u64> = batch.iter().map(|f| f.header.request_id).collect();
    assert_eq!(ids, [2, 4, 1]);
    assert!(expired.is_empty());
    let (batch, _) = q.take_batch(now, 3, usize::MAX);
    assert_eq!(batch.len(), 1);
    assert!(q.is_empty());
    assert_eq!(q.bytes(), 0);
}

#[test]
fn batches_stop_at_their_byte_limit_but_take_one_frame() {
    let budget = Arc::new(OutboundBudget::new(usize::MAX));
    let mut q = LaneQueue::new(1 << 20, budget);
    let now = SystemClock.now();
    let pool = Bytes::from(vec![0u8; 1000]);
    for _ in 0..3 {
        q.push(frame_of(&pool, 1000, later()), Priority::Normal, now)
            .expect("fits");
    }
    assert_eq!(
        q.take_batch(now, 10, 10).0.len(),
        1,
        "a big frame goes alone"
    );
    assert_eq!(q.take_batch(now, 10, 2000).0.len(), 2);
}

#[test]
fn expired_frames_make_room_and_are_never_written() {
    let budget = Arc::new(OutboundBudget::new(usize::MAX));
    let mut q = LaneQueue::new(200, budget.clone());
    let now = SystemClock.now();
    let pool = Bytes::from(vec![0u8; 100]);
    let past = now - Duration::from_millis(1);
    q.push(frame_of(&pool, 100, past), Priority::Normal, now)
        .expect("fits");
    q.push(frame_of(&pool, 100, later()), Priority::Urgent, now)
        .expect("fits");
    // Full: the expired frame is dropped to make room.
    let expired = q
        .push(frame_of(&pool, 100, later()), Priority::Normal, now)
        .expect("room made");
    assert_eq!(expired.len(), 1);
    assert_eq!(q.bytes(), 200);
    let (batch, expired) = q.take_batch(now + Duration::from_secs(7200), 10, usize::MAX);
    assert!(batch.is_empty());
    assert_eq!(expired.len(), 2);
    assert_eq!(budget.used(), 0);
}

#[test]
fn a_send_delay_holds_each_frame_until_it_is_due_and_keeps_the_order() {
    let budget = Arc::new(OutboundBudget::new(usize::MAX));
    let delay = Duration::from_millis(100);
    let mut q = LaneQueue::new(1 << 20, budget).with_delay(delay);
    let start = SystemClock.now();
    let ms = Duration::from_millis;
    for (id, at, priority) in [
        (1, 0, Priority::Normal),
        (2, 10, Priority::Urgent),
        (3, 20, Priority::Normal),
    ] {
        let f = Outbound::new(header(Verb::ECHO, id), Bytes::new(), later()).expect("small");
        q.push(f, priority, start + ms(at)).expect("fits");
    }
    let ids = |q: &mut LaneQueue, at: u64| -> Vec<u64> {
        let (batch, expired) = q.take_batch(start + ms(at), 10, usize::MAX);
        assert!(expired.is_empty());
        batch.iter().map(|f| f.header.request_id).collect()
    };
    assert_eq!(q.next_due(), Some(start + ms(100)));
    assert!(
        ids(&mut q, 99).is_empty(),
        "nothing is due before its delay"
    );
    assert_eq!(ids(&mut q, 105), [1], "the urgent frame is not due yet");
    assert_eq!(q.next_due(), Some(start + ms(110)));
    assert_eq!(ids(&mut q, 125), [2, 3]);
    assert!(q.is_empty());
    assert_eq!(q.next_due(), None);
    // Without a delay nothing is held.
    let mut plain = LaneQueue::new(1 << 20, Arc::new(OutboundBudget::new(usize::MAX)));
    let f = Outbound::new(header(Verb::ECHO, 9), Bytes::new(), later()).expect("small");
    plain.push(f, Priority::Normal, start).expect("fits");
    assert_eq!(plain.next_due(), None);
    assert_eq!(plain.take_batch(start, 10, usize::MAX).0.len(), 1);
}
