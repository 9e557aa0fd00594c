//! One worker of a phase: take a ticket, wait for its slot in the
//! schedule, run one operation, record its latency (from the intended start
//! with a fixed rate, from the send otherwise) or its error kind; until the
//! phase's limit, its deadline or a stop.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use scylla::client::session::Session;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::population::Population;
use crate::schedule::Schedule;
use crate::spec::{Limit, PhaseSpec};
use crate::stats::{ExtraEvent, Recorder};
use crate::workload::{Outcome, Statements, WorkerState};

/// What one phase shares with its workers.
pub(crate) struct PhaseCtx {
    pub(crate) spec: PhaseSpec,
    pub(crate) session: Arc<Session>,
    pub(crate) statements: Arc<Statements>,
    pub(crate) recorder: Arc<Recorder>,
    pub(crate) schedule: Schedule,
    pub(crate) tickets: AtomicU64,
    pub(crate) deadline: Option<Instant>,
    pub(crate) population: Population,
    pub(crate) stop: watch::Receiver<bool>,
}

/// One worker: claim a ticket, wait for its slot, run, record; until the
/// limit, the deadline or a stop.
pub(crate) async fn run(ctx: Arc<PhaseCtx>, mut state: WorkerState) {
    let mut stop = ctx.stop.clone();
    let from_intended = ctx.spec.rate.measures_from_intended_start();
    loop {
        if *stop.borrow() {
            break;
        }
        let ticket = ctx.tickets.fetch_add(1, Ordering::Relaxed);
        if matches!(ctx.spec.limit, Limit::Ops(n) if ticket >= n) {
            break;
        }
        let now = Instant::now();
        if ctx.deadline.is_some_and(|d| now >= d) {
            break;
        }
        let slot = ctx.schedule.slot(ticket, now);
        if let Some(slot) = slot.filter(|s| *s > now) {
            if ctx.deadline.is_some_and(|d| slot >= d) {
                break;
            }
            tokio::select! {
                _ = tokio::time::sleep_until(slot) => {}
                _ = stop.changed() => break,
            }
        }
        let op = ctx.spec.mix.pick(&mut state.rng);
        let index = ctx.population.index(ticket, &mut state.rng);
        let sent = Instant::now();
        let outcome = ctx
            .statements
            .execute(&ctx.session, op, index, &mut state)
            .await;
        let began = if from_intended {
            slot.unwrap_or(sent)
        } else {
            sent
        };
        let latency = Instant::now().saturating_duration_since(began);
        match outcome {
            Ok(outcome) => {
                ctx.recorder.record(op, Ok(latency));
                match outcome {
                    Outcome::Done => {}
                    Outcome::Applied(true) => ctx.recorder.count(ExtraEvent::Applied),
                    Outcome::Applied(false) => ctx.recorder.count(ExtraEvent::NotApplied),
                    Outcome::Verified(true) => ctx.recorder.count(ExtraEvent::Verified),
                    Outcome::Verified(false) => ctx.recorder.count(ExtraEvent::VerifyFailure),
                }
            }
            Err(kind) => ctx.recorder.record(op, Err(kind)),
        }
    }
}
