//! Robustness and round-trip tests: hostile input never panics, and options survive
//! `system_schema` rows and DESCRIBE text unchanged.

use super::tests_table::{create, map, num, text};
use super::*;

/// Hostile text for every option and every sub-option must yield an error or a value, never
/// a panic (sizes, multi-byte characters, separators in odd places).
#[test]
fn no_input_panics() {
    let nasty = [
        "",
        " ",
        "é",
        "ÉB",
        "1é",
        "MIN(",
        "MAX(é,é)",
        "MIN(1p,)",
        "ＭＩＮ(1p,1ms)",
        "1/",
        "/1",
        "1/2/3",
        "-",
        "+",
        ".",
        "..p",
        "1e",
        "1e+",
        "NaN",
        "-Infinity",
        "9".repeat(40).leak(),
        "1*2^",
        "1*2^99999999999B",
        "1 KiBB",
        "T",
        "L",
        "-2147483649",
        "\u{0}",
        "%",
        " 5 % ",
    ];
    let sub_keys = [
        "class",
        "enabled",
        "min_threshold",
        "max_threshold",
        "tombstone_threshold",
        "tombstone_compaction_interval",
        "bucket_low",
        "bucket_high",
        "min_sstable_size",
        "sstable_size_in_mb",
        "fanout_size",
        "compaction_window_unit",
        "compaction_window_size",
        "timestamp_resolution",
        "scaling_parameters",
        "target_sstable_size",
        "base_shard_count",
        "sstable_growth",
        "flush_size_override",
        "chunk_length_in_kb",
        "min_compress_ratio",
        "lz4_high_compressor_level",
        "compression_level",
        "keys",
        "rows_per_partition",
        "replication_factor",
        "datacenter1",
    ];
    let names = [
        "additional_write_policy",
        "allow_auto_snapshot",
        "bloom_filter_fp_chance",
        "caching",
        "cdc",
        "comment",
        "compaction",
        "compression",
        "memtable",
        "crc_check_chance",
        "default_time_to_live",
        "extensions",
        "gc_grace_seconds",
        "incremental_backups",
        "max_index_interval",
        "memtable_flush_period_in_ms",
        "min_index_interval",
        "read_repair",
        "speculative_retry",
    ];
    for value in nasty {
        for name in names {
            let _ = create(&[(name, text(value))]);
            let _ = create(&[(name, num(value))]);
        }
        for key in sub_keys {
            for class in [
                "SizeTieredCompactionStrategy",
                "LeveledCompactionStrategy",
                "TimeWindowCompactionStrategy",
                "UnifiedCompactionStrategy",
            ] {
                let _ = create(&[("compaction", map(&[("class", class), (key, value)]))]);
            }
            for class in ["LZ4Compressor", "ZstdCompressor"] {
                let _ = create(&[("compression", map(&[("class", class), (key, value)]))]);
            }
            let _ = create(&[("caching", map(&[(key, value)]))]);
            for class in ["SimpleStrategy", "NetworkTopologyStrategy"] {
                let m = [
                    ("class".to_string(), class.to_string()),
                    (key.to_string(), value.to_string()),
                ];
                let _ = ReplicationParams::from_map(&m.into_iter().collect());
            }
        }
    }
}

/// DESCRIBE text and system_schema rows are stable under a round trip for varied options.
#[test]
fn schema_rows_round_trip() {
    let variants = [
        vec![(
            "compaction",
            map(&[
                ("class", "TimeWindowCompactionStrategy"),
                ("compaction_window_unit", "HOURS"),
            ]),
        )],
        vec![(
            "compaction",
            map(&[
                ("class", "UnifiedCompactionStrategy"),
                ("scaling_parameters", "L10, T4"),
            ]),
        )],
        vec![
            ("compression", map(&[("enabled", "false")])),
            ("cdc", OptionValue::Bool(true)),
        ],
        vec![
            ("speculative_retry", text("MAX(99.9p,20ms)")),
            ("additional_write_policy", text("ALWAYS")),
        ],
        vec![
            (
                "caching",
                map(&[("keys", "ALL"), ("rows_per_partition", "100")]),
            ),
            ("memtable", text("skiplist")),
        ],
        vec![
            ("default_time_to_live", num("630720000")),
            ("incremental_backups", OptionValue::Bool(false)),
        ],
    ];
    for v in variants {
        let o = create(&v).unwrap();
        let back = TableOptions::from_schema_row(&o.to_schema_row_for(true)).unwrap();
        assert_eq!(back, o, "{v:?}");
        assert_eq!(back.to_cql(), o.to_cql());
    }
    for p in [0.1, 1.0, 50.0, 99.0, 99.9, 99.99] {
        let s = SpeculativeRetry::Percentile(p);
        assert_eq!(SpeculativeRetry::parse(&s.to_string()).unwrap(), s);
    }
    for ms in [0, 1, 50, i32::MAX] {
        let s = SpeculativeRetry::FixedMs(ms);
        assert_eq!(SpeculativeRetry::parse(&s.to_string()).unwrap(), s);
    }
}
