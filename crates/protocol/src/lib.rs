//! varve-protocol: the CQL native protocol, versions 3, 4 and 5, as a pure
//! codec. No I/O and no async runtime: callers hand in bytes and get
//! messages back, or hand in messages and get bytes.
//!
//! Layers, bottom up:
//! - [`primitives`]: the notations of the spec (`[int]`, `[string]`, ...).
//! - [`frame`]: the 9-byte envelope, version and size checks
//!   ([`decode_envelope`], [`EnvelopeDecoder`],
//!   [`encode_unsupported_version_error`]).
//! - [`compress`]: LZ4 as negotiated in STARTUP (v4 per frame).
//! - [`spliced`]: frames whose long values are sent from their own
//!   buffers by a vectored write.
//! - [`segment`] and [`assembler`]: v5 segments with CRC24/CRC32 (and LZ4
//!   per segment), and their reassembly into frames. Read the module doc of
//!   [`segment`] for when a v5 connection switches to segments.
//! - [`request`], [`response`], [`result`], [`event`], [`error_code`],
//!   [`types`]: the messages.
//!
//! Invariants: no input bytes can make a decoder panic, loop without
//! progress or allocate more than a small multiple of the input (see
//! [`fuzz_decode`]); every limit is a named constant. Wire format notes:
//! `docs/format/native-protocol.md`. This crate depends only on
//! `varve-types` inside the workspace.

pub mod assembler;
pub mod compress;
pub mod consistency;
pub mod error;
pub mod error_code;
pub mod event;
pub mod frame;
mod fuzz;
pub mod primitives;
pub mod query_params;
pub mod request;
pub mod response;
pub mod result;
pub mod sasl;
pub mod schema_change;
pub mod segment;
pub mod spliced;
pub mod types;

pub use assembler::FrameAssembler;
pub use compress::Compression;
pub use consistency::Consistency;
pub use error::{Checksum, ProtocolError, Result};
pub use error_code::{ErrorBody, ErrorCode, ErrorExtra, Failures};
pub use event::{Event, StatusChangeType, TopologyChangeType};
pub use frame::{
    body_too_large_error, decode_envelope, encode_unsupported_version_error, is_supported_version,
    supported_version_strings, unsupported_version_message, EnvelopeDecoder, Frame, FrameHeader,
    HEADER_LEN, MAX_FRAME_BODY_BYTES, MAX_VERSION, MIN_VERSION, SUPPORTED_VERSIONS,
};
pub use fuzz::fuzz_decode;
pub use primitives::BoundValue;
pub use query_params::QueryParams;
pub use request::{
    decode_request, encode_request_frame, BatchRequest, BatchStatement, DecodedRequest, QueryOrId,
    Request,
};
pub use response::{
    decode_response, encode_frame, encode_frame_into, encode_frame_spliced, encode_frame_traced,
    DecodedResponse, Envelope, Response,
};
pub use result::{ColumnSpec, Prepared, PreparedMetadata, ResultBody, ResultMetadata, Rows};
pub use schema_change::{SchemaChange, SchemaChangeTarget, SchemaChangeType};
pub use segment::{Segment, SegmentCodec, MAX_SEGMENT_PAYLOAD_BYTES};
pub use spliced::{Spliced, SPLICE_MIN_BYTES};

#[cfg(test)]
mod v3_tests;
