//! A position in the commitlog: the segment id and the byte offset of an
//! entry in it. Positions order like the log: segment ids only grow (they
//! start from the wall clock in milliseconds at open, see
//! docs/design/durability.md), so they also order across restarts.

/// Where an entry starts. `Ord` follows the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Position {
    pub segment_id: u64,
    pub offset: u64,
}

impl Position {
    /// Before every entry.
    pub const ZERO: Position = Position {
        segment_id: 0,
        offset: 0,
    };
    /// After every entry: `mark_flushed(table, Position::MAX)` forgets a
    /// table (it was dropped or truncated).
    pub const MAX: Position = Position {
        segment_id: u64::MAX,
        offset: u64::MAX,
    };

    pub fn new(segment_id: u64, offset: u64) -> Self {
        Position { segment_id, offset }
    }
}

impl std::fmt::Display for Position {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.segment_id, self.offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_order_by_segment_then_offset() {
        let a = Position::new(1, 500);
        let b = Position::new(2, 20);
        assert!(Position::ZERO < a && a < b && b < Position::MAX);
        assert!(Position::new(2, 21) > b);
        assert_eq!(b.to_string(), "2:20");
    }
}
