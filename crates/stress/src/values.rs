//! Deterministic keys and column values. A key is a function of its
//! population index; a value is a function of (index, column, generation),
//! so `--verify` can recompute what a read must return without remembering
//! anything. Generation 0 is what `write` writes.

/// Bytes of a partition key (cassandra-stress's default key size).
pub const KEY_SIZE_BYTES: usize = 10;
/// Largest `--col-size`.
pub const COLUMN_SIZE_MAX: usize = 16 * 1024 * 1024;
/// Largest `--col-count`.
pub const COLUMN_COUNT_MAX: usize = 64;

/// splitmix64: a fast, well-mixed 64-bit hash step.
pub fn mix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// The 10-byte key of `index`: two hash bytes, then the index big-endian,
/// so distinct indexes always give distinct keys.
pub fn key(index: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(KEY_SIZE_BYTES);
    out.extend_from_slice(&mix64(index).to_be_bytes()[..KEY_SIZE_BYTES - 8]);
    out.extend_from_slice(&index.to_be_bytes());
    out
}

/// `size` bytes for column `column` of the row `index` at `generation`.
pub fn column_value(index: u64, column: usize, generation: u64, size: usize) -> Vec<u8> {
    let seed = mix64(mix64(index) ^ mix64((column as u64) << 32 | 0x5EED) ^ generation);
    fill(seed, size)
}

/// `size` pseudo-random bytes from `seed`.
pub fn fill(seed: u64, size: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(size);
    let mut state = seed;
    while out.len() < size {
        state = mix64(state);
        let take = (size - out.len()).min(8);
        out.extend_from_slice(&state.to_le_bytes()[..take]);
    }
    out
}

/// The names of the `count` value columns: `"C0"`, `"C1"`, ...
pub fn column_names(count: usize) -> Vec<String> {
    (0..count).map(|i| format!("\"C{i}\"")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn keys_are_ten_bytes_and_distinct() {
        let keys: HashSet<Vec<u8>> = (0..10_000).map(key).collect();
        assert_eq!(keys.len(), 10_000);
        assert!(keys.iter().all(|k| k.len() == KEY_SIZE_BYTES));
        assert_eq!(key(77), key(77));
    }

    #[test]
    fn values_are_deterministic_and_depend_on_every_input() {
        let v = column_value(5, 2, 0, 34);
        assert_eq!(v.len(), 34);
        assert_eq!(v, column_value(5, 2, 0, 34));
        assert_ne!(v, column_value(6, 2, 0, 34));
        assert_ne!(v, column_value(5, 3, 0, 34));
        assert_ne!(v, column_value(5, 2, 1, 34));
        assert_eq!(
            &column_value(5, 2, 0, 100)[..34],
            &v[..],
            "a prefix of a longer value"
        );
        assert!(column_value(5, 2, 0, 0).is_empty());
        // A pinned value: changing the derivation breaks `--verify` against
        // data written by an older build, so it must be a deliberate change.
        assert_eq!(mix64(0), 0xE220_A839_7B1D_CDAF);
    }

    #[test]
    fn column_names_are_quoted() {
        assert_eq!(column_names(2), vec!["\"C0\"", "\"C1\""]);
    }
}
