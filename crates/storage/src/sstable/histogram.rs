//! The two histograms kept in an sstable's statistics.
//!
//! [`SizeHistogram`]: partition sizes in fixed, exponentially growing
//! buckets (each bound is the previous times 1.2, rounded up, and at least
//! one more), like Cassandra's `EstimatedHistogram`; the last bucket counts
//! values above every bound.
//!
//! [`DropTimeHistogram`]: the local deletion times of tombstones and
//! expiring values, as a streaming histogram with at most `max_bins` bins
//! (Ben-Haim and Tom-Tov, "A Streaming Parallel Decision Tree Algorithm",
//! the idea behind Cassandra's `StreamingTombstoneHistogramBuilder`). Each
//! time is first rounded up to a multiple of [`DROP_TIME_ROUND_SECONDS`];
//! equal points share a bin; when a new point makes one bin too many, the
//! two adjacent bins closest together become one bin at their
//! count-weighted mean. [`DropTimeHistogram::sum`] estimates how many
//! values are at or before a time, which compaction uses to estimate the
//! droppable tombstones of an sstable (`sum(gc_before)`).

use crate::encoding::{put_varint, Reader};
use crate::sstable::format::get_u32;
use std::collections::BTreeMap;

/// Number of bucket bounds of a [`SizeHistogram`].
pub const SIZE_BUCKETS: usize = 150;
/// Default and largest bin counts of a [`DropTimeHistogram`].
pub const DROP_TIME_MAX_BINS: usize = 100;
pub const DROP_TIME_MAX_BINS_LIMIT: usize = 10_000;
/// Drop times are rounded up to a multiple of this.
pub const DROP_TIME_ROUND_SECONDS: i64 = 60;

/// The upper bound of each bucket (inclusive).
pub fn size_bucket_bounds() -> Vec<u64> {
    let mut bounds = Vec::with_capacity(SIZE_BUCKETS);
    let mut last = 1u64;
    bounds.push(last);
    while bounds.len() < SIZE_BUCKETS {
        let next = last
            .saturating_mul(6)
            .div_ceil(5)
            .max(last.saturating_add(1));
        bounds.push(next);
        last = next;
    }
    bounds
}

/// Counts of values per bucket; `counts[SIZE_BUCKETS]` is the overflow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SizeHistogram {
    pub counts: Vec<u64>,
}

impl Default for SizeHistogram {
    fn default() -> Self {
        SizeHistogram {
            counts: vec![0; SIZE_BUCKETS + 1],
        }
    }
}

impl SizeHistogram {
    pub fn add(&mut self, bounds: &[u64], value: u64) {
        let i = bounds.partition_point(|b| *b < value);
        if let Some(c) = self.counts.get_mut(i) {
            *c += 1;
        }
    }

    pub fn total(&self) -> u64 {
        self.counts.iter().fold(0u64, |a, c| a.saturating_add(*c))
    }

    /// The bucket bound at or above the `q`-quantile (0.0..=1.0);
    /// `u64::MAX` when it falls in the overflow bucket, 0 when empty.
    pub fn quantile(&self, q: f64) -> u64 {
        let total = self.total();
        if total == 0 {
            return 0;
        }
        let want = ((total as f64) * q.clamp(0.0, 1.0)).ceil().max(1.0) as u64;
        let bounds = size_bucket_bounds();
        let mut seen = 0;
        for (i, c) in self.counts.iter().enumerate() {
            seen = c.saturating_add(seen);
            if seen >= want {
                return bounds.get(i).copied().unwrap_or(u64::MAX);
            }
        }
        u64::MAX
    }

    pub fn encode(&self, out: &mut Vec<u8>) {
        put_varint(out, self.counts.len() as u64);
        for c in &self.counts {
            put_varint(out, *c);
        }
    }

    pub fn decode(r: &mut Reader) -> Result<Self, &'static str> {
        let n = r.varint().map_err(|_| "truncated size histogram")?;
        if n != (SIZE_BUCKETS + 1) as u64 {
            return Err("size histogram has the wrong bucket count");
        }
        let mut counts = Vec::with_capacity(SIZE_BUCKETS + 1);
        for _ in 0..n {
            counts.push(r.varint().map_err(|_| "truncated size histogram")?);
        }
        Ok(SizeHistogram { counts })
    }
}

/// A bounded streaming histogram of drop times (see the module doc).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DropTimeHistogram {
    max_bins: usize,
    bins: BTreeMap<i64, u64>,
}

impl Default for DropTimeHistogram {
    fn default() -> Self {
        DropTimeHistogram::new(DROP_TIME_MAX_BINS)
    }
}

impl DropTimeHistogram {
    pub fn new(max_bins: usize) -> Self {
        DropTimeHistogram {
            max_bins: max_bins.clamp(1, DROP_TIME_MAX_BINS_LIMIT),
            bins: BTreeMap::new(),
        }
    }

    /// The bins, as (point, count) in point order.
    pub fn bins(&self) -> impl Iterator<Item = (i64, u64)> + '_ {
        self.bins.iter().map(|(p, c)| (*p, *c))
    }

    pub fn total(&self) -> u64 {
        self.bins.values().fold(0u64, |a, c| a.saturating_add(*c))
    }

    /// Records one drop time (seconds).
    pub fn add(&mut self, seconds: i32) {
        let p = seconds as i64;
        let rounded = p.div_euclid(DROP_TIME_ROUND_SECONDS) * DROP_TIME_ROUND_SECONDS;
        let point = if rounded == p {
            p
        } else {
            rounded + DROP_TIME_ROUND_SECONDS
        };
        self.add_point(point, 1);
    }

    fn add_point(&mut self, point: i64, count: u64) {
        let slot = self.bins.entry(point).or_insert(0);
        *slot = slot.saturating_add(count);
        while self.bins.len() > self.max_bins {
            self.merge_closest();
        }
    }

    /// Replaces the two adjacent bins closest together by one.
    fn merge_closest(&mut self) {
        let mut best: Option<(i128, i64, i64)> = None;
        let mut prev: Option<i64> = None;
        for p in self.bins.keys() {
            if let Some(q) = prev {
                let gap = *p as i128 - q as i128;
                if best.is_none_or(|(g, _, _)| gap < g) {
                    best = Some((gap, q, *p));
                }
            }
            prev = Some(*p);
        }
        let Some((_, a, b)) = best else { return };
        let ca = self.bins.remove(&a).unwrap_or(0);
        let cb = self.bins.remove(&b).unwrap_or(0);
        let total = ca.saturating_add(cb);
        // The weighted mean lies between a and b; on (forged) counts too
        // large for i128, fall back to the midpoint.
        let weighted = (a as i128)
            .checked_mul(ca as i128)
            .zip((b as i128).checked_mul(cb as i128))
            .and_then(|(x, y)| x.checked_add(y));
        let mean = match weighted {
            Some(sum) if total > 0 => (sum / total as i128) as i64,
            _ => a / 2 + b / 2,
        };
        let slot = self.bins.entry(mean).or_insert(0);
        *slot = slot.saturating_add(total);
    }

    /// Adds every bin of `other` (for merging the statistics of inputs).
    pub fn merge(&mut self, other: &DropTimeHistogram) {
        for (p, c) in other.bins() {
            self.add_point(p, c);
        }
    }

    /// Estimated number of values at or before `seconds`.
    pub fn sum(&self, seconds: i64) -> f64 {
        let bins: Vec<(f64, f64)> = self.bins().map(|(p, c)| (p as f64, c as f64)).collect();
        let b = seconds as f64;
        let Some(first) = bins.first() else {
            return 0.0;
        };
        if b < first.0 {
            return 0.0;
        }
        let mut total = 0.0;
        for w in bins.windows(2) {
            let ((pi, mi), (pj, mj)) = (w[0], w[1]);
            if b < pj {
                let frac = (b - pi) / (pj - pi);
                let mb = mi + (mj - mi) * frac;
                return total + mi / 2.0 + (mi + mb) / 2.0 * frac;
            }
            total += mi;
        }
        total + bins.last().map_or(0.0, |l| l.1)
    }

    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&(self.max_bins as u32).to_be_bytes());
        put_varint(out, self.bins.len() as u64);
        for (p, c) in self.bins() {
            out.extend_from_slice(&p.to_be_bytes());
            put_varint(out, c);
        }
    }

    pub fn decode(r: &mut Reader) -> Result<Self, &'static str> {
        let bad = |_| "truncated drop time histogram";
        let max_bins = get_u32(r).map_err(bad)? as usize;
        let n = r.varint().map_err(bad)?;
        if max_bins == 0 || max_bins > DROP_TIME_MAX_BINS_LIMIT || n > max_bins as u64 {
            return Err("impossible drop time histogram");
        }
        let mut bins = BTreeMap::new();
        let mut last = None;
        for _ in 0..n {
            let p = r.i64().map_err(bad)?;
            let c = r.varint().map_err(bad)?;
            if last.is_some_and(|l| l >= p) {
                return Err("drop time histogram points out of order");
            }
            last = Some(p);
            bins.insert(p, c);
        }
        Ok(DropTimeHistogram { max_bins, bins })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn size_bounds_grow_and_values_land_in_the_right_bucket() {
        let bounds = size_bucket_bounds();
        assert_eq!(&bounds[..8], &[1, 2, 3, 4, 5, 6, 8, 10]);
        assert!(bounds.windows(2).all(|w| w[0] < w[1]));
        let mut h = SizeHistogram::default();
        for v in [1, 7, 7, 1000, u64::MAX] {
            h.add(&bounds, v);
        }
        assert_eq!(h.counts[0], 1);
        assert_eq!(h.counts[6], 2);
        assert_eq!(h.counts[SIZE_BUCKETS], 1);
        assert_eq!(h.quantile(0.5), 8);
        let mut out = Vec::new();
        h.encode(&mut out);
        assert_eq!(SizeHistogram::decode(&mut Reader::new(&out)).unwrap(), h);
    }

    #[test]
    fn drop_times_stay_within_bins_and_sum_estimates() {
        let mut h = DropTimeHistogram::new(10);
        for t in 0..10_000 {
            h.add(t * 7);
        }
        assert!(h.bins.len() <= 10);
        assert_eq!(h.total(), 10_000);
        // Uniform data: about half the values lie before the midpoint.
        let half = h.sum(35_000);
        assert!((half - 5_000.0).abs() < 600.0, "{half}");
        assert_eq!(h.sum(-1), 0.0);
        assert_eq!(h.sum(i64::MAX), 10_000.0);
        let mut out = Vec::new();
        h.encode(&mut out);
        assert_eq!(
            DropTimeHistogram::decode(&mut Reader::new(&out)).unwrap(),
            h
        );
    }

    #[test]
    fn drop_times_round_up_to_the_minute() {
        let mut h = DropTimeHistogram::default();
        h.add(1);
        h.add(60);
        h.add(-59);
        h.add(i32::MAX);
        let bins: Vec<_> = h.bins().collect();
        assert_eq!(bins[0], (0, 1));
        assert_eq!(bins[1], (60, 2));
        assert_eq!(bins[2].1, 1);
    }

    /// A partition size: small, realistic, or anything up to `u64::MAX`.
    fn arb_size() -> impl Strategy<Value = u64> {
        prop_oneof![0u64..100, 0u64..10_000_000, any::<u64>()]
    }

    /// A drop time: near the epoch, a realistic one, or any `i32`.
    fn arb_drop_time() -> impl Strategy<Value = i32> {
        prop_oneof![-200i32..200, 1_600_000_000i32..1_600_100_000, any::<i32>()]
    }

    /// `t` rounded up to a multiple of [`DROP_TIME_ROUND_SECONDS`].
    fn rounded_up(t: i32) -> i64 {
        (t as i64 + DROP_TIME_ROUND_SECONDS - 1).div_euclid(DROP_TIME_ROUND_SECONDS)
            * DROP_TIME_ROUND_SECONDS
    }

    fn histogram_of(max_bins: usize, times: &[i32]) -> DropTimeHistogram {
        let mut h = DropTimeHistogram::new(max_bins);
        for t in times {
            h.add(*t);
        }
        h
    }

    /// The rounded-up times of `times`, counted per point.
    fn exact_bins(times: &[i32]) -> BTreeMap<i64, u64> {
        let mut bins = BTreeMap::new();
        for t in times {
            *bins.entry(rounded_up(*t)).or_insert(0) += 1;
        }
        bins
    }

    fn encoded(h: &DropTimeHistogram) -> Vec<u8> {
        let mut out = Vec::new();
        h.encode(&mut out);
        out
    }

    proptest! {
        /// Random sizes land in the bucket the format doc gives (`bound[i-1]
        /// < v <= bound[i]`, the last bucket above every bound); the
        /// histogram decodes to itself; on the decoded histogram each
        /// quantile is the smallest bound at or above the
        /// `ceil(q * n)`-th smallest value (`u64::MAX` past the last
        /// bound); every strict prefix of the encoding is an error.
        #[test]
        fn size_histogram_round_trips_with_its_buckets_and_quantiles(
            values in proptest::collection::vec(arb_size(), 0..300),
            qs in proptest::collection::vec(0.0f64..=1.0, 1..6),
        ) {
            let bounds = size_bucket_bounds();
            let mut h = SizeHistogram::default();
            for v in &values {
                h.add(&bounds, *v);
            }
            for i in 0..=SIZE_BUCKETS {
                let want = values
                    .iter()
                    .filter(|v| i == 0 || bounds[i - 1] < **v)
                    .filter(|v| i == SIZE_BUCKETS || **v <= bounds[i])
                    .count() as u64;
                prop_assert_eq!(h.counts[i], want, "bucket {}", i);
            }
            let mut out = Vec::new();
            h.encode(&mut out);
            let decoded = SizeHistogram::decode(&mut Reader::new(&out)).unwrap();
            prop_assert_eq!(&decoded, &h);
            prop_assert_eq!(decoded.total(), values.len() as u64);
            let mut sorted = values.clone();
            sorted.sort_unstable();
            for q in qs {
                let want = match sorted.len() {
                    0 => 0,
                    n => {
                        let rank = ((n as f64) * q).ceil().max(1.0) as usize;
                        let v = sorted[rank - 1];
                        bounds.iter().copied().find(|b| *b >= v).unwrap_or(u64::MAX)
                    }
                };
                prop_assert_eq!(decoded.quantile(q), want, "q = {}", q);
            }
            for cut in 0..out.len() {
                let got = SizeHistogram::decode(&mut Reader::new(&out[..cut]));
                prop_assert!(got.is_err(), "cut {}", cut);
            }
        }

        /// Any bucket counts, up to `u64::MAX`, decode to themselves, and a
        /// bucket count other than 151 is refused.
        #[test]
        fn size_histogram_of_any_counts_round_trips(
            counts in proptest::collection::vec(
                prop_oneof![Just(0u64), 0u64..1000, any::<u64>()],
                SIZE_BUCKETS + 1,
            ),
            wrong in (0u64..400).prop_filter("not 151", |n| *n != (SIZE_BUCKETS + 1) as u64),
        ) {
            let h = SizeHistogram { counts };
            let mut out = Vec::new();
            h.encode(&mut out);
            prop_assert_eq!(SizeHistogram::decode(&mut Reader::new(&out)), Ok(h.clone()));
            // The same counts behind another bucket count.
            let mut bad = Vec::new();
            put_varint(&mut bad, wrong);
            for c in &h.counts {
                put_varint(&mut bad, *c);
            }
            prop_assert!(SizeHistogram::decode(&mut Reader::new(&bad)).is_err());
        }

        /// Random drop times, with room for every distinct point or not:
        /// the count is kept, the bins never pass `max_bins`, and with room
        /// for every point the bins are exactly the times rounded up to
        /// the minute; once bins merge, every point stays between the
        /// smallest and largest rounded time. The estimate `sum` is 0
        /// before the first point, the total from the last on, and never
        /// decreases in between. The histogram decodes to itself, and
        /// every strict prefix of its encoding is an error.
        #[test]
        fn drop_time_histogram_round_trips_and_keeps_its_invariants(
            times in proptest::collection::vec(arb_drop_time(), 0..300),
            max_bins in prop_oneof![1usize..8, 1usize..=120, Just(DROP_TIME_MAX_BINS)],
            probes in proptest::collection::vec(any::<i32>(), 0..20),
        ) {
            let h = histogram_of(max_bins, &times);
            let exact = exact_bins(&times);
            let bins: BTreeMap<i64, u64> = h.bins().collect();
            prop_assert_eq!(h.total(), times.len() as u64);
            prop_assert!(bins.len() <= max_bins);
            if exact.len() <= max_bins {
                prop_assert_eq!(&bins, &exact);
            } else {
                let (lo, hi) = (exact.keys().next().unwrap(), exact.keys().last().unwrap());
                let inside = bins.keys().all(|p| lo <= p && p <= hi);
                prop_assert!(inside, "{:?} outside {}..={}", bins, lo, hi);
            }

            let total = h.total() as f64;
            if let (Some(first), Some(last)) = (bins.keys().next(), bins.keys().last()) {
                prop_assert_eq!(h.sum(first - 1), 0.0);
                prop_assert_eq!(h.sum(*last), total);
                prop_assert_eq!(h.sum(i64::MAX), total);
            }
            let mut at: Vec<i64> = probes.iter().map(|t| *t as i64).collect();
            at.extend(bins.keys());
            at.sort_unstable();
            let sums: Vec<f64> = at.iter().map(|t| h.sum(*t)).collect();
            let slack = 1e-9 * total.max(1.0);
            prop_assert!(sums.iter().all(|s| (0.0..=total + slack).contains(s)), "{:?}", sums);
            prop_assert!(sums.windows(2).all(|w| w[0] <= w[1] + slack), "{:?}", sums);

            let out = encoded(&h);
            let decoded = DropTimeHistogram::decode(&mut Reader::new(&out)).unwrap();
            prop_assert_eq!(&decoded, &h);
            for cut in 0..out.len() {
                let got = DropTimeHistogram::decode(&mut Reader::new(&out[..cut]));
                prop_assert!(got.is_err(), "cut {}", cut);
            }
        }

        /// Merging two histograms keeps both counts and the bin limit of
        /// the one merged into; with room for every distinct point it
        /// gives the histogram of the two streams as one; the result
        /// decodes to itself.
        #[test]
        fn merged_drop_time_histograms_keep_their_counts(
            a in proptest::collection::vec(arb_drop_time(), 0..150),
            b in proptest::collection::vec(arb_drop_time(), 0..150),
            max_bins in 1usize..=120,
            other_bins in 1usize..=120,
        ) {
            let mut merged = histogram_of(max_bins, &a);
            merged.merge(&histogram_of(other_bins, &b));
            prop_assert_eq!(merged.total(), (a.len() + b.len()) as u64);
            prop_assert!(merged.bins().count() <= max_bins);
            let both: Vec<i32> = a.iter().chain(&b).copied().collect();
            let b_exact = exact_bins(&b).len() <= other_bins;
            if b_exact && exact_bins(&both).len() <= max_bins {
                prop_assert_eq!(&merged, &histogram_of(max_bins, &both));
            }
            let out = encoded(&merged);
            prop_assert_eq!(DropTimeHistogram::decode(&mut Reader::new(&out)), Ok(merged));
        }

        /// The decoder accepts bins only in strictly ascending point order,
        /// at most `max_bins` of them, with `max_bins` in 1..=10000.
        #[test]
        fn drop_time_decode_refuses_impossible_histograms(
            max_bins in prop_oneof![
                0u32..4,
                Just(DROP_TIME_MAX_BINS_LIMIT as u32),
                Just(DROP_TIME_MAX_BINS_LIMIT as u32 + 1),
            ],
            points in proptest::collection::vec(-3i64..3, 0..5),
        ) {
            let mut out = Vec::new();
            out.extend_from_slice(&max_bins.to_be_bytes());
            put_varint(&mut out, points.len() as u64);
            for p in &points {
                out.extend_from_slice(&p.to_be_bytes());
                put_varint(&mut out, 1);
            }
            let valid = (1..=DROP_TIME_MAX_BINS_LIMIT as u32).contains(&max_bins)
                && points.len() as u32 <= max_bins
                && points.windows(2).all(|w| w[0] < w[1]);
            prop_assert_eq!(DropTimeHistogram::decode(&mut Reader::new(&out)).is_ok(), valid);
        }
    }
}
