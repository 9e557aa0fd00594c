//! Moving a token range's data to a node that gains it
//! (docs/design/topology.md, sections 3 and 4).
//!
//! [`plan`] decides, from the ring as the metadata gives it, which ranges
//! a joining node must fetch and from which replica (a pure function);
//! [`pull`] fetches one range from its source: the source's sstables that
//! lie wholly inside it as whole files ([`file_fetch`], served by
//! [`file_source`]), the rest with STREAM_PULL pages applied to this
//! node's storage engine; [`push`] sends one the other way (offering the
//! whole files, [`offer`]); [`bootstrap`], [`decommission`] and
//! [`removenode`] run them over every table and report what they moved.

pub mod bootstrap;
pub mod decommission;
pub mod file_fetch;
pub mod file_source;
pub mod group;
pub mod offer;
pub mod pace;
pub mod plan;
pub mod progress;
pub mod pull;
pub mod push;
pub mod removenode;

pub use bootstrap::{bootstrap, BootstrapReport, StreamTable};
pub use decommission::decommission;
pub use file_fetch::{FileOrigin, WholeFiles};
pub use file_source::FileSource;
pub use plan::{ranges_to_fetch, ranges_to_give, RangeSource};
pub use progress::{Stream, Streams};
pub use pull::{PullStats, Puller, STREAM_THROUGHPUT_OUTBOUND_MIB};
