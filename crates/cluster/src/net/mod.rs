//! Internode messaging (docs/design/cluster.md, section 4; the wire format
//! is docs/format/internode.md).
//!
//! The codec is pure and fuzzed: [`frame`] (header, CRCs, the
//! Incomplete / Invalid / Frame decoder), [`verb`], [`failure`] (the
//! failure body), [`handshake`] (HELLO, HELLO_ACK, HELLO_REJECT and the
//! acceptor's decision), [`wire`] (byte primitives) and [`limits`].
//!
//! The service is [`messaging::Messaging`]: [`connection`] (one
//! connection's reads, vectored writes and handshake), `peer` (a peer's
//! small and bulk connections, reconnection), [`queue`] (bounded queues),
//! `inbound` (accepting and dispatching), `shared` (the state they
//! share), [`handler`] and [`counters`]. It
//! reaches sockets, time and randomness through [`crate::env`] only, so a
//! simulation can run it.

pub mod connection;
pub mod counters;
pub mod failure;
pub mod frame;
pub mod fuzz;
pub mod handler;
pub mod handshake;
mod inbound;
pub mod limits;
mod log_limit;
pub mod messaging;
mod peer;
pub mod queue;
mod shared;
pub mod verb;
pub mod wire;

pub use counters::{Counters, DropReason};
pub use failure::{Failure, FailureReason};
pub use frame::{
    decode_frame, encode_frame, take_frame, Decoded, EncodedFrame, Frame, FrameHeader, FrameRules,
    InvalidReason,
};
pub use handler::{Handler, Reply, Request};
pub use handshake::{
    ClusterId, ConnectionKind, Hello, HelloAck, HelloReject, HostId, LocalIdentity, RejectReason,
};
pub use messaging::{
    Messaging, MessagingConfig, RequestError, Response, ResponseFuture, SendError,
};
pub use verb::{Flags, Verb};
