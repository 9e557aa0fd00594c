//! Turns the payloads of v5 segments back into whole frames.
//!
//! Rules (Cassandra's): a self-contained payload holds one or more whole
//! frames and nothing else; a frame too large for one segment arrives as a
//! run of segments that are not self-contained, the first starting with the
//! frame header and the last ending exactly at the end of the frame. A
//! frame whose body exceeds the limit is reported once with
//! [`ProtocolError::BodyTooLarge`] and its remaining segments are dropped,
//! so the connection can go on; any other violation is fatal.

use bytes::BytesMut;

use crate::error::{ProtocolError, Result};
use crate::frame::{decode_envelope, Frame, HEADER_LEN};
use crate::segment::Segment;

/// Reassembles frames from segment payloads.
#[derive(Debug, Clone)]
pub struct FrameAssembler {
    max_body: usize,
    /// Bytes of a large frame received so far.
    partial: BytesMut,
    /// Bytes still to drop from an oversized large frame.
    discard_remaining: u64,
}

impl FrameAssembler {
    /// An assembler with the given body limit.
    pub fn new(max_body: usize) -> Self {
        FrameAssembler {
            max_body,
            partial: BytesMut::new(),
            discard_remaining: 0,
        }
    }

    /// True while a large frame is only partly received.
    pub fn is_mid_frame(&self) -> bool {
        !self.partial.is_empty() || self.discard_remaining > 0
    }

    /// Feeds one segment; returns the frames it completes.
    pub fn push(&mut self, segment: Segment) -> Result<Vec<Frame>> {
        if segment.self_contained {
            if self.is_mid_frame() {
                return Err(ProtocolError::invalid(
                    "self-contained segment received in the middle of a large frame",
                ));
            }
            return self.split_self_contained(&segment.payload);
        }
        if self.discard_remaining > 0 {
            let n = segment.payload.len() as u64;
            if n > self.discard_remaining {
                return Err(ProtocolError::invalid(
                    "segment runs past the end of the oversized frame",
                ));
            }
            self.discard_remaining -= n;
            return Ok(Vec::new());
        }
        self.partial.extend_from_slice(&segment.payload);
        match decode_envelope(&mut self.partial, self.max_body) {
            Ok(None) => Ok(Vec::new()),
            Ok(Some(frame)) => {
                if !self.partial.is_empty() {
                    self.partial.clear();
                    return Err(ProtocolError::invalid(
                        "bytes follow a large frame in its last segment",
                    ));
                }
                Ok(vec![frame])
            }
            Err(e @ ProtocolError::BodyTooLarge { body_len, .. }) => {
                let total = HEADER_LEN as u64 + u64::from(body_len);
                let seen = self.partial.len() as u64;
                self.partial.clear();
                self.discard_remaining = total.saturating_sub(seen);
                Err(e)
            }
            Err(e) => {
                self.partial.clear();
                Err(e)
            }
        }
    }

    fn split_self_contained(&self, payload: &[u8]) -> Result<Vec<Frame>> {
        let mut buf = BytesMut::from(payload);
        let mut frames = Vec::new();
        while !buf.is_empty() {
            match decode_envelope(&mut buf, self.max_body)? {
                Some(frame) => frames.push(frame),
                None => {
                    return Err(ProtocolError::invalid(
                        "self-contained segment ends inside a frame",
                    ))
                }
            }
        }
        Ok(frames)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::{FrameHeader, MAX_FRAME_BODY_BYTES};
    use bytes::Bytes;

    fn frame(stream: i16, body_len: usize) -> Vec<u8> {
        let body: Vec<u8> = (0..body_len).map(|i| (i % 251) as u8).collect();
        let header = FrameHeader {
            version: 5,
            is_response: false,
            flags: 0,
            stream,
            opcode: 0x07,
            body_len: 0,
        };
        Frame {
            header,
            body: Bytes::from(body),
        }
        .to_bytes()
    }

    fn seg(bytes: &[u8], self_contained: bool) -> Segment {
        Segment {
            payload: Bytes::copy_from_slice(bytes),
            self_contained,
        }
    }

    #[test]
    fn several_frames_in_one_segment() {
        let mut a = FrameAssembler::new(MAX_FRAME_BODY_BYTES);
        let mut payload = frame(1, 10);
        payload.extend(frame(2, 0));
        let frames = a.push(seg(&payload, true)).expect("valid");
        assert_eq!(
            frames.iter().map(|f| f.header.stream).collect::<Vec<_>>(),
            vec![1, 2]
        );
    }

    #[test]
    fn partial_frame_in_self_contained_segment_is_invalid() {
        let mut a = FrameAssembler::new(MAX_FRAME_BODY_BYTES);
        let f = frame(1, 10);
        assert!(a.push(seg(&f[..12], true)).is_err());
    }

    #[test]
    fn large_frame_across_segments() {
        let mut a = FrameAssembler::new(MAX_FRAME_BODY_BYTES);
        let f = frame(3, 1000);
        assert!(a.push(seg(&f[..4], false)).expect("ok").is_empty());
        assert!(a.push(seg(&f[4..500], false)).expect("ok").is_empty());
        assert!(a.is_mid_frame());
        assert!(
            a.push(seg(&f[..9], true)).is_err(),
            "self-contained while mid-frame"
        );
        let mut a = FrameAssembler::new(MAX_FRAME_BODY_BYTES);
        a.push(seg(&f[..500], false)).expect("ok");
        let done = a.push(seg(&f[500..], false)).expect("ok");
        assert_eq!(done.len(), 1);
        assert_eq!(done[0].body.len(), 1000);
        assert!(!a.is_mid_frame());
    }

    #[test]
    fn oversized_large_frame_is_skipped_and_the_next_frame_decodes() {
        let mut a = FrameAssembler::new(100);
        let f = frame(4, 300);
        assert!(matches!(
            a.push(seg(&f[..150], false)),
            Err(ProtocolError::BodyTooLarge {
                stream: 4,
                body_len: 300,
                max: 100
            })
        ));
        assert!(a.push(seg(&f[150..], false)).expect("dropped").is_empty());
        assert!(!a.is_mid_frame());
        let next = a.push(seg(&frame(5, 3), true)).expect("next frame");
        assert_eq!(next[0].header.stream, 5);
    }
}
