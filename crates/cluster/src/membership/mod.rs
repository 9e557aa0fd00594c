//! Membership and failure detection (docs/design/cluster.md, section 5):
//! which nodes exist, what each says about itself, and which are UP.
//!
//! So far: [`keys`] (gossip keys and statuses) and [`codec`] (the GOSSIP
//! payload).

pub mod codec;
pub mod keys;

pub use codec::GossipMessage;
pub use keys::{GossipKey, Status};
