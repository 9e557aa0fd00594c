//! Fuzz target: a partition entry read through its row index (format 3:
//! header, items, index entries, offsets table, trailer) never panics,
//! whatever the bytes; no checksum stands in front of the decoder here.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    varve_storage::sstable::partition_reader::fuzz_row_index(data);
});
