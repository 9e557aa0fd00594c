//! Latency and error recording while a phase runs. Each operation kind has
//! two sets of counters behind one lock: the current interval (swapped out
//! by the reporter every `--interval`) and the whole phase. Latencies are
//! recorded in microseconds into HdrHistograms; only successful operations
//! have a latency, failed ones are counted by [`ErrorKind`].

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use hdrhistogram::Histogram;

use crate::errors::ErrorKind;
use crate::output::summary::{Extra, LatencyMs, OpResult};
use crate::spec::Op;

/// Largest latency a histogram holds (larger ones are clamped): one hour.
pub const LATENCY_US_MAX: u64 = 3_600_000_000;
/// Significant decimal digits of the histograms.
pub const HISTOGRAM_SIGFIGS: u8 = 3;

/// A fresh latency histogram (microseconds).
pub fn new_histogram() -> Histogram<u64> {
    // The bounds are constants that hdrhistogram accepts.
    Histogram::new_with_bounds(1, LATENCY_US_MAX, HISTOGRAM_SIGFIGS)
        .expect("constant histogram bounds are valid")
}

/// Successes (with latencies) and failures (by kind) of one operation kind.
#[derive(Debug, Clone)]
pub struct OpCounters {
    /// Latencies of successful operations, microseconds.
    pub latency_us: Histogram<u64>,
    /// Failed operations per [`ErrorKind::slot`].
    pub errors: [u64; ErrorKind::ALL.len()],
}

impl Default for OpCounters {
    fn default() -> Self {
        OpCounters {
            latency_us: new_histogram(),
            errors: [0; ErrorKind::ALL.len()],
        }
    }
}

impl OpCounters {
    /// Records one outcome.
    pub fn record(&mut self, outcome: std::result::Result<Duration, ErrorKind>) {
        match outcome {
            Ok(latency) => {
                let us = u64::try_from(latency.as_micros())
                    .unwrap_or(u64::MAX)
                    .max(1);
                self.latency_us.saturating_record(us);
            }
            Err(kind) => self.errors[kind.slot()] += 1,
        }
    }

    /// Adds `other` into `self`.
    pub fn merge(&mut self, other: &OpCounters) {
        // Same bounds on both sides, so adding cannot fail; saturate anyway.
        let _ = self.latency_us.add(&other.latency_us);
        for (a, b) in self.errors.iter_mut().zip(other.errors) {
            *a += b;
        }
    }

    /// Successful operations.
    pub fn count(&self) -> u64 {
        self.latency_us.len()
    }

    /// Failed operations.
    pub fn error_count(&self) -> u64 {
        self.errors.iter().sum()
    }

    /// The summary.json entry for these counters over `elapsed`.
    pub fn result(&self, elapsed: Duration) -> OpResult {
        let secs = elapsed.as_secs_f64();
        let error_kinds = ErrorKind::ALL
            .iter()
            .filter(|k| self.errors[k.slot()] > 0)
            .map(|k| (k.name().to_string(), self.errors[k.slot()]))
            .collect();
        OpResult {
            count: self.count(),
            errors: self.error_count(),
            timeouts: self.errors[ErrorKind::Timeout.slot()],
            error_kinds,
            throughput: if secs > 0.0 {
                round3(self.count() as f64 / secs)
            } else {
                0.0
            },
            latency_ms: latency_ms(&self.latency_us),
        }
    }
}

/// Mean and percentiles in milliseconds, or `None` for an empty histogram.
pub fn latency_ms(h: &Histogram<u64>) -> Option<LatencyMs> {
    if h.is_empty() {
        return None;
    }
    let ms = |us: u64| round3(us as f64 / 1000.0);
    Some(LatencyMs {
        mean: round3(h.mean() / 1000.0),
        p50: ms(h.value_at_quantile(0.50)),
        p95: ms(h.value_at_quantile(0.95)),
        p99: ms(h.value_at_quantile(0.99)),
        max: ms(h.max()),
    })
}

/// Rounds to three decimals (microsecond precision for milliseconds).
pub fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

#[derive(Debug, Default)]
struct OpWindow {
    interval: OpCounters,
    phase: OpCounters,
}

/// The recorder of one phase, shared by its workers and its reporter.
#[derive(Debug)]
pub struct Recorder {
    ops: BTreeMap<Op, Mutex<OpWindow>>,
    applied: AtomicU64,
    not_applied: AtomicU64,
    verified: AtomicU64,
    verify_failures: AtomicU64,
}

/// A workload-specific event counted in `extra`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExtraEvent {
    Applied,
    NotApplied,
    Verified,
    VerifyFailure,
}

impl Recorder {
    /// A recorder for the given operation kinds.
    pub fn new(ops: impl IntoIterator<Item = Op>) -> Recorder {
        Recorder {
            ops: ops.into_iter().map(|op| (op, Mutex::default())).collect(),
            applied: AtomicU64::new(0),
            not_applied: AtomicU64::new(0),
            verified: AtomicU64::new(0),
            verify_failures: AtomicU64::new(0),
        }
    }

    /// The kinds recorded, in report order.
    pub fn ops(&self) -> impl Iterator<Item = Op> + '_ {
        self.ops.keys().copied()
    }

    /// Records one operation (kinds outside the recorder are ignored).
    pub fn record(&self, op: Op, outcome: std::result::Result<Duration, ErrorKind>) {
        if let Some(window) = self.ops.get(&op) {
            let mut w = window.lock().unwrap_or_else(|e| e.into_inner());
            w.interval.record(outcome);
            w.phase.record(outcome);
        }
    }

    /// Counts a workload event.
    pub fn count(&self, event: ExtraEvent) {
        let counter = match event {
            ExtraEvent::Applied => &self.applied,
            ExtraEvent::NotApplied => &self.not_applied,
            ExtraEvent::Verified => &self.verified,
            ExtraEvent::VerifyFailure => &self.verify_failures,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Takes the current interval's counters of `op`, starting a new interval.
    pub fn take_interval(&self, op: Op) -> OpCounters {
        match self.ops.get(&op) {
            Some(window) => {
                let mut w = window.lock().unwrap_or_else(|e| e.into_inner());
                std::mem::take(&mut w.interval)
            }
            None => OpCounters::default(),
        }
    }

    /// The whole phase's counters of `op`.
    pub fn phase(&self, op: Op) -> OpCounters {
        match self.ops.get(&op) {
            Some(window) => window
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .phase
                .clone(),
            None => OpCounters::default(),
        }
    }

    /// The workload counters so far.
    pub fn extra(&self) -> Extra {
        Extra {
            applied: self.applied.load(Ordering::Relaxed),
            not_applied: self.not_applied.load(Ordering::Relaxed),
            verified: self.verified.load(Ordering::Relaxed),
            verify_failures: self.verify_failures.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_split_successes_and_errors() {
        let r = Recorder::new([Op::Write, Op::Read]);
        for ms in 1..=100 {
            r.record(Op::Write, Ok(Duration::from_millis(ms)));
        }
        r.record(Op::Write, Err(ErrorKind::Timeout));
        r.record(Op::Write, Err(ErrorKind::Overloaded));
        r.record(Op::Delete, Ok(Duration::from_millis(1)));
        let interval = r.take_interval(Op::Write);
        assert_eq!(interval.count(), 100);
        assert_eq!(
            r.take_interval(Op::Write).count(),
            0,
            "a new interval starts"
        );
        let res = r.phase(Op::Write).result(Duration::from_secs(2));
        assert_eq!(res.count, 100);
        assert_eq!(res.errors, 2);
        assert_eq!(res.timeouts, 1);
        assert_eq!(res.error_kinds.get("overloaded"), Some(&1));
        assert_eq!(res.throughput, 50.0);
        let lat = res.latency_ms.unwrap();
        assert!((lat.p50 - 50.0).abs() < 0.1, "{lat:?}");
        assert!((lat.max - 100.0).abs() < 0.1, "{lat:?}");
        assert!((lat.mean - 50.5).abs() < 0.1, "{lat:?}");
        assert!(r
            .phase(Op::Read)
            .result(Duration::from_secs(1))
            .latency_ms
            .is_none());
        assert_eq!(r.ops().collect::<Vec<_>>(), vec![Op::Write, Op::Read]);
    }

    #[test]
    fn huge_latencies_are_clamped() {
        let mut c = OpCounters::default();
        c.record(Ok(Duration::from_secs(10 * 3600)));
        assert_eq!(c.count(), 1);
        assert!(c.latency_us.max() >= LATENCY_US_MAX - LATENCY_US_MAX / 1000);
    }

    #[test]
    fn latency_limit_holds_at_n_and_clamps_n_plus_one() {
        let max_after = |us: u64| {
            let mut c = OpCounters::default();
            c.record(Ok(Duration::from_micros(us)));
            assert_eq!(c.count(), 1);
            c.latency_us.max()
        };
        let at_n = max_after(LATENCY_US_MAX);
        // Recorded as itself (within the histogram's precision).
        assert!(at_n >= LATENCY_US_MAX && at_n - LATENCY_US_MAX <= LATENCY_US_MAX / 1000);
        // One past the limit lands in the same, last bucket.
        assert_eq!(max_after(LATENCY_US_MAX + 1), at_n);
        assert!(max_after(LATENCY_US_MAX / 2) < at_n);
    }
}
