//! The data model: what a table holds, independent of where it is kept.
//!
//! A partition ([`Partition`]) is found by its [`PartitionKey`] (token, then
//! key bytes) and holds a partition deletion, a static row, rows in
//! clustering order ([`RowMap`] of [`ClusteringKey`] to [`Row`]) and range
//! tombstones ([`RangeTombstone`] over a [`Slice`]). A row holds its
//! liveness ([`LivenessInfo`]), its deletion ([`DeletionTime`]) and its
//! cells ([`CellMap`] of [`Cell`]). The same types serve as stored data and
//! as an update: merging follows Cassandra's reconciliation rules
//! ([`cell::reconcile`], [`Partition::merge`]), and resolving at a given
//! `now` ([`Partition::resolve`], [`Partition::resolve_slices`]) drops what
//! is shadowed or expired.
//!
//! Invariants:
//! 1. Merging is commutative and associative: the order in which updates
//!    arrive does not change what a read returns.
//! 2. A partition key sorts by (token, key bytes); the empty key is never
//!    stored (the query layer rejects it), so it can serve as the lowest
//!    position within a token.
//! 3. A clustering bound never compares equal to a row (see [`clustering`]).
//!
//! Why here and not in storage: the query layer and the cluster crate
//! (coordinator, read repair, hints) build, merge and resolve partitions as
//! much as storage does, and must share these types without depending on
//! storage (docs/design/cluster.md, section 2.2). Storage re-exports every
//! module at its old path (`varve_storage::partition`, ...), so its own code
//! and its users read the same. Nothing here does I/O or knows an encoding:
//! the byte formats of partitions stay in storage.

pub mod cell;
pub mod cell_map;
pub mod clustering;
pub mod partition;
pub mod partition_key;
pub mod row;
pub mod row_map;
pub mod value_slab;

pub use cell::{Cell, DeletionTime, LivenessInfo, NO_DELETION_TIME};
pub use cell_map::CellMap;
pub use clustering::{ClusteringComparator, ClusteringKey, Slice};
pub use partition::{Partition, RangeTombstone};
pub use partition_key::{PartitionKey, TokenBound};
pub use row::{CellPath, ReadStats, Row};
pub use row_map::RowMap;
