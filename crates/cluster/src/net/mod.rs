//! Internode messaging (docs/design/cluster.md, section 4; the wire format
//! is docs/format/internode.md).
//!
//! The codec is pure and fuzzed: [`frame`] (header, CRCs, the
//! Incomplete / Invalid / Frame decoder), [`verb`], [`failure`] (the
//! failure body), [`handshake`] (HELLO, HELLO_ACK, HELLO_REJECT and the
//! acceptor's decision), [`wire`] (byte primitives) and [`limits`]. The
//! I/O side is reached through [`crate::env`] only, so a simulation can
//! run it.

pub mod failure;
pub mod frame;
pub mod fuzz;
pub mod handshake;
pub mod limits;
pub mod verb;
pub mod wire;

pub use failure::{Failure, FailureReason};
pub use frame::{
    decode_frame, encode_frame, take_frame, Decoded, EncodedFrame, Frame, FrameHeader, FrameRules,
    InvalidReason,
};
pub use handshake::{
    ClusterId, ConnectionKind, Hello, HelloAck, HelloReject, HostId, LocalIdentity, RejectReason,
};
pub use verb::{Flags, Verb};
