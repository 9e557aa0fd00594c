//! What messaging counts, as plain atomics: dropped frames per verb and
//! reason, invalid frames per reason, rejected handshakes per reason, and
//! connection events. Prometheus wiring comes later
//! (`varve_internode_dropped_total{verb, reason}`,
//! `varve_internode_invalid_frames_total{reason}`,
//! `varve_internode_rejected_total{reason}`).

use std::sync::atomic::{AtomicU64, Ordering};

use super::frame::InvalidReason;
use super::handshake::{ConnectionKind, RejectReason};
use super::verb::Verb;

/// Why a frame was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropReason {
    /// An enqueue past a queue limit.
    QueueFull,
    /// Its deadline passed while queued, or before its handler ran.
    Expired,
    /// A response whose request is no longer waiting (timed out).
    LateResponse,
    /// A one-way frame or response nothing handles, or whose payload does
    /// not decode.
    Unhandled,
}

impl DropReason {
    pub const ALL: [DropReason; 4] = [
        DropReason::QueueFull,
        DropReason::Expired,
        DropReason::LateResponse,
        DropReason::Unhandled,
    ];

    pub fn label(self) -> &'static str {
        match self {
            DropReason::QueueFull => "queue_full",
            DropReason::Expired => "expired",
            DropReason::LateResponse => "late_response",
            DropReason::Unhandled => "unhandled",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// One slot per known verb, and one for every other code.
const VERB_SLOTS: usize = Verb::KNOWN.len() + 1;
const DROP_REASONS: usize = DropReason::ALL.len();
const INVALID_REASONS: usize = InvalidReason::LABELS.len();
const REJECT_REASONS: usize = RejectReason::LABELS.len() + 1;

fn verb_slot(verb: Verb) -> usize {
    Verb::KNOWN
        .iter()
        .position(|(v, _)| *v == verb)
        .unwrap_or(Verb::KNOWN.len())
}

/// Defined reasons at their code - 1; unknown codes share the last slot.
fn reject_slot(reason: RejectReason) -> usize {
    match reason.label() {
        Some(_) => usize::from(reason.0) - 1,
        None => REJECT_REASONS - 1,
    }
}

fn zeros<const N: usize>() -> [AtomicU64; N] {
    std::array::from_fn(|_| AtomicU64::new(0))
}

/// The counters of one node's messaging.
#[derive(Debug)]
pub struct Counters {
    dropped: [[AtomicU64; DROP_REASONS]; VERB_SLOTS],
    invalid_frames: [AtomicU64; INVALID_REASONS],
    /// HELLOs this node refused.
    rejected: [AtomicU64; REJECT_REASONS],
    /// HELLO_REJECTs this node received from peers.
    rejected_by_peer: [AtomicU64; REJECT_REASONS],
    /// Inbound connections that sent no whole HELLO in time.
    handshake_timeouts: AtomicU64,
    /// Inbound connections closed in the middle of a frame.
    closed_mid_frame: AtomicU64,
    /// Outbound connections that could not be opened or completed.
    connect_failures: AtomicU64,
    /// Outbound connections closed because a write took over the write
    /// timeout.
    write_timeouts: AtomicU64,
    /// Outbound connections that completed their handshake, per kind.
    connections: [AtomicU64; 2],
    /// Frames written, per connection kind.
    frames_written: [AtomicU64; 2],
    /// Requests answered with UNKNOWN_VERB.
    unknown_verbs: AtomicU64,
}

impl Default for Counters {
    fn default() -> Counters {
        Counters {
            dropped: std::array::from_fn(|_| zeros()),
            invalid_frames: zeros(),
            rejected: zeros(),
            rejected_by_peer: zeros(),
            handshake_timeouts: AtomicU64::new(0),
            closed_mid_frame: AtomicU64::new(0),
            connect_failures: AtomicU64::new(0),
            write_timeouts: AtomicU64::new(0),
            connections: zeros(),
            frames_written: zeros(),
            unknown_verbs: AtomicU64::new(0),
        }
    }
}

fn bump(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Ordering::Relaxed);
}

fn get(c: &AtomicU64) -> u64 {
    c.load(Ordering::Relaxed)
}

impl Counters {
    pub fn count_dropped(&self, verb: Verb, reason: DropReason, n: u64) {
        bump(&self.dropped[verb_slot(verb)][reason.index()], n);
    }

    /// Frames of `verb` dropped for `reason` (every unknown verb counts in
    /// one slot).
    pub fn dropped(&self, verb: Verb, reason: DropReason) -> u64 {
        get(&self.dropped[verb_slot(verb)][reason.index()])
    }

    /// Frames dropped for `reason`, all verbs together.
    pub fn dropped_total(&self, reason: DropReason) -> u64 {
        self.dropped.iter().map(|r| get(&r[reason.index()])).sum()
    }

    pub fn count_invalid(&self, reason: InvalidReason) {
        bump(&self.invalid_frames[reason.index()], 1);
    }

    pub fn invalid_frames(&self, reason: InvalidReason) -> u64 {
        get(&self.invalid_frames[reason.index()])
    }

    pub fn invalid_frames_total(&self) -> u64 {
        self.invalid_frames.iter().map(get).sum()
    }

    pub fn count_rejected(&self, reason: RejectReason) {
        bump(&self.rejected[reject_slot(reason)], 1);
    }

    /// HELLOs this node refused for `reason`.
    pub fn rejected(&self, reason: RejectReason) -> u64 {
        get(&self.rejected[reject_slot(reason)])
    }

    pub fn count_rejected_by_peer(&self, reason: RejectReason) {
        bump(&self.rejected_by_peer[reject_slot(reason)], 1);
    }

    /// HELLO_REJECTs received for `reason`.
    pub fn rejected_by_peer(&self, reason: RejectReason) -> u64 {
        get(&self.rejected_by_peer[reject_slot(reason)])
    }

    pub fn count_connection(&self, kind: ConnectionKind) {
        bump(&self.connections[kind as usize], 1);
    }

    /// Outbound connections of `kind` that completed their handshake.
    pub fn connections(&self, kind: ConnectionKind) -> u64 {
        get(&self.connections[kind as usize])
    }

    pub fn count_written(&self, kind: ConnectionKind, frames: u64) {
        bump(&self.frames_written[kind as usize], frames);
    }

    /// Frames written on connections of `kind`.
    pub fn frames_written(&self, kind: ConnectionKind) -> u64 {
        get(&self.frames_written[kind as usize])
    }

    pub fn count_handshake_timeout(&self) {
        bump(&self.handshake_timeouts, 1);
    }

    pub fn count_closed_mid_frame(&self) {
        bump(&self.closed_mid_frame, 1);
    }

    pub fn count_connect_failure(&self) {
        bump(&self.connect_failures, 1);
    }

    pub fn count_write_timeout(&self) {
        bump(&self.write_timeouts, 1);
    }

    pub fn write_timeouts(&self) -> u64 {
        get(&self.write_timeouts)
    }

    pub fn count_unknown_verb(&self) {
        bump(&self.unknown_verbs, 1);
    }

    pub fn handshake_timeouts(&self) -> u64 {
        get(&self.handshake_timeouts)
    }

    pub fn closed_mid_frame(&self) -> u64 {
        get(&self.closed_mid_frame)
    }

    pub fn connect_failures(&self) -> u64 {
        get(&self.connect_failures)
    }

    pub fn unknown_verbs(&self) -> u64 {
        get(&self.unknown_verbs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_slot_counts_apart() {
        let c = Counters::default();
        c.count_dropped(Verb::MUTATION, DropReason::QueueFull, 2);
        c.count_dropped(Verb(0x0999), DropReason::Expired, 1);
        c.count_dropped(Verb(0x0998), DropReason::Expired, 1);
        assert_eq!(c.dropped(Verb::MUTATION, DropReason::QueueFull), 2);
        assert_eq!(c.dropped(Verb::MUTATION, DropReason::Expired), 0);
        assert_eq!(c.dropped(Verb(0x0777), DropReason::Expired), 2);
        assert_eq!(c.dropped_total(DropReason::Expired), 2);
        c.count_invalid(InvalidReason::BadMagic);
        assert_eq!(c.invalid_frames(InvalidReason::BadMagic), 1);
        assert_eq!(c.invalid_frames_total(), 1);
        c.count_rejected(RejectReason::SAME_HOST_ID);
        c.count_rejected(RejectReason(200));
        assert_eq!(c.rejected(RejectReason::SAME_HOST_ID), 1);
        assert_eq!(c.rejected(RejectReason(0)), 1, "unknown codes share a slot");
        assert_eq!(c.rejected(RejectReason::MALFORMED_HELLO), 0);
    }
}
