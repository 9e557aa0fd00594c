//! The bloom filter over an sstable's partition keys.
//!
//! Hashing: `(h1, h2) = murmur3_x64_128(key)` (Cassandra's variant, seed 0,
//! the same function that gives tokens); probe `i` (0-based, `i < k`) sets
//! bit `(h1 + i * h2) mod m` with wrapping u64 arithmetic. Sizing for `n`
//! keys and a false-positive chance `p`: `m = ceil(-n ln p / (ln 2)^2)`
//! bits (at least 64), `k = round(m / n * ln 2)` clamped to
//! `1..=MAX_HASHES`. A chance of 1.0 or more means no filter: every key
//! "may be contained" (Cassandra's meaning of `bloom_filter_fp_chance = 1`).
//!
//! On disk: `k` u32, `m` u64, then `ceil(m / 64)` u64 words little-endian,
//! bit `b` being bit `b % 64` of word `b / 64`.

use crate::encoding::Reader;
use crate::sstable::format::{get_u32, get_u64};

/// Most probes per key.
pub const MAX_HASHES: u32 = 30;
/// Most bits in a filter (512 MiB of words).
pub const MAX_BITS: u64 = 1 << 32;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BloomFilter {
    hashes: u32,
    bits: u64,
    words: Vec<u64>,
}

/// The two hash halves of a key, computed once per key.
pub fn key_hash(key: &[u8]) -> (u64, u64) {
    let (h1, h2) = varve_types::token::murmur3_x64_128(key);
    (h1 as u64, h2 as u64)
}

impl BloomFilter {
    /// An empty filter for `keys` keys at `fp_chance`.
    pub fn with_capacity(keys: u64, fp_chance: f64) -> Self {
        if fp_chance >= 1.0 || keys == 0 {
            return BloomFilter {
                hashes: 0,
                bits: 0,
                words: Vec::new(),
            };
        }
        let p = fp_chance.max(1e-12);
        let ln2 = std::f64::consts::LN_2;
        let bits = (-(keys as f64) * p.ln() / (ln2 * ln2)).ceil();
        let bits = (bits as u64).clamp(64, MAX_BITS);
        let hashes = ((bits as f64 / keys as f64) * ln2).round() as u32;
        let hashes = hashes.clamp(1, MAX_HASHES);
        BloomFilter {
            hashes,
            bits,
            words: vec![0; bits.div_ceil(64) as usize],
        }
    }

    /// Bit of probe `i`; only called when `bits > 0`.
    fn bit(&self, (h1, h2): (u64, u64), i: u64) -> u64 {
        h1.wrapping_add(i.wrapping_mul(h2)) % self.bits
    }

    pub fn insert(&mut self, hash: (u64, u64)) {
        if self.bits == 0 {
            return;
        }
        for i in 0..self.hashes as u64 {
            let b = self.bit(hash, i);
            self.words[(b / 64) as usize] |= 1 << (b % 64);
        }
    }

    /// False only when the key was never inserted.
    pub fn may_contain(&self, hash: (u64, u64)) -> bool {
        if self.bits == 0 {
            return true;
        }
        (0..self.hashes as u64).all(|i| {
            let b = self.bit(hash, i);
            self.words
                .get((b / 64) as usize)
                .is_some_and(|w| w & (1 << (b % 64)) != 0)
        })
    }

    /// Bytes of the bit array.
    pub fn size_bytes(&self) -> usize {
        self.words.len() * 8
    }

    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.hashes.to_be_bytes());
        out.extend_from_slice(&self.bits.to_be_bytes());
        for w in &self.words {
            out.extend_from_slice(&w.to_le_bytes());
        }
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, &'static str> {
        let mut r = Reader::new(bytes);
        let hashes = get_u32(&mut r).map_err(|_| "truncated bloom filter")?;
        let bits = get_u64(&mut r).map_err(|_| "truncated bloom filter")?;
        if hashes > MAX_HASHES || bits > MAX_BITS || (bits == 0) != (hashes == 0) {
            return Err("impossible bloom filter parameters");
        }
        let rest = &bytes[12..];
        if rest.len() as u64 != bits.div_ceil(64) * 8 {
            return Err("bloom filter length does not match its bit count");
        }
        let words = rest
            .chunks_exact(8)
            .map(|c| {
                let mut a = [0u8; 8];
                a.copy_from_slice(c);
                u64::from_le_bytes(a)
            })
            .collect();
        Ok(BloomFilter {
            hashes,
            bits,
            words,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn no_false_negatives_and_rate_near_target() {
        let n = 10_000u64;
        for p in [0.01, 0.1] {
            let mut f = BloomFilter::with_capacity(n, p);
            for i in 0..n {
                f.insert(key_hash(format!("key{i}").as_bytes()));
            }
            for i in 0..n {
                assert!(f.may_contain(key_hash(format!("key{i}").as_bytes())));
            }
            let trials = 100_000;
            let fp = (0..trials)
                .filter(|i| f.may_contain(key_hash(format!("other{i}").as_bytes())))
                .count();
            let rate = fp as f64 / trials as f64;
            assert!(rate < p * 1.3 && rate > p * 0.5, "p={p} rate={rate}");
        }
    }

    #[test]
    fn round_trips_and_rejects_bad_lengths() {
        let mut f = BloomFilter::with_capacity(100, 0.01);
        f.insert(key_hash(b"a"));
        let mut out = Vec::new();
        f.encode(&mut out);
        assert_eq!(BloomFilter::decode(&out).unwrap(), f);
        assert!(BloomFilter::decode(&out[..out.len() - 1]).is_err());
        let mut longer = out.clone();
        longer.push(0);
        assert!(BloomFilter::decode(&longer).is_err());
    }

    #[test]
    fn chance_of_one_disables_the_filter() {
        let f = BloomFilter::with_capacity(100, 1.0);
        assert!(f.may_contain(key_hash(b"anything")));
        let mut out = Vec::new();
        f.encode(&mut out);
        assert_eq!(BloomFilter::decode(&out).unwrap(), f);
    }

    /// `(k, m)` for `n` keys at chance `p`, by the sizing rule of
    /// docs/format/sstable.md.
    fn documented_size(n: u64, p: f64) -> (u32, u64) {
        if p >= 1.0 || n == 0 {
            return (0, 0);
        }
        let ln2 = std::f64::consts::LN_2;
        let m = (-(n as f64) * p.ln() / (ln2 * ln2)).ceil() as u64;
        let m = m.clamp(64, MAX_BITS);
        let k = ((m as f64 / n as f64) * ln2).round() as u32;
        (k.clamp(1, MAX_HASHES), m)
    }

    /// A key: short random bytes.
    fn arb_key() -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(any::<u8>(), 0..16)
    }

    /// A `bloom_filter_fp_chance` the writer accepts, (0, 1], or above.
    /// It starts at 1e-12: [`BloomFilter::with_capacity`] sizes any smaller
    /// chance as 1e-12, a floor the format doc's sizing rule does not
    /// state.
    fn arb_chance() -> impl Strategy<Value = f64> {
        prop_oneof![1e-12f64..1.0, Just(0.01), Just(0.1), Just(1.0), 1.0f64..4.0]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// For random key sets and chances: the encoding is `k` u32, `m`
        /// u64 by the documented sizing rule, then `ceil(m / 64)`
        /// little-endian words holding exactly the documented probe bits
        /// `(h1 + i * h2) mod m` of the inserted keys (no padding bit set);
        /// it decodes to the same filter, which says yes to every inserted
        /// key and answers as the written filter for any other key. One
        /// byte fewer or more is refused.
        #[test]
        fn decoded_filter_answers_as_the_written_one(
            keys in proptest::collection::btree_set(arb_key(), 0..300),
            others in proptest::collection::vec(arb_key(), 0..200),
            p in arb_chance(),
        ) {
            let n = keys.len() as u64;
            let mut f = BloomFilter::with_capacity(n, p);
            for key in &keys {
                f.insert(key_hash(key));
            }
            let mut bytes = Vec::new();
            f.encode(&mut bytes);

            let (k, m) = documented_size(n, p);
            let words = m.div_ceil(64) as usize;
            prop_assert_eq!(bytes.len(), 12 + 8 * words);
            prop_assert_eq!(f.size_bytes(), 8 * words);
            prop_assert_eq!(&bytes[..4], &k.to_be_bytes()[..]);
            prop_assert_eq!(&bytes[4..12], &m.to_be_bytes()[..]);
            let mut want = vec![0u64; words];
            for key in &keys {
                let (h1, h2) = varve_types::token::murmur3_x64_128(key);
                for i in 0..k as u64 {
                    let b = (h1 as u64).wrapping_add(i.wrapping_mul(h2 as u64)) % m;
                    want[(b / 64) as usize] |= 1 << (b % 64);
                }
            }
            let got: Vec<u64> = bytes[12..]
                .chunks_exact(8)
                .map(|w| u64::from_le_bytes(w.try_into().unwrap()))
                .collect();
            prop_assert_eq!(got, want);

            let decoded = BloomFilter::decode(&bytes).unwrap();
            prop_assert_eq!(&decoded, &f);
            for key in &keys {
                prop_assert!(decoded.may_contain(key_hash(key)), "false negative {:?}", key);
            }
            for key in &others {
                let h = key_hash(key);
                prop_assert_eq!(decoded.may_contain(h), f.may_contain(h), "{:?}", key);
            }
            prop_assert!(BloomFilter::decode(&bytes[..bytes.len() - 1]).is_err());
            bytes.push(0);
            prop_assert!(BloomFilter::decode(&bytes).is_err());
        }

        /// The decoder accepts exactly the documented parameters: `k` at
        /// most [`MAX_HASHES`], `m` at most [`MAX_BITS`], `k = 0` only with
        /// `m = 0`, and `ceil(m / 64)` words, not one more or fewer.
        #[test]
        fn decode_accepts_exactly_the_documented_parameters(
            k in prop_oneof![0u32..=MAX_HASHES + 1, any::<u32>()],
            m in prop_oneof![0u64..300, Just(MAX_BITS), Just(MAX_BITS + 1), any::<u64>()],
            extra_words in -1i64..=1,
        ) {
            let words = (m.div_ceil(64) as i64 + extra_words).clamp(0, 8) as usize;
            let mut bytes = Vec::new();
            bytes.extend_from_slice(&k.to_be_bytes());
            bytes.extend_from_slice(&m.to_be_bytes());
            bytes.resize(12 + 8 * words, 0xa5);
            let valid = k <= MAX_HASHES
                && m <= MAX_BITS
                && (k == 0) == (m == 0)
                && words as u64 == m.div_ceil(64);
            prop_assert_eq!(BloomFilter::decode(&bytes).is_ok(), valid);
        }
    }
}
