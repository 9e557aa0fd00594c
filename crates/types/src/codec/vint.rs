//! Cassandra's unsigned variable-length integer ("vint") and zig-zag, as
//! used by the `duration` type.
//!
//! Layout: the number of leading 1 bits of the first byte is the number of
//! extra bytes (0..=8); the value is the remaining bits of the first byte
//! followed by the extra bytes, big-endian. Nine bytes hold any `u64`.

/// Most bytes a vint can take.
pub const VINT_LEN_MAX: usize = 9;

/// Appends `value` as an unsigned vint.
pub fn write_unsigned(value: u64, out: &mut Vec<u8>) {
    let bits = 64 - (value | 1).leading_zeros() as usize;
    // Each extra byte adds 8 value bits but costs one prefix bit: n bytes
    // hold 7n bits for n <= 8, and 64 bits for n = 9.
    let len = if bits > 56 {
        VINT_LEN_MAX
    } else {
        bits.div_ceil(7)
    };
    if len == 1 {
        out.push(value as u8);
        return;
    }
    let extra = len - 1;
    let be = value.to_be_bytes();
    let mut bytes = [0u8; VINT_LEN_MAX];
    if len == VINT_LEN_MAX {
        bytes[1..].copy_from_slice(&be);
    } else {
        bytes[VINT_LEN_MAX - len..].copy_from_slice(&be[8 - len..]);
    }
    let start = VINT_LEN_MAX - len;
    let mask = !(0xFFu32 >> extra) as u8;
    bytes[start] |= mask;
    out.extend_from_slice(&bytes[start..]);
}

/// Reads an unsigned vint at the start of `input`; returns it and the
/// number of bytes used, or `None` if `input` ends early.
pub fn read_unsigned(input: &[u8]) -> Option<(u64, usize)> {
    let first = *input.first()?;
    let extra = first.leading_ones() as usize;
    let rest = input.get(1..1 + extra)?;
    let mut value = u64::from(first) & (0xFFu64 >> extra);
    for &b in rest {
        value = (value << 8) | u64::from(b);
    }
    Some((value, 1 + extra))
}

/// Zig-zag encoding: small magnitudes of either sign become small numbers.
pub fn zigzag(n: i64) -> u64 {
    ((n << 1) ^ (n >> 63)) as u64
}

/// Inverse of [`zigzag`].
pub fn unzigzag(n: u64) -> i64 {
    ((n >> 1) as i64) ^ -((n & 1) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(v: u64) -> Vec<u8> {
        let mut out = Vec::new();
        write_unsigned(v, &mut out);
        out
    }

    #[test]
    fn known_encodings() {
        assert_eq!(enc(0), [0x00]);
        assert_eq!(enc(127), [0x7F]);
        assert_eq!(enc(128), [0x80, 0x80]);
        assert_eq!(enc(0x3FFF), [0xBF, 0xFF]);
        assert_eq!(enc(0x4000), [0xC0, 0x40, 0x00]);
        assert_eq!(enc(u64::MAX).len(), 9);
        assert_eq!(enc(u64::MAX)[0], 0xFF);
        assert_eq!(enc((1 << 56) - 1).len(), 8);
        assert_eq!(enc(1 << 56).len(), 9);
    }

    #[test]
    fn round_trip_edges() {
        for v in [
            0,
            1,
            127,
            128,
            16383,
            16384,
            1 << 35,
            (1 << 56) - 1,
            1 << 56,
            u64::MAX,
        ] {
            let e = enc(v);
            assert_eq!(read_unsigned(&e), Some((v, e.len())), "{v}");
            assert_eq!(read_unsigned(&e[..e.len() - 1]), None);
        }
        for n in [0i64, 1, -1, i64::MAX, i64::MIN, 12345, -98765] {
            assert_eq!(unzigzag(zigzag(n)), n);
        }
        assert_eq!(zigzag(-1), 1);
        assert_eq!(zigzag(1), 2);
    }
}
