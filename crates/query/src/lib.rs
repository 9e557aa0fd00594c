//! Runs CQL statements: analysis of parsed statements against the schema,
//! reads and writes through a data path it defines ([`DataPath`]: the
//! node's own engine, [`LocalNode`], or later a cluster's coordinator),
//! schema changes through a [`schema_source::SchemaSource`], system tables,
//! prepared statements and paging. Statements are `async`; on one node they
//! finish on their first poll ([`run`]).
//!
//! This crate sees neither the network nor replicas: the server hands it
//! statement text or prepared ids with decoded options and turns its
//! [`Outcome`] into protocol messages. Errors carry their CQL meaning
//! ([`QueryError`]) so the server maps them to codes in one place.

pub mod admin;
pub mod admin_snapshots;
pub mod api;
mod arith;
pub mod auth;
pub mod batch_size;
mod cas;
pub mod cas_portable;
pub mod cluster_view;
mod clustering_slices;
mod collection_fns;
mod collections;
mod compact_writes;
mod compaction_config;
mod comparator;
mod consistency;
mod context;
pub mod data_path;
mod ddl;
pub mod describe;
mod dropped_cells;
mod dry_run;
pub mod error;
mod functions;
pub mod info;
mod insert_plan;
mod json;
pub mod local;
pub mod local_schema;
mod mask_fns;
mod memo;
pub mod metrics;
mod metrics_sync;
pub mod paging;
mod persist;
mod prepare;
pub mod processor;
mod read_lists;
mod request;
mod restrictions;
mod rows;
pub mod run;
pub mod schema_source;
mod select;
mod sum_avg;
mod system;
mod terms;
mod time_floor;
pub mod trace;
pub mod user_types;
mod vectors;
mod write;

pub use api::*;
pub use data_path::DataPath;
pub use error::{QueryError, Result};
pub use local::LocalNode;
pub use processor::Processor;
/// Lets a connection write the commitlog entries of a burst of requests
/// at once, before it answers them (see the storage crate).
pub use varve_storage::commitlog::DeferredWrites;
/// The adaptive compaction throttle's pieces (the server runs the loop).
pub use varve_storage::compaction::throttle;
/// Marks the running thread as one that may not wait on the disk: the
/// server's event loop runs statements inside one, and a statement that
/// needs the disk fails with [`QueryError::WouldBlock`] before it changed
/// anything (see the storage crate's `io_mode`).
pub use varve_storage::io_mode::NonBlocking;

/// The schema of a node with no keyspace of its own: the system keyspaces.
pub fn system_schema() -> varve_schema::Schema {
    system::initial_schema()
}
