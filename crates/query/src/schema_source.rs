//! The schema seam: where the query layer gets the schema and how a schema
//! change takes effect.
//!
//! Query computes a DDL statement's new schema from the current one and
//! hands it to [`SchemaSource::publish`]. On one node the change is saved
//! and applied to the node's tables at once
//! ([`crate::local_schema::LocalSchema`]); in a cluster it will go through
//! the replicated metadata log and return once this node applied it
//! (docs/design/cluster.md, sections 2.1 and 6). Either way, what storage
//! does about a change (creating, altering, dropping tables) is the
//! implementation's business, not query's.

use std::sync::Arc;

use varve_schema::Schema;

use crate::data_path::DataFuture;

/// The schema of a node, and how it changes.
pub trait SchemaSource: Send + Sync {
    /// The schema now.
    fn current(&self) -> Arc<Schema>;

    /// Makes `next` the schema, provided the current one is still `base`
    /// (another change would otherwise be lost: the answer is then an
    /// error and nothing changed). Done means durable and in effect: the
    /// tables `next` adds can be written, those it drops are gone.
    fn publish<'a>(&'a self, base: &'a Arc<Schema>, next: Schema) -> DataFuture<'a, ()>;

    /// Whether this source sends the SCHEMA_CHANGE events of every change
    /// itself (a cluster's: each node as it applies the change), so the
    /// server must not send them from a statement's outcome too.
    fn emits_events(&self) -> bool {
        false
    }
}
