//! Reading the registry out: ticking, the Prometheus text, virtual-table
//! rows. Values are read after the registry lock is released (see
//! `Registry::collect`).

use std::sync::{mpsc, Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::{Instrument, Kind, Registry, Row};
use crate::render::{self, FamilyView, Labels, SeriesValue, PREFIX};
use crate::{names, process};

impl Registry {
    /// Rotates due histogram windows and advances meter averages, as of
    /// `now`.
    pub fn tick_at(&self, now: Instant) {
        for (_, _, _, series) in self.collect() {
            for (_, instrument) in series {
                match instrument {
                    Instrument::Latency(h) => {
                        h.rotate_if_due(now);
                    }
                    Instrument::Meter(m) => m.tick_if_due(now),
                    _ => {}
                }
            }
        }
    }

    /// [`Self::tick_at`] now.
    pub fn tick(&self) {
        self.tick_at(Instant::now());
    }

    /// Starts a thread that ticks the registry every `every` until the
    /// returned [`Ticker`] is dropped (or the registry is).
    pub fn spawn_ticker(self: &Arc<Self>, every: Duration) -> std::io::Result<Ticker> {
        let weak: Weak<Registry> = Arc::downgrade(self);
        let (stop, stopped) = mpsc::channel::<()>();
        let handle = std::thread::Builder::new()
            .name("varve-metrics-tick".into())
            .spawn(move || {
                while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(every) {
                    match weak.upgrade() {
                        Some(registry) => registry.tick(),
                        None => return,
                    }
                }
            })?;
        Ok(Ticker {
            stop: Some(stop),
            handle: Some(handle),
        })
    }

    /// Families as (name, kind, help, series) with `Arc`s cloned out.
    #[allow(clippy::type_complexity)]
    fn collect(&self) -> Vec<(String, Kind, String, Vec<(Labels, Instrument)>)> {
        let families = self.families.read();
        families
            .iter()
            .map(|(name, f)| {
                let help = f
                    .help
                    .clone()
                    .or_else(|| names::help(name).map(str::to_string))
                    .unwrap_or_else(|| format!("Varve metric {name}."));
                let series = f.series.iter().map(|(l, i)| (l.clone(), i.clone()));
                (name.clone(), f.kind, help, series.collect())
            })
            .collect()
    }

    /// The Prometheus text (format 0.0.4) of every metric, families sorted
    /// by exposed name, series by labels.
    pub fn render_prometheus(&self) -> String {
        let mut views: Vec<FamilyView> = self
            .collect()
            .into_iter()
            .map(|(name, kind, help, series)| view(&name, kind, help, series))
            .collect();
        if self.options.process_metrics {
            views.extend(process::families(&process::sample()));
        }
        if self.conflicts() > 0 {
            views.push(FamilyView {
                name: format!("{PREFIX}{}", names::METRICS_REGISTRATION_CONFLICTS),
                help: "Metric registrations refused: name taken by another kind.".into(),
                series: vec![(Vec::new(), SeriesValue::Counter(self.conflicts()))],
            });
        }
        views.sort_by(|a, b| a.name.cmp(&b.name));
        let mut out = String::new();
        for v in &views {
            render::write_family(&mut out, v);
        }
        out
    }

    /// Every value as a flat row, for a `system_views` table. Latency rows
    /// give all-time `count`/`sum_micros` and recent mean, quantiles and max.
    pub fn rows(&self) -> Vec<Row> {
        let mut rows = Vec::new();
        for (family, kind, _, series) in self.collect() {
            for (labels, instrument) in series {
                let mut push = |field: &'static str, value: f64| {
                    rows.push(Row {
                        family: family.clone(),
                        labels: labels.clone(),
                        field,
                        value,
                    })
                };
                match instrument {
                    Instrument::Counter(c) => push("count", c.get() as f64),
                    Instrument::Gauge(g) => push("value", g.get()),
                    Instrument::GaugeFn(f) => push("value", f()),
                    Instrument::Meter(m) => {
                        let r = m.rates();
                        push("count", r.count as f64);
                        push("mean_rate", r.mean);
                        push("one_minute_rate", r.one_minute);
                        push("five_minute_rate", r.five_minute);
                        push("fifteen_minute_rate", r.fifteen_minute);
                    }
                    Instrument::Latency(h) => {
                        let r = h.snapshot_recent();
                        let f = if kind == Kind::Latency {
                            &LATENCY_FIELDS
                        } else {
                            &HISTOGRAM_FIELDS
                        };
                        let values = [
                            h.count() as f64,
                            h.sum_micros() as f64,
                            h.clamped() as f64,
                            r.count as f64,
                            r.mean_micros,
                            r.p50,
                            r.p75,
                            r.p95,
                            r.p98,
                            r.p99,
                            r.p999,
                            r.max_micros as f64,
                        ];
                        for (field, value) in f.iter().zip(values) {
                            push(field, value);
                        }
                    }
                }
            }
        }
        if self.options.process_metrics {
            rows.extend(process::rows(&process::sample()));
        }
        rows
    }
}

/// Row fields of a latency histogram (recent view from `recent_count` on).
const LATENCY_FIELDS: [&str; 12] = [
    "count",
    "sum_micros",
    "clamped",
    "recent_count",
    "mean_micros",
    "p50_micros",
    "p75_micros",
    "p95_micros",
    "p98_micros",
    "p99_micros",
    "p999_micros",
    "max_micros",
];
/// Row fields of a value histogram.
const HISTOGRAM_FIELDS: [&str; 12] = [
    "count",
    "sum",
    "clamped",
    "recent_count",
    "mean",
    "p50",
    "p75",
    "p95",
    "p98",
    "p99",
    "p999",
    "max",
];

/// Stops its ticking thread when dropped.
#[derive(Debug)]
pub struct Ticker {
    stop: Option<mpsc::Sender<()>>,
    handle: Option<JoinHandle<()>>,
}

impl Drop for Ticker {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// The exposed name of family `name` of `kind`.
pub fn exposed_name(name: &str, kind: Kind) -> String {
    let suffix = match kind {
        Kind::Counter | Kind::Meter => "_total",
        Kind::Latency => "_seconds",
        Kind::Gauge | Kind::Histogram => "",
    };
    if name.ends_with(suffix) {
        format!("{PREFIX}{name}")
    } else {
        format!("{PREFIX}{name}{suffix}")
    }
}

fn view(name: &str, kind: Kind, help: String, series: Vec<(Labels, Instrument)>) -> FamilyView {
    let divisor = if kind == Kind::Latency { 1e6 } else { 1.0 };
    let series = series
        .into_iter()
        .map(|(labels, i)| {
            let value = match i {
                Instrument::Counter(c) => SeriesValue::Counter(c.get()),
                Instrument::Meter(m) => SeriesValue::Counter(m.count()),
                Instrument::Gauge(g) => SeriesValue::Gauge(g.get()),
                Instrument::GaugeFn(f) => SeriesValue::Gauge(f()),
                Instrument::Latency(h) => SeriesValue::Summary {
                    count: h.count(),
                    sum: h.sum_micros(),
                    recent: h.snapshot_recent(),
                    divisor,
                },
            };
            (labels, value)
        })
        .collect();
    FamilyView {
        name: exposed_name(name, kind),
        help,
        series,
    }
}
