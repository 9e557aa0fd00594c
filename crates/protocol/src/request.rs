//! Client requests (spec section 4.1): decoding for the server, encoding
//! for tests and a future internal client.
//!
//! [`Request::decode`] takes a plain message body (decompressed, custom
//! payload removed); [`decode_request`] does that work from a whole frame.

use std::collections::HashMap;

use bytes::Bytes;

use crate::compress::{compress_v4_body, frame_body, Compression};
use crate::consistency::Consistency;
use crate::error::{ProtocolError, Result};
use crate::frame::{flags, opcode, Frame, FrameHeader, HEADER_LEN};
use crate::primitives::{
    put_bytes, put_bytes_map, put_consistency, put_long, put_long_string, put_short,
    put_short_bytes, put_string, put_string_list, put_string_map, put_u8, put_value, short_len,
    BoundValue, BytesMap, Reader,
};
use crate::query_params::{put_flags, query_flags, read_flags, QueryParams};

/// PREPARE flag (v5): a keyspace follows the query.
pub const PREPARE_WITH_KEYSPACE: u32 = 0x01;

/// A batch statement: query text or prepared id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueryOrId {
    Query(String),
    Id(Bytes),
}

/// One statement of a BATCH.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchStatement {
    pub query_or_id: QueryOrId,
    pub values: Vec<BoundValue>,
    /// Value names, when the batch sets the names flag.
    pub names: Option<Vec<String>>,
}

/// A BATCH request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchRequest {
    /// 0 logged, 1 unlogged, 2 counter.
    pub kind: u8,
    pub statements: Vec<BatchStatement>,
    pub consistency: Consistency,
    pub serial_consistency: Option<Consistency>,
    pub default_timestamp: Option<i64>,
    /// v5 only.
    pub keyspace: Option<String>,
    /// v5 only.
    pub now_in_seconds: Option<i32>,
}

/// Batch kinds.
pub mod batch_kind {
    pub const LOGGED: u8 = 0;
    pub const UNLOGGED: u8 = 1;
    pub const COUNTER: u8 = 2;
}

/// A client request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    Startup(HashMap<String, String>),
    Options,
    Query {
        query: String,
        params: QueryParams,
    },
    Prepare {
        query: String,
        keyspace: Option<String>,
    },
    Execute {
        id: Bytes,
        result_metadata_id: Option<Bytes>,
        params: QueryParams,
    },
    Batch(BatchRequest),
    Register(Vec<String>),
    AuthResponse(Option<Bytes>),
}

/// A request with what its frame said about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodedRequest {
    pub request: Request,
    /// The client asked for tracing.
    pub tracing: bool,
    /// The custom payload, when the flag was set.
    pub custom_payload: Option<BytesMap>,
}

impl Request {
    /// The opcode of this request.
    pub fn opcode(&self) -> u8 {
        match self {
            Request::Startup(_) => opcode::STARTUP,
            Request::Options => opcode::OPTIONS,
            Request::Query { .. } => opcode::QUERY,
            Request::Prepare { .. } => opcode::PREPARE,
            Request::Execute { .. } => opcode::EXECUTE,
            Request::Batch(_) => opcode::BATCH,
            Request::Register(_) => opcode::REGISTER,
            Request::AuthResponse(_) => opcode::AUTH_RESPONSE,
        }
    }

    /// A statement (QUERY, PREPARE, EXECUTE, BATCH), as opposed to the
    /// requests that set up the connection.
    pub fn is_statement(&self) -> bool {
        matches!(
            self,
            Request::Query { .. }
                | Request::Prepare { .. }
                | Request::Execute { .. }
                | Request::Batch(_)
        )
    }

    /// Decodes a plain request body (decompressed, custom payload removed).
    /// Fails on a response frame, an unknown opcode, a truncated body
    /// (`Invalid`, never `Incomplete`) or bad content. Trailing bytes are
    /// ignored, as the spec allows for future extensions.
    pub fn decode(header: &FrameHeader, body: &[u8]) -> Result<Request> {
        Request::decode_inner(header, body).map_err(|e| e.truncated("request"))
    }

    fn decode_inner(header: &FrameHeader, body: &[u8]) -> Result<Request> {
        if header.is_response {
            return Err(ProtocolError::invalid(
                "a response frame was sent to the server",
            ));
        }
        let version = header.version;
        let mut r = Reader::new(body);
        let r = &mut r;
        let req = match header.opcode {
            opcode::STARTUP => Request::Startup(r.read_string_map()?.into_iter().collect()),
            opcode::OPTIONS => Request::Options,
            opcode::QUERY => Request::Query {
                query: r.read_long_string()?,
                params: QueryParams::decode(version, r)?,
            },
            opcode::PREPARE => {
                let query = r.read_long_string()?;
                let keyspace = if version >= 5 && read_flags(r, 5)? & PREPARE_WITH_KEYSPACE != 0 {
                    Some(r.read_string()?)
                } else {
                    None
                };
                Request::Prepare { query, keyspace }
            }
            opcode::EXECUTE => {
                let id = r.read_short_bytes()?;
                let result_metadata_id = if version >= 5 {
                    Some(r.read_short_bytes()?)
                } else {
                    None
                };
                Request::Execute {
                    id,
                    result_metadata_id,
                    params: QueryParams::decode(version, r)?,
                }
            }
            opcode::BATCH => Request::Batch(decode_batch(version, r)?),
            opcode::REGISTER => Request::Register(r.read_string_list()?),
            opcode::AUTH_RESPONSE => Request::AuthResponse(r.read_bytes()?),
            other => {
                return Err(ProtocolError::UnknownOpcode {
                    stream: header.stream,
                    opcode: other,
                })
            }
        };
        Ok(req)
    }

    /// The body of this request in the layout of `version`.
    pub fn encode(&self, version: u8) -> Vec<u8> {
        let mut out = Vec::new();
        match self {
            Request::Startup(options) => {
                let mut pairs: Vec<(String, String)> = options
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                pairs.sort();
                put_string_map(&mut out, &pairs);
            }
            Request::Options => {}
            Request::Query { query, params } => {
                put_long_string(&mut out, query);
                params.encode(version, &mut out);
            }
            Request::Prepare { query, keyspace } => {
                put_long_string(&mut out, query);
                if version >= 5 {
                    put_flags(
                        &mut out,
                        5,
                        if keyspace.is_some() {
                            PREPARE_WITH_KEYSPACE
                        } else {
                            0
                        },
                    );
                    if let Some(k) = keyspace {
                        put_string(&mut out, k);
                    }
                }
            }
            Request::Execute {
                id,
                result_metadata_id,
                params,
            } => {
                put_short_bytes(&mut out, id);
                if version >= 5 {
                    put_short_bytes(&mut out, result_metadata_id.as_deref().unwrap_or(&[]));
                }
                params.encode(version, &mut out);
            }
            Request::Batch(b) => encode_batch(version, b, &mut out),
            Request::Register(events) => put_string_list(&mut out, events),
            Request::AuthResponse(token) => put_bytes(&mut out, token.as_deref()),
        }
        out
    }
}

fn decode_batch(version: u8, r: &mut Reader<'_>) -> Result<BatchRequest> {
    use query_flags as f;
    let kind = r.read_u8()?;
    if kind > batch_kind::COUNTER {
        return Err(ProtocolError::invalid(format!("invalid batch type {kind}")));
    }
    let n = r.read_short_count(3)?;
    let mut statements = Vec::new();
    for _ in 0..n {
        let query_or_id = match r.read_u8()? {
            0 => QueryOrId::Query(r.read_long_string()?),
            1 => QueryOrId::Id(r.read_short_bytes()?),
            k => {
                return Err(ProtocolError::invalid(format!(
                    "invalid batch statement kind {k}"
                )))
            }
        };
        let count = r.read_short_count(4)?;
        let values = (0..count)
            .map(|_| r.read_value(version))
            .collect::<Result<Vec<_>>>()?;
        statements.push(BatchStatement {
            query_or_id,
            values,
            names: None,
        });
    }
    let consistency = r.read_consistency()?;
    let flags = read_flags(r, version)?;
    if flags & f::NAMES_FOR_VALUES != 0 {
        // The names would have to precede values read above, before the
        // flags are known; Cassandra refuses this flag as well.
        return Err(ProtocolError::invalid(
            "names for values are not supported in BATCH",
        ));
    }
    let serial_consistency = if flags & f::SERIAL_CONSISTENCY != 0 {
        Some(r.read_consistency()?)
    } else {
        None
    };
    let default_timestamp = if flags & f::DEFAULT_TIMESTAMP != 0 {
        Some(r.read_long()?)
    } else {
        None
    };
    let keyspace = if version >= 5 && flags & f::KEYSPACE != 0 {
        Some(r.read_string()?)
    } else {
        None
    };
    let now_in_seconds = if version >= 5 && flags & f::NOW_IN_SECONDS != 0 {
        Some(r.read_int()?)
    } else {
        None
    };
    Ok(BatchRequest {
        kind,
        statements,
        consistency,
        serial_consistency,
        default_timestamp,
        keyspace,
        now_in_seconds,
    })
}

/// Writes a BATCH body. Statement `names` are written (with the names
/// flag) only when every statement has them; Varve's own decoder, like
/// Cassandra, refuses such batches.
fn encode_batch(version: u8, b: &BatchRequest, out: &mut Vec<u8>) {
    use query_flags as f;
    let with_names = !b.statements.is_empty() && b.statements.iter().all(|s| s.names.is_some());
    put_u8(out, b.kind);
    put_short(out, short_len(b.statements.len()));
    for s in &b.statements {
        match &s.query_or_id {
            QueryOrId::Query(q) => {
                put_u8(out, 0);
                put_long_string(out, q);
            }
            QueryOrId::Id(id) => {
                put_u8(out, 1);
                put_short_bytes(out, id);
            }
        }
        put_short(out, short_len(s.values.len()));
        for (i, v) in s.values.iter().enumerate() {
            if with_names {
                let name = s
                    .names
                    .as_ref()
                    .and_then(|n| n.get(i))
                    .map(String::as_str)
                    .unwrap_or("");
                put_string(out, name);
            }
            put_value(out, v);
        }
    }
    put_consistency(out, b.consistency);
    let v5 = version >= 5;
    let mut flags = 0;
    if b.serial_consistency.is_some() {
        flags |= f::SERIAL_CONSISTENCY;
    }
    if b.default_timestamp.is_some() {
        flags |= f::DEFAULT_TIMESTAMP;
    }
    if with_names {
        flags |= f::NAMES_FOR_VALUES;
    }
    if v5 && b.keyspace.is_some() {
        flags |= f::KEYSPACE;
    }
    if v5 && b.now_in_seconds.is_some() {
        flags |= f::NOW_IN_SECONDS;
    }
    put_flags(out, version, flags);
    if let Some(c) = b.serial_consistency {
        put_consistency(out, c);
    }
    if let Some(t) = b.default_timestamp {
        put_long(out, t);
    }
    if v5 {
        if let Some(k) = &b.keyspace {
            put_string(out, k);
        }
        if let Some(n) = b.now_in_seconds {
            crate::primitives::put_int(out, n);
        }
    }
}

/// Decodes the request in `frame`: decompresses (v4), strips the custom
/// payload when flagged, then decodes the message. `Incomplete` never
/// escapes: a short body is `Invalid`.
pub fn decode_request(frame: &Frame, compression: Compression) -> Result<DecodedRequest> {
    let header = &frame.header;
    let body = frame_body(header, &frame.body, compression)?;
    let mut r = Reader::new(&body);
    let custom_payload = if header.has_flag(flags::CUSTOM_PAYLOAD) {
        if header.version < 4 {
            return Err(ProtocolError::Refused(
                "Received frame with CUSTOM_PAYLOAD flag for native protocol version < 4".into(),
            ));
        }
        Some(
            r.read_bytes_map()
                .map_err(|e| e.truncated("custom payload"))?,
        )
    } else {
        None
    };
    let request = Request::decode(header, r.rest())?;
    Ok(DecodedRequest {
        request,
        tracing: header.has_flag(flags::TRACING),
        custom_payload,
    })
}

/// A whole request frame (for tests and clients). Compression applies to
/// v4 only and never to STARTUP or OPTIONS.
pub fn encode_request_frame(
    version: u8,
    stream: i16,
    request: &Request,
    custom_payload: Option<&BytesMap>,
    compression: Compression,
) -> Vec<u8> {
    let mut body = Vec::new();
    let mut frame_flags = 0u8;
    if let Some(p) = custom_payload {
        frame_flags |= flags::CUSTOM_PAYLOAD;
        put_bytes_map(&mut body, p);
    }
    body.extend_from_slice(&request.encode(version));
    let compress = version < 5
        && compression == Compression::Lz4
        && !matches!(request, Request::Startup(_) | Request::Options);
    if compress {
        frame_flags |= flags::COMPRESSION;
        body = compress_v4_body(&body);
    }
    let header = FrameHeader {
        version,
        is_response: false,
        flags: frame_flags,
        stream,
        opcode: request.opcode(),
        body_len: u32::try_from(body.len()).unwrap_or(u32::MAX),
    };
    let mut out = Vec::with_capacity(HEADER_LEN + body.len());
    out.extend_from_slice(&header.encode());
    out.extend_from_slice(&body);
    out
}

#[cfg(test)]
#[path = "request_tests.rs"]
pub(crate) mod tests;
