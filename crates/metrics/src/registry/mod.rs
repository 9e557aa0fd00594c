//! [`Registry`]: metric families by name, series by label set. Getting a
//! metric takes the lock once and hands back an `Arc` the caller keeps, so
//! recording never touches the registry. Rendering copies `Arc`s out under a
//! read lock and reads values after releasing it, so a `gauge_fn` closure may
//! itself use the registry without deadlocking.

mod export;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;

use crate::histogram::{LatencyHistogram, RECENT_WINDOW};
use crate::instruments::{Counter, Gauge};
use crate::meter::Meter;
use crate::render::{self, Labels};
use crate::{Error, Result};

pub use export::{exposed_name, Ticker};

/// A closure evaluated at scrape time.
pub type GaugeFn = Box<dyn Fn() -> f64 + Send + Sync>;

/// The kinds of metric a family can hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    /// Microsecond latencies, rendered in seconds.
    Latency,
    /// Plain value distributions (tombstones per read, contention), same
    /// structure as latency, rendered unscaled.
    Histogram,
    Meter,
}

impl Kind {
    /// Lower-case name, for errors.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Latency => "latency histogram",
            Kind::Histogram => "histogram",
            Kind::Meter => "meter",
        }
    }
}

#[derive(Clone)]
enum Instrument {
    Counter(Arc<Counter>),
    Gauge(Arc<Gauge>),
    GaugeFn(Arc<GaugeFn>),
    Latency(Arc<LatencyHistogram>),
    Meter(Arc<Meter>),
}

struct Family {
    kind: Kind,
    help: Option<String>,
    series: BTreeMap<Labels, Instrument>,
}

/// How a registry behaves.
#[derive(Debug, Clone)]
pub struct RegistryOptions {
    /// Window length of the latency histograms it creates.
    pub recent_window: Duration,
    /// Whether renders and rows include the `process_*` metrics.
    pub process_metrics: bool,
}

impl Default for RegistryOptions {
    fn default() -> Self {
        Self {
            recent_window: RECENT_WINDOW,
            process_metrics: true,
        }
    }
}

/// One value for a virtual table: `(family, labels, field, value)`.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub family: String,
    pub labels: Labels,
    pub field: &'static str,
    pub value: f64,
}

impl Row {
    /// Labels as `k=v,k=v` (sorted), for a text column.
    pub fn labels_text(&self) -> String {
        let parts: Vec<String> = self
            .labels
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        parts.join(",")
    }
}

/// Named metric families with labels.
pub struct Registry {
    families: RwLock<BTreeMap<String, Family>>,
    options: RegistryOptions,
    /// Registrations refused for a kind conflict (rendered when non-zero).
    conflicts: Counter,
}

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("families", &self.families.read().len())
            .field("options", &self.options)
            .finish()
    }
}

impl Registry {
    /// A registry with default options (process metrics on).
    pub fn new() -> Self {
        Self::with_options(RegistryOptions::default())
    }

    /// A registry with `options`.
    pub fn with_options(options: RegistryOptions) -> Self {
        Self {
            families: RwLock::new(BTreeMap::new()),
            options,
            conflicts: Counter::new(),
        }
    }

    /// Gets or creates the series `name{labels}` of `kind`, built by `make`
    /// when absent (or when `replace` says the present one must go).
    fn get_or_insert(
        &self,
        name: &str,
        labels: &[(&str, &str)],
        kind: Kind,
        make: impl FnOnce() -> Instrument,
        replace: bool,
    ) -> Result<Instrument> {
        let name = render::sanitize_metric_name(name);
        let labels = render::normalize_labels(labels);
        if !replace {
            let families = self.families.read();
            if let Some(family) = families.get(&name) {
                check_kind(&name, family.kind, kind)?;
                if let Some(found) = family.series.get(&labels) {
                    return Ok(found.clone());
                }
            }
        }
        let mut families = self.families.write();
        let family = families.entry(name.clone()).or_insert_with(|| Family {
            kind,
            help: None,
            series: BTreeMap::new(),
        });
        check_kind(&name, family.kind, kind)?;
        if replace {
            let made = make();
            family.series.insert(labels, made.clone());
            return Ok(made);
        }
        Ok(family.series.entry(labels).or_insert_with(make).clone())
    }

    /// The counter `name{labels}`.
    pub fn try_counter(&self, name: &str, labels: &[(&str, &str)]) -> Result<Arc<Counter>> {
        let make = || Instrument::Counter(Arc::default());
        match self.get_or_insert(name, labels, Kind::Counter, make, false)? {
            Instrument::Counter(c) => Ok(c),
            _ => Err(conflict(name, Kind::Gauge, Kind::Counter)),
        }
    }

    /// The gauge `name{labels}` (a settable one; see [`Self::gauge_fn`]).
    /// Fails if the series is closure-backed.
    pub fn try_gauge(&self, name: &str, labels: &[(&str, &str)]) -> Result<Arc<Gauge>> {
        let make = || Instrument::Gauge(Arc::default());
        match self.get_or_insert(name, labels, Kind::Gauge, make, false)? {
            Instrument::Gauge(g) => Ok(g),
            _ => Err(Error::KindConflict {
                name: name.to_string(),
                registered: "closure gauge",
                requested: Kind::Gauge.as_str(),
            }),
        }
    }

    /// Registers (or replaces) a gauge whose value `f` computes at scrape
    /// time. `f` runs with no registry lock held.
    pub fn try_gauge_fn(&self, name: &str, labels: &[(&str, &str)], f: GaugeFn) -> Result<()> {
        let make = || Instrument::GaugeFn(Arc::new(f));
        self.get_or_insert(name, labels, Kind::Gauge, make, true)
            .map(|_| ())
    }

    /// The latency histogram `name{labels}`.
    pub fn try_latency(
        &self,
        name: &str,
        labels: &[(&str, &str)],
    ) -> Result<Arc<LatencyHistogram>> {
        let window = self.options.recent_window;
        let make = || Instrument::Latency(Arc::new(LatencyHistogram::with_window(window)));
        match self.get_or_insert(name, labels, Kind::Latency, make, false)? {
            Instrument::Latency(h) => Ok(h),
            _ => Err(conflict(name, Kind::Gauge, Kind::Latency)),
        }
    }

    /// The value histogram `name{labels}` (not a latency: rendered as an
    /// unscaled summary `varve_<name>`). Values up to `MAX_MICROS` (6e7).
    pub fn try_histogram(
        &self,
        name: &str,
        labels: &[(&str, &str)],
    ) -> Result<Arc<LatencyHistogram>> {
        let window = self.options.recent_window;
        let make = || Instrument::Latency(Arc::new(LatencyHistogram::with_window(window)));
        match self.get_or_insert(name, labels, Kind::Histogram, make, false)? {
            Instrument::Latency(h) => Ok(h),
            _ => Err(conflict(name, Kind::Gauge, Kind::Histogram)),
        }
    }

    /// The meter `name{labels}`.
    pub fn try_meter(&self, name: &str, labels: &[(&str, &str)]) -> Result<Arc<Meter>> {
        let make = || Instrument::Meter(Arc::default());
        match self.get_or_insert(name, labels, Kind::Meter, make, false)? {
            Instrument::Meter(m) => Ok(m),
            _ => Err(conflict(name, Kind::Gauge, Kind::Meter)),
        }
    }

    /// Like [`Self::try_counter`]; on a kind conflict (a programming error)
    /// returns a detached counter that is recorded into but never rendered,
    /// and counts the conflict in [`Self::conflicts`] (rendered as
    /// `varve_metrics_registration_conflicts_total`) instead of panicking.
    pub fn counter(&self, name: &str, labels: &[(&str, &str)]) -> Arc<Counter> {
        self.detach_on_conflict(self.try_counter(name, labels))
    }

    /// Like [`Self::try_gauge`], detached on conflict.
    pub fn gauge(&self, name: &str, labels: &[(&str, &str)]) -> Arc<Gauge> {
        self.detach_on_conflict(self.try_gauge(name, labels))
    }

    /// Like [`Self::try_gauge_fn`]; a conflicting registration is dropped
    /// and counted.
    pub fn gauge_fn(&self, name: &str, labels: &[(&str, &str)], f: GaugeFn) {
        if self.try_gauge_fn(name, labels, f).is_err() {
            self.conflicts.inc();
        }
    }

    /// Like [`Self::try_latency`], detached on conflict. The same name and
    /// labels always give the same `Arc`.
    pub fn latency(&self, name: &str, labels: &[(&str, &str)]) -> Arc<LatencyHistogram> {
        self.detach_on_conflict(self.try_latency(name, labels))
    }

    /// Like [`Self::try_histogram`], detached on conflict.
    pub fn histogram(&self, name: &str, labels: &[(&str, &str)]) -> Arc<LatencyHistogram> {
        self.detach_on_conflict(self.try_histogram(name, labels))
    }

    /// Like [`Self::try_meter`], detached on conflict.
    pub fn meter(&self, name: &str, labels: &[(&str, &str)]) -> Arc<Meter> {
        self.detach_on_conflict(self.try_meter(name, labels))
    }

    /// Removes, from every family, the series whose labels include all of
    /// `labels` (e.g. every series of a dropped table); returns how many
    /// went. Handles callers still hold keep working but are no longer
    /// rendered. Empty families render nothing.
    pub fn remove_matching(&self, labels: &[(&str, &str)]) -> usize {
        let wanted = render::normalize_labels(labels);
        let mut removed = 0;
        for family in self.families.write().values_mut() {
            let before = family.series.len();
            family
                .series
                .retain(|have, _| !wanted.iter().all(|pair| have.contains(pair)));
            removed += before - family.series.len();
        }
        removed
    }

    /// Registrations refused because the name had another kind.
    pub fn conflicts(&self) -> u64 {
        self.conflicts.get()
    }

    fn detach_on_conflict<T: Default>(&self, result: Result<Arc<T>>) -> Arc<T> {
        result.unwrap_or_else(|_| {
            self.conflicts.inc();
            Arc::default()
        })
    }

    /// Sets the HELP text of family `name` (default: the text in
    /// [`crate::names::CATALOG`], or a generic line). Creates nothing if absent.
    pub fn describe(&self, name: &str, help: &str) {
        let name = render::sanitize_metric_name(name);
        if let Some(family) = self.families.write().get_mut(&name) {
            family.help = Some(help.to_string());
        }
    }
}

fn check_kind(name: &str, registered: Kind, requested: Kind) -> Result<()> {
    if registered == requested {
        Ok(())
    } else {
        Err(conflict(name, registered, requested))
    }
}

fn conflict(name: &str, registered: Kind, requested: Kind) -> Error {
    Error::KindConflict {
        name: name.to_string(),
        registered: registered.as_str(),
        requested: requested.as_str(),
    }
}
