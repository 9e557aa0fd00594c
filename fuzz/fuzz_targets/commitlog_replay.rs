//! Fuzz target: replaying a commitlog segment image never panics, whatever
//! the bytes; damage ends the replay of the segment with a warning.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    varve_storage::commitlog::fuzz_replay(data);
});
