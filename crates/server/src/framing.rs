//! The byte layer of one connection: legacy envelopes until READY, then
//! (v5 only) segments with CRCs; LZ4 as STARTUP asked (v4 per frame body,
//! v5 per segment).
//!
//! Errors say whether the connection can go on. Following Cassandra:
//! - an unsupported version is fatal (reply, then close);
//! - an oversized frame is not: its bytes are skipped and an `Invalid`
//!   error answers its stream;
//! - a v5 segment with a bad CRC, a bad LZ4 block or a broken run of
//!   segments is fatal: the stream cannot be resynchronised.

use std::collections::VecDeque;

use bytes::BytesMut;
use varve_protocol::{
    encode_frame_into, encode_frame_spliced, Compression, Envelope, EnvelopeDecoder, Frame,
    FrameAssembler, ProtocolError, Response, SegmentCodec, Spliced,
};

/// A decode error and whether the connection must close after replying.
#[derive(Debug)]
pub struct FramingError {
    pub error: ProtocolError,
    pub fatal: bool,
}

impl FramingError {
    fn classify(error: ProtocolError, in_segments: bool) -> Self {
        let fatal = match &error {
            ProtocolError::BodyTooLarge { .. } => false,
            ProtocolError::UnsupportedVersion { .. } => true,
            _ => in_segments,
        };
        FramingError { error, fatal }
    }
}

enum Decoder {
    Envelope(EnvelopeDecoder),
    Segments {
        codec: SegmentCodec,
        assembler: FrameAssembler,
        ready: VecDeque<Frame>,
    },
}

/// Turns received bytes into frames.
pub struct Inbound {
    decoder: Decoder,
    max_body: usize,
}

impl Inbound {
    /// Legacy framing with the given body limit.
    pub fn new(max_body: usize) -> Self {
        Inbound {
            decoder: Decoder::Envelope(EnvelopeDecoder::new(max_body)),
            max_body,
        }
    }

    /// Switches to v5 segments; bytes already buffered are read as segments.
    pub fn switch_to_segments(&mut self, compression: Compression) {
        self.decoder = Decoder::Segments {
            codec: SegmentCodec::new(compression),
            assembler: FrameAssembler::new(self.max_body),
            ready: VecDeque::new(),
        };
    }

    /// The next whole frame in `buf`, `Ok(None)` when more bytes are needed.
    pub fn next_frame(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, FramingError> {
        match &mut self.decoder {
            Decoder::Envelope(d) => d.decode(buf).map_err(|e| FramingError::classify(e, false)),
            Decoder::Segments {
                codec,
                assembler,
                ready,
            } => loop {
                if let Some(frame) = ready.pop_front() {
                    return Ok(Some(frame));
                }
                let Some(segment) = codec
                    .decode(buf)
                    .map_err(|e| FramingError::classify(e, true))?
                else {
                    return Ok(None);
                };
                let frames = assembler
                    .push(segment)
                    .map_err(|e| FramingError::classify(e, true))?;
                ready.extend(frames);
            },
        }
    }
}

/// What the writer sends next.
#[derive(Debug)]
pub enum Outgoing {
    /// A response (or an EVENT, on stream -1).
    Response {
        version: u8,
        stream: i16,
        /// The trace session of a traced request (flag 0x02).
        tracing_id: Option<[u8; 16]>,
        warnings: Vec<String>,
        response: Box<Response>,
    },
    /// Bytes already framed as an envelope (the unsupported-version reply).
    Raw(Vec<u8>),
    /// STARTUP succeeded: compress from now on; `segments` for v5.
    Negotiated {
        compression: Compression,
        segments: bool,
    },
}

/// Turns responses into bytes for the socket.
#[derive(Debug, Default)]
pub struct Outbound {
    compression: Compression,
    segments: Option<SegmentCodec>,
}

impl Outbound {
    /// Applies a negotiation message; returns false for other messages.
    pub fn apply(&mut self, out: &Outgoing) -> bool {
        match out {
            Outgoing::Negotiated {
                compression,
                segments,
            } => {
                self.compression = *compression;
                self.segments = segments.then(|| SegmentCodec::new(*compression));
                true
            }
            _ => false,
        }
    }

    /// Encodes a run of messages, in order, to socket bytes. Without
    /// compression or segments, frames are encoded with their long values
    /// left in their own buffers ([`Spliced`], for one vectored write);
    /// otherwise into one buffer (v4 with LZ4), or into one scratch buffer
    /// that the segment layer then packs (v5).
    pub fn encode(&mut self, batch: Vec<Outgoing>) -> Spliced {
        let mut out = Spliced::default();
        let mut pending = PendingFrames::default();
        if !self.splices() {
            // One allocation for the batch, not a copy at each doubling.
            let hint: usize = batch
                .iter()
                .map(|item| match item {
                    Outgoing::Response { response, .. } => response.encoded_len_hint(),
                    Outgoing::Raw(bytes) => bytes.len(),
                    Outgoing::Negotiated { .. } => 0,
                })
                .sum();
            match self.segments {
                Some(_) => pending.bytes.reserve(hint),
                None => out.bytes.reserve(hint),
            }
        }
        for item in batch {
            if let Outgoing::Negotiated { .. } = item {
                // Everything before the switch goes out in the old framing.
                self.pack(&mut out.bytes, &mut pending);
                self.apply(&item);
                continue;
            }
            match item {
                Outgoing::Raw(bytes) => match self.segments {
                    Some(_) => pending.bytes.extend_from_slice(&bytes),
                    None => out.bytes.extend_from_slice(&bytes),
                },
                Outgoing::Response {
                    version,
                    stream,
                    tracing_id,
                    warnings,
                    response,
                } => {
                    let envelope = Envelope {
                        version,
                        stream,
                        tracing_id,
                        warnings: &warnings,
                    };
                    match self.segments {
                        // v5 frames are compressed by the segment layer, not here.
                        Some(_) => encode_frame_into(
                            &mut pending.bytes,
                            &envelope,
                            &response,
                            Compression::None,
                        ),
                        None if self.splices() => {
                            encode_frame_spliced(&mut out, &envelope, &response)
                        }
                        None => encode_frame_into(
                            &mut out.bytes,
                            &envelope,
                            &response,
                            self.compression,
                        ),
                    }
                }
                Outgoing::Negotiated { .. } => unreachable!("handled above"),
            }
            if self.segments.is_some() {
                pending.ends.push(pending.bytes.len());
            }
        }
        self.pack(&mut out.bytes, &mut pending);
        out
    }

    /// Whether frames go out as encoded (no compression, no segments), so
    /// that their long values can be spliced.
    fn splices(&self) -> bool {
        self.segments.is_none() && self.compression == Compression::None
    }

    /// v5: packs the frames in `pending` into segments appended to `out`.
    fn pack(&self, out: &mut Vec<u8>, pending: &mut PendingFrames) {
        if let Some(codec) = &self.segments {
            let mut start = 0;
            let slices: Vec<&[u8]> = pending
                .ends
                .iter()
                .map(|&end| {
                    let frame = &pending.bytes[start..end];
                    start = end;
                    frame
                })
                .collect();
            if !slices.is_empty() {
                codec.encode_frames_into(&slices, out);
            }
        }
        pending.bytes.clear();
        pending.ends.clear();
    }
}

/// Frames encoded back to back, waiting for the segment layer: `ends[i]`
/// is where frame `i` ends in `bytes`.
#[derive(Default)]
struct PendingFrames {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use varve_protocol::{
        decode_response, encode_request_frame, Request, MAX_SEGMENT_PAYLOAD_BYTES, SPLICE_MIN_BYTES,
    };

    proptest! {
        /// Found by nobody yet: any bytes, in either framing, give frames
        /// or errors, never a panic, and a non-fatal error always makes
        /// progress.
        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..4096), lz4: bool, segments: bool) {
            let mut inb = Inbound::new(1024);
            if segments {
                inb.switch_to_segments(if lz4 { Compression::Lz4 } else { Compression::None });
            }
            let mut buf = BytesMut::from(&bytes[..]);
            for _ in 0..bytes.len() + 1 {
                match inb.next_frame(&mut buf) {
                    Ok(Some(_)) => {}
                    Ok(None) => break,
                    Err(e) if e.fatal => break,
                    Err(_) => {}
                }
            }
        }
    }

    #[test]
    fn v5_switches_to_segments_after_ready() {
        let mut out = Outbound::default();
        let bytes = out.encode(vec![
            Outgoing::Response {
                version: 5,
                stream: 1,
                tracing_id: None,
                warnings: vec![],
                response: Box::new(Response::Ready),
            },
            Outgoing::Negotiated {
                compression: Compression::Lz4,
                segments: true,
            },
            Outgoing::Response {
                version: 5,
                stream: 2,
                tracing_id: None,
                warnings: vec!["w".into()],
                response: Box::new(Response::Ready),
            },
        ]);
        // The READY envelope first, as plain bytes.
        assert!(bytes.values.is_empty(), "nothing to splice");
        let mut buf = BytesMut::from(&bytes.to_vec()[..]);
        let ready = varve_protocol::decode_envelope(&mut buf, 1 << 20)
            .expect("ok")
            .expect("frame");
        assert_eq!(ready.header.stream, 1);
        // Then one LZ4 segment holding the second frame.
        let seg = SegmentCodec::new(Compression::Lz4)
            .decode(&mut buf)
            .expect("ok")
            .expect("segment");
        assert!(seg.self_contained && buf.is_empty());
        let mut inner = BytesMut::from(&seg.payload[..]);
        let frame = varve_protocol::decode_envelope(&mut inner, 1 << 20)
            .expect("ok")
            .expect("frame");
        let resp = decode_response(&frame, Compression::None).expect("decodes");
        assert_eq!(resp.warnings, vec!["w".to_string()]);
    }

    /// Responses of every size around the v5 segment payload limit, one of
    /// them with warnings, then rows with two values long enough to be
    /// spliced and one too short.
    fn batch(version: u8) -> Vec<Outgoing> {
        let mut batch = responses(version);
        let value = |n: usize| Some(bytes::Bytes::from(vec![7; n]));
        let column = |name: &str| varve_protocol::ColumnSpec {
            keyspace: "ks".into(),
            table: "t".into(),
            name: name.into(),
            ty: varve_types::CqlType::Blob,
        };
        let rows = varve_protocol::Rows {
            metadata: varve_protocol::ResultMetadata::new(vec![column("a"), column("b")]),
            rows: vec![
                vec![value(SPLICE_MIN_BYTES), value(SPLICE_MIN_BYTES - 1)],
                vec![None, value(MAX_SEGMENT_PAYLOAD_BYTES + 1)],
            ],
        };
        batch.push(Outgoing::Response {
            version,
            stream: 9,
            tracing_id: None,
            warnings: vec![],
            response: Box::new(Response::Result(varve_protocol::ResultBody::Rows(rows))),
        });
        batch
    }

    fn responses(version: u8) -> Vec<Outgoing> {
        let sizes = [
            0,
            10,
            MAX_SEGMENT_PAYLOAD_BYTES - 20,
            MAX_SEGMENT_PAYLOAD_BYTES + 1,
            300_000,
        ];
        sizes
            .iter()
            .enumerate()
            .map(|(i, &n)| Outgoing::Response {
                version,
                stream: i as i16,
                tracing_id: None,
                warnings: if i == 1 {
                    vec!["careful".into()]
                } else {
                    vec![]
                },
                response: Box::new(Response::AuthSuccess(Some(bytes::Bytes::from(vec![
                    i as u8;
                    n
                ])))),
            })
            .collect()
    }

    /// The frames of a batch, each as `encode_frame` writes it alone.
    fn one_by_one(batch: &[Outgoing], compression: Compression) -> Vec<Vec<u8>> {
        batch
            .iter()
            .map(|item| match item {
                Outgoing::Response {
                    version,
                    stream,
                    tracing_id: _,
                    warnings,
                    response,
                } => {
                    varve_protocol::encode_frame(*version, *stream, warnings, response, compression)
                }
                _ => unreachable!(),
            })
            .collect()
    }

    /// An encoder after STARTUP negotiated `compression` (and segments).
    fn negotiated(compression: Compression, segments: bool) -> Outbound {
        let mut out = Outbound::default();
        out.apply(&Outgoing::Negotiated {
            compression,
            segments,
        });
        out
    }

    /// v4: a batch is its frames back to back, byte for byte those that
    /// `encode_frame` gives one at a time, with and without LZ4.
    #[test]
    fn a_v4_batch_is_its_frames_back_to_back() {
        for compression in [Compression::None, Compression::Lz4] {
            let mut out = negotiated(compression, false);
            let bytes = out.encode(batch(4));
            // Only frames sent as encoded leave their long values out.
            assert_eq!(
                bytes.values.len(),
                match compression {
                    Compression::None => 2,
                    Compression::Lz4 => 0,
                },
                "{compression:?}"
            );
            assert_eq!(
                bytes.to_vec(),
                one_by_one(&batch(4), compression).concat(),
                "{compression:?}"
            );
        }
    }

    /// v5: the segments of a batch carry exactly its frames, in order, a
    /// frame over the payload limit cut across segments that are not
    /// self-contained.
    #[test]
    fn a_v5_batch_is_its_frames_in_segments() {
        for compression in [Compression::None, Compression::Lz4] {
            let mut out = negotiated(compression, true);
            let encoded = out.encode(batch(5));
            assert!(encoded.values.is_empty(), "segments are never spliced");
            let mut buf = BytesMut::from(&encoded.bytes[..]);
            let codec = SegmentCodec::new(compression);
            let mut payload = Vec::new();
            let mut split = 0;
            while let Some(seg) = codec.decode(&mut buf).expect("valid segment") {
                split += usize::from(!seg.self_contained);
                payload.extend_from_slice(&seg.payload);
            }
            assert!(buf.is_empty());
            assert!(split >= 2, "the large frames span segments");
            assert_eq!(
                payload,
                one_by_one(&batch(5), Compression::None).concat(),
                "{compression:?}"
            );
        }
    }

    #[test]
    fn inbound_reads_segments_after_switch() {
        let mut inb = Inbound::new(1 << 20);
        let f1 = encode_request_frame(5, 3, &Request::Options, None, Compression::None);
        let f2 = encode_request_frame(5, 4, &Request::Options, None, Compression::None);
        let mut buf = BytesMut::new();
        inb.switch_to_segments(Compression::Lz4);
        buf.extend_from_slice(&SegmentCodec::new(Compression::Lz4).encode_frames(&[&f1, &f2]));
        assert_eq!(
            inb.next_frame(&mut buf)
                .expect("ok")
                .expect("f1")
                .header
                .stream,
            3
        );
        assert_eq!(
            inb.next_frame(&mut buf)
                .expect("ok")
                .expect("f2")
                .header
                .stream,
            4
        );
        assert!(inb.next_frame(&mut buf).expect("ok").is_none());
        buf.extend_from_slice(&[0xff; 16]);
        let err = inb.next_frame(&mut buf).expect_err("bad crc");
        assert!(err.fatal);
    }

    #[test]
    fn oversized_envelope_is_not_fatal() {
        let mut inb = Inbound::new(10);
        let mut buf = BytesMut::from(&[4u8, 0, 0, 7, 0x07, 0, 0, 0, 100][..]);
        let err = inb.next_frame(&mut buf).expect_err("too big");
        assert!(!err.fatal);
        // v1/v2 (8-byte header) are unsupported versions: fatal.
        let mut buf = BytesMut::from(&[2u8, 0, 7, 0x05, 0, 0, 0, 0][..]);
        assert!(Inbound::new(10).next_frame(&mut buf).expect_err("v2").fatal);
        // v3 is spoken.
        let mut buf = BytesMut::from(&[3u8, 0, 0, 7, 0x05, 0, 0, 0, 0][..]);
        assert!(Inbound::new(10).next_frame(&mut buf).expect("v3").is_some());
    }
}
