//! The chunk cache's eviction: two FIFO queues with a ghost, after
//! S3-FIFO (Yang et al., SOSP 2023).
//!
//! A new block enters the small queue, which holds about a tenth of the
//! budget ([`SMALL_QUEUE_PERCENT`]). When room is needed and the small queue
//! is over its share, its front block leaves: to the main queue if it was
//! read since it came in, else out of the cache, its slot remembering when
//! (its ghost). A block inserted again while its ghost is recent (within as
//! many small-queue evictions as the cache holds blocks) goes straight
//! to the main queue: it is reread, only at a distance longer than the small
//! queue. Otherwise the main queue's front block leaves, unless it was read
//! since it last reached the front, in which case it goes to the back
//! unmarked (CLOCK).
//!
//! Why not one CLOCK queue: with 8 GB of data under a 320 MiB cache, most
//! data chunks are read once, and each insert moved the hand; index spans,
//! read again every few seconds, were pushed out between two reads (the
//! cache hit 25% of lookups). One-hit chunks now pass through the small
//! queue without touching the main one.
//!
//! All of this runs under the cache's one lock, on inserts (after a miss)
//! and budget changes; hits only mark their slot.

use super::{BlockCache, Slot, Slots};
use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Weak;

/// The small queue's share of the budget, in percent.
pub const SMALL_QUEUE_PERCENT: u64 = 10;

/// A queued block's place: which table, which slot, and the weight it had
/// when queued.
struct Place {
    table: Weak<Slots>,
    slot: u32,
    weight: u64,
}

/// The two queues.
#[derive(Default)]
pub(super) struct Queues {
    small: VecDeque<Place>,
    main: VecDeque<Place>,
    /// Weight of the places in `small`, as queued.
    small_weight: u64,
    /// Blocks evicted from `small` unread, the clock of ghosts (never 0).
    evicted: u32,
}

impl Queues {
    /// Queues a block just stored in `slot`: in the main queue when its
    /// ghost is recent (at most `window` small-queue evictions ago: the
    /// blocks the cache holds, as S3-FIFO's ghost queue is as long as the
    /// main queue's capacity), else in the small one.
    pub(super) fn admit(
        &mut self,
        slot: &Slot,
        (table, i): (Weak<Slots>, u32),
        weight: u64,
        window: u64,
    ) {
        let ghost = slot.ghost.swap(0, Ordering::Relaxed);
        let age = u64::from(self.evicted.wrapping_sub(ghost));
        let place = Place {
            table,
            slot: i,
            weight,
        };
        if ghost != 0 && age <= window {
            self.main.push_back(place);
        } else {
            self.small_weight += weight;
            self.small.push_back(place);
        }
    }

    /// Places queued (live or not).
    pub(super) fn len(&self) -> usize {
        self.small.len() + self.main.len()
    }

    fn next_ghost(&mut self) -> u32 {
        self.evicted = self.evicted.wrapping_add(1).max(1);
        self.evicted
    }
}

impl BlockCache {
    /// Evicts until the blocks weigh at most `target`. Each step takes one
    /// place off a queue; second chances in the main queue are bounded by
    /// its length, so this ends.
    pub(super) fn evict_to(&self, q: &mut Queues, target: u64) {
        let small_share = self.capacity.load(Ordering::Relaxed) / 100 * SMALL_QUEUE_PERCENT;
        let mut second_chances = q.main.len();
        while self.used.load(Ordering::Relaxed) > target {
            let from_small =
                !q.small.is_empty() && (q.small_weight > small_share || q.main.is_empty());
            if from_small {
                self.evict_small(q);
            } else if !self.evict_main(q, &mut second_chances) {
                break;
            }
        }
    }

    /// The small queue's front block: to the main queue if read, else out.
    fn evict_small(&self, q: &mut Queues) {
        let Some(place) = q.small.pop_front() else {
            return;
        };
        q.small_weight = q.small_weight.saturating_sub(place.weight);
        // A closed file's blocks were given back when it closed.
        let Some(table) = place.table.upgrade() else {
            return;
        };
        let slot = &table.slots[place.slot as usize];
        if slot.block.read().is_none() {
            slot.queued.store(false, Ordering::Relaxed);
        } else if slot.referenced.swap(false, Ordering::Relaxed) {
            q.main.push_back(place);
        } else {
            self.release(slot);
            slot.queued.store(false, Ordering::Relaxed);
            slot.ghost.store(q.next_ghost(), Ordering::Relaxed);
        }
    }

    /// The main queue's front block: to the back if read since it last
    /// reached the front (while chances last), else out. False when the
    /// queue is empty.
    fn evict_main(&self, q: &mut Queues, second_chances: &mut usize) -> bool {
        let Some(place) = q.main.pop_front() else {
            return false;
        };
        let Some(table) = place.table.upgrade() else {
            return true;
        };
        let slot = &table.slots[place.slot as usize];
        if *second_chances > 0 && slot.referenced.swap(false, Ordering::Relaxed) {
            *second_chances -= 1;
            q.main.push_back(place);
            return true;
        }
        self.release(slot);
        slot.queued.store(false, Ordering::Relaxed);
        true
    }

    /// Drops the queues' dead places when they outnumber the live ones:
    /// without evictions (a cache larger than the data) the places of
    /// closed files would pile up.
    pub(super) fn sweep_if_sparse(&self, q: &mut Queues) {
        let live = self.entries.load(Ordering::Relaxed) as usize;
        let places = q.len();
        if places <= live.saturating_mul(2).saturating_add(super::QUEUE_SLACK) {
            return;
        }
        let held = |place: &Place| {
            let Some(table) = place.table.upgrade() else {
                return false;
            };
            let slot = &table.slots[place.slot as usize];
            let held = slot.block.read().is_some();
            if !held {
                slot.queued.store(false, Ordering::Relaxed);
            }
            held
        };
        q.small.retain(held);
        q.main.retain(held);
        q.small_weight = q.small.iter().map(|p| p.weight).sum();
    }
}
