//! Membership and failure detection (docs/design/cluster.md, section 5):
//! which nodes exist, what each says about itself, and which are UP.
//!
//! So far the pure parts, each testable without a network: [`keys`]
//! (gossip keys and statuses), [`codec`] (the GOSSIP payload), [`state`]
//! (versions, digests, deltas), [`detector`] (phi), [`liveness`] (the
//! UP / DOWN rules), [`round`] (whom to gossip with), [`generation`] (the
//! generation file), [`live_set`] (what will be published) and
//! [`config`].

pub mod codec;
pub mod config;
pub mod detector;
pub mod generation;
pub mod keys;
pub mod live_set;
pub mod liveness;
pub mod round;
pub mod state;

pub use codec::GossipMessage;
pub use config::{MembershipConfig, MembershipError};
pub use generation::{next_generation, GenerationError};
pub use keys::{GossipKey, Status};
pub use live_set::{Change, DownReason, LivePeer, LiveSet, PeerState, Transition};
pub use state::VersionedValue;
