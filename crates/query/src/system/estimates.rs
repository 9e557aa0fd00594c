//! `system.size_estimates` and `system.table_estimates`: per table and per
//! token range of this node, how many partitions it holds and their mean
//! size, which drivers and Spark read to split a table into tasks.
//!
//! The ranges are this node's primary ranges: for each of its tokens, the
//! range from the ring's previous token (any node's) to it, as strings of
//! the Murmur3 tokens. A range that wraps past the end of the ring is cut at
//! the minimum token in two, as Cassandra's `SizeEstimatesRecorder` cuts it
//! (`(a, -9223372036854775808]` and `(-9223372036854775808, b]`).
//! `table_estimates` has each row twice, with `range_type` `primary` and
//! `local_primary` (one node: the same ranges).
//!
//! Estimates come from the sstables, as Cassandra's do (memtables are not
//! counted): `partitions_count` is the table's sstable partitions times the
//! share of the ring the range covers (Cassandra samples its index summary
//! per range; keys are spread evenly by Murmur3), and `mean_partition_size`
//! the sstables' uncompressed partition bytes over their partitions (as
//! Cassandra's mean of its partition size histogram). Unlike Cassandra,
//! which records them every five minutes, they are computed when read.
//! Rows cover the keyspaces of applications (not the system keyspaces).

use super::VRow;
use crate::processor::Processor;
use varve_schema::Schema;
use varve_types::Value;

/// Cassandra's `range_type` values of `table_estimates`.
const RANGE_TYPES: [&str; 2] = ["local_primary", "primary"];

/// This node's primary ranges, `(start, end]`, unwrapped at the minimum token.
pub fn primary_ranges(local: &[i64], others: &[i64]) -> Vec<(i64, i64)> {
    let mut ring: Vec<i64> = local.iter().chain(others).copied().collect();
    ring.sort_unstable();
    ring.dedup();
    let mut out = Vec::new();
    for &end in local {
        let Ok(i) = ring.binary_search(&end) else {
            continue;
        };
        let start = if i == 0 {
            ring[ring.len() - 1]
        } else {
            ring[i - 1]
        };
        if start < end {
            out.push((start, end));
        } else {
            // The range wraps (or is the whole ring, with one token).
            if start != i64::MIN {
                out.push((start, i64::MIN));
            }
            if end != i64::MIN {
                out.push((i64::MIN, end));
            }
        }
    }
    out
}

/// The share of the ring `(start, end]` covers; `(x, MIN]` runs to the end.
fn ring_share(start: i64, end: i64) -> f64 {
    let end = if end == i64::MIN {
        i128::from(i64::MAX) + 1
    } else {
        i128::from(end)
    };
    let width = (end - i128::from(start)).max(0);
    width as f64 / 2f64.powi(64)
}

/// The rows of `size_estimates` (`with_type` false) or `table_estimates`.
pub fn rows(p: &Processor, schema: &Schema, with_type: bool) -> Vec<VRow> {
    let local = p.tokens();
    let others: Vec<i64> = p
        .cluster_view()
        .peers()
        .iter()
        .flat_map(|peer| peer.tokens.clone())
        .collect();
    let ranges = primary_ranges(&local, &others);
    let mut out = Vec::new();
    for ks in schema.keyspaces.values().filter(|k| !k.is_system) {
        for table in ks.tables.values() {
            let Ok(stats) = p.storage.table_stats(table.id) else {
                continue;
            };
            let partitions = stats.sstable_partitions;
            let mean = stats
                .sstable_uncompressed_bytes
                .checked_div(partitions)
                .unwrap_or(0);
            for &(start, end) in &ranges {
                let count = (partitions as f64 * ring_share(start, end)).round() as i64;
                let types: &[&str] = if with_type { &RANGE_TYPES } else { &[""] };
                for range_type in types {
                    let mut row = VRow::new();
                    row.insert("keyspace_name", Value::Text(ks.name.clone()));
                    row.insert("table_name", Value::Text(table.name.clone()));
                    if with_type {
                        row.insert("range_type", Value::Text(range_type.to_string()));
                    }
                    row.insert("range_start", Value::Text(start.to_string()));
                    row.insert("range_end", Value::Text(end.to_string()));
                    row.insert("mean_partition_size", Value::BigInt(mean as i64));
                    row.insert("partitions_count", Value::BigInt(count));
                    out.push(row);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn primary_ranges_end_at_local_tokens_and_unwrap() {
        // Local 0 and 100, a peer at 50: (50, 100] and (-inf.., 0] wrapped.
        let r = primary_ranges(&[0, 100], &[50]);
        assert_eq!(r, vec![(100, i64::MIN), (i64::MIN, 0), (50, 100)]);
        // One token owns the whole ring.
        assert_eq!(
            primary_ranges(&[7], &[]),
            vec![(7, i64::MIN), (i64::MIN, 7)]
        );
        assert_eq!(primary_ranges(&[i64::MIN], &[]), Vec::<(i64, i64)>::new());
    }

    #[test]
    fn shares_of_the_ring_add_up_to_one() {
        let ranges = primary_ranges(&[-5, 3, 1 << 40], &[9, -(1 << 50)]);
        let local: f64 = ranges.iter().map(|&(s, e)| ring_share(s, e)).sum();
        let others = primary_ranges(&[9, -(1 << 50)], &[-5, 3, 1 << 40]);
        let rest: f64 = others.iter().map(|&(s, e)| ring_share(s, e)).sum();
        assert!((local + rest - 1.0).abs() < 1e-9, "{local} + {rest}");
    }
}
