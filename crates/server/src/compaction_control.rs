//! The adaptive compaction throttle's loop (docs/design/read-path-io.md,
//! "Compaction beside the client"): every [`CONTROL_TICK`], the
//! statements the read stage ran in the tick (the reads that needed the
//! disk) say whether the disk is slower than usual (than in ticks without a
//! compaction) or reads wait for a slot; compactions then get half their
//! share of `compaction_throughput`,
//! else a twentieth more (storage's `compaction::throttle` holds the rules;
//! this module only feeds them).

use std::sync::Arc;

use varve_metrics::Gauge;
use varve_query::throttle::{AdaptiveRate, ReadPressure};

use crate::read_stage::ReadStage;

/// How often the compaction throttle looks at the reads.
pub const CONTROL_TICK: std::time::Duration = std::time::Duration::from_millis(200);

/// Runs until `stop` changes.
pub async fn control_compactions(
    stage: Arc<ReadStage>,
    processor: Arc<varve_query::Processor>,
    share: Arc<Gauge>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let mut rate = AdaptiveRate::default();
    let mut pressure = ReadPressure::default();
    let mut tick = tokio::time::interval(CONTROL_TICK);
    let mut compacting_before = false;
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.changed() => return,
        }
        let (reads, total_us) = stage.take_window();
        // Ran during the tick, as far as two looks tell: at its start or end.
        let compacting_now = processor.compactions_running();
        let compacting = compacting_before || compacting_now;
        compacting_before = compacting_now;
        let under = pressure.observe(reads, total_us, stage.pending() > 0, compacting);
        let factor = rate.tick(under);
        processor.set_compaction_rate_factor(factor);
        share.set(factor);
    }
}
