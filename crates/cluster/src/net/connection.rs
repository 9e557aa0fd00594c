//! The I/O of one connection: reading frames as bytes arrive, writing a
//! batch of frames with vectored writes, and the two sides of the
//! handshake. Knows nothing of peers, queues or handlers.

use std::io::{self, IoSlice};

use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::time::Instant;

use super::frame::{
    encode_frame, take_frame, Frame, FrameHeader, FrameRules, InvalidReason, FRAME_HEADER_BYTES,
};
use super::handshake::{
    accept_hello, check_answer, AnswerError, ConnectionKind, Hello, HelloAck, HelloReject,
    LocalIdentity,
};
use super::limits::READ_CHUNK_BYTES;
use super::queue::Outbound;
use super::verb::{Flags, Verb};

/// Why a connection stopped yielding frames.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("invalid frame: {0}")]
    Invalid(InvalidReason),
    #[error("closed by the peer{}", if *.mid_frame { " in the middle of a frame" } else { "" })]
    Closed { mid_frame: bool },
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// Reads frames off a stream. The buffer grows by [`READ_CHUNK_BYTES`] as
/// bytes arrive, never by a length the peer announced.
#[derive(Debug)]
pub struct FrameReader {
    buf: BytesMut,
    rules: FrameRules,
}

impl FrameReader {
    pub fn new(rules: FrameRules) -> FrameReader {
        FrameReader {
            buf: BytesMut::new(),
            rules,
        }
    }

    /// From the next frame on, decode under `rules` (bytes already read
    /// stay).
    pub fn set_rules(&mut self, rules: FrameRules) {
        self.rules = rules;
    }

    /// The next whole frame.
    pub async fn next<R>(&mut self, stream: &mut R) -> Result<Frame, ReadError>
    where
        R: AsyncRead + Unpin + ?Sized,
    {
        loop {
            match take_frame(&mut self.buf, &self.rules) {
                Ok(Some(frame)) => return Ok(frame),
                Ok(None) => {}
                Err(reason) => return Err(ReadError::Invalid(reason)),
            }
            if self.buf.capacity() - self.buf.len() < READ_CHUNK_BYTES / 4 {
                self.buf.reserve(READ_CHUNK_BYTES);
            }
            if stream.read_buf(&mut self.buf).await? == 0 {
                return Err(ReadError::Closed {
                    mid_frame: !self.buf.is_empty(),
                });
            }
        }
    }
}

/// The header a queued frame is written with: the connection's version
/// and, for a request, the whole milliseconds left until its deadline
/// (rounded up, so a live request never says 0).
fn header_to_write(frame: &Outbound, version: u8, now: Instant) -> FrameHeader {
    let mut header = frame.header;
    header.version = version;
    let request = !header.verb.is_response() && !header.flags.contains(Flags::ONE_WAY);
    header.timeout_ms = if request {
        let left = frame.deadline.saturating_duration_since(now);
        let ms = left.as_micros().div_ceil(1000).max(1);
        u32::try_from(ms).unwrap_or(u32::MAX)
    } else {
        0
    };
    header
}

/// Writes `batch` in as few vectored writes as the stream takes.
pub async fn write_batch<W>(
    stream: &mut W,
    batch: &[Outbound],
    version: u8,
    now: Instant,
) -> io::Result<()>
where
    W: AsyncWrite + Unpin + ?Sized,
{
    // Outbound::new checked every payload against the frame limit, which
    // fits a u32.
    let heads: Vec<[u8; FRAME_HEADER_BYTES]> = batch
        .iter()
        .map(|f| header_to_write(f, version, now).encode(f.payload.len() as u32))
        .collect();
    let trailers: Vec<[u8; 4]> = batch.iter().map(|f| f.payload_crc.to_be_bytes()).collect();
    let mut pieces: Vec<&[u8]> = Vec::with_capacity(batch.len() * 3);
    for ((head, frame), trailer) in heads.iter().zip(batch).zip(&trailers) {
        pieces.push(head);
        pieces.push(&frame.payload);
        pieces.push(trailer);
    }
    write_all_vectored(stream, &pieces).await?;
    stream.flush().await
}

/// Writes every piece, resuming after partial writes.
async fn write_all_vectored<W>(stream: &mut W, pieces: &[&[u8]]) -> io::Result<()>
where
    W: AsyncWrite + Unpin + ?Sized,
{
    let mut index = 0;
    let mut offset = 0;
    loop {
        while index < pieces.len() && offset == pieces[index].len() {
            index += 1;
            offset = 0;
        }
        let Some(first) = pieces.get(index) else {
            return Ok(());
        };
        let slices: Vec<IoSlice<'_>> = std::iter::once(&first[offset..])
            .chain(pieces[index + 1..].iter().copied())
            .filter(|p| !p.is_empty())
            .map(IoSlice::new)
            .collect();
        let mut written = stream.write_vectored(&slices).await?;
        if written == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        while written > 0 {
            let left = pieces[index].len() - offset;
            if written < left {
                offset += written;
                written = 0;
            } else {
                written -= left;
                index += 1;
                offset = 0;
            }
        }
    }
}

async fn write_handshake<W>(stream: &mut W, verb: Verb, payload: &[u8]) -> io::Result<()>
where
    W: AsyncWrite + Unpin + ?Sized,
{
    let bytes = encode_frame(&FrameHeader::handshake(verb), payload)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    stream.write_all(&bytes).await?;
    stream.flush().await
}

/// Why the connecting side's handshake failed.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("{0}")]
    Read(#[from] ReadError),
    #[error("{0}")]
    Answer(#[from] AnswerError),
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// The connecting side: sends HELLO and reads the answer.
pub async fn handshake_outbound<S>(
    stream: &mut S,
    local: &LocalIdentity,
    kind: ConnectionKind,
) -> Result<HelloAck, ConnectError>
where
    S: AsyncRead + AsyncWrite + Unpin + ?Sized,
{
    write_handshake(stream, Verb::HELLO, &local.hello(kind).encode()).await?;
    let mut reader = FrameReader::new(FrameRules::HANDSHAKE);
    let answer = reader.next(stream).await?;
    Ok(check_answer(local, &answer.header, &answer.payload)?)
}

/// Why the accepting side's handshake failed.
#[derive(Debug, thiserror::Error)]
pub enum AcceptError {
    #[error("{0}")]
    Read(#[from] ReadError),
    /// The HELLO was refused (and HELLO_REJECT sent, if the stream took it).
    #[error("rejected ({:?}): {}", .0.reason, .0.message)]
    Rejected(HelloReject),
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// A connection whose HELLO was accepted.
#[derive(Debug)]
pub struct Accepted {
    pub hello: Hello,
    pub version: u8,
    /// Reads the frames after the handshake, under its version's rules.
    pub reader: FrameReader,
}

/// The accepting side: reads HELLO, answers HELLO_ACK or HELLO_REJECT.
pub async fn handshake_inbound<S>(
    stream: &mut S,
    local: &LocalIdentity,
    shutting_down: bool,
) -> Result<Accepted, AcceptError>
where
    S: AsyncRead + AsyncWrite + Unpin + ?Sized,
{
    handshake_inbound_checked(stream, local, shutting_down, |_| None).await
}

/// [`handshake_inbound`], with `refuse` looking at a well-formed HELLO
/// before anything else is checked: a HELLO_REJECT it returns is the
/// answer (a clear-text connection that must be TLS learns nothing more,
/// not even whether its cluster name is right).
pub async fn handshake_inbound_checked<S>(
    stream: &mut S,
    local: &LocalIdentity,
    shutting_down: bool,
    refuse: impl FnOnce(&Hello) -> Option<HelloReject>,
) -> Result<Accepted, AcceptError>
where
    S: AsyncRead + AsyncWrite + Unpin + ?Sized,
{
    let mut reader = FrameReader::new(FrameRules::HANDSHAKE);
    let frame = reader.next(stream).await?;
    let is_hello = frame.header == FrameHeader::handshake(Verb::HELLO);
    let refused = is_hello
        .then(|| Hello::decode(&frame.payload).ok())
        .flatten()
        .and_then(|hello| refuse(&hello));
    let decided = match refused {
        Some(reject) => Err(reject),
        None => accept_hello(local, &frame.header, &frame.payload, shutting_down),
    };
    match decided {
        Ok((ack, hello)) => {
            write_handshake(stream, Verb::HELLO_ACK, &ack.encode()).await?;
            reader.set_rules(FrameRules::established(ack.version));
            Ok(Accepted {
                hello,
                version: ack.version,
                reader,
            })
        }
        Err(reject) => {
            // Best effort: the peer is told why; the caller counts the
            // refusal, then closes the stream.
            let _ = write_handshake(stream, Verb::HELLO_REJECT, &reject.encode()).await;
            Err(AcceptError::Rejected(reject))
        }
    }
}

#[cfg(test)]
mod tests;
