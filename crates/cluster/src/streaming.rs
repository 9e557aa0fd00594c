//! Moving a token range's data to a node that gains it
//! (docs/design/topology.md, sections 3 and 4).
//!
//! [`plan`] decides, from the ring as the metadata gives it, which ranges
//! a joining node must fetch and from which replica (a pure function);
//! [`pull`] fetches one range from its source with STREAM_PULL pages and
//! applies each page to this node's storage engine; [`bootstrap`] runs
//! both over every table and reports what it moved.

pub mod bootstrap;
pub mod plan;
pub mod pull;

pub use bootstrap::{bootstrap, BootstrapReport, StreamTable};
pub use plan::{ranges_to_fetch, RangeSource};
pub use pull::{PullStats, Puller, STREAM_THROUGHPUT_OUTBOUND_MIB};
