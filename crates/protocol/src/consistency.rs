//! The `[consistency]` notation: the levels live in `varve_types` (the
//! coordinator needs them too); this module reads their wire codes.

use crate::error::{ProtocolError, Result};
pub use varve_types::consistency::Consistency;

/// The level for a wire code; an unknown code is an invalid frame.
pub fn from_code(code: u16) -> Result<Consistency> {
    Consistency::from_code(code)
        .ok_or_else(|| ProtocolError::invalid(format!("unknown consistency level 0x{code:04x}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_unknown_is_rejected() {
        for level in Consistency::ALL_LEVELS {
            assert_eq!(from_code(level.code()), Ok(level));
        }
        assert!(from_code(0x000B).is_err());
        assert_eq!(Consistency::LocalOne.code(), 0x000A);
    }
}
