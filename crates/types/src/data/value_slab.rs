//! Written values are copied into shared chunks instead of getting one
//! allocation each (Cassandra's memtable regions play the same part).
//!
//! A memtable keeps every cell value until it is flushed, and then frees
//! them all on the flush thread. With one allocation per value, that was a
//! free per cell, across threads, on memory long gone from the cache: the
//! largest cost of a write workload's flush. Here each thread copies the
//! values it writes into its current chunk of [`SLAB_CHUNK_BYTES`]; a value
//! is a [`Bytes`] slice that holds a reference to its chunk, and a chunk is
//! freed once, when its last value goes. Values over
//! [`SLAB_VALUE_MAX_BYTES`] get their own allocation, so a large value
//! does not throw away the rest of a chunk.
//!
//! The price is memory: a chunk stays alive while any value in it does (a
//! value overwritten in the memtable, or one that outlives its memtable in
//! a cache). Chunks are small so that this stays a small share.

use crate::data::PartitionKey;
use bytes::{Bytes, BytesMut};
use std::cell::RefCell;

/// Size of the chunk each writing thread copies values into.
pub const SLAB_CHUNK_BYTES: usize = 64 * 1024;

/// Largest value copied into a chunk; longer ones are allocated alone.
pub const SLAB_VALUE_MAX_BYTES: usize = SLAB_CHUNK_BYTES / 8;

thread_local! {
    /// The unused tail of this thread's current chunk.
    static CHUNK: RefCell<BytesMut> = RefCell::new(BytesMut::new());
}

/// A copy of `value`, in this thread's current chunk when it is small
/// enough.
pub fn copy_value(value: &[u8]) -> Bytes {
    if value.is_empty() {
        return Bytes::new();
    }
    if value.len() > SLAB_VALUE_MAX_BYTES {
        return Bytes::copy_from_slice(value);
    }
    CHUNK.with(|chunk| {
        let mut chunk = chunk.borrow_mut();
        if chunk.capacity() - chunk.len() < value.len() {
            *chunk = BytesMut::with_capacity(SLAB_CHUNK_BYTES);
        }
        chunk.extend_from_slice(value);
        chunk.split().freeze()
    })
}

/// A copy of `key` whose bytes are in this thread's chunk: for a key the
/// memtable will keep.
pub fn copy_key(key: &PartitionKey) -> PartitionKey {
    PartitionKey {
        token: key.token,
        key: copy_value(&key.key),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `f` on a new thread, whose chunk starts empty.
    fn on_a_fresh_thread(f: impl FnOnce() + Send + 'static) {
        std::thread::spawn(f).join().unwrap();
    }

    /// Whether `b` starts right where `a` ends (the same chunk, in order).
    fn adjacent(a: &Bytes, b: &Bytes) -> bool {
        a.as_ptr() as usize + a.len() == b.as_ptr() as usize
    }

    #[test]
    fn small_values_share_a_chunk_in_order() {
        on_a_fresh_thread(|| {
            let a = copy_value(b"first");
            let b = copy_value(b"second value");
            let c = copy_value(&[7u8; 100]);
            assert_eq!(&a[..], b"first");
            assert_eq!(&b[..], b"second value");
            assert_eq!(&c[..], &[7u8; 100][..]);
            assert!(adjacent(&a, &b) && adjacent(&b, &c));
            drop(a);
            // The chunk lives on for the values still held.
            assert_eq!(&b[..], b"second value");
        });
    }

    #[test]
    fn the_largest_slab_value_goes_into_a_chunk_and_one_byte_more_does_not() {
        on_a_fresh_thread(|| {
            let at_limit = vec![1u8; SLAB_VALUE_MAX_BYTES];
            let a = copy_value(b"x");
            let b = copy_value(&at_limit);
            assert!(adjacent(&a, &b), "a value of the limit shares the chunk");
            let over = vec![2u8; SLAB_VALUE_MAX_BYTES + 1];
            let c = copy_value(&over);
            assert_eq!(c, over);
            let d = copy_value(b"y");
            assert!(!adjacent(&b, &c), "a value over the limit is alone");
            assert!(adjacent(&b, &d), "the chunk is still the current one");
        });
    }

    #[test]
    fn a_value_that_does_not_fit_starts_a_new_chunk() {
        on_a_fresh_thread(|| {
            let piece = vec![3u8; SLAB_VALUE_MAX_BYTES];
            let held: Vec<Bytes> = (0..SLAB_CHUNK_BYTES / SLAB_VALUE_MAX_BYTES)
                .map(|_| copy_value(&piece))
                .collect();
            // The chunk is exactly full: every piece follows the last.
            assert!(held.windows(2).all(|w| adjacent(&w[0], &w[1])));
            let next = copy_value(b"z");
            assert!(!adjacent(held.last().unwrap(), &next));
            assert_eq!(&next[..], b"z");
            assert!(held.iter().all(|h| h[..] == piece[..]));
        });
    }

    #[test]
    fn empty_values_take_no_space() {
        on_a_fresh_thread(|| {
            let a = copy_value(b"a");
            assert!(copy_value(b"").is_empty());
            let b = copy_value(b"b");
            assert!(adjacent(&a, &b));
        });
    }
}
