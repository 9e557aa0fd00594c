//! Fuzz target: every native-protocol decoder on arbitrary bytes.
//!
//! `varve_protocol::fuzz_decode` runs the v4 envelope decoder (one-shot and
//! stateful), request and response bodies under every opcode for v3, v4 and v5,
//! v5 segments with and without LZ4 and their reassembly, v4 LZ4 bodies and
//! the type decoder. Any panic, overflow (debug assertions are on) or hang
//! is a bug: untrusted bytes must only ever yield an error.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    varve_protocol::fuzz_decode(data);
});
