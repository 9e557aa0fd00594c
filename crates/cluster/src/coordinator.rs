//! The coordinator: what a node does with a client's read or write when
//! the data lives on several replicas (docs/design/cluster.md, section 8).
//!
//! Built so far: [`write_acks`], the counting of a write's answers at its
//! consistency level, as a pure state machine that the coordinator's
//! network code will drive.

pub mod write_acks;
