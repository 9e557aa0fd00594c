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
    Action, Plan, Scale, Scenario, Segment, Size, Step, Variant, LIVE_BYTES_PER_NODE_FULL,
    MEASURED_PHASE_FULL, PHASE_DURATION_MIN, PHASE_OPS_MIN,
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
pub(crate) const SEED_KEYSPACE: &str = "tlp_stress";
pub(crate) const STCS: &str =
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
/// Rows written before the measured phases of tombstone-gc and compaction:
/// [`LIVE_BYTES_PER_NODE_FULL`] of values at full size.
pub(crate) const LOAD_ROWS_FULL: f64 =
    LIVE_BYTES_PER_NODE_FULL.div_ceil(LARGEBLOB_VALUE_BYTES as u64) as f64;
/// Seeds 000 and 001: "QPS: 3K/s" over the cluster.
pub(crate) const TOMBSTONE_RATE_FULL: f64 = 3000.0;
/// Seed 002: "Write TPS is steady at 1.5k/s", deletes counted as writes
/// (as seeds 000/001 count them: their 3K/s at 5:4:1 is 1.5k/s read and
/// 1.5k/s write).
pub(crate) const COMPACTION_RATE_FULL: f64 = 1500.0;
/// Seed 002's LCS: Cassandra's default sstable size (the seed changed only
/// the class); smaller data sets get proportionally smaller sstables.
pub(crate) const LCS_SSTABLE_MIB_FULL: f64 = 160.0;
/// Concurrency of the load and mixed phases at the test sizes (the seeds
/// do not say).
const MIXED_CONCURRENCY: usize = 64;
/// Concurrency at the seeds' scale: headroom for 3,000/s at the latencies
/// seed 001 saw during garbagecollect.
pub(crate) const MIXED_CONCURRENCY_FULL: usize = 128;
/// Seed 004's client: 128 threads.
pub(crate) const DOCSIZE_CONCURRENCY_FULL: usize = 128;
/// Seed 004 at full size: all six document sizes together hold
/// [`LIVE_BYTES_PER_NODE_FULL`], a sixth each (for 180-byte rows, the
/// seed's own n=10M).
pub(crate) const DOCSIZE_BYTES_PER_SIZE_FULL: u64 = LIVE_BYTES_PER_NODE_FULL / 6;
/// Bytes of a docsize row besides its five columns: the 10-byte key.
const DOCSIZE_KEY_BYTES: usize = 10;
/// Seconds of each LWT phase at full size (seed 003 gives none).
const LWT_PHASE_FULL_S: f64 = 300.0;

/// Builds the plan of `scenario` at `size`. `variant` is required for
/// tombstone-gc and refused elsewhere.
pub fn build(scenario: Scenario, variant: Option<Variant>, size: Size) -> Result<Plan> {
    let scale = size.scale();
    let segments = match (scenario, variant) {
        (Scenario::TombstoneGc, Some(v)) => vec![tombstone_gc(v, size)],
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
        (Scenario::Compaction, None) => vec![compaction(size)],
        (Scenario::DocSize, None) => docsize(size),
        (Scenario::Lwt, None) => lwt(size, scale),
    };
    Ok(Plan {
        scenario,
        variant,
        size,
        segments,
        stop_when_behind: false,
    })
}

pub(crate) fn seconds(full_s: f64, scale: Scale) -> Limit {
    Limit::Duration(Duration::from_secs_f64(full_s * scale.time).max(PHASE_DURATION_MIN))
}

pub(crate) fn ops(full: f64, scale: Scale) -> u64 {
    ((full * scale.pop).round() as u64).max(PHASE_OPS_MIN)
}

pub(crate) fn fixed(full_per_s: f64, scale: Scale) -> Rate {
    Rate::Fixed {
        per_s: (full_per_s * scale.rate).round().max(1.0),
    }
}

pub(crate) fn step(name: &str, mix: OpMix, rate: Rate, limit: Limit, concurrency: usize) -> Step {
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
        judged: false,
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

/// Concurrency of the load and mixed phases at `size`.
pub(crate) fn mixed_concurrency(size: Size) -> usize {
    match size.is_seed_scale() {
        true => MIXED_CONCURRENCY_FULL,
        false => MIXED_CONCURRENCY,
    }
}

/// The LCS compaction option at `scale`: 160 MiB sstables at full size,
/// proportionally smaller below (at least 1 MiB), so levels fill.
pub(crate) fn lcs(scale: Scale) -> String {
    let mib = (LCS_SSTABLE_MIB_FULL * scale.pop)
        .round()
        .clamp(1.0, LCS_SSTABLE_MIB_FULL);
    format!("{{'class': 'LeveledCompactionStrategy', 'sstable_size_in_mb': '{mib}'}}")
}

/// The unthrottled write of the whole population before measured phases.
pub(crate) fn load_step(rows: u64, size: Size) -> Step {
    step(
        "load",
        OpMix::only(Op::Write),
        Rate::Unlimited,
        Limit::Ops(rows),
        mixed_concurrency(size),
    )
}

pub(crate) fn largeblob_segment(
    name: &str,
    rows: u64,
    compaction: &str,
    steps: Vec<Step>,
) -> Segment {
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

/// Seeds 000/001: 10 GiB per node loaded, then 5:4:1 at 3,000/s for 30
/// minutes steady (2 h and 70 min in the seeds), then 30 more with the
/// change (2 h 40 min and the ~1 h garbagecollect there).
fn tombstone_gc(variant: Variant, size: Size) -> Segment {
    let scale = size.scale();
    let rows = ops(LOAD_ROWS_FULL, scale);
    let table = Workload::LargeBlob.table();
    let measured = MEASURED_PHASE_FULL.as_secs_f64();
    let c = mixed_concurrency(size);
    let steady = step(
        "steady",
        tombstone_mix(),
        fixed(TOMBSTONE_RATE_FULL, scale),
        seconds(measured, scale),
        c,
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
        fixed(TOMBSTONE_RATE_FULL, scale),
        seconds(measured, scale),
        c,
    );
    second.actions.push(action);
    largeblob_segment(
        "main",
        rows,
        STCS,
        vec![load_step(rows, size), steady, second],
    )
}

/// Seed 002 (STCS, then LCS) with UCS as a third phase, 30 minutes each
/// at the seed's 1.5k/s at full size.
fn compaction(size: Size) -> Segment {
    let scale = size.scale();
    let rows = ops(LOAD_ROWS_FULL, scale);
    let table = format!("{SEED_KEYSPACE}.{}", Workload::LargeBlob.table());
    let phase = |name: &str| {
        step(
            name,
            compaction_mix(),
            fixed(COMPACTION_RATE_FULL, scale),
            seconds(MEASURED_PHASE_FULL.as_secs_f64(), scale),
            mixed_concurrency(size),
        )
    };
    let stcs = phase("stcs");
    let mut lcs_phase = phase("lcs");
    lcs_phase.leveled = true;
    lcs_phase.actions.push(Action::Cql(format!(
        "ALTER TABLE {table} WITH compaction = {}",
        lcs(scale)
    )));
    let mut ucs = phase("ucs");
    ucs.actions.push(Action::Cql(format!(
        "ALTER TABLE {table} WITH compaction = {UCS}"
    )));
    largeblob_segment(
        "main",
        rows,
        STCS,
        vec![load_step(rows, size), stcs, lcs_phase, ucs],
    )
}

/// Rows of one docsize segment: a sixth of the full data set at full size
/// (scaled by the size's population), at least [`PHASE_OPS_MIN`].
pub(crate) fn docsize_rows(column_size: usize, scale: Scale) -> u64 {
    let row_bytes = (DOCSIZE_KEY_BYTES + 5 * column_size) as f64;
    ops(DOCSIZE_BYTES_PER_SIZE_FULL as f64 / row_bytes, scale)
}

/// Seed 004: cassandra-stress's default table (five blob columns), one
/// keyspace per size as the seed does, N writes then N reads of the same
/// keys (seq population), unthrottled, 128 workers at full size as the
/// seed's 128 threads (64 small, 16 tiny).
fn docsize(size: Size) -> Vec<Segment> {
    let scale = size.scale();
    let concurrency = match size {
        Size::Tiny => 16,
        Size::Small => 64,
        Size::Full | Size::Factor(_) => DOCSIZE_CONCURRENCY_FULL,
    };
    DOC_SIZES
        .iter()
        .map(|&(label, column_size)| {
            let n = docsize_rows(column_size, scale);
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
                    seconds(LWT_PHASE_FULL_S, scale),
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
