//! The paging state Varve hands to drivers: where the next page starts.
//!
//! Format (version 1, all integers big-endian), documented in
//! docs/format/paging-state.md:
//!
//! | bytes | field |
//! |---|---|
//! | 1 | version (1) |
//! | 4 | index of the partition key in an IN list (0 for scans) |
//! | 2 + n | partition key bytes (length-prefixed) |
//! | 1 | 1 when a clustering follows, 0 when the partition is finished |
//! | 2 + (2 + n) × k | clustering components of the last row returned |
//! | 4 | rows still allowed by LIMIT (-1: no limit) |
//! | 4 | rows still allowed in this partition by PER PARTITION LIMIT (-1) |

use crate::error::{QueryError, Result};
use bytes::{Buf, BufMut, Bytes, BytesMut};

pub const PAGING_STATE_VERSION: u8 = 1;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PagingState {
    pub key_index: u32,
    pub partition_key: Bytes,
    /// The last row returned; `None` when the partition was finished.
    pub clustering: Option<Vec<Bytes>>,
    pub remaining: i32,
    pub remaining_in_partition: i32,
}

impl PagingState {
    pub fn encode(&self) -> Bytes {
        let mut b = BytesMut::new();
        b.put_u8(PAGING_STATE_VERSION);
        b.put_u32(self.key_index);
        b.put_u16(self.partition_key.len() as u16);
        b.put_slice(&self.partition_key);
        match &self.clustering {
            None => b.put_u8(0),
            Some(values) => {
                b.put_u8(1);
                b.put_u16(values.len() as u16);
                for v in values {
                    b.put_u16(v.len() as u16);
                    b.put_slice(v);
                }
            }
        }
        b.put_i32(self.remaining);
        b.put_i32(self.remaining_in_partition);
        b.freeze()
    }

    pub fn decode(mut b: &[u8]) -> Result<PagingState> {
        let bad = || QueryError::Invalid("Invalid value for the paging state".into());
        let need = |b: &[u8], n: usize| {
            if b.remaining() < n {
                Err(bad())
            } else {
                Ok(())
            }
        };
        need(b, 7)?;
        if b.get_u8() != PAGING_STATE_VERSION {
            return Err(bad());
        }
        let key_index = b.get_u32();
        let n = b.get_u16() as usize;
        need(b, n + 1)?;
        let partition_key = Bytes::copy_from_slice(&b[..n]);
        b.advance(n);
        let clustering = if b.get_u8() == 1 {
            need(b, 2)?;
            let k = b.get_u16() as usize;
            let mut values = Vec::with_capacity(k.min(64));
            for _ in 0..k {
                need(b, 2)?;
                let n = b.get_u16() as usize;
                need(b, n)?;
                values.push(Bytes::copy_from_slice(&b[..n]));
                b.advance(n);
            }
            Some(values)
        } else {
            None
        };
        need(b, 8)?;
        let remaining = b.get_i32();
        let remaining_in_partition = b.get_i32();
        if b.has_remaining() {
            return Err(bad());
        }
        Ok(PagingState {
            key_index,
            partition_key,
            clustering,
            remaining,
            remaining_in_partition,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let s = PagingState {
            key_index: 3,
            partition_key: Bytes::from_static(b"key"),
            clustering: Some(vec![Bytes::from_static(&[0, 0, 0, 1]), Bytes::new()]),
            remaining: 10,
            remaining_in_partition: -1,
        };
        assert_eq!(PagingState::decode(&s.encode()).unwrap(), s);
        let done = PagingState {
            clustering: None,
            ..s
        };
        assert_eq!(PagingState::decode(&done.encode()).unwrap(), done);
    }

    #[test]
    fn rejects_garbage_without_panicking() {
        let good = PagingState {
            key_index: 0,
            partition_key: Bytes::from_static(b"k"),
            clustering: None,
            remaining: -1,
            remaining_in_partition: -1,
        }
        .encode();
        for cut in 0..good.len() {
            assert!(PagingState::decode(&good[..cut]).is_err());
        }
        assert!(PagingState::decode(&[9, 9, 9]).is_err());
    }
}
