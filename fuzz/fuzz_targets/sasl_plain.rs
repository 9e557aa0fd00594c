//! Fuzz target: the SASL PLAIN parser of AUTH_RESPONSE tokens.
//!
//! Any input must give credentials or an error, never a panic; what it
//! accepts must respect the length limit, have a non-empty user name and
//! password, and re-encode to a token that parses to the same credentials.
#![no_main]

use libfuzzer_sys::fuzz_target;
use varve_protocol::sasl::{encode_plain, parse_plain, SASL_TOKEN_MAX_BYTES};

fuzz_target!(|data: &[u8]| {
    if let Ok(c) = parse_plain(data) {
        assert!(data.len() <= SASL_TOKEN_MAX_BYTES);
        assert!(!c.username.is_empty() && !c.password.is_empty());
        let again = encode_plain(&c.username, &c.password);
        if again.len() <= SASL_TOKEN_MAX_BYTES && !c.username.contains('\0') && !c.password.contains('\0') {
            assert_eq!(parse_plain(&again), Ok(c));
        }
    }
});
