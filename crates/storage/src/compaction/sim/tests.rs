//! Simulator checks, and the ignored test that prints the write-amplification table.

use super::{format_row, simulate, SimConfig};
use crate::compaction::policy::{
    new_strategy, CommonOptions, LeveledOptions, SizeTieredOptions, StrategyOptions, UnifiedOptions,
};

const MIB: u64 = 1 << 20;

fn strategies() -> Vec<(&'static str, StrategyOptions)> {
    let ucs = |w: i32| {
        StrategyOptions::Unified(UnifiedOptions {
            scaling_parameters: vec![w],
            ..UnifiedOptions::default()
        })
    };
    vec![
        (
            "STCS (defaults)",
            StrategyOptions::SizeTiered(SizeTieredOptions::default()),
        ),
        (
            "LCS (160 MiB, fanout 10)",
            StrategyOptions::Leveled(LeveledOptions::default()),
        ),
        ("UCS T4", ucs(2)),
        ("UCS L10", ucs(-8)),
    ]
}

fn run(config: &SimConfig) -> Vec<(String, super::SimResult)> {
    strategies()
        .into_iter()
        .map(|(label, options)| {
            let mut strategy = new_strategy(&options, &CommonOptions::default());
            (label.to_string(), simulate(strategy.as_mut(), config))
        })
        .collect()
}

#[test]
fn every_strategy_settles_and_writes_at_least_its_flushes() {
    let config = SimConfig {
        flushes: 60,
        flush_size_bytes: 64 * MIB,
        flush_coverage: 1.0,
        seed: 7,
    };
    for (label, r) in run(&config) {
        assert!(!r.stuck, "{label} never settled");
        assert_eq!(r.bytes_flushed, 60 * 64 * MIB);
        assert!(r.write_amplification() >= 1.0, "{label}");
        assert!(r.tasks > 0, "{label} never compacted");
    }
}

#[test]
fn stcs_write_amplification_is_log4_of_flush_count() {
    // 64 equal flushes: 16 merges of 4, 4 merges of 16 flushes' worth, 1 of 64: every byte is
    // written once by the flush and once per tier, 3 tiers.
    let config = SimConfig {
        flushes: 64,
        flush_size_bytes: 64 * MIB,
        flush_coverage: 1.0,
        seed: 1,
    };
    let options = StrategyOptions::SizeTiered(SizeTieredOptions::default());
    let mut strategy = new_strategy(&options, &CommonOptions::default());
    let r = simulate(strategy.as_mut(), &config);
    assert_eq!(r.write_amplification(), 4.0);
    assert_eq!(r.final_sstables, 1);
    assert_eq!(r.tasks, 16 + 4 + 1);
}

#[test]
#[ignore = "prints the write-amplification table for docs/design/compaction.md"]
fn print_write_amplification() {
    for (flushes, coverage) in [(1000u32, 1.0f64), (1000, 0.1)] {
        let config = SimConfig {
            flushes,
            flush_size_bytes: 64 * MIB,
            flush_coverage: coverage,
            seed: 42,
        };
        println!(
            "\n{flushes} flushes of 64 MiB, each covering {:.0}% of the ring:",
            coverage * 100.0
        );
        println!("| strategy                 |  WA    |  tasks  | max   | final | pending |");
        println!("|--------------------------|--------|---------|-------|-------|---------|");
        for (label, r) in run(&config) {
            println!("{}", format_row(&label, &r));
        }
    }
}
