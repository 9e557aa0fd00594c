//! The bounded outbound queues of one connection (docs/design/cluster.md,
//! section 4.2), and the byte budget all peers share.
//!
//! A lane's queue counts the bytes of the frames it holds. An enqueue that
//! would pass the lane's limit or the node's [`OutboundBudget`] does not
//! wait: it first drops frames whose deadline passed, and fails if that
//! is not enough. The writer takes batches, urgent frames first, and drops
//! the expired frames it meets.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::time::Instant;

use super::frame::{crc32, FrameHeader, PayloadTooLarge, FRAME_HEADER_BYTES, FRAME_TRAILER_BYTES};
use super::limits::MAX_FRAME_PAYLOAD_BYTES;

/// Bytes queued for all peers together, bounded by `OUTBOUND_BYTES_MAX`.
#[derive(Debug)]
pub struct OutboundBudget {
    used: AtomicUsize,
    max: usize,
}

impl OutboundBudget {
    pub fn new(max: usize) -> OutboundBudget {
        OutboundBudget {
            used: AtomicUsize::new(0),
            max,
        }
    }

    /// Takes `n` bytes if they fit.
    pub fn try_acquire(&self, n: usize) -> bool {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(n).filter(|total| *total <= self.max)
            })
            .is_ok()
    }

    pub fn release(&self, n: usize) {
        self.used.fetch_sub(n, Ordering::AcqRel);
    }

    pub fn used(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }
}

/// Which of a small connection's queues a frame waits in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Priority {
    /// Gossip, echo, votes, responses without data: drained first.
    Urgent,
    Normal,
}

/// A frame waiting to be written. The header's version and timeout are
/// set when it is written, on the connection's version and from the time
/// left until `deadline`.
#[derive(Debug, Clone)]
pub struct Outbound {
    pub header: FrameHeader,
    pub payload: Bytes,
    pub payload_crc: u32,
    /// After it the frame is dropped rather than written.
    pub deadline: Instant,
    /// Not written before this (the lane's send delay, set when queued).
    pub due: Option<Instant>,
}

impl Outbound {
    /// A frame to queue; refuses a payload no frame may carry, so the
    /// writer can narrow its length to the header's u32.
    pub fn new(
        header: FrameHeader,
        payload: Bytes,
        deadline: Instant,
    ) -> Result<Outbound, PayloadTooLarge> {
        if payload.len() > MAX_FRAME_PAYLOAD_BYTES {
            return Err(PayloadTooLarge {
                len: payload.len(),
                max: MAX_FRAME_PAYLOAD_BYTES,
            });
        }
        Ok(Outbound {
            payload_crc: crc32(&payload),
            header,
            payload,
            deadline,
            due: None,
        })
    }

    /// Bytes on the wire.
    pub fn wire_len(&self) -> usize {
        FRAME_HEADER_BYTES + self.payload.len() + FRAME_TRAILER_BYTES
    }
}

/// Why an enqueue failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Full {
    /// The lane's own limit.
    Lane,
    /// The limit of all peers together.
    Node,
}

/// The queues of one connection: urgent and normal (a bulk connection
/// uses only normal).
#[derive(Debug)]
pub struct LaneQueue {
    urgent: VecDeque<Outbound>,
    normal: VecDeque<Outbound>,
    bytes: usize,
    max_bytes: usize,
    budget: Arc<OutboundBudget>,
    /// How long each frame waits after it is queued before it may be
    /// written (`internode_send_delay_ms`; zero but in benchmarks).
    delay: Duration,
}

impl LaneQueue {
    pub fn new(max_bytes: usize, budget: Arc<OutboundBudget>) -> LaneQueue {
        LaneQueue {
            urgent: VecDeque::new(),
            normal: VecDeque::new(),
            bytes: 0,
            max_bytes,
            budget,
            delay: Duration::ZERO,
        }
    }

    /// The queue with every frame held `delay` after it is queued, as a
    /// link that long would hold it. Frames keep their order, and many
    /// can be in flight at once.
    pub fn with_delay(mut self, delay: Duration) -> LaneQueue {
        self.delay = delay;
        self
    }

    /// When the first frame held by the delay may be written, if one is.
    pub fn next_due(&self) -> Option<Instant> {
        [&self.urgent, &self.normal]
            .into_iter()
            .filter_map(|q| q.front().and_then(|f| f.due))
            .min()
    }

    /// Bytes queued.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    pub fn is_empty(&self) -> bool {
        self.urgent.is_empty() && self.normal.is_empty()
    }

    /// Queues `frame`, making room by dropping expired frames (returned, to
    /// be counted) if it does not fit; fails if it still does not.
    pub fn push(
        &mut self,
        mut frame: Outbound,
        priority: Priority,
        now: Instant,
    ) -> Result<Vec<Outbound>, (Full, Outbound)> {
        if !self.delay.is_zero() {
            frame.due = Some(now + self.delay);
        }
        let len = frame.wire_len();
        let mut expired = Vec::new();
        if !self.fits(len) {
            expired = self.drop_expired(now);
        }
        if !self.fits(len) {
            return Err((Full::Lane, frame));
        }
        if !self.budget.try_acquire(len) {
            return Err((Full::Node, frame));
        }
        self.bytes += len;
        match priority {
            Priority::Urgent => self.urgent.push_back(frame),
            Priority::Normal => self.normal.push_back(frame),
        }
        Ok(expired)
    }

    fn fits(&self, len: usize) -> bool {
        self.bytes
            .checked_add(len)
            .is_some_and(|total| total <= self.max_bytes)
    }

    /// Removes every frame whose deadline has passed.
    pub fn drop_expired(&mut self, now: Instant) -> Vec<Outbound> {
        let mut gone = Vec::new();
        for queue in [&mut self.urgent, &mut self.normal] {
            queue.retain(|f| {
                let live = f.deadline > now;
                if !live {
                    gone.push(f.clone());
                }
                live
            });
        }
        for f in &gone {
            self.release(f.wire_len());
        }
        gone
    }

    /// Takes the next batch to write: urgent frames first, then normal,
    /// at most `max_frames` and `max_bytes` (but always one frame if any
    /// is queued and due). Expired frames met on the way are returned
    /// apart; a queue stops at its first frame not due yet.
    pub fn take_batch(
        &mut self,
        now: Instant,
        max_frames: usize,
        max_bytes: usize,
    ) -> (Vec<Outbound>, Vec<Outbound>) {
        let mut batch = Vec::new();
        let mut expired = Vec::new();
        let mut bytes = 0usize;
        let due =
            |q: &VecDeque<Outbound>| q.front().is_some_and(|f| f.due.is_none_or(|d| d <= now));
        while batch.len() < max_frames {
            let queue = if due(&self.urgent) {
                &mut self.urgent
            } else if due(&self.normal) {
                &mut self.normal
            } else {
                break;
            };
            let Some(next) = queue.front() else { break };
            let len = next.wire_len();
            if !batch.is_empty() && bytes + len > max_bytes {
                break;
            }
            let Some(frame) = queue.pop_front() else {
                break;
            };
            self.release(len);
            if frame.deadline <= now {
                expired.push(frame);
            } else {
                bytes += len;
                batch.push(frame);
            }
        }
        (batch, expired)
    }

    fn release(&mut self, len: usize) {
        self.bytes -= len;
        self.budget.release(len);
    }
}

impl Drop for LaneQueue {
    fn drop(&mut self) {
        self.budget.release(self.bytes);
    }
}

#[cfg(test)]
mod tests;
