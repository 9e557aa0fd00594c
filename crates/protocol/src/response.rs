//! Server responses (spec section 4.2): encoding for the server, decoding
//! for tests and a future internal client.
//!
//! [`encode_frame`] writes a whole envelope: the optional tracing id, the
//! warnings (flag 0x08, a `[string list]` before the message), then the
//! message; in v4 with LZ4 negotiated, the body is compressed. The caller
//! passes `Compression::None` until STARTUP has been processed; READY is
//! never compressed (an uncompressed frame is always legal, and not every
//! driver expects the very reply to STARTUP to be compressed). v5 frames
//! are never compressed here: the segment layer does that.

use bytes::Bytes;

use crate::compress::{compress_v4_body, frame_body, Compression};
use crate::error::{ProtocolError, Result};
use crate::error_code::ErrorBody;
use crate::event::Event;
use crate::frame::{flags, opcode, Frame, FrameHeader, HEADER_LEN};
use crate::primitives::{
    put_bytes, put_string, put_string_list, put_string_multimap, BytesMap, Reader,
};
use crate::result::ResultBody;
use crate::spliced::{spliced_len, Spliced};

/// A server response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Response {
    Error(ErrorBody),
    Ready,
    /// The authenticator class name.
    Authenticate(String),
    /// STARTUP options and their allowed values.
    Supported(Vec<(String, Vec<String>)>),
    Result(ResultBody),
    Event(Event),
    AuthChallenge(Option<Bytes>),
    AuthSuccess(Option<Bytes>),
}

/// A response with what its frame carried besides the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodedResponse {
    pub response: Response,
    pub tracing_id: Option<[u8; 16]>,
    pub warnings: Vec<String>,
    pub custom_payload: Option<BytesMap>,
}

impl Response {
    /// The opcode of this response.
    pub fn opcode(&self) -> u8 {
        match self {
            Response::Error(_) => opcode::ERROR,
            Response::Ready => opcode::READY,
            Response::Authenticate(_) => opcode::AUTHENTICATE,
            Response::Supported(_) => opcode::SUPPORTED,
            Response::Result(_) => opcode::RESULT,
            Response::Event(_) => opcode::EVENT,
            Response::AuthChallenge(_) => opcode::AUTH_CHALLENGE,
            Response::AuthSuccess(_) => opcode::AUTH_SUCCESS,
        }
    }

    /// About how many bytes the encoded frame takes: exact for the values
    /// of rows (the bulk of a large response), a small allowance for the
    /// rest. Encoders reserve it so that a large result is not copied
    /// again each time the buffer grows.
    pub fn encoded_len_hint(&self) -> usize {
        const ALLOWANCE: usize = 256;
        match self {
            Response::Result(ResultBody::Rows(rows)) => {
                let values: usize = rows
                    .rows
                    .iter()
                    .flatten()
                    .map(|v| 4 + v.as_ref().map_or(0, |v| v.len()))
                    .sum();
                ALLOWANCE + values
            }
            _ => ALLOWANCE,
        }
    }

    /// Appends the message body for `version` to `out`.
    pub fn encode_into(&self, version: u8, out: &mut Vec<u8>) {
        self.encode_spliced(version, out, None);
    }

    /// [`Response::encode_into`], with the long values of rows recorded in
    /// `splices` (when given) rather than copied (see [`crate::spliced`]).
    fn encode_spliced(
        &self,
        version: u8,
        out: &mut Vec<u8>,
        splices: Option<&mut Vec<(usize, Bytes)>>,
    ) {
        match self {
            Response::Error(e) => e.encode(version, out),
            Response::Ready => {}
            Response::Authenticate(class) => put_string(out, class),
            Response::Supported(options) => put_string_multimap(out, options),
            Response::Result(r) => r.encode_spliced(version, out, splices),
            Response::Event(e) => e.encode(version, out),
            Response::AuthChallenge(t) | Response::AuthSuccess(t) => put_bytes(out, t.as_deref()),
        }
    }

    /// Decodes a plain message body (no tracing id, warnings or payload).
    /// A truncated body is `Invalid`, never `Incomplete`.
    pub fn decode(header: &FrameHeader, body: &[u8]) -> Result<Response> {
        Response::decode_inner(header, body).map_err(|e| e.truncated("response"))
    }

    fn decode_inner(header: &FrameHeader, body: &[u8]) -> Result<Response> {
        if !header.is_response {
            return Err(ProtocolError::invalid(
                "a request frame was sent to the client",
            ));
        }
        let version = header.version;
        let mut r = Reader::new(body);
        let r = &mut r;
        let resp = match header.opcode {
            opcode::ERROR => Response::Error(ErrorBody::decode(version, r)?),
            opcode::READY => Response::Ready,
            opcode::AUTHENTICATE => Response::Authenticate(r.read_string()?),
            opcode::SUPPORTED => Response::Supported(r.read_string_multimap()?),
            opcode::RESULT => Response::Result(ResultBody::decode(version, r)?),
            opcode::EVENT => Response::Event(Event::decode(r)?),
            opcode::AUTH_CHALLENGE => Response::AuthChallenge(r.read_bytes()?),
            opcode::AUTH_SUCCESS => Response::AuthSuccess(r.read_bytes()?),
            other => {
                return Err(ProtocolError::UnknownOpcode {
                    stream: header.stream,
                    opcode: other,
                })
            }
        };
        Ok(resp)
    }
}

/// A whole response frame: see the module doc.
pub fn encode_frame(
    version: u8,
    stream: i16,
    warnings: &[String],
    response: &Response,
    compression: Compression,
) -> Vec<u8> {
    encode_frame_traced(version, stream, None, warnings, response, compression)
}

/// [`encode_frame`] with an optional tracing id (flag 0x02).
pub fn encode_frame_traced(
    version: u8,
    stream: i16,
    tracing_id: Option<[u8; 16]>,
    warnings: &[String],
    response: &Response,
    compression: Compression,
) -> Vec<u8> {
    let mut out = Vec::new();
    let envelope = Envelope {
        version,
        stream,
        tracing_id,
        warnings,
    };
    encode_frame_into(&mut out, &envelope, response, compression);
    out
}

/// What a response frame carries besides its message.
#[derive(Debug, Clone, Copy)]
pub struct Envelope<'a> {
    pub version: u8,
    pub stream: i16,
    pub tracing_id: Option<[u8; 16]>,
    pub warnings: &'a [String],
}

/// Appends a whole response frame to `out`. The message is encoded in
/// place after a header whose body length is filled in at the end, so a
/// large result is copied once, into `out`.
pub fn encode_frame_into(
    out: &mut Vec<u8>,
    envelope: &Envelope<'_>,
    response: &Response,
    compression: Compression,
) {
    out.reserve(response.encoded_len_hint());
    encode_frame_with(out, None, envelope, response, compression);
}

/// Appends a whole uncompressed response frame to `out`, its long values
/// left in their own buffers (see [`crate::spliced`]): for a connection
/// without compression and, in v5, before the switch to segments.
pub fn encode_frame_spliced(out: &mut Spliced, envelope: &Envelope<'_>, response: &Response) {
    encode_frame_with(
        &mut out.bytes,
        Some(&mut out.values),
        envelope,
        response,
        Compression::None,
    );
}

fn encode_frame_with(
    out: &mut Vec<u8>,
    mut splices: Option<&mut Vec<(usize, Bytes)>>,
    envelope: &Envelope<'_>,
    response: &Response,
    compression: Compression,
) {
    let start = out.len();
    let spliced_before = splices.as_ref().map_or(0, |s| s.len());
    out.extend_from_slice(&[0; HEADER_LEN]);
    let mut frame_flags = 0u8;
    if let Some(id) = envelope.tracing_id {
        frame_flags |= flags::TRACING;
        out.extend_from_slice(&id);
    }
    // Warnings came in v4; Cassandra drops them for older clients.
    if !envelope.warnings.is_empty() && envelope.version >= 4 {
        frame_flags |= flags::WARNING;
        put_string_list(out, envelope.warnings);
    }
    response.encode_spliced(envelope.version, out, splices.as_deref_mut());
    let body_start = start + HEADER_LEN;
    if envelope.version < 5
        && compression == Compression::Lz4
        && !matches!(response, Response::Ready)
    {
        debug_assert!(splices.is_none(), "a compressed body is never spliced");
        frame_flags |= flags::COMPRESSION;
        let compressed = compress_v4_body(&out[body_start..]);
        out.truncate(body_start);
        out.extend_from_slice(&compressed);
    }
    let body_len = out.len() - body_start + spliced_len(&splices, spliced_before);
    let header = FrameHeader {
        version: envelope.version,
        is_response: true,
        flags: frame_flags,
        stream: envelope.stream,
        opcode: response.opcode(),
        body_len: u32::try_from(body_len).unwrap_or(u32::MAX),
    };
    out[start..body_start].copy_from_slice(&header.encode());
}

/// Decodes the response in `frame`, handling compression, tracing id,
/// warnings and custom payload as its flags say.
pub fn decode_response(frame: &Frame, compression: Compression) -> Result<DecodedResponse> {
    let header = &frame.header;
    let body = frame_body(header, &frame.body, compression)?;
    let mut r = Reader::new(&body);
    let prefix = |r: &mut Reader<'_>| -> Result<_> {
        let tracing_id = if header.has_flag(flags::TRACING) {
            Some(r.read_uuid()?)
        } else {
            None
        };
        let warnings = if header.has_flag(flags::WARNING) {
            r.read_string_list()?
        } else {
            Vec::new()
        };
        let custom_payload = if header.has_flag(flags::CUSTOM_PAYLOAD) {
            Some(r.read_bytes_map()?)
        } else {
            None
        };
        Ok((tracing_id, warnings, custom_payload))
    };
    let (tracing_id, warnings, custom_payload) =
        prefix(&mut r).map_err(|e| e.truncated("response prefix"))?;
    let response = Response::decode(header, r.rest())?;
    Ok(DecodedResponse {
        response,
        tracing_id,
        warnings,
        custom_payload,
    })
}

#[cfg(test)]
#[path = "response_tests.rs"]
pub(crate) mod tests;
