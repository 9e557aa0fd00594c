//! Ballots (docs/design/paxos.md, section 3): version 1 time UUIDs whose
//! time is the micros a commit's cells carry, and whose clock sequence and
//! node bytes come from the coordinator's host id, so two coordinators never
//! make the same ballot. They compare by time, then by their other bytes:
//! one total order.

use std::cmp::Ordering;
use std::sync::atomic::{AtomicI64, Ordering as AtomicOrdering};

use varve_types::time::{timeuuid_for_micros, timeuuid_micros, timeuuid_ticks};

use crate::net::handshake::HostId;

/// A Paxos ballot.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Ballot(pub [u8; 16]);

impl Ballot {
    /// The ballot of `micros` made by the coordinator whose ballots carry
    /// `low` (clock sequence and node).
    pub fn new(micros: i64, low: u64) -> Ballot {
        Ballot(timeuuid_for_micros(micros, low))
    }

    /// The micros since the Unix epoch its commit's cells carry.
    pub fn micros(&self) -> i64 {
        timeuuid_micros(&self.0)
    }
}

impl Ord for Ballot {
    fn cmp(&self, other: &Ballot) -> Ordering {
        timeuuid_ticks(&self.0)
            .cmp(&timeuuid_ticks(&other.0))
            .then_with(|| self.0.cmp(&other.0))
    }
}

impl PartialOrd for Ballot {
    fn partial_cmp(&self, other: &Ballot) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl std::fmt::Debug for Ballot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Ballot({}", self.micros())?;
        write!(f, "/{:02x}{:02x})", self.0[14], self.0[15])
    }
}

/// A coordinator's source of ballots: each newer than every ballot it made
/// or saw, from the clock when the clock is ahead.
#[derive(Debug)]
pub struct BallotClock {
    last_micros: AtomicI64,
    /// Clock sequence (variant bits set) and node bytes of its ballots.
    low: u64,
}

impl BallotClock {
    /// The clock of the coordinator `host`.
    pub fn new(host: HostId) -> BallotClock {
        let id = host.0;
        let mut low = [0u8; 8];
        low.copy_from_slice(&id[8..16]);
        let mut low = u64::from_be_bytes(low);
        // RFC 4122 variant in the clock sequence's top bits.
        low = (low & !(0xC000 << 48)) | (0x8000 << 48);
        BallotClock {
            last_micros: AtomicI64::new(0),
            low,
        }
    }

    /// A ballot newer than every one made or observed, at `now_micros` when
    /// the clock is ahead of them.
    pub fn next(&self, now_micros: i64) -> Ballot {
        let previous = self
            .last_micros
            .fetch_update(AtomicOrdering::AcqRel, AtomicOrdering::Acquire, |last| {
                Some(now_micros.max(last + 1))
            })
            .unwrap_or(now_micros);
        Ballot::new(now_micros.max(previous + 1), self.low)
    }

    /// Whether this clock made `ballot` (its clock sequence and node bytes
    /// are this coordinator's).
    pub fn made(&self, ballot: &Ballot) -> bool {
        let mut low = [0u8; 8];
        low.copy_from_slice(&ballot.0[8..16]);
        u64::from_be_bytes(low) == self.low
    }

    /// A ballot seen elsewhere (a promise that rejected us, a commit): the
    /// next ballot is newer than it.
    pub fn observe(&self, ballot: &Ballot) {
        self.last_micros
            .fetch_max(ballot.micros(), AtomicOrdering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ballots_order_by_time_then_bytes_and_keep_their_micros() {
        let a = Ballot::new(1_700_000_000_000_001, 1);
        let b = Ballot::new(1_700_000_000_000_001, 2);
        let c = Ballot::new(1_700_000_000_000_002, 0);
        assert!(a < b && b < c);
        assert_eq!(a.micros(), 1_700_000_000_000_001);
        assert_eq!(c.micros(), 1_700_000_000_000_002);
        // A version 1 UUID.
        assert_eq!(a.0[6] >> 4, 1);
    }

    #[test]
    fn a_clock_knows_its_own_ballots_from_another_coordinators() {
        let ours = BallotClock::new(HostId([7; 16]));
        let theirs = BallotClock::new(HostId([9; 16]));
        let b = ours.next(1_700_000_000_000_000);
        assert!(ours.made(&b));
        assert!(ours.made(&ours.next(1)));
        assert!(!theirs.made(&b));
        assert!(!ours.made(&theirs.next(1_700_000_000_000_000)));
    }

    #[test]
    fn the_clock_moves_past_what_it_made_and_saw_even_when_time_stands_still() {
        let clock = BallotClock::new(HostId([7; 16]));
        let first = clock.next(100);
        let second = clock.next(100);
        assert!(second > first && second.micros() == 101);
        let other = BallotClock::new(HostId([9; 16]));
        let theirs = other.next(5_000);
        clock.observe(&theirs);
        let third = clock.next(100);
        assert!(third > theirs, "{third:?} after {theirs:?}");
        assert_eq!(third.micros(), 5_001);
        // Two coordinators at the same micro still make different ballots.
        assert_ne!(
            BallotClock::new(HostId([1; 16])).next(9),
            BallotClock::new(HostId([2; 16])).next(9)
        );
    }
}
