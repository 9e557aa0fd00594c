//! The `[consistency]` notation: consistency levels and their wire codes.

use crate::error::{ProtocolError, Result};

/// A consistency level as carried by `[consistency]` (a `[short]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Consistency {
    Any,
    One,
    Two,
    Three,
    Quorum,
    All,
    LocalQuorum,
    EachQuorum,
    Serial,
    LocalSerial,
    LocalOne,
}

impl Consistency {
    /// Every level, in code order.
    pub const ALL_LEVELS: [Consistency; 11] = [
        Consistency::Any,
        Consistency::One,
        Consistency::Two,
        Consistency::Three,
        Consistency::Quorum,
        Consistency::All,
        Consistency::LocalQuorum,
        Consistency::EachQuorum,
        Consistency::Serial,
        Consistency::LocalSerial,
        Consistency::LocalOne,
    ];

    /// The wire code.
    pub fn code(self) -> u16 {
        match self {
            Consistency::Any => 0x0000,
            Consistency::One => 0x0001,
            Consistency::Two => 0x0002,
            Consistency::Three => 0x0003,
            Consistency::Quorum => 0x0004,
            Consistency::All => 0x0005,
            Consistency::LocalQuorum => 0x0006,
            Consistency::EachQuorum => 0x0007,
            Consistency::Serial => 0x0008,
            Consistency::LocalSerial => 0x0009,
            Consistency::LocalOne => 0x000A,
        }
    }

    /// The level for a wire code.
    pub fn from_code(code: u16) -> Result<Consistency> {
        Consistency::ALL_LEVELS
            .get(usize::from(code))
            .copied()
            .ok_or_else(|| {
                ProtocolError::invalid(format!("unknown consistency level 0x{code:04x}"))
            })
    }

    /// The name Cassandra prints (`LOCAL_QUORUM`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Consistency::Any => "ANY",
            Consistency::One => "ONE",
            Consistency::Two => "TWO",
            Consistency::Three => "THREE",
            Consistency::Quorum => "QUORUM",
            Consistency::All => "ALL",
            Consistency::LocalQuorum => "LOCAL_QUORUM",
            Consistency::EachQuorum => "EACH_QUORUM",
            Consistency::Serial => "SERIAL",
            Consistency::LocalSerial => "LOCAL_SERIAL",
            Consistency::LocalOne => "LOCAL_ONE",
        }
    }

    /// True for SERIAL and LOCAL_SERIAL.
    pub fn is_serial(self) -> bool {
        matches!(self, Consistency::Serial | Consistency::LocalSerial)
    }
}

impl std::fmt::Display for Consistency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_unknown_is_rejected() {
        for level in Consistency::ALL_LEVELS {
            assert_eq!(Consistency::from_code(level.code()), Ok(level));
        }
        assert!(Consistency::from_code(0x000B).is_err());
        assert_eq!(Consistency::LocalOne.code(), 0x000A);
    }
}
