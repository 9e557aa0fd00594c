//! The byte primitives of internode payloads: big-endian integers,
//! unsigned LEB128 `varint`s and length-prefixed `bytes`, as
//! docs/format/partition-encoding.md defines them ("Shared primitive
//! types").
//!
//! The [`Reader`] is strict and never panics: a read past the end, a
//! varint longer than ten bytes or wider than 64 bits, or a length above
//! the caller's limit is an error, and nothing is ever reserved from a
//! length read off the wire (byte strings are borrowed from the input).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use thiserror::Error;

/// The longest varint: 64 bits in groups of 7.
pub const VARINT_MAX_BYTES: usize = 10;

/// Why a payload does not decode.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum WireError {
    /// The payload ends inside a field.
    #[error("payload truncated")]
    Truncated,
    /// A varint of more than ten bytes, or one whose value needs more
    /// than 64 bits.
    #[error("varint longer than 64 bits")]
    VarintOverflow,
    /// A length above its limit.
    #[error("{what} of {len} bytes is over the limit of {max}")]
    TooLong {
        what: &'static str,
        len: u64,
        max: usize,
    },
    /// Bytes left after the last field.
    #[error("{0} bytes after the last field")]
    Trailing(usize),
    /// A field holds a value its type does not allow.
    #[error("bad {0}")]
    BadValue(&'static str),
}

/// Reads primitives from a borrowed payload.
#[derive(Debug)]
pub struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { rest: buf }
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.rest.len()
    }

    /// The next `n` bytes.
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        if n > self.rest.len() {
            return Err(WireError::Truncated);
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Ok(head)
    }

    /// The next `N` bytes as an array.
    pub fn array<const N: usize>(&mut self) -> Result<[u8; N], WireError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    pub fn u8(&mut self) -> Result<u8, WireError> {
        Ok(self.array::<1>()?[0])
    }

    pub fn u16(&mut self) -> Result<u16, WireError> {
        Ok(u16::from_be_bytes(self.array()?))
    }

    pub fn u32(&mut self) -> Result<u32, WireError> {
        Ok(u32::from_be_bytes(self.array()?))
    }

    pub fn u64(&mut self) -> Result<u64, WireError> {
        Ok(u64::from_be_bytes(self.array()?))
    }

    pub fn i64(&mut self) -> Result<i64, WireError> {
        Ok(i64::from_be_bytes(self.array()?))
    }

    /// An unsigned LEB128 value.
    pub fn varint(&mut self) -> Result<u64, WireError> {
        let mut value: u64 = 0;
        for i in 0..VARINT_MAX_BYTES {
            let byte = self.u8()?;
            let group = u64::from(byte & 0x7f);
            // The tenth byte holds only the top bit of a u64.
            if i == VARINT_MAX_BYTES - 1 && group > 1 {
                return Err(WireError::VarintOverflow);
            }
            value |= group << (7 * i);
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(WireError::VarintOverflow)
    }

    /// A `bytes` field (varint length, then the bytes) of at most `max`
    /// bytes; `what` names it in the error.
    pub fn bytes(&mut self, what: &'static str, max: usize) -> Result<&'a [u8], WireError> {
        let len = self.varint()?;
        match usize::try_from(len) {
            Ok(n) if n <= max => self.take(n),
            _ => Err(WireError::TooLong { what, len, max }),
        }
    }

    /// Ends the payload: anything left is an error.
    pub fn finish(self) -> Result<(), WireError> {
        match self.rest.len() {
            0 => Ok(()),
            n => Err(WireError::Trailing(n)),
        }
    }
}

/// Appends `v` as an unsigned LEB128 varint.
pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends a `bytes` field.
pub fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

/// How many bytes [`put_varint`] writes for `v`.
pub fn varint_len(v: u64) -> usize {
    let bits = 64 - v.leading_zeros() as usize;
    bits.div_ceil(7).max(1)
}

/// Appends a socket address: family (4 or 6), the address's bytes, the
/// port (u16).
pub fn put_address(out: &mut Vec<u8>, addr: SocketAddr) {
    match addr.ip() {
        IpAddr::V4(ip) => {
            out.push(4);
            out.extend_from_slice(&ip.octets());
        }
        IpAddr::V6(ip) => {
            out.push(6);
            out.extend_from_slice(&ip.octets());
        }
    }
    out.extend_from_slice(&addr.port().to_be_bytes());
}

/// How many bytes [`put_address`] writes for `addr`.
pub fn address_len(addr: SocketAddr) -> usize {
    match addr {
        SocketAddr::V4(_) => 1 + 4 + 2,
        SocketAddr::V6(_) => 1 + 16 + 2,
    }
}

/// Reads a socket address written by [`put_address`].
pub fn read_address(r: &mut Reader<'_>) -> Result<SocketAddr, WireError> {
    let ip = match r.u8()? {
        4 => IpAddr::V4(Ipv4Addr::from(r.array::<4>()?)),
        6 => IpAddr::V6(Ipv6Addr::from(r.array::<16>()?)),
        _ => return Err(WireError::BadValue("address family")),
    };
    Ok(SocketAddr::new(ip, r.u16()?))
}

/// The longest prefix of `s` of at most `max` bytes that ends on a
/// character boundary.
pub fn truncate_utf8(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// `bytes` as text for logs: invalid UTF-8 shown as replacement
/// characters, then cut to `max` bytes, so that the text encodes again
/// within the limit its bytes were read under (a replacement character
/// takes three bytes where the invalid byte took one).
pub fn lossy_utf8(bytes: &[u8], max: usize) -> String {
    let mut text = String::from_utf8_lossy(bytes).into_owned();
    let keep = truncate_utf8(&text, max).len();
    text.truncate(keep);
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_at_every_width() {
        for shift in 0..64 {
            for v in [1u64 << shift, (1u64 << shift) - 1, u64::MAX >> shift] {
                let mut out = Vec::new();
                put_varint(&mut out, v);
                assert!(out.len() <= VARINT_MAX_BYTES);
                let mut r = Reader::new(&out);
                assert_eq!(r.varint(), Ok(v));
                assert_eq!(r.finish(), Ok(()));
            }
        }
    }

    #[test]
    fn varints_wider_than_64_bits_are_refused() {
        let mut eleven = vec![0x80u8; 10];
        eleven.push(0);
        assert_eq!(
            Reader::new(&eleven).varint(),
            Err(WireError::VarintOverflow)
        );
        let mut wide = vec![0xffu8; 9];
        wide.push(0x02);
        assert_eq!(Reader::new(&wide).varint(), Err(WireError::VarintOverflow));
        assert_eq!(Reader::new(&[0x80]).varint(), Err(WireError::Truncated));
    }

    #[test]
    fn bytes_fields_are_limited_at_n() {
        let mut out = Vec::new();
        put_bytes(&mut out, b"abcd");
        assert_eq!(Reader::new(&out).bytes("x", 4), Ok(&b"abcd"[..]));
        assert_eq!(
            Reader::new(&out).bytes("x", 3),
            Err(WireError::TooLong {
                what: "x",
                len: 4,
                max: 3
            })
        );
        // A huge announced length is refused without reserving anything.
        let mut huge = Vec::new();
        put_varint(&mut huge, u64::MAX);
        assert!(Reader::new(&huge).bytes("x", usize::MAX).is_err());
    }

    #[test]
    fn lossy_text_stays_within_its_limit() {
        // Found by fuzzing: 2 invalid bytes became 6 bytes of text.
        assert_eq!(lossy_utf8(b"a\xff\xfe", 3), "a");
        assert_eq!(lossy_utf8(b"a\xff\xfe", 10), "a\u{fffd}\u{fffd}");
    }

    #[test]
    fn truncation_keeps_whole_characters() {
        assert_eq!(truncate_utf8("héllo", 2), "h");
        assert_eq!(truncate_utf8("héllo", 3), "hé");
        assert_eq!(truncate_utf8("abc", 10), "abc");
    }

    #[test]
    fn varint_len_matches_what_is_written() {
        for v in [0u64, 1, 127, 128, 16_383, 16_384, u64::MAX >> 1, u64::MAX] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            assert_eq!(varint_len(v), out.len(), "{v}");
        }
    }

    #[test]
    fn addresses_round_trip_with_their_length() {
        for addr in [
            SocketAddr::from(([127, 0, 0, 1], 7000)),
            SocketAddr::from(([0xfe80, 0, 0, 0, 0, 0, 0, 1], 65_535)),
        ] {
            let mut out = Vec::new();
            put_address(&mut out, addr);
            assert_eq!(out.len(), address_len(addr));
            let mut r = Reader::new(&out);
            assert_eq!(read_address(&mut r), Ok(addr));
            assert_eq!(r.finish(), Ok(()));
        }
        assert_eq!(
            read_address(&mut Reader::new(&[5, 0, 0])),
            Err(WireError::BadValue("address family"))
        );
    }
}
