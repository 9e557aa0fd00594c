//! Clocks, uuids and the text forms of date, time, timestamp and duration.
//!
//! Time-based uuids (version 1) count 100 ns ticks since 1582-10-15; the
//! generator here never returns the same or a smaller timestamp twice in one
//! process, and picks its clock sequence and node at random once.
//! Civil-date arithmetic lives in [`civil`]; durations in [`duration`].

mod civil;
mod duration;

pub use civil::{
    civil_from_days, days_from_civil, format_date, format_time, format_timestamp, parse_date,
    parse_time, parse_timestamp, DATE_EPOCH_OFFSET,
};
pub use duration::{format_duration, parse_duration};

use crate::{Error, Result};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds from 1582-10-15 (the uuid epoch) to 1970-01-01.
pub const UUID_EPOCH_OFFSET_MS: i64 = 12_219_292_800_000;
/// 100 ns uuid ticks per millisecond.
pub const TICKS_PER_MS: i64 = 10_000;
/// Low 8 bytes of the smallest timeuuid of a millisecond (signed-byte order).
const MIN_CLOCK_SEQ_AND_NODE: u64 = 0x8080_8080_8080_8080;
/// Low 8 bytes of the largest timeuuid of a millisecond (signed-byte order).
const MAX_CLOCK_SEQ_AND_NODE: u64 = 0x7f7f_7f7f_7f7f_7f7f;

fn since_epoch() -> std::time::Duration {
    // A clock before 1970 is a broken host; treat it as the epoch.
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

/// Microseconds since the Unix epoch (the unit of write timestamps).
pub fn now_micros() -> i64 {
    i64::try_from(since_epoch().as_micros()).unwrap_or(i64::MAX)
}

/// Milliseconds since the Unix epoch.
pub fn now_millis() -> i64 {
    i64::try_from(since_epoch().as_millis()).unwrap_or(i64::MAX)
}

/// Seconds since the Unix epoch (the unit of local deletion times).
pub fn now_seconds() -> i64 {
    i64::try_from(since_epoch().as_secs()).unwrap_or(i64::MAX)
}

/// Which end of a millisecond `timeuuid_for_millis` returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeuuidBound {
    /// `minTimeuuid(t)`: sorts before every timeuuid of that millisecond.
    Min,
    /// `maxTimeuuid(t)`: sorts after every timeuuid of that millisecond.
    Max,
}

fn ticks_from_millis(ms: i64) -> u64 {
    (ms.wrapping_add(UUID_EPOCH_OFFSET_MS)
        .wrapping_mul(TICKS_PER_MS)) as u64
}

/// Lays out a version-1 uuid from a 60-bit tick count and the low 8 bytes.
fn build_v1(ticks: u64, low: u64) -> [u8; 16] {
    let mut u = [0u8; 16];
    u[0..4].copy_from_slice(&(ticks as u32).to_be_bytes());
    u[4..6].copy_from_slice(&((ticks >> 32) as u16).to_be_bytes());
    let hi = (((ticks >> 48) as u16) & 0x0FFF) | 0x1000;
    u[6..8].copy_from_slice(&hi.to_be_bytes());
    u[8..16].copy_from_slice(&low.to_be_bytes());
    u
}

/// A version-1 uuid of `micros` since the Unix epoch (ticks of 100 ns, so
/// the tenth digit is 0) with `low` as its clock sequence and node bytes.
pub fn timeuuid_for_micros(micros: i64, low: u64) -> [u8; 16] {
    let ticks = ticks_from_millis(0).wrapping_add((micros as u64).wrapping_mul(10));
    build_v1(ticks, low)
}

/// Microseconds since the Unix epoch of a version-1 uuid.
pub fn timeuuid_micros(u: &[u8; 16]) -> i64 {
    (timeuuid_ticks(u).wrapping_sub(ticks_from_millis(0)) / 10) as i64
}

/// The 60-bit tick count of a version-1 uuid.
pub fn timeuuid_ticks(u: &[u8; 16]) -> u64 {
    let low = u64::from(u32::from_be_bytes([u[0], u[1], u[2], u[3]]));
    let mid = u64::from(u16::from_be_bytes([u[4], u[5]]));
    let hi = u64::from(u16::from_be_bytes([u[6], u[7]]) & 0x0FFF);
    (hi << 48) | (mid << 32) | low
}

/// Milliseconds since the Unix epoch of a version-1 uuid (`toTimestamp`).
pub fn timeuuid_millis(u: &[u8; 16]) -> i64 {
    (timeuuid_ticks(u) as i64 / TICKS_PER_MS) - UUID_EPOCH_OFFSET_MS
}

/// The smallest or largest timeuuid of millisecond `ms`, as returned by
/// `minTimeuuid` / `maxTimeuuid`.
pub fn timeuuid_for_millis(ms: i64, bound: TimeuuidBound) -> [u8; 16] {
    let ticks = ticks_from_millis(ms);
    match bound {
        TimeuuidBound::Min => build_v1(ticks, MIN_CLOCK_SEQ_AND_NODE),
        TimeuuidBound::Max => build_v1(ticks + (TICKS_PER_MS as u64 - 1), MAX_CLOCK_SEQ_AND_NODE),
    }
}

/// Clock sequence (variant 2 set) and node, chosen at random once per
/// process; the node has its multicast bit set as RFC 4122 asks of random
/// nodes.
fn clock_seq_and_node() -> u64 {
    static LOW: OnceLock<u64> = OnceLock::new();
    *LOW.get_or_init(|| {
        let r: u64 = rand::random();
        let clock_seq = ((r >> 48) & 0x3FFF) | 0x8000;
        let node = (r & 0xFFFF_FFFF_FFFF) | 0x0100_0000_0000;
        (clock_seq << 48) | node
    })
}

/// A new version-1 uuid for `now()`: strictly increasing in this process,
/// even when called faster than once per 100 ns tick.
pub fn new_timeuuid() -> [u8; 16] {
    static LAST_TICKS: AtomicU64 = AtomicU64::new(0);
    let now = ticks_from_millis(0) + (since_epoch().as_nanos() / 100) as u64;
    let mut prev = LAST_TICKS.load(Ordering::Relaxed);
    let ticks = loop {
        let next = now.max(prev + 1);
        match LAST_TICKS.compare_exchange_weak(prev, next, Ordering::AcqRel, Ordering::Relaxed) {
            Ok(_) => break next,
            Err(actual) => prev = actual,
        }
    };
    build_v1(ticks, clock_seq_and_node())
}

/// A random (version 4) uuid.
pub fn random_uuid() -> [u8; 16] {
    let mut u: [u8; 16] = rand::random();
    u[6] = (u[6] & 0x0F) | 0x40;
    u[8] = (u[8] & 0x3F) | 0x80;
    u
}

/// The canonical lowercase `8-4-4-4-12` form.
pub fn format_uuid(u: &[u8; 16]) -> String {
    let mut s = String::with_capacity(36);
    for (i, b) in u.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            s.push('-');
        }
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// Parses the `8-4-4-4-12` hex form, either case.
pub fn parse_uuid(s: &str) -> Result<[u8; 16]> {
    let bad = || Error::Marshal(format!("Unable to make UUID from '{s}'"));
    let b = s.as_bytes();
    if b.len() != 36 || [8, 13, 18, 23].iter().any(|&i| b[i] != b'-') {
        return Err(bad());
    }
    let hex: Vec<u8> = b.iter().copied().filter(|&c| c != b'-').collect();
    if hex.len() != 32 {
        return Err(bad());
    }
    let mut u = [0u8; 16];
    for (i, pair) in hex.chunks_exact(2).enumerate() {
        let digit = |c: u8| (c as char).to_digit(16).ok_or_else(bad);
        u[i] = (digit(pair[0])? * 16 + digit(pair[1])?) as u8;
    }
    Ok(u)
}

#[cfg(test)]
mod tests;
