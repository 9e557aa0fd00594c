//! The accepting side: the listener's loop, the handshake of every
//! inbound connection (nothing is processed before it succeeds), and the
//! dispatch of each frame to the request's handler or the waiting
//! request's callback.
//!
//! An invalid frame closes its connection and is counted; the node and
//! its other connections are unaffected. An unknown verb is not a framing
//! error: a request gets a FAILURE response UNKNOWN_VERB, a one-way frame
//! is dropped and counted.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tracing::{debug, info, warn};

use super::connection::{
    handshake_inbound, handshake_inbound_checked, AcceptError, Accepted, FrameReader, ReadError,
};
use super::counters::DropReason;
use super::failure::{Failure, FailureReason};
use super::frame::{Frame, FRAME_HEADER_BYTES, FRAME_TRAILER_BYTES};
use super::handler::{Reply, Request};
use super::handshake::{Hello, HelloReject, RejectReason};
use super::shared::{Origin, Shared};
use super::verb::Flags;
use crate::env::tls::PerPeerTls;
use crate::env::{timeout, BoxStream, Listener};

/// Accepts connections until shutdown, then closes every one it opened.
pub async fn accept_loop(shared: Arc<Shared>, listener: Box<dyn Listener>) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            biased;
            () = shared.until_shutdown() => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept() => match accepted {
                Ok((stream, remote)) => {
                    connections.spawn(serve(shared.clone(), stream, remote));
                }
                Err(error) => {
                    // Out of descriptors, usually: wait rather than spin.
                    warn!("internode accept failed: {error}");
                    shared.env.clock.sleep(Duration::from_millis(50)).await;
                }
            },
        }
    }
    drop(listener);
    connections.shutdown().await;
}

/// One inbound connection: the handshake, then frames until it closes.
async fn serve(shared: Arc<Shared>, stream: BoxStream, remote: SocketAddr) {
    let handshake = handshake(&shared, stream);
    let accepted = tokio::select! {
        biased;
        () = shared.until_shutdown() => return,
        accepted = timeout(&*shared.env.clock, shared.config.handshake_timeout, handshake) => accepted,
    };
    let (mut stream, accepted) = match accepted {
        Ok(Ok(accepted)) => accepted,
        Ok(Err(error)) => return refused(&shared, remote, error),
        Err(_) => {
            shared.counters.count_handshake_timeout();
            return log_once(&shared, remote, "no HELLO within the handshake timeout");
        }
    };
    let origin = Origin {
        addr: accepted.hello.address,
        host_id: accepted.hello.host_id,
        generation: accepted.hello.generation,
    };
    debug!(%remote, from = %origin.addr, kind = ?accepted.hello.kind, "internode connection accepted");
    let budget = shared.inbound_budget(origin.addr);
    let mut reader: FrameReader = accepted.reader;
    loop {
        let next = tokio::select! {
            biased;
            () = shared.until_shutdown() => return,
            next = reader.next(&mut stream) => next,
        };
        match next {
            Ok(frame) => dispatch(&shared, origin, frame, &budget).await,
            Err(error) => return closed(&shared, remote, error),
        }
    }
}

/// With per-peer TLS, the TLS handshake when the connection starts with
/// one; then the internode handshake, which refuses a clear-text HELLO
/// from a peer that must use TLS.
async fn handshake(
    shared: &Shared,
    stream: BoxStream,
) -> Result<(BoxStream, Accepted), AcceptError> {
    let closing = shared.is_closing();
    let Some(tls) = &shared.config.per_peer_tls else {
        let mut stream = stream;
        let accepted = handshake_inbound(&mut stream, &shared.identity, closing).await?;
        return Ok((stream, accepted));
    };
    let (mut stream, encrypted) = tls.accept(stream).await?;
    let refuse = |hello: &Hello| (!encrypted).then(|| plain_refused(tls, hello)).flatten();
    let accepted =
        handshake_inbound_checked(&mut stream, &shared.identity, closing, refuse).await?;
    info!(from = %accepted.hello.address, kind = ?accepted.hello.kind, tls = encrypted, "internode connection accepted");
    Ok((stream, accepted))
}

/// The refusal of a clear-text HELLO from a peer that must use TLS.
fn plain_refused(tls: &PerPeerTls, hello: &Hello) -> Option<HelloReject> {
    tls.must_encrypt(hello.address).then(|| {
        HelloReject::new(
            RejectReason::ENCRYPTION_REQUIRED,
            format!(
                "internode_encryption: {}: this node takes connections from {} in TLS only",
                tls.mode(),
                hello.address
            ),
        )
    })
}

/// Counts and logs a handshake that failed.
fn refused(shared: &Shared, remote: SocketAddr, error: AcceptError) {
    match error {
        AcceptError::Rejected(reject) => {
            shared.counters.count_rejected(reject.reason);
            let what = format!("HELLO refused ({:?}): {}", reject.reason, reject.message);
            log_once(shared, remote, &what);
        }
        AcceptError::Read(ReadError::Io(error)) | AcceptError::Io(error)
            if error.kind() == std::io::ErrorKind::InvalidData =>
        {
            // With internode TLS (crate::env::tls), a refused handshake:
            // an untrusted certificate, or a peer speaking clear text.
            log_once(shared, remote, &format!("TLS handshake failed: {error}"));
        }
        AcceptError::Read(read) => closed(shared, remote, read),
        AcceptError::Io(error) => debug!(%remote, "internode handshake failed: {error}"),
    }
}

/// Counts and logs why a connection stopped.
fn closed(shared: &Shared, remote: SocketAddr, error: ReadError) {
    match &error {
        ReadError::Invalid(reason) => {
            shared.counters.count_invalid(*reason);
            log_once(shared, remote, &format!("closing the connection: {error}"));
        }
        ReadError::Closed { mid_frame: true } => {
            shared.counters.count_closed_mid_frame();
        }
        ReadError::Closed { mid_frame: false } | ReadError::Io(_) => {
            debug!(%remote, "internode connection closed: {error}");
        }
    }
}

fn log_once(shared: &Shared, remote: SocketAddr, what: &str) {
    if shared
        .log_limiter
        .allow(remote.ip(), shared.env.clock.now())
    {
        warn!(%remote, "internode: {what}");
    }
}

/// Hands a frame to its callback or handler.
async fn dispatch(shared: &Arc<Shared>, origin: Origin, frame: Frame, budget: &Arc<Semaphore>) {
    let header = frame.header;
    if header.verb.is_response() {
        return shared.complete(origin, frame);
    }
    let one_way = header.flags.contains(Flags::ONE_WAY);
    let now = shared.env.clock.now();
    let deadline = (!one_way).then(|| now + Duration::from_millis(u64::from(header.timeout_ms)));
    let Some(handler) = shared.handler(header.verb) else {
        shared.counters.count_unknown_verb();
        if one_way {
            shared
                .counters
                .count_dropped(header.verb, DropReason::Unhandled, 1);
        } else {
            let failure = Failure::new(
                FailureReason::UNKNOWN_VERB,
                format!("no handler for {}", header.verb),
            );
            shared.reply(origin.addr, &header, Err(failure), deadline);
        }
        return;
    };
    // Frames read but not handled are bounded per peer: waiting here stops
    // reading this connection, and TCP pushes back on the sender.
    let bytes = FRAME_HEADER_BYTES + frame.payload.len() + FRAME_TRAILER_BYTES;
    let permits = u32::try_from(bytes).unwrap_or(u32::MAX);
    let Ok(permit) = budget.clone().acquire_many_owned(permits).await else {
        return;
    };
    let request = Request {
        from: origin.addr,
        from_host: origin.host_id,
        header,
        payload: frame.payload,
        deadline,
    };
    let shared = shared.clone();
    tokio::spawn(async move {
        let _permit = permit;
        if let Some(deadline) = deadline {
            if shared.env.clock.now() >= deadline {
                shared
                    .counters
                    .count_dropped(header.verb, DropReason::Expired, 1);
                return;
            }
        }
        let reply: Option<Reply> = handler.handle(request).await;
        if let (Some(reply), false) = (reply, one_way) {
            shared.reply(origin.addr, &header, reply, deadline);
        }
    });
}
