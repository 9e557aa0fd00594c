//! Decoded CQL values.

use num_bigint::BigInt;
use std::net::IpAddr;

/// A decoded, non-null CQL value. Nulls are `Option<Value>::None` wherever
/// they can occur (tuple fields, bound values, result cells).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Ascii(String),
    Text(String),
    Blob(Vec<u8>),
    Boolean(bool),
    TinyInt(i8),
    SmallInt(i16),
    Int(i32),
    BigInt(i64),
    Varint(BigInt),
    Float(f32),
    Double(f64),
    /// `unscaled * 10^-scale`
    Decimal {
        unscaled: BigInt,
        scale: i32,
    },
    Uuid([u8; 16]),
    Timeuuid([u8; 16]),
    /// Milliseconds since the Unix epoch.
    Timestamp(i64),
    /// Days since the epoch, with 2^31 as the epoch (the wire form).
    Date(u32),
    /// Nanoseconds since midnight.
    Time(i64),
    Duration {
        months: i32,
        days: i32,
        nanos: i64,
    },
    Inet(IpAddr),
    Counter(i64),
    List(Vec<Value>),
    Set(Vec<Value>),
    Map(Vec<(Value, Value)>),
    Tuple(Vec<Option<Value>>),
    /// A `vector<T, n>`: exactly n elements, none null.
    Vector(Vec<Value>),
}
