//! What a verb's handler sees and answers.
//!
//! A handler gets the request (who sent it, its header, payload and
//! deadline) and answers with a response payload, a [`Failure`], or
//! nothing (no response: the sender times out). For a one-way frame the
//! answer is ignored. Handlers run on their own task, after the frame's
//! bytes were counted against the sender's inbound budget, and the budget
//! is given back when they finish.

use std::future::Future;
use std::net::SocketAddr;

use bytes::Bytes;
use tokio::time::Instant;

use super::failure::Failure;
use super::frame::FrameHeader;
use super::handshake::HostId;
use super::verb::Flags;
use crate::env::BoxFuture;

/// An inbound request or one-way frame.
#[derive(Debug, Clone)]
pub struct Request {
    /// Where the sender listens (from its HELLO).
    pub from: SocketAddr,
    pub from_host: HostId,
    pub header: FrameHeader,
    pub payload: Bytes,
    /// Arrival plus the request's `timeout_ms` on this node's clock; none
    /// for one-way frames.
    pub deadline: Option<Instant>,
}

impl Request {
    pub fn is_one_way(&self) -> bool {
        self.header.flags.contains(Flags::ONE_WAY)
    }
}

/// A handler's answer: a response payload or a failure.
pub type Reply = Result<Bytes, Failure>;

/// Handles the frames of one verb.
pub trait Handler: Send + Sync + 'static {
    fn handle(&self, request: Request) -> BoxFuture<'static, Option<Reply>>;
}

impl<F, Fut> Handler for F
where
    F: Fn(Request) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Option<Reply>> + Send + 'static,
{
    fn handle(&self, request: Request) -> BoxFuture<'static, Option<Reply>> {
        Box::pin(self(request))
    }
}

/// ECHO: an empty answer, so a peer knows this node is there and serving.
#[derive(Debug, Clone, Copy, Default)]
pub struct EchoHandler;

impl Handler for EchoHandler {
    fn handle(&self, _request: Request) -> BoxFuture<'static, Option<Reply>> {
        Box::pin(async { Some(Ok(Bytes::new())) })
    }
}
