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
