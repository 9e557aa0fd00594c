//! Anti-entropy repair (docs/design/topology.md, section 6): replicas of a
//! range compare Merkle leaves of their data ([`merkle`], built by the
//! validation scan of [`validate`]) and exchange what differs
//! ([`session`], over the streaming of [`crate::streaming`]); an
//! incremental repair compares only the data no repair has covered yet
//! ([`incremental`]).

pub mod incremental;
pub mod merkle;
pub mod session;
pub mod validate;

pub use session::{local_ranges, repair_table, RepairKind, TableRepair};
