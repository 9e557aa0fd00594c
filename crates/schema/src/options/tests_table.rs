//! Tests of [`TableOptions`]: defaults, every option accepted and refused, limits at N and
//! N+1, ALTER semantics, and DESCRIBE rendering against the seed schema.

use super::*;

pub(super) fn text(s: &str) -> OptionValue {
    OptionValue::Text(s.to_string())
}

pub(super) fn num(s: &str) -> OptionValue {
    OptionValue::Number(s.to_string())
}

pub(super) fn map(pairs: &[(&str, &str)]) -> OptionValue {
    OptionValue::Map(
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    )
}

fn props(list: &[(&str, OptionValue)]) -> Vec<(String, OptionValue)> {
    list.iter()
        .map(|(n, v)| (n.to_string(), v.clone()))
        .collect()
}

pub(super) fn create(list: &[(&str, OptionValue)]) -> Result<TableOptions> {
    TableOptions::for_create(&props(list))
}

fn create_err(name: &str, value: OptionValue) -> OptionError {
    create(&[(name, value)]).unwrap_err()
}

fn cfg(msg: &str) -> OptionError {
    OptionError::Config(msg.to_string())
}

fn syn(msg: &str) -> OptionError {
    OptionError::Syntax(msg.to_string())
}

/// The options of shared/seeds/002 (Cassandra 4.0 DESCRIBE output), lines rejoined, plus the
/// three lines Cassandra 5.0 adds (allow_auto_snapshot, memtable, incremental_backups).
const SEED_002_OPTIONS_5_0: &str = "additional_write_policy = '99p'
    AND allow_auto_snapshot = true
    AND bloom_filter_fp_chance = 0.01
    AND caching = {'keys': 'ALL', 'rows_per_partition': 'NONE'}
    AND cdc = false
    AND comment = ''
    AND compaction = {'class': 'org.apache.cassandra.db.compaction.SizeTieredCompactionStrategy', 'max_threshold': '32', 'min_threshold': '4'}
    AND compression = {'chunk_length_in_kb': '16', 'class': 'org.apache.cassandra.io.compress.LZ4Compressor'}
    AND memtable = 'default'
    AND crc_check_chance = 1.0
    AND default_time_to_live = 0
    AND extensions = {}
    AND gc_grace_seconds = 864000
    AND incremental_backups = true
    AND max_index_interval = 2048
    AND memtable_flush_period_in_ms = 0
    AND min_index_interval = 128
    AND read_repair = 'BLOCKING'
    AND speculative_retry = '99p'";

#[test]
fn defaults_render_like_cassandra_5() {
    assert_eq!(TableOptions::default().to_cql(), SEED_002_OPTIONS_5_0);
    assert_eq!(create(&[]).unwrap(), TableOptions::default());
}

#[test]
fn seed_002_options_round_trip() {
    let seed = props(&[
        ("additional_write_policy", text("99p")),
        ("bloom_filter_fp_chance", num("0.01")),
        (
            "caching",
            map(&[("keys", "ALL"), ("rows_per_partition", "NONE")]),
        ),
        ("cdc", OptionValue::Bool(false)),
        ("comment", text("")),
        (
            "compaction",
            map(&[
                (
                    "class",
                    "org.apache.cassandra.db.compaction.SizeTieredCompactionStrategy",
                ),
                ("max_threshold", "32"),
                ("min_threshold", "4"),
            ]),
        ),
        (
            "compression",
            map(&[
                ("chunk_length_in_kb", "16"),
                ("class", "org.apache.cassandra.io.compress.LZ4Compressor"),
            ]),
        ),
        ("crc_check_chance", num("1.0")),
        ("default_time_to_live", num("0")),
        ("extensions", OptionValue::Map(Default::default())),
        ("gc_grace_seconds", num("864000")),
        ("max_index_interval", num("2048")),
        ("memtable_flush_period_in_ms", num("0")),
        ("min_index_interval", num("128")),
        ("read_repair", text("BLOCKING")),
        ("speculative_retry", text("99p")),
    ]);
    let options = TableOptions::for_create(&seed).unwrap();
    assert_eq!(options.to_cql(), SEED_002_OPTIONS_5_0);
    // And through system_schema and back.
    let row = options.to_schema_row();
    assert_eq!(TableOptions::from_schema_row(&row).unwrap(), options);
}

#[test]
fn unknown_duplicate_and_mistyped_properties_are_syntax_errors() {
    assert_eq!(create_err("foo", num("1")), syn("Unknown property 'foo'"));
    assert_eq!(
        create(&[("comment", text("a")), ("comment", text("b"))]).unwrap_err(),
        syn("Multiple definitions for property 'comment'")
    );
    assert_eq!(
        create_err("compaction", text("x")),
        syn("Invalid value for property 'compaction'. It should be a map.")
    );
    assert_eq!(
        create_err("comment", map(&[])),
        syn("Invalid value for property 'comment'. It should be a string")
    );
    assert_eq!(
        create_err("gc_grace_seconds", num("1.5")),
        syn("Invalid integer value 1.5 for 'gc_grace_seconds'")
    );
    assert_eq!(
        create_err("crc_check_chance", text("x")),
        syn("Invalid double value x for 'crc_check_chance'")
    );
    assert_eq!(
        create_err("cdc", text("maybe")),
        syn("Invalid boolean value maybe for 'cdc'. Positive values can be '1', 'true' or 'yes'. Negative values can be '0', 'false' or 'no'.")
    );
    // `id` is a valid keyword at CREATE (the caller reads it) but cannot be altered.
    assert!(create(&[("id", text("5a1c395e-b41f-11e5-9f22-ba0be0483c18"))]).is_ok());
    assert_eq!(
        TableOptions::default()
            .altered(&props(&[("id", text("x"))]))
            .unwrap_err(),
        cfg("Cannot alter table id.")
    );
}

#[test]
fn every_option_accepted() {
    let o = create(&[
        ("additional_write_policy", text("NEVER")),
        ("allow_auto_snapshot", OptionValue::Bool(false)),
        ("bloom_filter_fp_chance", num("0.1")),
        (
            "caching",
            map(&[("keys", "NONE"), ("rows_per_partition", "ALL")]),
        ),
        ("cdc", OptionValue::Bool(true)),
        ("comment", text("it's")),
        (
            "compaction",
            map(&[
                ("class", "LeveledCompactionStrategy"),
                ("sstable_size_in_mb", "128"),
            ]),
        ),
        ("compression", map(&[("enabled", "false")])),
        ("memtable", text("trie")),
        ("crc_check_chance", num("0.5")),
        ("default_time_to_live", num("3600")),
        ("extensions", map(&[("k", "v")])),
        ("gc_grace_seconds", num("0")),
        ("incremental_backups", text("no")),
        ("max_index_interval", num("4096")),
        ("memtable_flush_period_in_ms", num("60000")),
        ("min_index_interval", num("64")),
        ("read_repair", text("none")),
        ("speculative_retry", text("MIN(99p,50ms)")),
    ])
    .unwrap();
    assert_eq!(o.read_repair, ReadRepair::None);
    assert!(!o.incremental_backups && !o.allow_auto_snapshot && o.cdc);
    assert!(o.extensions.is_empty(), "Cassandra ignores WITH extensions");
    let cql = o.to_cql();
    for line in [
        "additional_write_policy = 'NEVER'",
        "AND allow_auto_snapshot = false",
        "AND bloom_filter_fp_chance = 0.1",
        "AND caching = {'keys': 'NONE', 'rows_per_partition': 'ALL'}",
        "AND comment = 'it''s'",
        "AND compaction = {'class': 'org.apache.cassandra.db.compaction.LeveledCompactionStrategy', 'max_threshold': '32', 'min_threshold': '4', 'sstable_size_in_mb': '128'}",
        "AND compression = {'enabled': 'false'}",
        "AND memtable = 'trie'",
        "AND crc_check_chance = 0.5",
        "AND incremental_backups = false",
        "AND read_repair = 'NONE'",
        "AND speculative_retry = 'MIN(99p,50ms)'",
    ] {
        assert!(cql.contains(line), "missing {line:?} in\n{cql}");
    }
    let row = o.to_schema_row();
    assert_eq!(
        TableOptions::from_schema_row(&row).unwrap().memtable,
        "trie"
    );
}

#[test]
fn every_option_refused_with_cassandra_message() {
    let cases: Vec<(&str, OptionValue, OptionError)> = vec![
        ("additional_write_policy", text("x"), cfg("Invalid value x for option 'speculative_retry'")),
        ("bloom_filter_fp_chance", num("0"), cfg("bloom_filter_fp_chance must be larger than 6.71E-5 and less than or equal to 1.0 (got 0.0)")),
        ("bloom_filter_fp_chance", num("0.00001"), cfg("bloom_filter_fp_chance must be larger than 6.71E-5 and less than or equal to 1.0 (got 1.0E-5)")),
        ("bloom_filter_fp_chance", num("NaN"), cfg("bloom_filter_fp_chance must be larger than 6.71E-5 and less than or equal to 1.0 (got NaN)")),
        ("bloom_filter_fp_chance", num("1.01"), cfg("bloom_filter_fp_chance must be larger than 6.71E-5 and less than or equal to 1.0 (got 1.01)")),
        ("caching", map(&[("keys", "x")]), cfg("Invalid value 'x' for caching sub-option 'keys': only 'ALL' and 'NONE' are allowed")),
        ("compaction", map(&[("class", "Foo")]), cfg("Unable to find compaction strategy class 'org.apache.cassandra.db.compaction.Foo'")),
        ("compaction", map(&[("class", "SizeTieredCompactionStrategy"), ("foo", "1")]), cfg("Properties specified [foo] are not understood by SizeTieredCompactionStrategy")),
        ("compression", map(&[("class", "LZ4Compressor"), ("chunk_length_in_kb", "3")]), cfg("chunk_length_in_kb must be a power of 2")),
        ("memtable", text("fast"), cfg("Memtable configuration \"fast\" not found.")),
        ("crc_check_chance", num("1.5"), cfg("crc_check_chance must be larger than or equal to 0 and smaller than or equal to 1.0 (got 1.5)")),
        ("crc_check_chance", num("-0.1"), cfg("crc_check_chance must be larger than or equal to 0 and smaller than or equal to 1.0 (got -0.1)")),
        ("default_time_to_live", num("-1"), cfg("default_time_to_live must be greater than or equal to 0 (got -1)")),
        ("gc_grace_seconds", num("-1"), cfg("gc_grace_seconds must be greater than or equal to 0 (got -1)")),
        ("min_index_interval", num("0"), cfg("min_index_interval must be greater than or equal to 1 (got 0)")),
        ("max_index_interval", num("127"), cfg("max_index_interval must be greater than or equal to min_index_interval (128) (got 127)")),
        ("memtable_flush_period_in_ms", num("-1"), cfg("memtable_flush_period_in_ms must be greater than or equal to 0 (got -1)")),
        ("read_repair", text("async"), cfg("No enum constant org.apache.cassandra.service.reads.repair.ReadRepairStrategy.ASYNC")),
        ("speculative_retry", text("101p"), cfg("Invalid value 101p for PERCENTILE option 'speculative_retry': must be between (0.0 and 100.0)")),
        ("allow_auto_snapshot", text("x"), syn("Invalid boolean value x for 'allow_auto_snapshot'. Positive values can be '1', 'true' or 'yes'. Negative values can be '0', 'false' or 'no'.")),
        ("incremental_backups", num("2"), syn("Invalid boolean value 2 for 'incremental_backups'. Positive values can be '1', 'true' or 'yes'. Negative values can be '0', 'false' or 'no'.")),
        ("comment", map(&[]), syn("Invalid value for property 'comment'. It should be a string")),
    ];
    for (name, value, expected) in cases {
        assert_eq!(
            create_err(name, value.clone()),
            expected,
            "{name} = {value:?}"
        );
    }
}

#[test]
fn limits_at_n_and_n_plus_one() {
    let ttl = |v: i64| create(&[("default_time_to_live", num(&v.to_string()))]);
    assert_eq!(
        ttl(630_720_000).unwrap().default_time_to_live,
        MAX_TTL_SECONDS
    );
    assert_eq!(
        ttl(630_720_001).unwrap_err(),
        cfg("default_time_to_live must be less than or equal to 630720000 (got 630720001)")
    );
    let fp = |v: &str| create(&[("bloom_filter_fp_chance", num(v))]);
    assert!(fp("1.0").is_ok());
    assert!(fp("0.0000672").is_ok());
    assert!(fp("0.0000671").is_err());
    assert!(create(&[
        ("min_index_interval", num("1")),
        ("max_index_interval", num("1"))
    ])
    .is_ok());
    let chunk = |kb: &str| {
        create(&[(
            "compression",
            map(&[("class", "LZ4Compressor"), ("chunk_length_in_kb", kb)]),
        )])
    };
    assert!(chunk("64").is_ok());
    assert!(chunk("65").is_err());
    assert!(chunk("1").is_ok());
    let crc = |v: &str| create(&[("crc_check_chance", num(v))]);
    assert!(crc("0").is_ok() && crc("1").is_ok());
    assert!(create(&[("gc_grace_seconds", num("2147483647"))]).is_ok());
    assert_eq!(
        create_err("gc_grace_seconds", num("2147483648")),
        syn("Invalid integer value 2147483648 for 'gc_grace_seconds'")
    );
}

#[test]
fn batch_options_are_parsed_before_validation() {
    // Raising both intervals in one statement works although min > old max.
    let o = create(&[
        ("min_index_interval", num("4096")),
        ("max_index_interval", num("8192")),
    ])
    .unwrap();
    assert_eq!((o.min_index_interval, o.max_index_interval), (4096, 8192));
    // But one at a time, the first change fails.
    let mut o = TableOptions::default();
    assert_eq!(
        o.apply("min_index_interval", &num("4096")).unwrap_err(),
        cfg("max_index_interval must be greater than or equal to min_index_interval (4096) (got 2048)")
    );
    assert_eq!(
        o,
        TableOptions::default(),
        "a failed apply leaves options unchanged"
    );
}

#[test]
fn bloom_filter_default_follows_compaction_at_create_only() {
    let lcs = map(&[("class", "LeveledCompactionStrategy")]);
    let o = create(&[("compaction", lcs.clone())]).unwrap();
    assert_eq!(o.bloom_filter_fp_chance, 0.1);
    let o = create(&[
        ("compaction", lcs.clone()),
        ("bloom_filter_fp_chance", num("0.02")),
    ])
    .unwrap();
    assert_eq!(o.bloom_filter_fp_chance, 0.02);
    let mut o = TableOptions::default();
    o.apply("compaction", &lcs).unwrap();
    assert_eq!(
        o.bloom_filter_fp_chance, 0.01,
        "ALTER keeps the existing value"
    );
}

#[test]
fn alter_compaction_to_lcs_replaces_the_whole_map() {
    let mut o = create(&[(
        "compaction",
        map(&[
            ("class", "SizeTieredCompactionStrategy"),
            ("bucket_high", "2.0"),
            ("min_threshold", "6"),
        ]),
    )])
    .unwrap();
    o.apply(
        "compaction",
        &map(&[
            ("class", "LeveledCompactionStrategy"),
            ("sstable_size_in_mb", "256"),
        ]),
    )
    .unwrap();
    assert_eq!(o.compaction.strategy, CompactionStrategy::Leveled);
    assert_eq!(o.compaction.leveled().sstable_size_in_mb, 256);
    assert!(!o.compaction.options.contains_key("bucket_high"));
    assert_eq!(
        o.compaction.size_tiered().min_threshold,
        4,
        "old sub-options are not merged"
    );
    assert!(o.to_cql().contains(
        "AND compaction = {'class': 'org.apache.cassandra.db.compaction.LeveledCompactionStrategy', 'max_threshold': '32', 'min_threshold': '4', 'sstable_size_in_mb': '256'}"
    ));
    // `{}` disables compression, as in Cassandra.
    o.apply("compression", &map(&[])).unwrap();
    assert!(o
        .to_cql()
        .contains("AND compression = {'enabled': 'false'}"));
    // Compression is replaced whole too.
    o.apply("compression", &map(&[("class", "ZstdCompressor")]))
        .unwrap();
    assert_eq!(o.compression.chunk_length_kb, 16);
    assert_eq!(o.compression.algorithm, Some(CompressionAlgorithm::Zstd));
}

#[test]
fn provide_overlapping_tombstones_values() {
    for (value, expected) in [
        ("NONE", TombstoneOption::None),
        ("row", TombstoneOption::Row),
        ("Cell", TombstoneOption::Cell),
    ] {
        let o = create(&[(
            "compaction",
            map(&[
                ("class", "SizeTieredCompactionStrategy"),
                ("provide_overlapping_tombstones", value),
            ]),
        )])
        .unwrap();
        assert_eq!(
            o.compaction.common().provide_overlapping_tombstones,
            expected
        );
        // Stored as written, as Cassandra keeps the sub-option text.
        assert_eq!(
            o.compaction.to_map()["provide_overlapping_tombstones"],
            value
        );
    }
    assert_eq!(
        create_err(
            "compaction",
            map(&[("class", "SizeTieredCompactionStrategy"), ("provide_overlapping_tombstones", "partition")])
        ),
        cfg("Invalid value PARTITION for 'provide_overlapping_tombstones' compaction sub-option - must be one of the following [NONE, ROW, CELL].")
    );
}

#[test]
fn schema_row_matches_cassandra_columns() {
    let row = TableOptions::default().to_schema_row();
    let get = |name: &str| row.iter().find(|(n, _)| *n == name).map(|(_, v)| v.clone());
    assert_eq!(
        get("bloom_filter_fp_chance"),
        Some(SchemaValue::Double(0.01))
    );
    assert_eq!(
        get("speculative_retry"),
        Some(SchemaValue::Text("99p".into()))
    );
    assert_eq!(get("cdc"), Some(SchemaValue::Null));
    assert_eq!(get("memtable"), Some(SchemaValue::Null));
    assert_eq!(get("allow_auto_snapshot"), Some(SchemaValue::Null));
    assert_eq!(get("read_repair_chance"), Some(SchemaValue::Double(0.0)));
    assert_eq!(
        get("extensions"),
        Some(SchemaValue::BlobMap(Default::default()))
    );
    let with_cdc = TableOptions::default().to_schema_row_for(true);
    assert!(with_cdc.contains(&("cdc", SchemaValue::Boolean(false))));
}

#[test]
fn extensions_render_as_hex_blobs() {
    let mut o = TableOptions::default();
    o.extensions.insert("ext".into(), vec![0xca, 0xfe, 0x01]);
    assert!(o.to_cql().contains("AND extensions = {'ext': 0xcafe01}"));
    let view = o.to_cql_for(true);
    assert!(!view.contains("default_time_to_live"));
}
