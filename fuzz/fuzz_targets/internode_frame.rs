//! Fuzz target: the internode frame decoder and the handshake and failure
//! payload decoders on arbitrary bytes.
//!
//! `varve_cluster::net::fuzz::fuzz_decode` takes piece sizes from the first
//! two bytes, feeds the rest to the frame decoder whole, in those pieces
//! and one byte at a time (under the handshake rules and the established
//! ones), and checks every answer is the same; then it decodes the bytes
//! as HELLO, HELLO_ACK, HELLO_REJECT and failure payloads (and every data,
//! streaming, whole-sstable (STREAM_FILE, STREAM_FILE_OFFER), metadata,
//! Paxos and repair payload decoder) and checks that whatever decodes
//! encodes and decodes again to the same value. Any
//! panic, overflow (debug assertions are on) or hang is a bug.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    varve_cluster::net::fuzz::fuzz_decode(data);
});
