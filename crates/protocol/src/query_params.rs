//! `<query_parameters>` of QUERY and EXECUTE (spec section 4.1.4):
//!
//! ```text
//! <consistency><flags>[<n>[name_1]<value_1>...][<page_size>][<paging_state>]
//!     [<serial_consistency>][<timestamp>][<keyspace>][<now_in_seconds>]
//! ```
//!
//! `<flags>` is a `[byte]` in v4 and an `[int]` in v5; the keyspace and
//! now-in-seconds flags exist only in v5.

use bytes::Bytes;

use crate::consistency::Consistency;
use crate::error::{ProtocolError, Result};
use crate::primitives::{
    put_bytes, put_consistency, put_int, put_long, put_short, put_string, put_u8, put_value,
    short_len, BoundValue, Reader,
};

/// Bits of the query flags.
pub mod query_flags {
    pub const VALUES: u32 = 0x01;
    pub const SKIP_METADATA: u32 = 0x02;
    pub const PAGE_SIZE: u32 = 0x04;
    pub const PAGING_STATE: u32 = 0x08;
    pub const SERIAL_CONSISTENCY: u32 = 0x10;
    pub const DEFAULT_TIMESTAMP: u32 = 0x20;
    pub const NAMES_FOR_VALUES: u32 = 0x40;
    /// v5 only.
    pub const KEYSPACE: u32 = 0x80;
    /// v5 only.
    pub const NOW_IN_SECONDS: u32 = 0x100;
}

/// The parameters of a QUERY or EXECUTE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryParams {
    pub consistency: Consistency,
    pub values: Vec<BoundValue>,
    /// Names of the values when the client bound them by name.
    pub names: Option<Vec<String>>,
    pub skip_metadata: bool,
    pub page_size: Option<i32>,
    pub paging_state: Option<Bytes>,
    pub serial_consistency: Option<Consistency>,
    pub default_timestamp: Option<i64>,
    /// v5 only.
    pub keyspace: Option<String>,
    /// v5 only.
    pub now_in_seconds: Option<i32>,
}

impl QueryParams {
    /// Parameters with the given consistency and nothing else.
    pub fn new(consistency: Consistency) -> Self {
        QueryParams {
            consistency,
            values: Vec::new(),
            names: None,
            skip_metadata: false,
            page_size: None,
            paging_state: None,
            serial_consistency: None,
            default_timestamp: None,
            keyspace: None,
            now_in_seconds: None,
        }
    }

    /// Appends the parameters in the layout of `version`. In v4 the v5-only
    /// fields are not written.
    pub fn encode(&self, version: u8, out: &mut Vec<u8>) {
        use query_flags as f;
        let v5 = version >= 5;
        let mut flags = 0u32;
        let has_values = !self.values.is_empty() || self.names.is_some();
        let set = |cond: bool, bit: u32, flags: &mut u32| {
            if cond {
                *flags |= bit
            }
        };
        set(has_values, f::VALUES, &mut flags);
        set(self.skip_metadata, f::SKIP_METADATA, &mut flags);
        set(self.page_size.is_some(), f::PAGE_SIZE, &mut flags);
        set(self.paging_state.is_some(), f::PAGING_STATE, &mut flags);
        set(
            self.serial_consistency.is_some(),
            f::SERIAL_CONSISTENCY,
            &mut flags,
        );
        set(
            self.default_timestamp.is_some(),
            f::DEFAULT_TIMESTAMP,
            &mut flags,
        );
        set(
            has_values && self.names.is_some(),
            f::NAMES_FOR_VALUES,
            &mut flags,
        );
        set(v5 && self.keyspace.is_some(), f::KEYSPACE, &mut flags);
        set(
            v5 && self.now_in_seconds.is_some(),
            f::NOW_IN_SECONDS,
            &mut flags,
        );
        put_consistency(out, self.consistency);
        put_flags(out, version, flags);
        if has_values {
            put_short(out, short_len(self.values.len()));
            for (i, v) in self.values.iter().enumerate() {
                if let Some(names) = &self.names {
                    put_string(out, names.get(i).map(String::as_str).unwrap_or(""));
                }
                put_value(out, v);
            }
        }
        if let Some(n) = self.page_size {
            put_int(out, n);
        }
        if let Some(p) = &self.paging_state {
            put_bytes(out, Some(p));
        }
        if let Some(c) = self.serial_consistency {
            put_consistency(out, c);
        }
        if let Some(t) = self.default_timestamp {
            put_long(out, t);
        }
        if v5 {
            if let Some(k) = &self.keyspace {
                put_string(out, k);
            }
            if let Some(n) = self.now_in_seconds {
                put_int(out, n);
            }
        }
    }

    /// Reads parameters in the layout of `version`.
    pub fn decode(version: u8, r: &mut Reader<'_>) -> Result<QueryParams> {
        use query_flags as f;
        let consistency = r.read_consistency()?;
        let flags = read_flags(r, version)?;
        let mut p = QueryParams::new(consistency);
        if flags & f::VALUES != 0 {
            let n = r.read_short_count(4)?;
            let with_names = flags & f::NAMES_FOR_VALUES != 0;
            let mut names = Vec::new();
            for _ in 0..n {
                if with_names {
                    names.push(r.read_string()?);
                }
                p.values.push(r.read_value(version)?);
            }
            p.names = with_names.then_some(names);
        }
        p.skip_metadata = flags & f::SKIP_METADATA != 0;
        if flags & f::PAGE_SIZE != 0 {
            let n = r.read_int()?;
            if n == 0 {
                return Err(ProtocolError::invalid("The page size cannot be 0"));
            }
            p.page_size = Some(n);
        }
        if flags & f::PAGING_STATE != 0 {
            p.paging_state = r.read_bytes()?;
        }
        if flags & f::SERIAL_CONSISTENCY != 0 {
            p.serial_consistency = Some(r.read_consistency()?);
        }
        if flags & f::DEFAULT_TIMESTAMP != 0 {
            p.default_timestamp = Some(r.read_long()?);
        }
        if version >= 5 && flags & f::KEYSPACE != 0 {
            p.keyspace = Some(r.read_string()?);
        }
        if version >= 5 && flags & f::NOW_IN_SECONDS != 0 {
            p.now_in_seconds = Some(r.read_int()?);
        }
        Ok(p)
    }
}

/// Writes query/batch flags: a `[byte]` in v4, an `[int]` in v5. In v4
/// only the low 8 bits exist; callers never set others there.
pub(crate) fn put_flags(out: &mut Vec<u8>, version: u8, flags: u32) {
    if version >= 5 {
        put_int(out, flags as i32);
    } else {
        put_u8(out, (flags & 0xff) as u8);
    }
}

/// Reads query/batch flags of `version`.
pub(crate) fn read_flags(r: &mut Reader<'_>, version: u8) -> Result<u32> {
    if version >= 5 {
        Ok(r.read_int()? as u32)
    } else {
        Ok(u32::from(r.read_u8()?))
    }
}
