//! Query tracing: a request sent with the protocol's tracing flag records
//! the steps it takes, with their times, into `system_traces.sessions`
//! and `system_traces.events`, as Cassandra does (docs/design/tracing.md).
//!
//! The recording itself ([`Session`], [`event`], [`run`]) lives in
//! `varve_types::trace`, so storage and the cluster record their steps
//! too; this module adds the keyspace's definition ([`schema`]), how a
//! request is described ([`request`]) and the writing of a finished
//! session (`Processor::store_trace`).

pub mod request;
pub mod schema;
pub(crate) mod store;

use std::collections::BTreeMap;

pub use store::TRACE_TTL_SECONDS;
pub use varve_types::trace::{event, is_tracing, run, Event, Session, MAX_EVENTS_PER_SESSION};

/// What the session row says of the request (Cassandra's `request` and
/// `parameters` columns).
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// "Execute CQL3 query", "Execute CQL3 prepared query", ...
    pub kind: &'static str,
    pub parameters: BTreeMap<String, String>,
}
