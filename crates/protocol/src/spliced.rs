//! Frames whose large values stay in their own buffers until the socket
//! write. The encoder writes a value's `[int]` length, then, instead of
//! copying the value after it, records the value with the offset it
//! belongs at. A writer sends the pieces with one vectored write
//! (`writev`), so a value read from storage is copied once, by the kernel,
//! instead of once into the frame and again by the kernel.
//!
//! Only frames sent as encoded can be spliced: an LZ4-compressed v4 body
//! and the v5 segment layer (which checksums and cuts the whole body)
//! need the body in one buffer, and are encoded as before.

use std::io::IoSlice;

use bytes::Bytes;

use crate::primitives::{int_len, put_bytes, put_int};

/// Values of at least this many bytes are spliced; shorter ones are
/// copied into the frame. Each spliced value adds two pieces to the write,
/// which the kernel walks one by one: reads of 1.6 KiB values spliced cost
/// 2% more server CPU than copied, 3.2 KiB ones the same, 6.5 KiB ones 7%
/// less (docs/benchmarks.md, session 10).
pub const SPLICE_MIN_BYTES: usize = 4096;

/// Socket bytes: `bytes`, with each value of `values` sent at its offset
/// into `bytes` (offsets in order; several values may share one).
#[derive(Debug, Default)]
pub struct Spliced {
    pub bytes: Vec<u8>,
    pub values: Vec<(usize, Bytes)>,
}

impl Spliced {
    /// Bytes on the wire.
    pub fn len(&self) -> usize {
        self.bytes.len() + self.values.iter().map(|(_, v)| v.len()).sum::<usize>()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The pieces in wire order, for a vectored write (no empty piece).
    pub fn io_slices(&self) -> Vec<IoSlice<'_>> {
        let mut slices = Vec::with_capacity(2 * self.values.len() + 1);
        let mut from = 0;
        for (at, value) in &self.values {
            if *at > from {
                slices.push(IoSlice::new(&self.bytes[from..*at]));
            }
            if !value.is_empty() {
                slices.push(IoSlice::new(value));
            }
            from = *at;
        }
        if from < self.bytes.len() {
            slices.push(IoSlice::new(&self.bytes[from..]));
        }
        slices
    }

    /// The wire bytes in one buffer.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len());
        for slice in self.io_slices() {
            out.extend_from_slice(&slice);
        }
        out
    }
}

/// Appends a `[bytes]` value: copied, or (with `splices`, at least
/// [`SPLICE_MIN_BYTES`] long) recorded at its offset in `out`.
pub(crate) fn put_value(
    out: &mut Vec<u8>,
    value: Option<&Bytes>,
    splices: Option<&mut Vec<(usize, Bytes)>>,
) {
    match (value, splices) {
        (Some(v), Some(splices)) if v.len() >= SPLICE_MIN_BYTES => {
            put_int(out, int_len(v.len()));
            splices.push((out.len(), v.clone()));
        }
        _ => put_bytes(out, value.map(|v| &v[..])),
    }
}

/// Bytes of the values recorded after the first `from` entries.
pub(crate) fn spliced_len(splices: &Option<&mut Vec<(usize, Bytes)>>, from: usize) -> usize {
    splices
        .as_ref()
        .map_or(0, |s| s[from..].iter().map(|(_, v)| v.len()).sum())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pieces come out in wire order, empty ones left out, values at one
    /// offset in the order they were recorded.
    #[test]
    fn slices_interleave_bytes_and_values_in_order() {
        let spliced = Spliced {
            bytes: b"abcdef".to_vec(),
            values: vec![
                (0, Bytes::from_static(b"0")),
                (2, Bytes::from_static(b"X")),
                (2, Bytes::from_static(b"Y")),
                (4, Bytes::new()),
                (6, Bytes::from_static(b"Z")),
            ],
        };
        let slices = spliced.io_slices();
        let pieces: Vec<&[u8]> = slices.iter().map(|s| &s[..]).collect();
        assert_eq!(pieces, [&b"0"[..], b"ab", b"X", b"Y", b"cd", b"ef", b"Z"]);
        assert_eq!(spliced.to_vec(), b"0abXYcdefZ");
        assert_eq!(spliced.len(), 10);
    }

    /// A value of `SPLICE_MIN_BYTES - 1` bytes is copied, one of
    /// `SPLICE_MIN_BYTES` is recorded after its length; a null and a value
    /// without `splices` are copied as `put_bytes` would.
    #[test]
    fn values_are_spliced_from_the_minimum_length() {
        for (len, spliced) in [(SPLICE_MIN_BYTES - 1, false), (SPLICE_MIN_BYTES, true)] {
            let value = Bytes::from(vec![7u8; len]);
            let mut out = vec![1];
            let mut splices = Vec::new();
            put_value(&mut out, Some(&value), Some(&mut splices));
            let mut plain = vec![1];
            put_bytes(&mut plain, Some(&value));
            assert_eq!(splices.len(), usize::from(spliced), "{len}");
            let whole = Spliced {
                bytes: out,
                values: splices,
            };
            assert_eq!(whole.to_vec(), plain, "{len}");
            if spliced {
                assert_eq!(whole.values[0].0, 5, "after the 4-byte length");
            }
        }
        let mut out = Vec::new();
        let mut splices = Vec::new();
        put_value(&mut out, None, Some(&mut splices));
        let big = Bytes::from(vec![1u8; SPLICE_MIN_BYTES]);
        put_value(&mut out, Some(&big), None);
        assert!(splices.is_empty());
        let mut plain = Vec::new();
        put_bytes(&mut plain, None);
        put_bytes(&mut plain, Some(&big));
        assert_eq!(out, plain);
    }
}
