//! Partition encoding version 2 (docs/format/partition-encoding.md,
//! "Version 2"): compact cells.
//!
//! A partition starts with two base values: the smallest timestamp and the
//! smallest local deletion time it holds. Every timestamp and deletion time
//! after that is an unsigned varint *delta* from its base, plus one, where
//! 0 stands for the sentinel (`i64::MIN` for a timestamp, `i32::MAX` =
//! "none" for a deletion time), so any value, sentinel or not, round-trips.
//! A flags byte per row and per cell says which fields follow: a cell
//! written by the same INSERT as its row (same timestamp, same TTL) carries
//! neither, and a cell in the column after the previous one carries no
//! column id, so the common cell costs a flags byte, a length and its value.
//!
//! Decoding uses checked arithmetic everywhere: a delta that leaves the
//! range of its type is a [`DecodeError`](crate::encoding::DecodeError),
//! never a wrapped value.
//!
//! `write.rs` encodes, `read.rs` decodes; the flag constants and the
//! bases are here, shared by both.

pub(in crate::encoding) mod read;
pub(in crate::encoding) mod write;

pub use read::{decode_partition, decode_row};
pub use write::{encode_partition, encode_row};

// Partition (and standalone row) header flags.
pub(in crate::encoding) const PARTITION_HAS_DELETION: u8 = 0x01;
pub(in crate::encoding) const PARTITION_HAS_STATIC: u8 = 0x02;
pub(in crate::encoding) const PARTITION_HAS_LDT_BASE: u8 = 0x04;
const PARTITION_HAS_RANGE_TOMBSTONES: u8 = 0x08;
const PARTITION_FLAGS: u8 = 0x0f;
/// The only header flag a standalone row may carry.
const STANDALONE_ROW_FLAGS: u8 = PARTITION_HAS_LDT_BASE;

// Row flags.
const ROW_HAS_LIVENESS: u8 = 0x01;
const ROW_LIVENESS_EXPIRING: u8 = 0x02;
const ROW_HAS_DELETION: u8 = 0x04;
const ROW_HAS_COMPLEX_DELETIONS: u8 = 0x08;
const ROW_FLAGS: u8 = 0x0f;

// Cell flags.
const CELL_HAS_PATH: u8 = 0x01;
const CELL_IS_DELETED: u8 = 0x02;
const CELL_IS_EXPIRING: u8 = 0x04;
const CELL_USE_ROW_TTL: u8 = 0x08;
const CELL_USE_ROW_TIMESTAMP: u8 = 0x10;
const CELL_HAS_EMPTY_VALUE: u8 = 0x20;
const CELL_IMPLICIT_COLUMN: u8 = 0x40;
const CELL_FLAGS: u8 = 0x7f;
const CELL_KIND: u8 = CELL_IS_DELETED | CELL_IS_EXPIRING | CELL_USE_ROW_TTL;

/// The values every delta of one partition is taken from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Bases {
    /// The smallest timestamp other than `i64::MIN` (0 when none).
    pub(in crate::encoding) timestamp: i64,
    /// The smallest local deletion time other than `NO_DELETION_TIME`
    /// (0 when none; then it is not written).
    pub(in crate::encoding) ldt: i32,
    pub(in crate::encoding) has_ldt: bool,
}
