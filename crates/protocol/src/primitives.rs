//! Readers and writers for the notations of the spec (section 3): `[int]`,
//! `[long]`, `[short]`, `[string]`, `[long string]`, `[bytes]`,
//! `[short bytes]`, `[value]`, `[string list]`, `[string map]`,
//! `[string multimap]`, `[bytes map]`, `[inet]`, `[inetaddr]`, `[uuid]`,
//! `[consistency]`. All integers are big-endian.
//!
//! [`Reader`] never panics: running out of bytes yields
//! [`ProtocolError::Incomplete`], malformed content yields
//! [`ProtocolError::Invalid`]. Counts read from the wire never size an
//! allocation beyond what the remaining input could hold.
//!
//! Writers append to a `Vec<u8>` and cannot fail. A `[string]` longer than
//! 65535 bytes is cut at a character boundary (only error messages could
//! ever be that long).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use bytes::Bytes;

use crate::consistency::Consistency;
use crate::error::{ProtocolError, Result};

/// A bound value as carried by `[value]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BoundValue {
    /// Length -1.
    Null,
    /// Length -2: leave the column unchanged.
    Unset,
    /// A serialized value (possibly empty).
    Value(Bytes),
}

/// A `[bytes map]`, in wire order.
pub type BytesMap = Vec<(String, Option<Bytes>)>;

/// A cursor over a byte slice.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A reader positioned at the start of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// How many bytes were read so far.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// The unread bytes.
    pub fn rest(&self) -> &'a [u8] {
        &self.buf[self.pos..]
    }

    /// Takes the next `n` bytes.
    pub fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if n > self.remaining() {
            return Err(ProtocolError::Incomplete);
        }
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    /// `[byte]`.
    pub fn read_u8(&mut self) -> Result<u8> {
        Ok(self.array::<1>()?[0])
    }

    /// `[short]` (unsigned).
    pub fn read_short(&mut self) -> Result<u16> {
        Ok(u16::from_be_bytes(self.array()?))
    }

    /// `[int]`.
    pub fn read_int(&mut self) -> Result<i32> {
        Ok(i32::from_be_bytes(self.array()?))
    }

    /// `[long]`.
    pub fn read_long(&mut self) -> Result<i64> {
        Ok(i64::from_be_bytes(self.array()?))
    }

    /// `[uuid]`.
    pub fn read_uuid(&mut self) -> Result<[u8; 16]> {
        self.array()
    }

    fn utf8(bytes: &[u8]) -> Result<String> {
        std::str::from_utf8(bytes)
            .map(str::to_owned)
            .map_err(|_| ProtocolError::invalid("string is not valid UTF-8"))
    }

    /// `[string]`.
    pub fn read_string(&mut self) -> Result<String> {
        let len = usize::from(self.read_short()?);
        Self::utf8(self.take(len)?)
    }

    /// `[long string]`.
    pub fn read_long_string(&mut self) -> Result<String> {
        let len = self.read_int()?;
        let len = usize::try_from(len)
            .map_err(|_| ProtocolError::invalid(format!("negative [long string] length {len}")))?;
        Self::utf8(self.take(len)?)
    }

    /// `[bytes]`: `None` for a negative length.
    pub fn read_bytes(&mut self) -> Result<Option<Bytes>> {
        let len = self.read_int()?;
        match usize::try_from(len) {
            Ok(len) => Ok(Some(Bytes::copy_from_slice(self.take(len)?))),
            Err(_) => Ok(None),
        }
    }

    /// `[short bytes]`.
    pub fn read_short_bytes(&mut self) -> Result<Bytes> {
        let len = usize::from(self.read_short()?);
        Ok(Bytes::copy_from_slice(self.take(len)?))
    }

    /// `[value]` of a client of `version`. Unset (length -2) came in v4:
    /// before it every negative length is a null, as Cassandra reads it.
    pub fn read_value(&mut self, version: u8) -> Result<BoundValue> {
        let len = self.read_int()?;
        match len {
            n if n < 0 && version < 4 => Ok(BoundValue::Null),
            -1 => Ok(BoundValue::Null),
            -2 => Ok(BoundValue::Unset),
            n if n < 0 => Err(ProtocolError::invalid(format!(
                "invalid [value] length {n}"
            ))),
            n => {
                let n = usize::try_from(n).map_err(|_| ProtocolError::invalid("value length"))?;
                Ok(BoundValue::Value(Bytes::copy_from_slice(self.take(n)?)))
            }
        }
    }

    /// A count that precedes `n` items of at least `min_item_bytes` each;
    /// rejects counts the remaining input cannot possibly hold.
    pub fn check_count(&self, n: usize, min_item_bytes: usize) -> Result<usize> {
        if n.saturating_mul(min_item_bytes) > self.remaining() {
            return Err(ProtocolError::Incomplete);
        }
        Ok(n)
    }

    /// A `[short]` count of items of at least `min_item_bytes` each.
    pub fn read_short_count(&mut self, min_item_bytes: usize) -> Result<usize> {
        let n = usize::from(self.read_short()?);
        self.check_count(n, min_item_bytes)
    }

    /// `[string list]`.
    pub fn read_string_list(&mut self) -> Result<Vec<String>> {
        let n = self.read_short_count(2)?;
        (0..n).map(|_| self.read_string()).collect()
    }

    /// `[string map]`, in wire order.
    pub fn read_string_map(&mut self) -> Result<Vec<(String, String)>> {
        let n = self.read_short_count(4)?;
        (0..n)
            .map(|_| Ok((self.read_string()?, self.read_string()?)))
            .collect()
    }

    /// `[string multimap]`, in wire order.
    pub fn read_string_multimap(&mut self) -> Result<Vec<(String, Vec<String>)>> {
        let n = self.read_short_count(4)?;
        (0..n)
            .map(|_| Ok((self.read_string()?, self.read_string_list()?)))
            .collect()
    }

    /// `[bytes map]`, in wire order.
    pub fn read_bytes_map(&mut self) -> Result<BytesMap> {
        let n = self.read_short_count(6)?;
        (0..n)
            .map(|_| Ok((self.read_string()?, self.read_bytes()?)))
            .collect()
    }

    /// `[inetaddr]`: a size byte (4 or 16) and the address.
    pub fn read_inetaddr(&mut self) -> Result<IpAddr> {
        match self.read_u8()? {
            4 => Ok(IpAddr::V4(Ipv4Addr::from(self.array::<4>()?))),
            16 => Ok(IpAddr::V6(Ipv6Addr::from(self.array::<16>()?))),
            n => Err(ProtocolError::invalid(format!(
                "invalid [inetaddr] size {n}"
            ))),
        }
    }

    /// `[inet]`: an `[inetaddr]` followed by an `[int]` port.
    pub fn read_inet(&mut self) -> Result<SocketAddr> {
        let ip = self.read_inetaddr()?;
        let port = self.read_int()?;
        let port = u16::try_from(port)
            .map_err(|_| ProtocolError::invalid(format!("invalid port {port}")))?;
        Ok(SocketAddr::new(ip, port))
    }

    /// `[consistency]`.
    pub fn read_consistency(&mut self) -> Result<Consistency> {
        crate::consistency::from_code(self.read_short()?)
    }
}

/// Appends a `[byte]`.
pub fn put_u8(out: &mut Vec<u8>, v: u8) {
    out.push(v);
}

/// Appends a `[short]`.
pub fn put_short(out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&v.to_be_bytes());
}

/// Appends an `[int]`.
pub fn put_int(out: &mut Vec<u8>, v: i32) {
    out.extend_from_slice(&v.to_be_bytes());
}

/// Appends a `[long]`.
pub fn put_long(out: &mut Vec<u8>, v: i64) {
    out.extend_from_slice(&v.to_be_bytes());
}

/// A length as an `[int]`; lengths past `i32::MAX` cannot occur below the
/// frame size limit, and are clamped rather than wrapped.
pub(crate) fn int_len(len: usize) -> i32 {
    i32::try_from(len).unwrap_or(i32::MAX)
}

/// A count as a `[short]`, clamped.
pub fn short_len(len: usize) -> u16 {
    u16::try_from(len).unwrap_or(u16::MAX)
}

/// Appends a `[string]`, cut at a character boundary past 65535 bytes.
pub fn put_string(out: &mut Vec<u8>, s: &str) {
    let mut end = s.len().min(usize::from(u16::MAX));
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    put_short(out, short_len(end));
    out.extend_from_slice(&s.as_bytes()[..end]);
}

/// Appends a `[long string]`.
pub fn put_long_string(out: &mut Vec<u8>, s: &str) {
    put_int(out, int_len(s.len()));
    out.extend_from_slice(s.as_bytes());
}

/// Appends a `[bytes]` (`None` is written as length -1).
pub fn put_bytes(out: &mut Vec<u8>, b: Option<&[u8]>) {
    match b {
        Some(b) => {
            put_int(out, int_len(b.len()));
            out.extend_from_slice(b);
        }
        None => put_int(out, -1),
    }
}

/// Appends a `[short bytes]`.
pub fn put_short_bytes(out: &mut Vec<u8>, b: &[u8]) {
    let len = b.len().min(usize::from(u16::MAX));
    put_short(out, short_len(len));
    out.extend_from_slice(&b[..len]);
}

/// Appends a `[value]`.
pub fn put_value(out: &mut Vec<u8>, v: &BoundValue) {
    match v {
        BoundValue::Null => put_int(out, -1),
        BoundValue::Unset => put_int(out, -2),
        BoundValue::Value(b) => put_bytes(out, Some(b)),
    }
}

/// Appends a `[string list]`.
pub fn put_string_list(out: &mut Vec<u8>, items: &[String]) {
    put_short(out, short_len(items.len()));
    for s in items.iter().take(usize::from(u16::MAX)) {
        put_string(out, s);
    }
}

/// Appends a `[string map]`.
pub fn put_string_map(out: &mut Vec<u8>, items: &[(String, String)]) {
    put_short(out, short_len(items.len()));
    for (k, v) in items.iter().take(usize::from(u16::MAX)) {
        put_string(out, k);
        put_string(out, v);
    }
}

/// Appends a `[string multimap]`.
pub fn put_string_multimap(out: &mut Vec<u8>, items: &[(String, Vec<String>)]) {
    put_short(out, short_len(items.len()));
    for (k, v) in items.iter().take(usize::from(u16::MAX)) {
        put_string(out, k);
        put_string_list(out, v);
    }
}

/// Appends a `[bytes map]`.
pub fn put_bytes_map(out: &mut Vec<u8>, items: &[(String, Option<Bytes>)]) {
    put_short(out, short_len(items.len()));
    for (k, v) in items.iter().take(usize::from(u16::MAX)) {
        put_string(out, k);
        put_bytes(out, v.as_deref());
    }
}

/// Appends an `[inetaddr]`.
pub fn put_inetaddr(out: &mut Vec<u8>, ip: &IpAddr) {
    match ip {
        IpAddr::V4(v4) => {
            out.push(4);
            out.extend_from_slice(&v4.octets());
        }
        IpAddr::V6(v6) => {
            out.push(16);
            out.extend_from_slice(&v6.octets());
        }
    }
}

/// Appends an `[inet]`.
pub fn put_inet(out: &mut Vec<u8>, addr: &SocketAddr) {
    put_inetaddr(out, &addr.ip());
    put_int(out, i32::from(addr.port()));
}

/// Appends a `[consistency]`.
pub fn put_consistency(out: &mut Vec<u8>, c: Consistency) {
    put_short(out, c.code());
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn short_input_is_incomplete_and_bad_input_is_invalid() {
        assert_eq!(
            Reader::new(&[0, 0, 0]).read_int(),
            Err(ProtocolError::Incomplete)
        );
        assert_eq!(
            Reader::new(&[0, 5, b'a']).read_string(),
            Err(ProtocolError::Incomplete)
        );
        assert!(matches!(
            Reader::new(&[0, 1, 0xff]).read_string(),
            Err(ProtocolError::Invalid(_))
        ));
        assert!(matches!(
            Reader::new(&(-3i32).to_be_bytes()).read_value(4),
            Err(ProtocolError::Invalid(_))
        ));
        assert!(matches!(
            Reader::new(&[5, 1, 2, 3, 4, 5]).read_inetaddr(),
            Err(ProtocolError::Invalid(_))
        ));
    }

    #[test]
    fn v3_reads_every_negative_length_as_null() {
        for len in [-1i32, -2, -3, i32::MIN] {
            let bytes = len.to_be_bytes();
            assert_eq!(Reader::new(&bytes).read_value(3), Ok(BoundValue::Null));
        }
        let unset = (-2i32).to_be_bytes();
        assert_eq!(Reader::new(&unset).read_value(4), Ok(BoundValue::Unset));
        assert_eq!(Reader::new(&unset).read_value(5), Ok(BoundValue::Unset));
    }

    #[test]
    fn huge_counts_do_not_allocate() {
        // A [string list] announcing 65535 items in three bytes.
        assert_eq!(
            Reader::new(&[0xff, 0xff, 0]).read_string_list(),
            Err(ProtocolError::Incomplete)
        );
    }

    #[test]
    fn long_strings_are_cut_at_a_char_boundary() {
        let s = "é".repeat(40_000); // 80 000 bytes
        let mut out = Vec::new();
        put_string(&mut out, &s);
        let back = Reader::new(&out).read_string().expect("decodes");
        assert_eq!(back.len(), 65_534);
    }

    proptest! {
        #[test]
        fn primitives_round_trip(
            s in ".{0,40}",
            list in proptest::collection::vec(".{0,8}", 0..5),
            bytes in proptest::option::of(proptest::collection::vec(any::<u8>(), 0..40)),
            n in any::<i64>(),
            ip in any::<[u8; 16]>(),
            port in any::<u16>(),
        ) {
            let mut out = Vec::new();
            put_string(&mut out, &s);
            put_long_string(&mut out, &s);
            put_string_list(&mut out, &list);
            put_bytes(&mut out, bytes.as_deref());
            put_long(&mut out, n);
            let addr = SocketAddr::new(IpAddr::V6(Ipv6Addr::from(ip)), port);
            put_inet(&mut out, &addr);
            let mut r = Reader::new(&out);
            prop_assert_eq!(r.read_string()?, s.clone());
            prop_assert_eq!(r.read_long_string()?, s);
            prop_assert_eq!(r.read_string_list()?, list);
            prop_assert_eq!(r.read_bytes()?.map(|b| b.to_vec()), bytes);
            prop_assert_eq!(r.read_long()?, n);
            prop_assert_eq!(r.read_inet()?, addr);
            prop_assert_eq!(r.remaining(), 0);
        }
    }
}
