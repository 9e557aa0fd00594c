//! Fuzz target: opening and reading an sstable image never panics, whatever
//! the bytes; damage is reported as a corruption error.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    varve_storage::sstable::fuzz_open(data);
});
