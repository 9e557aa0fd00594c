//! The plans against what the seeds say, at every size.

use std::time::Duration;

use varve_stress::{Limit, Op, Rate, Workload};

use super::rates::ladder;
use super::scenarios::{self, compaction_mix, lwt_concurrencies, tombstone_mix};
use super::*;

const SIZES: [Size; 4] = [Size::Tiny, Size::Small, Size::Full, Size::Factor(0.5)];

fn names(plan: &Plan) -> Vec<String> {
    plan.steps().map(|(_, s)| s.name.clone()).collect()
}

fn secs(limit: Limit) -> f64 {
    match limit {
        Limit::Duration(d) => d.as_secs_f64(),
        Limit::Ops(_) => panic!("expected a timed phase"),
    }
}

#[test]
fn tombstone_gc_is_5_4_1_on_stcs_lz4_then_the_variant() {
    for size in SIZES {
        for (variant, second) in [
            (Variant::Overlapping, "overlapping-row"),
            (Variant::GarbageCollect, "garbagecollect"),
        ] {
            let plan = build(Scenario::TombstoneGc, Some(variant), size).unwrap();
            assert_eq!(names(&plan), ["load", "steady", second]);
            let seg = &plan.segments[0];
            assert_eq!(seg.workload, Workload::LargeBlob);
            assert_eq!(seg.qualified_table(), "tlp_stress.keyvaluelargeblob_2");
            assert!(seg.compaction.as_deref().unwrap().contains("SizeTiered"));
            assert!(seg.setup[0].contains("LZ4Compressor"));
            // Seed 002's table options, every one of them.
            for option in [
                "additional_write_policy = '99p'",
                "bloom_filter_fp_chance = 0.01",
                "caching = {'keys': 'ALL', 'rows_per_partition': 'NONE'}",
                "'chunk_length_in_kb': '16'",
                "crc_check_chance = 1.0",
                "gc_grace_seconds = 864000",
                "max_index_interval = 2048",
                "min_index_interval = 128",
                "read_repair = 'BLOCKING'",
                "speculative_retry = '99p'",
            ] {
                assert!(
                    seg.setup[0].contains(option),
                    "{option} in {}",
                    seg.setup[0]
                );
            }
            let [load, steady, phase2] = &seg.steps[..] else {
                panic!("three steps")
            };
            assert_eq!(load.spec.mix, varve_stress::OpMix::only(Op::Write));
            for s in [steady, phase2] {
                assert_eq!(s.spec.mix.weight(Op::Read), 5);
                assert_eq!(s.spec.mix.weight(Op::Write), 4);
                assert_eq!(s.spec.mix.weight(Op::Delete), 1);
                assert!(matches!(s.spec.rate, Rate::Fixed { .. }), "{size:?}");
            }
            assert_eq!(steady.spec.rate, phase2.spec.rate, "same QPS both phases");
            assert!(steady.actions.is_empty());
            match (&phase2.actions[..], variant) {
                ([Action::Cql(alter)], Variant::Overlapping) => {
                    assert!(alter.starts_with("ALTER TABLE tlp_stress.keyvaluelargeblob_2"));
                    assert!(alter.contains("'provide_overlapping_tombstones': 'ROW'"));
                    assert!(alter.contains("SizeTieredCompactionStrategy"));
                }
                ([Action::GarbageCollect { keyspace, table }], Variant::GarbageCollect) => {
                    assert_eq!(
                        (keyspace.as_str(), table.as_str()),
                        ("tlp_stress", "keyvaluelargeblob_2")
                    );
                }
                other => panic!("unexpected actions {other:?}"),
            }
        }
    }
    assert!(build(Scenario::TombstoneGc, None, Size::Tiny).is_err());
    assert!(build(Scenario::Compaction, Some(Variant::Overlapping), Size::Tiny).is_err());
}

#[test]
fn compaction_is_4_1_under_stcs_lcs_ucs() {
    for size in SIZES {
        let plan = build(Scenario::Compaction, None, size).unwrap();
        assert_eq!(names(&plan), ["load", "stcs", "lcs", "ucs"]);
        let steps = &plan.segments[0].steps;
        for s in &steps[1..] {
            assert_eq!(s.spec.mix, compaction_mix());
            assert_eq!(s.spec.mix.weight(Op::Write), 4);
            assert_eq!(s.spec.mix.weight(Op::Delete), 1);
            assert_eq!(s.spec.mix.weight(Op::Read), 0);
        }
        assert!(steps[1].actions.is_empty());
        let alter = |i: usize| match &steps[i].actions[..] {
            [Action::Cql(a)] => a.clone(),
            other => panic!("{other:?}"),
        };
        assert!(alter(2).contains("LeveledCompactionStrategy"));
        assert!(alter(3).contains("UnifiedCompactionStrategy"));
        assert_eq!(
            steps.iter().map(|s| s.leveled).collect::<Vec<_>>(),
            [false, false, true, false]
        );
    }
}

#[test]
fn docsize_has_the_six_sizes_writes_then_reads() {
    let row_bytes: Vec<usize> = DOC_SIZES.iter().map(|(_, c)| 10 + 5 * c).collect();
    assert_eq!(row_bytes, [180, 2055, 4100, 8190, 16370, 32730]);
    for size in SIZES {
        let plan = build(Scenario::DocSize, None, size).unwrap();
        assert_eq!(plan.segments.len(), 6);
        let expected: Vec<String> = DOC_SIZES
            .iter()
            .flat_map(|(l, _)| [format!("write-{l}"), format!("read-{l}")])
            .collect();
        assert_eq!(names(&plan), expected);
        for (seg, (_, col)) in plan.segments.iter().zip(DOC_SIZES) {
            assert_eq!((seg.column_size, seg.column_count), (col, 5));
            let (lo, hi) = seg.population.range();
            let [w, r] = &seg.steps[..] else { panic!() };
            assert_eq!(
                w.spec.limit,
                Limit::Ops(hi - lo + 1),
                "write every key once"
            );
            assert_eq!(r.spec.limit, w.spec.limit);
            assert_eq!(w.spec.mix.weight(Op::Write), 1);
            assert_eq!(r.spec.mix.weight(Op::Read), 1);
        }
        let keyspaces: std::collections::BTreeSet<_> =
            plan.segments.iter().map(|s| s.keyspace.clone()).collect();
        assert_eq!(keyspaces.len(), 6, "one keyspace per size");
    }
}

#[test]
fn lwt_compares_plain_and_lwt_over_concurrencies_and_contended() {
    assert_eq!(lwt_concurrencies(Size::Tiny), [1, 4, 16]);
    assert_eq!(lwt_concurrencies(Size::Small), [1, 4, 16, 64]);
    assert_eq!(lwt_concurrencies(Size::Full), LWT_CONCURRENCIES_FULL);
    for size in SIZES {
        let plan = build(Scenario::Lwt, None, size).unwrap();
        let cs = lwt_concurrencies(size);
        let segs: Vec<_> = plan.segments.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(segs, ["plain", "lwt", "lwt-contended"]);
        for (seg, op) in plan
            .segments
            .iter()
            .zip([Op::Write, Op::CasWrite, Op::CasWrite])
        {
            let got: Vec<usize> = seg.steps.iter().map(|s| s.spec.concurrency).collect();
            assert_eq!(got, cs);
            for s in &seg.steps {
                assert_eq!(s.spec.mix.weight(op), 1);
                assert_eq!(s.name, format!("{}-c{}", seg.name, s.spec.concurrency));
            }
        }
        assert_eq!(plan.segments[0].workload, Workload::Kv);
        assert_eq!(plan.segments[1].workload, Workload::Lwt);
        assert_eq!(plan.segments[1].lwt_keys, scenarios::LWT_KEYS_UNCONTENDED);
        assert_eq!(
            plan.segments[1].population.size(),
            scenarios::LWT_KEYS_UNCONTENDED
        );
        assert_eq!(plan.segments[2].lwt_keys, 1, "contended: one key");
    }
}

#[test]
fn sizes_scale_durations_and_tiny_fits_the_test_budget() {
    let phase2 = |size| {
        let plan = build(Scenario::TombstoneGc, Some(Variant::Overlapping), size).unwrap();
        secs(plan.segments[0].steps[1].spec.limit)
    };
    assert!(phase2(Size::Tiny) < phase2(Size::Small));
    assert!(phase2(Size::Small) < phase2(Size::Full));
    assert_eq!(phase2(Size::Factor(0.5)), phase2(Size::Full) / 2.0);
    for scenario in Scenario::ALL {
        let variant = (scenario == Scenario::TombstoneGc).then_some(Variant::GarbageCollect);
        let tiny = build(scenario, variant, Size::Tiny).unwrap();
        assert!(
            tiny.planned_seconds() <= 15.0,
            "{scenario}: {}",
            tiny.planned_seconds()
        );
        let small = build(scenario, variant, Size::Small).unwrap();
        assert!(
            small.planned_seconds() <= 5.0 * 60.0,
            "{scenario}: small is a few minutes, not {}",
            small.planned_seconds()
        );
        for (_, s) in small.steps() {
            if let Limit::Ops(n) = s.spec.limit {
                assert!(n <= 25_000, "{scenario} small {}: {n}", s.name);
            }
        }
        for (_, s) in tiny.steps() {
            if let Limit::Duration(d) = s.spec.limit {
                assert!(d >= PHASE_DURATION_MIN);
            }
            if let Limit::Ops(n) = s.spec.limit {
                assert!((PHASE_OPS_MIN..=2500).contains(&n), "{}: {n}", s.name);
            }
        }
        assert!(tiny.describe().contains(&format!("plan: {scenario}")));
    }
    assert_eq!(Duration::from_secs(1), PHASE_DURATION_MIN);
}

/// Issue 22's scale at `--size full`: 10 GiB per node (RF 3 on three
/// nodes: every node holds the whole data set), measured phases of 30
/// minutes or more, the seeds' rates and clients.
#[test]
fn full_size_is_the_seeds_scale() {
    let ten_gib = 10u64 << 30;
    assert_eq!(LIVE_BYTES_PER_NODE_FULL, ten_gib);
    let measured = |plan: &Plan| -> Vec<f64> {
        plan.steps()
            .filter(|(_, s)| s.name != "load")
            .map(|(_, s)| secs(s.spec.limit))
            .collect()
    };
    let rate = |s: &Step| match s.spec.rate {
        Rate::Fixed { per_s } => per_s,
        _ => panic!("{} is not at a fixed rate", s.name),
    };
    for (variant, scenario) in [
        (Some(Variant::Overlapping), Scenario::TombstoneGc),
        (Some(Variant::GarbageCollect), Scenario::TombstoneGc),
        (None, Scenario::Compaction),
    ] {
        let plan = build(scenario, variant, Size::Full).unwrap();
        let seg = &plan.segments[0];
        let Limit::Ops(rows) = seg.steps[0].spec.limit else {
            panic!("the load is operation-limited")
        };
        assert_eq!(
            seg.population.size(),
            rows,
            "the load writes every key once"
        );
        assert!(
            rows * seg.column_size as u64 >= ten_gib,
            "{scenario}: {rows} rows"
        );
        assert!(measured(&plan).iter().all(|&s| s >= 1800.0), "{scenario}");
        for s in &seg.steps[1..] {
            // Seeds 000/001: QPS 3K/s; seed 002: writes 1.5k/s.
            let seed_rate = match scenario {
                Scenario::TombstoneGc => 3000.0,
                _ => 1500.0,
            };
            assert_eq!(rate(s), seed_rate, "{scenario} {}", s.name);
            assert_eq!(s.spec.concurrency, 128);
        }
    }
    let plan = build(Scenario::Compaction, None, Size::Full).unwrap();
    match &plan.segments[0].steps[2].actions[..] {
        [Action::Cql(alter)] => assert!(alter.contains("'sstable_size_in_mb': '160'"), "{alter}"),
        other => panic!("{other:?}"),
    }
    // Seed 004: 128 threads, seq keys, and the six sizes hold 10 GiB.
    let docs = build(Scenario::DocSize, None, Size::Full).unwrap();
    let mut bytes = 0;
    for seg in &docs.segments {
        assert!(matches!(
            seg.population,
            varve_stress::Population::Seq { .. }
        ));
        assert!(seg.steps.iter().all(|s| s.spec.concurrency == 128));
        bytes += seg.population.size() * (10 + 5 * seg.column_size as u64);
    }
    assert!(bytes >= ten_gib - (6 << 10), "{bytes}");
    let rows_180 = docs.segments[0].population.size();
    assert!(
        (9_000_000..=11_000_000).contains(&rows_180),
        "about the seed's n=10M: {rows_180}"
    );
    // Tiny and small keep small memtables; full leaves the server's own.
    assert_eq!(Size::Full.memtable_space(), None);
    assert!(Size::Tiny.memtable_space().is_some() && Size::Small.memtable_space().is_some());
}

#[test]
fn a_rate_search_runs_judged_lcs_phases_in_order() {
    let search = RateSearch::from_flags(&[], true).unwrap().unwrap();
    assert!(search.stop_when_behind);
    for size in SIZES {
        let plan = build_rates(&search, size);
        assert!(plan.stop_when_behind);
        let seg = &plan.segments[0];
        assert!(seg
            .compaction
            .as_deref()
            .unwrap()
            .contains("LeveledCompactionStrategy"));
        assert_eq!(seg.steps[0].name, "load");
        assert!(!seg.steps[0].judged);
        let rates: Vec<f64> = seg.steps[1..]
            .iter()
            .map(|s| match s.spec.rate {
                Rate::Fixed { per_s } => per_s,
                _ => panic!("not at a fixed rate"),
            })
            .collect();
        assert_eq!(rates, ladder(&search, size));
        assert_eq!(rates.len(), FIND_RATE_LADDER_FULL.len());
        assert!(
            rates.windows(2).all(|w| w[0] < w[1]),
            "stepping up: {rates:?}"
        );
        for s in &seg.steps[1..] {
            assert!(s.judged && s.leveled, "{}", s.name);
            assert_eq!(s.spec.mix, compaction_mix());
            assert!(s.actions.is_empty(), "LCS from the table's creation");
        }
    }
    let full = build_rates(&search, Size::Full);
    let rates: Vec<f64> = FIND_RATE_LADDER_FULL
        .iter()
        .map(|&r| f64::from(r))
        .collect();
    assert_eq!(ladder(&search, Size::Full), rates);
    assert!(full
        .steps()
        .skip(1)
        .all(|(_, s)| secs(s.spec.limit) >= 1800.0));
    assert!(full.segments[0]
        .compaction
        .as_deref()
        .unwrap()
        .contains("'160'"));
    // --rates: as given, not scaled, every one run.
    let given = RateSearch::from_flags(&[2700, 3000, 4500], false)
        .unwrap()
        .unwrap();
    let tiny = build_rates(&given, Size::Tiny);
    assert!(!tiny.stop_when_behind);
    let names: Vec<String> = tiny.steps().map(|(_, s)| s.name.clone()).collect();
    assert_eq!(names, ["load", "lcs-2700", "lcs-3000", "lcs-4500"]);
    // No flag, no search; limits at N and N + 1.
    assert_eq!(RateSearch::from_flags(&[], false).unwrap(), None);
    assert!(RateSearch::from_flags(&[1; RATES_MAX], false).is_ok());
    assert!(RateSearch::from_flags(&[1; RATES_MAX + 1], false).is_err());
    assert!(RateSearch::from_flags(&[0], false).is_err());
    assert!(RateSearch::from_flags(&[rates::RATE_MAX_PER_S], false).is_ok());
    assert!(RateSearch::from_flags(&[rates::RATE_MAX_PER_S + 1], false).is_err());
}

#[test]
fn names_parse_and_limits_hold() {
    for s in Scenario::ALL {
        assert_eq!(Scenario::parse(s.name()).unwrap(), s);
    }
    assert!(Scenario::parse("tpcc").is_err());
    assert_eq!(
        Variant::parse("garbagecollect").unwrap(),
        Variant::GarbageCollect
    );
    assert!(Variant::parse("row").is_err());
    assert_eq!(Size::parse("tiny").unwrap(), Size::Tiny);
    assert_eq!(Size::parse("0.25").unwrap(), Size::Factor(0.25));
    assert_eq!(Size::parse("10").unwrap(), Size::Factor(SIZE_FACTOR_MAX));
    for bad in ["0", "-1", "10.5", "NaN", "inf", "huge"] {
        assert!(Size::parse(bad).is_err(), "{bad}");
    }
    assert_eq!(
        tombstone_mix().to_string(),
        "read=5,write=4,delete=1",
        "the seeds' order"
    );
}
