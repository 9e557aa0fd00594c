//! Log-linear bucket arithmetic, HdrHistogram-style: values below
//! [`LINEAR_LIMIT`] get one bucket each (exact); above it every power of two
//! `[2^k, 2^(k+1))` is split into [`SUB_BUCKETS`] equal buckets of width
//! `2^(k-5)`. A bucket's midpoint is then within `width / 2 / 2^k = 1/64`
//! (1.5625 %) of any value in it, which is the histogram's error bound.
//!
//! ```text
//! index:   0 1 2 .. 63 | 64 .. 95          | 96 .. 127          | ...
//! value:   0 1 2 .. 63 | 64,66,..,126 (w=2) | 128,132,..,252(w=4)| ...
//! ```

use std::sync::atomic::{AtomicU64, Ordering};

/// log2 of the sub-buckets per power of two.
pub const SUB_BUCKET_BITS: u32 = 5;
/// Sub-buckets per power of two (32: relative error ≤ 1/64).
pub const SUB_BUCKETS: u64 = 1 << SUB_BUCKET_BITS;
/// Values below this have a bucket of their own (exact).
pub const LINEAR_LIMIT: u64 = 2 * SUB_BUCKETS;
/// The largest value tracked: 60 s in microseconds. Larger values are
/// recorded as this one and counted as clamped.
pub const MAX_MICROS: u64 = 60_000_000;
/// Buckets needed to reach [`MAX_MICROS`] (698).
pub const BUCKET_COUNT: usize = index_of(MAX_MICROS) + 1;

/// The bucket of `value` (callers clamp to [`MAX_MICROS`] first; larger
/// values get larger indexes).
#[inline]
pub const fn index_of(value: u64) -> usize {
    if value < LINEAR_LIMIT {
        return value as usize;
    }
    let k = 63 - value.leading_zeros(); // value in [2^k, 2^(k+1)), k >= 6
    let sub = (value >> (k - SUB_BUCKET_BITS)) - SUB_BUCKETS; // 0..32
    let octave = (k - (SUB_BUCKET_BITS + 1)) as u64;
    (LINEAR_LIMIT + octave * SUB_BUCKETS + sub) as usize
}

/// The smallest value in bucket `index`.
pub const fn low_of(index: usize) -> u64 {
    let i = index as u64;
    if i < LINEAR_LIMIT {
        return i;
    }
    let j = i - LINEAR_LIMIT;
    let shift = (j / SUB_BUCKETS) as u32 + 1; // k - 5
    (SUB_BUCKETS + j % SUB_BUCKETS) << shift
}

/// The largest value in bucket `index` (inclusive).
pub const fn high_of(index: usize) -> u64 {
    let i = index as u64;
    if i < LINEAR_LIMIT {
        return i;
    }
    let shift = ((i - LINEAR_LIMIT) / SUB_BUCKETS) as u32 + 1;
    low_of(index) + (1 << shift) - 1
}

/// The value reported for bucket `index`: its midpoint.
pub fn midpoint_of(index: usize) -> f64 {
    (low_of(index) as f64 + high_of(index) as f64) / 2.0
}

/// A fixed array of bucket counts, allocated once.
#[derive(Debug)]
pub struct Buckets {
    counts: Box<[AtomicU64]>,
}

impl Default for Buckets {
    fn default() -> Self {
        Self::new()
    }
}

impl Buckets {
    /// All-zero buckets.
    pub fn new() -> Self {
        Self {
            counts: (0..BUCKET_COUNT).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// Counts one value in bucket `index` (ignored past the end, which the
    /// clamp in the caller rules out).
    #[inline]
    pub fn increment(&self, index: usize) {
        if let Some(c) = self.counts.get(index) {
            c.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Adds every count into `into` (which must be `BUCKET_COUNT` long).
    pub fn add_to(&self, into: &mut [u64]) {
        for (dst, c) in into.iter_mut().zip(self.counts.iter()) {
            *dst += c.load(Ordering::Relaxed);
        }
    }

    /// The total count, summed bucket by bucket.
    pub fn total(&self) -> u64 {
        self.counts.iter().map(|c| c.load(Ordering::Relaxed)).sum()
    }

    /// Sets every count to zero.
    pub fn clear(&self) {
        for c in self.counts.iter() {
            c.store(0, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_count_is_as_documented() {
        assert_eq!(BUCKET_COUNT, 698);
        assert!(high_of(BUCKET_COUNT - 1) >= MAX_MICROS);
    }

    #[test]
    fn buckets_tile_the_range_without_gaps() {
        for i in 0..BUCKET_COUNT - 1 {
            assert_eq!(high_of(i) + 1, low_of(i + 1), "bucket {i}");
            assert_eq!(index_of(low_of(i)), i);
            assert_eq!(index_of(high_of(i)), i);
        }
    }

    #[test]
    fn midpoint_error_is_within_bound() {
        for i in 0..BUCKET_COUNT {
            let mid = midpoint_of(i);
            for v in [low_of(i), high_of(i)] {
                let err = (mid - v as f64).abs() / (v.max(1) as f64);
                assert!(err <= 1.0 / 64.0, "bucket {i} value {v} err {err}");
            }
        }
    }

    #[test]
    fn small_values_are_exact() {
        for v in 0..LINEAR_LIMIT {
            assert_eq!(midpoint_of(index_of(v)), v as f64);
        }
    }
}
