//! The four scenarios' plans, from the seeds (/work/shared/seeds):
//! full-size numbers here, multiplied by the [`Scale`] of `--size`.
//!
//! | scenario     | seed     | phases                                           |
//! |--------------|----------|--------------------------------------------------|
//! | tombstone-gc | 000, 001 | load; steady 5:4:1 read:write:delete at a fixed rate; then the same load after `provide_overlapping_tombstones = ROW` or during `nodetool garbagecollect` |
//! | compaction   | 002      | load; write:delete 4:1 at a fixed rate under STCS, LCS, then UCS (ALTER TABLE between) |
//! | docsize      | 004      | per row size (180 B, 2, 4, 8, 16, 32 KiB): write N rows, read them back |
//! | lwt          | 003      | per concurrency: plain writes, LWT on many keys, LWT on one key |

use std::time::Duration;

use varve_stress::{Limit, Op, OpMix, PhaseSpec, Population, Rate, Workload};

use super::{
    Action, Plan, Scale, Scenario, Segment, Size, Step, Variant, PHASE_DURATION_MIN, PHASE_OPS_MIN,
};
use crate::error::{BenchError, Result};

/// The document sizes of seed 004: (label, bytes per column of the five
/// columns); with the 10-byte key a row is 180 B, then 2, 4, 8, 16, 32 KiB.
pub const DOC_SIZES: [(&str, usize); 6] = [
    ("180B", 34),
    ("2KiB", 409),
    ("4KiB", 818),
    ("8KiB", 1636),
    ("16KiB", 3272),
    ("32KiB", 6544),
];

/// Concurrencies of the lwt scenario at full size (tiny and small stop
/// earlier: see [`lwt_concurrencies`]).
pub const LWT_CONCURRENCIES_FULL: [usize; 5] = [1, 4, 16, 64, 256];

/// The seeds' table and workload for tombstone-gc and compaction.
const SEED_KEYSPACE: &str = "tlp_stress";
const STCS: &str =
    "{'class': 'SizeTieredCompactionStrategy', 'max_threshold': '32', 'min_threshold': '4'}";
/// Seed 002's table options, verbatim but for the compaction, which each
/// segment sets, and the order (compression first: events.csv shortens
/// long statements) (both servers accept them in ALTER TABLE; checked against
/// Varve and Cassandra 5.0.4 in session 27).
pub(crate) const SEED_TABLE_OPTIONS: &str = "compression = {'chunk_length_in_kb': '16', 'class': 'org.apache.cassandra.io.compress.LZ4Compressor'} \
    AND additional_write_policy = '99p' \
    AND bloom_filter_fp_chance = 0.01 \
    AND caching = {'keys': 'ALL', 'rows_per_partition': 'NONE'} \
    AND cdc = false \
    AND comment = '' \
    AND crc_check_chance = 1.0 \
    AND default_time_to_live = 0 \
    AND extensions = {} \
    AND gc_grace_seconds = 864000 \
    AND max_index_interval = 2048 \
    AND memtable_flush_period_in_ms = 0 \
    AND min_index_interval = 128 \
    AND read_repair = 'BLOCKING' \
    AND speculative_retry = '99p'";
const UCS: &str = "{'class': 'UnifiedCompactionStrategy'}";
/// Value bytes of one largeblob row.
const LARGEBLOB_VALUE_BYTES: usize = 1000;
/// Rows written before the measured phases of tombstone-gc and compaction.
const LOAD_ROWS_FULL: f64 = 100_000.0;
/// Concurrency of the load and mixed phases (the seeds do not say; enough
/// for the rates below on one node).
const MIXED_CONCURRENCY: usize = 64;

/// Builds the plan of `scenario` at `size`. `variant` is required for
/// tombstone-gc and refused elsewhere.
pub fn build(scenario: Scenario, variant: Option<Variant>, size: Size) -> Result<Plan> {
    let scale = size.scale();
    let segments = match (scenario, variant) {
        (Scenario::TombstoneGc, Some(v)) => vec![tombstone_gc(v, scale)],
        (Scenario::TombstoneGc, None) => {
            return Err(BenchError::config(
                "variant",
                "tombstone-gc needs --variant overlapping or --variant garbagecollect",
            ))
        }
        (_, Some(v)) => {
            return Err(BenchError::config(
                "variant",
                format!("{scenario} has no variants (got {})", v.name()),
            ))
        }
        (Scenario::Compaction, None) => vec![compaction(scale)],
        (Scenario::DocSize, None) => docsize(scale),
        (Scenario::Lwt, None) => lwt(size, scale),
    };
    Ok(Plan {
        scenario,
        variant,
        size,
        segments,
    })
}

fn seconds(full_s: f64, scale: Scale) -> Limit {
    Limit::Duration(Duration::from_secs_f64(full_s * scale.time).max(PHASE_DURATION_MIN))
}

fn ops(full: f64, scale: Scale) -> u64 {
    ((full * scale.pop).round() as u64).max(PHASE_OPS_MIN)
}

fn fixed(full_per_s: f64, scale: Scale) -> Rate {
    Rate::Fixed {
        per_s: (full_per_s * scale.rate).round().max(1.0),
    }
}

fn step(name: &str, mix: OpMix, rate: Rate, limit: Limit, concurrency: usize) -> Step {
    Step {
        name: name.to_string(),
        spec: PhaseSpec {
            mix,
            rate,
            limit,
            concurrency,
            recorded: true,
        },
        actions: Vec::new(),
        leveled: false,
    }
}

/// A mix from fixed weights (the seeds' ratios are constants, so this
/// cannot fail; an error here is a bug in this file).
fn mix(pairs: &[(Op, u32)]) -> OpMix {
    OpMix::new(pairs.iter().copied()).unwrap_or_else(|_| OpMix::only(Op::Write))
}

/// The 5:4:1 read:write:delete mix of seeds 000 and 001.
pub(crate) fn tombstone_mix() -> OpMix {
    mix(&[(Op::Read, 5), (Op::Write, 4), (Op::Delete, 1)])
}

/// The 4:1 write:delete mix of seed 002.
pub(crate) fn compaction_mix() -> OpMix {
    mix(&[(Op::Write, 4), (Op::Delete, 1)])
}

fn largeblob_segment(name: &str, rows: u64, compaction: &str, steps: Vec<Step>) -> Segment {
    Segment {
        name: name.to_string(),
        workload: Workload::LargeBlob,
        keyspace: SEED_KEYSPACE.to_string(),
        compaction: Some(compaction.to_string()),
        setup: vec![format!(
            "ALTER TABLE {SEED_KEYSPACE}.{} WITH {SEED_TABLE_OPTIONS}",
            Workload::LargeBlob.table()
        )],
        population: Population::Uniform { lo: 1, hi: rows },
        column_size: LARGEBLOB_VALUE_BYTES,
        column_count: 1,
        lwt_keys: 1,
        steps,
    }
}

/// Seeds 000/001: 3k/s on three nodes there, 1000/s on one node here;
/// 2 h steady there, 7 min here.
fn tombstone_gc(variant: Variant, scale: Scale) -> Segment {
    let rows = ops(LOAD_ROWS_FULL, scale);
    let table = Workload::LargeBlob.table();
    let load = step(
        "load",
        OpMix::only(Op::Write),
        Rate::Unlimited,
        Limit::Ops(rows),
        MIXED_CONCURRENCY,
    );
    let steady = step(
        "steady",
        tombstone_mix(),
        fixed(1000.0, scale),
        seconds(420.0, scale),
        MIXED_CONCURRENCY,
    );
    let (name, action) = match variant {
        Variant::Overlapping => (
            "overlapping-row",
            Action::Cql(format!(
                "ALTER TABLE {SEED_KEYSPACE}.{table} WITH compaction = {{'class': 'SizeTieredCompactionStrategy', 'provide_overlapping_tombstones': 'ROW'}}"
            )),
        ),
        Variant::GarbageCollect => (
            "garbagecollect",
            Action::GarbageCollect {
                keyspace: SEED_KEYSPACE.to_string(),
                table: table.to_string(),
            },
        ),
    };
    let mut second = step(
        name,
        tombstone_mix(),
        fixed(1000.0, scale),
        seconds(480.0, scale),
        MIXED_CONCURRENCY,
    );
    second.actions.push(action);
    largeblob_segment("main", rows, STCS, vec![load, steady, second])
}

/// Seed 002 (STCS, then LCS) with UCS as a third phase. LCS sstables are
/// 16 MiB at full size (a tenth of Cassandra's default: the data set is a
/// thousandth of the seed's) and 1 MiB below, so levels fill in a short run.
fn compaction(scale: Scale) -> Segment {
    let rows = ops(LOAD_ROWS_FULL, scale);
    let table = format!("{SEED_KEYSPACE}.{}", Workload::LargeBlob.table());
    let lcs_mb = if scale.pop >= 1.0 { 16 } else { 1 };
    let phase = |name: &str| {
        step(
            name,
            compaction_mix(),
            fixed(1500.0, scale),
            seconds(300.0, scale),
            MIXED_CONCURRENCY,
        )
    };
    let load = step(
        "load",
        OpMix::only(Op::Write),
        Rate::Unlimited,
        Limit::Ops(rows),
        MIXED_CONCURRENCY,
    );
    let stcs = phase("stcs");
    let mut lcs = phase("lcs");
    lcs.leveled = true;
    lcs.actions.push(Action::Cql(format!(
        "ALTER TABLE {table} WITH compaction = {{'class': 'LeveledCompactionStrategy', 'sstable_size_in_mb': '{lcs_mb}'}}"
    )));
    let mut ucs = phase("ucs");
    ucs.actions.push(Action::Cql(format!(
        "ALTER TABLE {table} WITH compaction = {UCS}"
    )));
    largeblob_segment("main", rows, STCS, vec![load, stcs, lcs, ucs])
}

/// Seed 004: cassandra-stress's default table (five blob columns), one
/// keyspace per size as the seed does, N writes then N reads of the same
/// keys (seq population), unthrottled, 64 workers (128 threads there).
fn docsize(scale: Scale) -> Vec<Segment> {
    let n = ops(40_000.0, scale);
    let concurrency = if scale.pop < 0.1 { 16 } else { 64 };
    DOC_SIZES
        .iter()
        .map(|&(label, column_size)| {
            let limit = Limit::Ops(n);
            Segment {
                name: format!("doc-{label}"),
                workload: Workload::Kv,
                keyspace: format!("docsize_{}", label.to_ascii_lowercase()),
                compaction: None,
                setup: Vec::new(),
                population: Population::Seq { lo: 1, hi: n },
                column_size,
                column_count: 5,
                lwt_keys: 1,
                steps: vec![
                    step(
                        &format!("write-{label}"),
                        OpMix::only(Op::Write),
                        Rate::Unlimited,
                        limit,
                        concurrency,
                    ),
                    step(
                        &format!("read-{label}"),
                        OpMix::only(Op::Read),
                        Rate::Unlimited,
                        limit,
                        concurrency,
                    ),
                ],
            }
        })
        .collect()
}

/// The concurrencies of the lwt scenario at `size`.
pub(crate) fn lwt_concurrencies(size: Size) -> &'static [usize] {
    match size {
        Size::Tiny => &LWT_CONCURRENCIES_FULL[..3],
        Size::Small => &LWT_CONCURRENCIES_FULL[..4],
        Size::Full | Size::Factor(_) => &LWT_CONCURRENCIES_FULL,
    }
}

/// Keys of the uncontended LWT phases: so many that two workers almost
/// never meet on one (each worker only knows the values it has seen, so a
/// key another worker touched first fails its condition once).
pub const LWT_KEYS_UNCONTENDED: u64 = 1_000_000_000;

/// Seed 003: throughput and latency of plain writes and of LWTs as
/// concurrency grows (unthrottled: the question is where each saturates),
/// then LWTs that all hit one key (the contended case).
fn lwt(size: Size, scale: Scale) -> Vec<Segment> {
    let keys = LWT_KEYS_UNCONTENDED;
    let concurrencies = lwt_concurrencies(size);
    let phases = |prefix: &str, op: Op| -> Vec<Step> {
        concurrencies
            .iter()
            .map(|&c| {
                step(
                    &format!("{prefix}-c{c}"),
                    OpMix::only(op),
                    Rate::Unlimited,
                    seconds(60.0, scale),
                    c,
                )
            })
            .collect()
    };
    let segment = |name: &str, workload: Workload, lwt_keys: u64, steps: Vec<Step>| Segment {
        name: name.to_string(),
        workload,
        keyspace: "lwt_bench".to_string(),
        compaction: None,
        setup: Vec::new(),
        population: Population::Uniform { lo: 1, hi: keys },
        column_size: 34,
        column_count: 1,
        lwt_keys,
        steps,
    };
    vec![
        segment("plain", Workload::Kv, 1, phases("plain", Op::Write)),
        segment("lwt", Workload::Lwt, keys, phases("lwt", Op::CasWrite)),
        segment(
            "lwt-contended",
            Workload::Lwt,
            1,
            phases("lwt-contended", Op::CasWrite),
        ),
    ]
}
