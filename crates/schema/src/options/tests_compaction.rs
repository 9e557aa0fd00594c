//! Tests of compaction sub-option checks, per strategy, with Cassandra's messages.

use super::super::compaction::{CompactionParams, CompactionStrategy, TimeUnit};
use super::super::TombstoneOption;
use std::collections::BTreeMap;

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn ok(pairs: &[(&str, &str)]) -> CompactionParams {
    CompactionParams::from_map(&map(pairs)).unwrap()
}

fn err(pairs: &[(&str, &str)]) -> String {
    CompactionParams::from_map(&map(pairs))
        .unwrap_err()
        .to_string()
}

#[test]
fn class_names_resolve_and_render_full() {
    let short = ok(&[("class", "SizeTieredCompactionStrategy")]);
    let full = ok(&[(
        "class",
        "org.apache.cassandra.db.compaction.SizeTieredCompactionStrategy",
    )]);
    assert_eq!(short, full);
    assert_eq!(short, CompactionParams::default());
    assert_eq!(
        short.to_map(),
        map(&[
            (
                "class",
                "org.apache.cassandra.db.compaction.SizeTieredCompactionStrategy"
            ),
            ("max_threshold", "32"),
            ("min_threshold", "4"),
        ])
    );
    assert_eq!(
        err(&[("class", "Foo")]),
        "Unable to find compaction strategy class 'org.apache.cassandra.db.compaction.Foo'"
    );
    assert_eq!(
        err(&[("class", "DateTieredCompactionStrategy")]),
        "Unable to find compaction strategy class 'org.apache.cassandra.db.compaction.DateTieredCompactionStrategy'"
    );
    assert_eq!(
        err(&[("min_threshold", "4")]),
        "Missing sub-option 'class' for the 'compaction' option"
    );
}

#[test]
fn unknown_sub_options() {
    assert_eq!(
        err(&[("class", "SizeTieredCompactionStrategy"), ("foo", "1")]),
        "Properties specified [foo] are not understood by SizeTieredCompactionStrategy"
    );
    assert_eq!(
        err(&[("class", "SizeTieredCompactionStrategy"), ("sstable_size_in_mb", "1")]),
        "Properties specified [sstable_size_in_mb] are not understood by SizeTieredCompactionStrategy"
    );
    assert_eq!(
        err(&[
            ("class", "UnifiedCompactionStrategy"),
            ("min_threshold", "4")
        ]),
        "Properties specified [min_threshold] are not understood by UnifiedCompactionStrategy"
    );
}

#[test]
fn thresholds() {
    let p = ok(&[
        ("class", "SizeTieredCompactionStrategy"),
        ("min_threshold", "2"),
        ("max_threshold", "2"),
    ]);
    assert_eq!(p.size_tiered().min_threshold, 2);
    assert_eq!(
        err(&[
            ("class", "SizeTieredCompactionStrategy"),
            ("min_threshold", "1")
        ]),
        "Min compaction threshold cannot be less than 2 (got 1)"
    );
    assert_eq!(
        err(&[("class", "SizeTieredCompactionStrategy"), ("min_threshold", "0")]),
        "Disabling compaction by setting compaction thresholds to 0 has been removed, set the compaction option 'enabled' to false instead."
    );
    assert_eq!(
        err(&[("class", "SizeTieredCompactionStrategy"), ("min_threshold", "33")]),
        "Min compaction threshold (got 33) cannot be greater than max compaction threshold (got 32)"
    );
    assert_eq!(
        err(&[
            ("class", "SizeTieredCompactionStrategy"),
            ("max_threshold", "-1")
        ]),
        "Invalid value -1 for 'max_threshold' compaction sub-option - must be an integer"
    );
}

#[test]
fn common_options() {
    let p = ok(&[
        ("class", "LeveledCompactionStrategy"),
        ("enabled", "false"),
        ("tombstone_threshold", "0.3"),
        ("tombstone_compaction_interval", "3600"),
        ("unchecked_tombstone_compaction", "TRUE"),
        ("only_purge_repaired_tombstones", "true"),
        ("log_all", "true"),
        ("provide_overlapping_tombstones", "row"),
    ]);
    let c = p.common();
    assert!(!c.enabled);
    assert_eq!(c.tombstone_threshold, 0.3);
    assert_eq!(c.tombstone_compaction_interval_s, 3600);
    assert!(c.unchecked_tombstone_compaction && c.only_purge_repaired_tombstones && c.log_all);
    assert_eq!(c.provide_overlapping_tombstones, TombstoneOption::Row);
    let cell = ok(&[
        ("class", "SizeTieredCompactionStrategy"),
        ("provide_overlapping_tombstones", "CELL"),
    ]);
    assert_eq!(
        cell.common().provide_overlapping_tombstones,
        TombstoneOption::Cell
    );
    assert_eq!(
        CompactionParams::default()
            .common()
            .provide_overlapping_tombstones,
        TombstoneOption::None
    );
    let cases: &[(&str, &str, &str)] = &[
        ("provide_overlapping_tombstones", "rows", "Invalid value ROWS for 'provide_overlapping_tombstones' compaction sub-option - must be one of the following [NONE, ROW, CELL]."),
        ("tombstone_threshold", "-1", "tombstone_threshold must be greater than 0, but was -1.000000"),
        ("tombstone_threshold", "x", "x is not a parsable int (base10) for tombstone_threshold"),
        ("tombstone_compaction_interval", "-1", "tombstone_compaction_interval must be greater than 0, but was -1"),
        ("unchecked_tombstone_compaction", "yes", "'unchecked_tombstone_compaction' should be either 'true' or 'false', not 'yes'"),
        ("log_all", "1", "'log_all' should either be 'true' or 'false', not 1"),
        ("enabled", "no", "enabled should either be 'true' or 'false', not no"),
    ];
    for (key, value, message) in cases {
        assert_eq!(
            err(&[("class", "SizeTieredCompactionStrategy"), (key, value)]),
            *message
        );
    }
}

#[test]
fn size_tiered_options() {
    let p = ok(&[
        ("class", "SizeTieredCompactionStrategy"),
        ("bucket_low", "0.3"),
        ("bucket_high", "2"),
        ("min_sstable_size", "1048576"),
    ]);
    let s = p.size_tiered();
    assert_eq!((s.bucket_low, s.bucket_high), (0.3, 2.0));
    assert_eq!(s.min_sstable_size_bytes, 1_048_576);
    assert_eq!(
        err(&[
            ("class", "SizeTieredCompactionStrategy"),
            ("bucket_high", "0.5")
        ]),
        "bucket_high value (0.5) is less than or equal to the bucket_low value (0.5)"
    );
    assert_eq!(
        err(&[
            ("class", "SizeTieredCompactionStrategy"),
            ("bucket_low", "x")
        ]),
        "x is not a parsable float for bucket_low"
    );
    assert_eq!(
        err(&[
            ("class", "SizeTieredCompactionStrategy"),
            ("min_sstable_size", "-1")
        ]),
        "min_sstable_size must be non negative: -1"
    );
}

#[test]
fn leveled_options() {
    let p = ok(&[
        ("class", "LeveledCompactionStrategy"),
        ("sstable_size_in_mb", "256"),
        ("fanout_size", "8"),
        ("single_sstable_uplevel", "true"),
        ("bucket_low", "0.4"),
    ]);
    let l = p.leveled();
    assert_eq!((l.sstable_size_in_mb, l.fanout_size), (256, 8));
    assert!(l.single_sstable_uplevel);
    assert_eq!(l.l0.max_threshold, 32);
    assert_eq!(
        ok(&[("class", "LeveledCompactionStrategy")])
            .leveled()
            .sstable_size_in_mb,
        160
    );
    assert_eq!(
        err(&[
            ("class", "LeveledCompactionStrategy"),
            ("sstable_size_in_mb", "0")
        ]),
        "sstable_size_in_mb must be larger than 0, but was 0"
    );
    assert_eq!(
        err(&[
            ("class", "LeveledCompactionStrategy"),
            ("sstable_size_in_mb", "x")
        ]),
        "x is not a parsable int (base10) for sstable_size_in_mb"
    );
    assert_eq!(
        err(&[("class", "LeveledCompactionStrategy"), ("fanout_size", "0")]),
        "fanout_size must be larger than 0, but was 0"
    );
    // Cassandra 5.0.4 names the sstable size (default "1") in this message; checked live.
    assert_eq!(
        err(&[("class", "LeveledCompactionStrategy"), ("fanout_size", "x")]),
        "1 is not a parsable int (base10) for fanout_size"
    );
}

#[test]
fn time_window_options() {
    let p = ok(&[
        ("class", "TimeWindowCompactionStrategy"),
        ("compaction_window_unit", "HOURS"),
        ("compaction_window_size", "6"),
        ("timestamp_resolution", "MILLISECONDS"),
        ("expired_sstable_check_frequency_seconds", "60"),
        ("unsafe_aggressive_sstable_expiration", "false"),
    ]);
    let t = p.time_window();
    assert_eq!(t.compaction_window_unit, TimeUnit::Hours);
    assert_eq!(t.compaction_window_size, 6);
    assert_eq!(t.timestamp_resolution, TimeUnit::Milliseconds);
    assert_eq!(t.expired_sstable_check_frequency_seconds, 60);
    let d = ok(&[("class", "TimeWindowCompactionStrategy")]).time_window();
    assert_eq!(
        (d.compaction_window_unit, d.compaction_window_size),
        (TimeUnit::Days, 1)
    );
    let cases: &[(&str, &str, &str)] = &[
        ("compaction_window_unit", "SECONDS", "SECONDS is not valid for compaction_window_unit"),
        ("compaction_window_unit", "days", "days is not valid for compaction_window_unit"),
        ("timestamp_resolution", "DAYS", "DAYS is not valid for timestamp_resolution"),
        ("compaction_window_size", "0", "0 must be greater than 1 for compaction_window_size"),
        ("expired_sstable_check_frequency_seconds", "-1", "expired_sstable_check_frequency_seconds must not be negative, but was -1"),
        ("unsafe_aggressive_sstable_expiration", "maybe", "unsafe_aggressive_sstable_expiration is not 'true' or 'false' (maybe)"),
        ("unsafe_aggressive_sstable_expiration", "true", "unsafe_aggressive_sstable_expiration is requested but not allowed, restart cassandra with -Dcassandra.allow_unsafe_aggressive_sstable_expiration=true to allow it"),
    ];
    for (key, value, message) in cases {
        assert_eq!(
            err(&[("class", "TimeWindowCompactionStrategy"), (key, value)]),
            *message
        );
    }
    assert_eq!(p.strategy, CompactionStrategy::TimeWindow);
}
