//! The failure body: the payload of a response frame with the FAILURE
//! flag (docs/format/internode.md, section 5): `reason` u16, then
//! `message` as `bytes`.
//!
//! Reasons 0 to 5 are Cassandra's request failure codes, so the native
//! protocol's ReadFailure and WriteFailure can hand them to drivers
//! unchanged; Varve's own start at `0x0100`.

use std::fmt;

use super::limits::MAX_FAILURE_MESSAGE_BYTES;
use super::wire::{lossy_utf8, put_bytes, truncate_utf8, Reader, WireError};

/// Why a request failed, by its wire code (unknown codes are kept).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FailureReason(pub u16);

impl FailureReason {
    pub const UNKNOWN: FailureReason = FailureReason(0);
    pub const READ_TOO_MANY_TOMBSTONES: FailureReason = FailureReason(1);
    pub const TIMEOUT: FailureReason = FailureReason(2);
    /// Unknown table, or the replica's epoch could not catch up in time.
    pub const INCOMPATIBLE_SCHEMA: FailureReason = FailureReason(3);
    pub const READ_SIZE: FailureReason = FailureReason(4);
    pub const NODE_DOWN: FailureReason = FailureReason(5);
    pub const DISK_FULL: FailureReason = FailureReason(0x0100);
    pub const OVERLOADED: FailureReason = FailureReason(0x0101);
    pub const MALFORMED_PAYLOAD: FailureReason = FailureReason(0x0102);
    pub const UNKNOWN_VERB: FailureReason = FailureReason(0x0103);
    /// The request names another node than the one at this address (the
    /// dead node that this one replaced there).
    pub const NOT_ADDRESSEE: FailureReason = FailureReason(0x0104);

    /// Every defined reason with its name.
    pub const KNOWN: [(FailureReason, &'static str); 11] = [
        (FailureReason::UNKNOWN, "UNKNOWN"),
        (
            FailureReason::READ_TOO_MANY_TOMBSTONES,
            "READ_TOO_MANY_TOMBSTONES",
        ),
        (FailureReason::TIMEOUT, "TIMEOUT"),
        (FailureReason::INCOMPATIBLE_SCHEMA, "INCOMPATIBLE_SCHEMA"),
        (FailureReason::READ_SIZE, "READ_SIZE"),
        (FailureReason::NODE_DOWN, "NODE_DOWN"),
        (FailureReason::DISK_FULL, "DISK_FULL"),
        (FailureReason::OVERLOADED, "OVERLOADED"),
        (FailureReason::MALFORMED_PAYLOAD, "MALFORMED_PAYLOAD"),
        (FailureReason::UNKNOWN_VERB, "UNKNOWN_VERB"),
        (FailureReason::NOT_ADDRESSEE, "NOT_ADDRESSEE"),
    ];

    pub fn name(self) -> Option<&'static str> {
        FailureReason::KNOWN
            .iter()
            .find(|(r, _)| *r == self)
            .map(|(_, n)| *n)
    }
}

impl fmt::Debug for FailureReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "FailureReason({:#06x})", self.0),
        }
    }
}

/// A failure body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub reason: FailureReason,
    /// For logs; at most [`MAX_FAILURE_MESSAGE_BYTES`] bytes.
    pub message: String,
}

impl Failure {
    /// A failure; a message over the limit is cut on a character boundary.
    pub fn new(reason: FailureReason, message: impl Into<String>) -> Failure {
        let mut message = message.into();
        let keep = truncate_utf8(&message, MAX_FAILURE_MESSAGE_BYTES).len();
        message.truncate(keep);
        Failure { reason, message }
    }

    pub fn encode(&self) -> Vec<u8> {
        let message = truncate_utf8(&self.message, MAX_FAILURE_MESSAGE_BYTES);
        let mut out = Vec::with_capacity(2 + 2 + message.len());
        out.extend_from_slice(&self.reason.0.to_be_bytes());
        put_bytes(&mut out, message.as_bytes());
        out
    }

    /// Decodes a failure body. A message that is not UTF-8 is kept with
    /// replacement characters (cut back to the limit): it only goes to
    /// logs.
    pub fn decode(payload: &[u8]) -> Result<Failure, WireError> {
        let mut r = Reader::new(payload);
        let reason = FailureReason(r.u16()?);
        let message = r.bytes("failure message", MAX_FAILURE_MESSAGE_BYTES)?;
        r.finish()?;
        Ok(Failure {
            reason,
            message: lossy_utf8(message, MAX_FAILURE_MESSAGE_BYTES),
        })
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}: {}", self.reason, self.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_bodies_round_trip() {
        for (reason, name) in FailureReason::KNOWN {
            let f = Failure::new(reason, format!("because {name}"));
            assert_eq!(Failure::decode(&f.encode()), Ok(f));
        }
        let odd = Failure::new(FailureReason(0x7777), "");
        assert_eq!(Failure::decode(&odd.encode()), Ok(odd));
    }

    #[test]
    fn codes_match_the_spec() {
        assert_eq!(FailureReason::TIMEOUT.0, 2);
        assert_eq!(FailureReason::NODE_DOWN.0, 5);
        assert_eq!(FailureReason::UNKNOWN_VERB.0, 0x0103);
        assert_eq!(
            Failure::new(FailureReason::UNKNOWN_VERB, "x").encode(),
            vec![0x01, 0x03, 0x01, b'x']
        );
    }

    #[test]
    fn message_limit_at_n_and_n_plus_one() {
        let at_n = "m".repeat(MAX_FAILURE_MESSAGE_BYTES);
        let f = Failure::new(FailureReason::UNKNOWN, at_n.clone());
        assert_eq!(f.message, at_n);
        assert_eq!(Failure::decode(&f.encode()), Ok(f));
        // Encoding cuts a longer message ...
        let long = Failure::new(FailureReason::UNKNOWN, format!("{at_n}m"));
        assert_eq!(long.message.len(), MAX_FAILURE_MESSAGE_BYTES);
        // ... and decoding refuses one.
        let mut body = vec![0, 0];
        super::super::wire::put_bytes(&mut body, format!("{at_n}m").as_bytes());
        assert!(matches!(
            Failure::decode(&body),
            Err(WireError::TooLong { .. })
        ));
    }

    #[test]
    fn bad_bodies_are_errors() {
        assert_eq!(Failure::decode(&[0]), Err(WireError::Truncated));
        assert_eq!(Failure::decode(&[0, 1, 0, 9]), Err(WireError::Trailing(1)));
    }
}
