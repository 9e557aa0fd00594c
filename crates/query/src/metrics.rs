//! Client-request metrics of the query layer: which Cassandra
//! `ClientRequest` scope a statement belongs to ([`Operation`]), the
//! handles it records into (looked up once, never per request:
//! [`RequestHandles`], [`TableHandles`]) and how a failed request is
//! counted ([`ErrorClass`]).
//!
//! Classification (`docs/design/metrics.md`, "Client requests"):
//! - SELECT of one partition → `read`; a scan, a token range or several
//!   partitions (IN) → `range_slice`; at SERIAL / LOCAL_SERIAL → `cas_read`.
//! - INSERT, UPDATE, DELETE, BATCH → `write`; with an IF condition
//!   anywhere → `cas_write`.
//! - Statements on virtual tables, DDL, USE: not client requests (as in
//!   Cassandra, where they never reach the StorageProxy).
//!
//! A request is recorded when it succeeds or fails with a timeout,
//! unavailable or failure error; a request refused by validation (Invalid,
//! Syntax, ...) is not, as Cassandra never starts it.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use parking_lot::{Mutex, RwLock};
use varve_metrics::names::{self, LABEL_KEYSPACE, LABEL_OPERATION, LABEL_TABLE};
use varve_metrics::{Counter, LatencyHistogram, Meter, Registry};
use varve_storage::TableId;

use crate::error::QueryError;

/// Protocol consistency codes of the serial levels.
pub const CONSISTENCY_SERIAL: u16 = 0x0008;
pub const CONSISTENCY_LOCAL_SERIAL: u16 = 0x0009;

/// A Cassandra `ClientRequest` scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Read = 0,
    Write = 1,
    CasRead = 2,
    CasWrite = 3,
    RangeSlice = 4,
}

/// Every operation, in index order.
pub const OPERATIONS: [Operation; 5] = [
    Operation::Read,
    Operation::Write,
    Operation::CasRead,
    Operation::CasWrite,
    Operation::RangeSlice,
];

impl Operation {
    /// The `operation` label value.
    pub fn label(self) -> &'static str {
        match self {
            Operation::Read => names::OP_READ,
            Operation::Write => names::OP_WRITE,
            Operation::CasRead => names::OP_CAS_READ,
            Operation::CasWrite => names::OP_CAS_WRITE,
            Operation::RangeSlice => names::OP_RANGE_SLICE,
        }
    }

    /// The scope of a SELECT that read `partitions` partitions by key
    /// (`None`: a scan or token range) at `consistency`.
    pub fn of_select(single_partition: bool, consistency: u16) -> Operation {
        if consistency == CONSISTENCY_SERIAL || consistency == CONSISTENCY_LOCAL_SERIAL {
            Operation::CasRead
        } else if single_partition {
            Operation::Read
        } else {
            Operation::RangeSlice
        }
    }

    /// The scope of a write (or batch) with or without IF conditions.
    pub fn of_write(conditional: bool) -> Operation {
        if conditional {
            Operation::CasWrite
        } else {
            Operation::Write
        }
    }
}

/// How a failed client request is counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// ReadTimeout / WriteTimeout (0x1200 / 0x1100).
    Timeout,
    /// Unavailable (0x1000).
    Unavailable,
    /// ReadFailure / WriteFailure (0x1300 / 0x1500).
    Failure,
}

/// The class of a request's error; `None` for errors that mean the request
/// never ran (validation, syntax, ...), which are not counted. Exhaustive on
/// purpose: a new error code must decide here.
pub fn error_class(e: &QueryError) -> Option<ErrorClass> {
    match e {
        QueryError::ReadFailure { .. } | QueryError::WriteFailure { .. } => {
            Some(ErrorClass::Failure)
        }
        QueryError::Unavailable(_) => Some(ErrorClass::Unavailable),
        QueryError::WriteTimeout(_)
        | QueryError::CasWriteUnknown(_)
        | QueryError::ReadTimeout(_) => Some(ErrorClass::Timeout),
        QueryError::Syntax(_)
        | QueryError::Invalid(_)
        | QueryError::Config(_)
        | QueryError::AlreadyExists { .. }
        | QueryError::Unauthorized(_)
        | QueryError::Unprepared { .. }
        | QueryError::Overloaded(_)
        | QueryError::Server(_)
        // A function refused its arguments before anything was read or written.
        | QueryError::FunctionFailure { .. }
        | QueryError::WouldBlock(_) => None,
    }
}

/// The instruments of one operation.
#[derive(Debug)]
pub struct OperationHandles {
    pub latency: Arc<LatencyHistogram>,
    pub timeouts: Arc<Counter>,
    pub unavailables: Arc<Counter>,
    pub failures: Arc<Counter>,
}

impl OperationHandles {
    fn new(registry: &Registry, op: Operation) -> Self {
        let labels = [(LABEL_OPERATION, op.label())];
        OperationHandles {
            latency: registry.latency(names::CLIENT_REQUEST_LATENCY, &labels),
            timeouts: registry.counter(names::CLIENT_REQUEST_TIMEOUTS, &labels),
            unavailables: registry.counter(names::CLIENT_REQUEST_UNAVAILABLES, &labels),
            failures: registry.counter(names::CLIENT_REQUEST_FAILURES, &labels),
        }
    }
}

/// Every client-request instrument, looked up once at startup.
#[derive(Debug)]
pub struct RequestHandles {
    /// Indexed by `Operation as usize`.
    pub ops: [OperationHandles; 5],
    /// Lock waits per LWT (label cas_write; see `cas::run`).
    pub cas_write_contention: Arc<LatencyHistogram>,
    /// Always 0 on one node (see docs/design/metrics.md); registered so
    /// dashboards find the series.
    pub cas_unfinished_commits: [Arc<Counter>; 2],
    pub cas_condition_not_met: Arc<Counter>,
}

impl RequestHandles {
    pub fn new(registry: &Registry) -> Self {
        let op = |o: Operation| [(LABEL_OPERATION, o.label())];
        RequestHandles {
            ops: OPERATIONS.map(|o| OperationHandles::new(registry, o)),
            cas_write_contention: registry
                .histogram(names::CAS_CONTENTION, &op(Operation::CasWrite)),
            cas_unfinished_commits: [Operation::CasRead, Operation::CasWrite]
                .map(|o| registry.counter(names::CAS_UNFINISHED_COMMITS, &op(o))),
            cas_condition_not_met: registry
                .counter(names::CAS_CONDITION_NOT_MET, &op(Operation::CasWrite)),
        }
    }

    /// The handles of `op`.
    pub fn op(&self, op: Operation) -> &OperationHandles {
        &self.ops[op as usize]
    }

    /// Records one finished request of `op` that started at `started`:
    /// its latency when it ran, and its error class when it failed.
    pub fn finish(&self, op: Operation, started: Instant, error: Option<&QueryError>) {
        if error.is_some_and(QueryError::would_block) {
            return; // it runs again, and that run is the one recorded
        }
        let h = self.op(op);
        match error.map(error_class) {
            None => h.latency.record_since(started),
            Some(None) => {}
            Some(Some(class)) => {
                h.latency.record_since(started);
                match class {
                    ErrorClass::Timeout => h.timeouts.inc(),
                    ErrorClass::Unavailable => h.unavailables.inc(),
                    ErrorClass::Failure => h.failures.inc(),
                }
            }
        }
    }
}

/// A coordinator latency of one table, for the `system_views`
/// `coordinator_*_latency` tables (not exported to Prometheus: the
/// node-wide `client_request_latency` is).
#[derive(Debug, Default)]
pub struct TableLatency {
    pub latency: LatencyHistogram,
    /// For `per_second` (its one-minute rate).
    pub rate: Meter,
}

impl TableLatency {
    fn record_since(&self, started: Instant) {
        self.latency.record_since(started);
        self.rate.mark();
    }
}

/// What storage said about a table at the last sync (read by the gauges).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TableSnapshot {
    pub live_sstables: f64,
    /// (sstables, bytes) per level; index = level.
    pub levels: Vec<(f64, f64)>,
    pub disk_space_used_bytes: f64,
    pub pending_compactions: f64,
    pub bloom_filter_false_positive_ratio: f64,
    pub droppable_tombstone_ratio: f64,
}

/// The per-table instruments.
#[derive(Debug)]
pub struct TableHandles {
    pub keyspace: String,
    pub table: String,
    pub tombstones_scanned: Arc<LatencyHistogram>,
    pub sstables_per_read: Arc<LatencyHistogram>,
    /// Read, write, scan (range_slice) latency; CAS requests count too.
    pub coordinator: [TableLatency; 3],
    pub(crate) snapshot: Mutex<TableSnapshot>,
    /// Levels whose gauges are registered.
    pub(crate) levels_registered: Mutex<usize>,
}

/// Index into [`TableHandles::coordinator`].
pub const COORDINATOR_READ: usize = 0;
pub const COORDINATOR_WRITE: usize = 1;
pub const COORDINATOR_SCAN: usize = 2;

impl TableHandles {
    /// Records a finished request of `op` on this table.
    pub fn finish(&self, op: Operation, started: Instant) {
        let i = match op {
            Operation::Read | Operation::CasRead => COORDINATOR_READ,
            Operation::Write | Operation::CasWrite => COORDINATOR_WRITE,
            Operation::RangeSlice => COORDINATOR_SCAN,
        };
        self.coordinator[i].record_since(started);
    }

    /// The labels of this table's series.
    pub fn labels(&self) -> [(&str, &str); 2] {
        [
            (LABEL_KEYSPACE, self.keyspace.as_str()),
            (LABEL_TABLE, self.table.as_str()),
        ]
    }
}

/// The query layer's metrics: request handles, per-table handles by id.
pub struct QueryMetrics {
    pub registry: Arc<Registry>,
    pub requests: RequestHandles,
    pub(crate) tables: RwLock<HashMap<TableId, Arc<TableHandles>>>,
    /// Serialises syncs (counter deltas, registrations).
    pub(crate) sync_lock: Mutex<crate::metrics_sync::SyncState>,
    /// The node's settings as (name, value), for `system_views.settings`.
    pub(crate) settings: RwLock<Vec<(String, String)>>,
    pub started: Instant,
}

impl std::fmt::Debug for QueryMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueryMetrics")
            .field("tables", &self.tables.read().len())
            .finish()
    }
}

impl QueryMetrics {
    /// Looks every node-wide handle up in `registry`.
    pub fn new(registry: Arc<Registry>) -> Self {
        let requests = RequestHandles::new(&registry);
        let sync = crate::metrics_sync::SyncState::new(&registry);
        QueryMetrics {
            requests,
            tables: RwLock::new(HashMap::new()),
            sync_lock: Mutex::new(sync),
            settings: RwLock::new(Vec::new()),
            started: Instant::now(),
            registry,
        }
    }

    /// The handles of table `id`, registering them on first use.
    pub fn table(&self, id: TableId, keyspace: &str, table: &str) -> Arc<TableHandles> {
        if let Some(h) = self.tables.read().get(&id) {
            return Arc::clone(h);
        }
        let labels = [(LABEL_KEYSPACE, keyspace), (LABEL_TABLE, table)];
        let made = Arc::new(TableHandles {
            keyspace: keyspace.to_string(),
            table: table.to_string(),
            tombstones_scanned: self
                .registry
                .histogram(names::TABLE_TOMBSTONES_SCANNED, &labels),
            sstables_per_read: self
                .registry
                .histogram(names::TABLE_SSTABLES_PER_READ, &labels),
            coordinator: Default::default(),
            snapshot: Mutex::new(TableSnapshot::default()),
            levels_registered: Mutex::new(0),
        });
        let mut tables = self.tables.write();
        let entry = tables.entry(id).or_insert_with(|| {
            crate::metrics_sync::register_table_gauges(&self.registry, &made);
            made
        });
        Arc::clone(entry)
    }

    /// Replaces the settings `system_views.settings` shows.
    pub fn set_settings(&self, settings: Vec<(String, String)>) {
        *self.settings.write() = settings;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use varve_metrics::RegistryOptions;

    fn registry() -> Arc<Registry> {
        Arc::new(Registry::with_options(RegistryOptions {
            process_metrics: false,
            ..RegistryOptions::default()
        }))
    }

    #[test]
    fn operations_follow_cassandra_scopes() {
        assert_eq!(Operation::of_select(true, 0x0001), Operation::Read);
        assert_eq!(Operation::of_select(false, 0x0004), Operation::RangeSlice);
        assert_eq!(
            Operation::of_select(true, CONSISTENCY_SERIAL),
            Operation::CasRead
        );
        assert_eq!(
            Operation::of_select(false, CONSISTENCY_LOCAL_SERIAL),
            Operation::CasRead
        );
        assert_eq!(Operation::of_write(false), Operation::Write);
        assert_eq!(Operation::of_write(true), Operation::CasWrite);
        for (i, op) in OPERATIONS.iter().enumerate() {
            assert_eq!(*op as usize, i);
        }
    }

    #[test]
    fn errors_are_classified_by_code_family() {
        let failure = QueryError::ReadFailure {
            message: "tombstones".into(),
        };
        assert_eq!(error_class(&failure), Some(ErrorClass::Failure));
        assert_eq!(error_class(&QueryError::Invalid("x".into())), None);
        assert_eq!(error_class(&QueryError::Server("x".into())), None);
    }

    #[test]
    fn handles_are_the_registry_series() {
        let r = registry();
        let h = RequestHandles::new(&r);
        let started = Instant::now();
        h.finish(Operation::Write, started, None);
        h.finish(
            Operation::Write,
            started,
            Some(&QueryError::Invalid("no".into())),
        );
        let failure = QueryError::ReadFailure {
            message: "x".into(),
        };
        h.finish(Operation::Read, started, Some(&failure));
        let write = r.latency(names::CLIENT_REQUEST_LATENCY, &[(LABEL_OPERATION, "write")]);
        assert!(Arc::ptr_eq(&write, &h.op(Operation::Write).latency));
        assert_eq!(write.count(), 1, "validation errors are not requests");
        assert_eq!(h.op(Operation::Read).latency.count(), 1);
        assert_eq!(h.op(Operation::Read).failures.get(), 1);
        let text = r.render_prometheus();
        assert!(text.contains("varve_client_request_latency_seconds_count{operation=\"write\"} 1"));
        assert!(text.contains("varve_client_request_failures_total{operation=\"read\"} 1"));
        assert!(text.contains("varve_cas_unfinished_commits_total{operation=\"cas_read\"} 0"));
    }

    #[test]
    fn table_handles_are_made_once() {
        let m = QueryMetrics::new(registry());
        let a = m.table(7, "ks", "t");
        let b = m.table(7, "ks", "t");
        assert!(Arc::ptr_eq(&a, &b));
        a.tombstones_scanned.record(3);
        a.finish(Operation::RangeSlice, Instant::now());
        assert_eq!(a.coordinator[COORDINATOR_SCAN].latency.count(), 1);
        let text = m.registry.render_prometheus();
        assert!(
            text.contains("varve_table_tombstones_scanned_count{keyspace=\"ks\",table=\"t\"} 1")
        );
        assert!(text.contains("varve_table_live_sstables{keyspace=\"ks\",table=\"t\"} 0"));
    }
}
