//! Cells, liveness info and deletion times, and how two versions of each
//! reconcile.

use bytes::Bytes;

/// `local_deletion_time` of a cell that is neither deleted nor expiring.
pub const NO_DELETION_TIME: i32 = i32::MAX;

/// A deletion: everything written at or before `marked_for_delete_at`
/// (microseconds) is shadowed. `local_deletion_time` (seconds) is when the
/// deletion happened on this node; gc_grace_seconds counts from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DeletionTime {
    pub marked_for_delete_at: i64,
    pub local_deletion_time: i32,
}

impl DeletionTime {
    pub const LIVE: DeletionTime = DeletionTime {
        marked_for_delete_at: i64::MIN,
        local_deletion_time: NO_DELETION_TIME,
    };

    pub fn new(marked_for_delete_at: i64, local_deletion_time: i32) -> Self {
        DeletionTime {
            marked_for_delete_at,
            local_deletion_time,
        }
    }

    pub fn is_live(&self) -> bool {
        self.marked_for_delete_at == i64::MIN
    }

    /// True when data written at `timestamp` is shadowed by this deletion.
    pub fn deletes(&self, timestamp: i64) -> bool {
        !self.is_live() && timestamp <= self.marked_for_delete_at
    }

    /// True when `self` wins over `other`.
    pub fn supersedes(&self, other: &DeletionTime) -> bool {
        (self.marked_for_delete_at, self.local_deletion_time)
            > (other.marked_for_delete_at, other.local_deletion_time)
    }

    /// The stronger of the two.
    pub fn max(self, other: DeletionTime) -> DeletionTime {
        if other.supersedes(&self) {
            other
        } else {
            self
        }
    }
}

/// The primary-key liveness of a row (the "row marker" an INSERT writes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LivenessInfo {
    pub timestamp: i64,
    /// Seconds; 0 when not expiring.
    pub ttl: i32,
    /// When an expiring marker stops being live, else [`NO_DELETION_TIME`].
    pub local_expiration_time: i32,
}

impl LivenessInfo {
    pub fn new(timestamp: i64, ttl: i32, now_seconds: i32) -> Self {
        LivenessInfo {
            timestamp,
            ttl,
            local_expiration_time: expiry(ttl, now_seconds),
        }
    }

    pub fn is_live(&self, now_seconds: i32) -> bool {
        self.ttl == 0 || now_seconds < self.local_expiration_time
    }

    /// True when `self` wins over `other`.
    pub fn supersedes(&self, other: &LivenessInfo) -> bool {
        (self.timestamp, self.local_expiration_time)
            > (other.timestamp, other.local_expiration_time)
    }
}

/// The expiry second of a value written at `now_seconds` with `ttl`.
pub fn expiry(ttl: i32, now_seconds: i32) -> i32 {
    if ttl <= 0 {
        NO_DELETION_TIME
    } else {
        now_seconds.saturating_add(ttl)
    }
}

/// One version of one cell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cell {
    pub timestamp: i64,
    /// Seconds; 0 when not expiring.
    pub ttl: i32,
    /// Expiry for an expiring cell, deletion second for a tombstone,
    /// [`NO_DELETION_TIME`] for a plain live cell.
    pub local_deletion_time: i32,
    /// Empty for a tombstone.
    pub value: Bytes,
}

impl Cell {
    pub fn live(timestamp: i64, value: Bytes) -> Self {
        Cell {
            timestamp,
            ttl: 0,
            local_deletion_time: NO_DELETION_TIME,
            value,
        }
    }

    pub fn expiring(timestamp: i64, ttl: i32, now_seconds: i32, value: Bytes) -> Self {
        if ttl <= 0 {
            return Cell::live(timestamp, value);
        }
        Cell {
            timestamp,
            ttl,
            local_deletion_time: expiry(ttl, now_seconds),
            value,
        }
    }

    pub fn tombstone(timestamp: i64, now_seconds: i32) -> Self {
        Cell {
            timestamp,
            ttl: 0,
            local_deletion_time: now_seconds,
            value: Bytes::new(),
        }
    }

    pub fn is_tombstone(&self) -> bool {
        self.ttl == 0 && self.local_deletion_time != NO_DELETION_TIME
    }

    pub fn is_expiring(&self) -> bool {
        self.ttl > 0
    }

    /// Live at `now_seconds`: not a tombstone and not past its expiry.
    pub fn is_live(&self, now_seconds: i32) -> bool {
        if self.is_tombstone() {
            return false;
        }
        !self.is_expiring() || now_seconds < self.local_deletion_time
    }
}

/// Which of two versions of a cell wins, as Cassandra 5.0 reconciles
/// them. A higher timestamp wins. On a tie, a cell that has a deletion
/// time (a tombstone or an expiring cell) beats a plain live cell (so the
/// answer never depends on the clock at reconciliation, CASSANDRA-14592);
/// between two such cells a tombstone beats an expiring cell, then the
/// later deletion time wins; what is left is decided by the greater value
/// (`a` when equal).
pub fn reconcile(a: Cell, b: Cell) -> Cell {
    if a.timestamp != b.timestamp {
        return if a.timestamp > b.timestamp { a } else { b };
    }
    let a_dated = a.local_deletion_time != NO_DELETION_TIME;
    let b_dated = b.local_deletion_time != NO_DELETION_TIME;
    if a_dated || b_dated {
        if a_dated != b_dated {
            return if a_dated { a } else { b };
        }
        let (a_tombstone, b_tombstone) = (!a.is_expiring(), !b.is_expiring());
        if a_tombstone != b_tombstone {
            return if a_tombstone { a } else { b };
        }
        if a.local_deletion_time != b.local_deletion_time {
            return if a.local_deletion_time > b.local_deletion_time {
                a
            } else {
                b
            };
        }
    }
    if a.value >= b.value {
        a
    } else {
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn live(ts: i64, v: &'static [u8]) -> Cell {
        Cell::live(ts, Bytes::from_static(v))
    }

    #[test]
    fn higher_timestamp_wins() {
        assert_eq!(reconcile(live(1, b"b"), live(2, b"a")).timestamp, 2);
        assert_eq!(reconcile(live(2, b"a"), live(1, b"b")).timestamp, 2);
    }

    #[test]
    fn tombstone_wins_a_tie() {
        let t = Cell::tombstone(5, 100);
        assert!(reconcile(live(5, b"z"), t.clone()).is_tombstone());
        assert!(reconcile(t, live(5, b"z")).is_tombstone());
    }

    #[test]
    fn greater_value_wins_a_tie_between_live_cells() {
        assert_eq!(reconcile(live(5, b"a"), live(5, b"b")).value, &b"b"[..]);
        assert_eq!(reconcile(live(5, b"b"), live(5, b"a")).value, &b"b"[..]);
    }

    #[test]
    fn on_a_tie_an_expiring_cell_beats_a_live_one_whatever_the_values() {
        let expiring = Cell::expiring(5, 10, 100, Bytes::from_static(b"a"));
        for (x, y) in [(expiring.clone(), live(5, b"z")), (live(5, b"z"), expiring)] {
            let won = reconcile(x, y);
            assert!(won.is_expiring(), "{won:?}");
            assert_eq!(won.value, &b"a"[..]);
        }
    }

    #[test]
    fn on_a_tie_the_later_expiry_wins_before_the_values_are_compared() {
        let soon = Cell::expiring(5, 10, 100, Bytes::from_static(b"z"));
        let later = Cell::expiring(5, 20, 100, Bytes::from_static(b"a"));
        assert_eq!(reconcile(soon.clone(), later.clone()).value, &b"a"[..]);
        assert_eq!(reconcile(later, soon).value, &b"a"[..]);
    }

    #[test]
    fn on_a_tie_a_tombstone_beats_an_expiring_cell() {
        let t = Cell::tombstone(5, 50);
        let e = Cell::expiring(5, 1000, 100, Bytes::from_static(b"z"));
        assert!(reconcile(t.clone(), e.clone()).is_tombstone());
        assert!(reconcile(e, t).is_tombstone());
    }

    #[test]
    fn expiring_cell_dies_at_its_expiry() {
        let c = Cell::expiring(1, 10, 100, Bytes::from_static(b"x"));
        assert!(c.is_live(109));
        assert!(!c.is_live(110));
        assert!(!c.is_tombstone());
    }

    #[test]
    fn deletion_shadows_equal_timestamps() {
        let d = DeletionTime::new(10, 0);
        assert!(d.deletes(10));
        assert!(!d.deletes(11));
        assert!(!DeletionTime::LIVE.deletes(i64::MIN + 1));
    }
}
