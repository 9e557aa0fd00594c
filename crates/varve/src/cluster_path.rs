//! The adapter between query's [`DataPath`] and the cluster's
//! [`Coordinator`] (docs/design/cluster.md, section 2): query hands it
//! commands by table id; it finds each table's keyspace replication in
//! the schema and lets the coordinator place, send and count.
//!
//! The processor is built before messaging starts, so the coordinator is
//! bound afterwards ([`ClusterPath::bind`]); until then (and for tables
//! the schema does not know, which the local engine then reports) every
//! command runs on the local engine as on one node. System keyspaces are
//! node-local (LocalStrategy).

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use arc_swap::ArcSwap;
use varve_cluster::coordinator::{
    BatchWrite, Cas, Coordinator, DecideFn, KeyScan, Read, RebuildFn, Replication,
    ReplicationLookup, RowScan, Speculation, Write,
};
use varve_query::data_path::{
    CasCommand, CasDecider, CasOutcome, DataFuture, DataPath, DataResult, KeyScan as QueryKeyScan,
    PartitionRead, ReadCommand, RowScan as QueryRowScan, ScannedPartitions, TableId, WriteCommand,
    WriteKind,
};
use varve_query::local::LocalNode;
use varve_query::Processor;
use varve_schema::options::{ReadRepair, ReplicationParams, ReplicationStrategy, SpeculativeRetry};
use varve_schema::Schema;
use varve_types::data::{Partition, PartitionKey};
use varve_types::data_error::{DataError, WriteType};
use varve_types::Consistency;

/// The data path of a node that runs the cluster machinery.
pub struct ClusterPath {
    local: LocalNode,
    bound: OnceLock<Bound>,
}

struct Bound {
    coordinator: Arc<Coordinator>,
    processor: Weak<Processor>,
    /// Each table's replication, for the schema it was built from.
    replication: ArcSwap<ReplicationMap>,
}

#[derive(Default)]
struct ReplicationMap {
    schema: Option<Arc<Schema>>,
    tables: BTreeMap<TableId, Route>,
}

/// What the coordinator needs to know of a table.
#[derive(Clone)]
struct Route {
    replication: Arc<Replication>,
    speculation: Speculation,
    blocking_repair: bool,
}

impl ClusterPath {
    pub fn new(local: LocalNode) -> ClusterPath {
        ClusterPath {
            local,
            bound: OnceLock::new(),
        }
    }

    /// From now on, commands go through `coordinator`, with the schema of
    /// `processor`.
    pub fn bind(&self, coordinator: Arc<Coordinator>, processor: &Arc<Processor>) {
        let _ = self.bound.set(Bound {
            coordinator,
            processor: Arc::downgrade(processor),
            replication: ArcSwap::from_pointee(ReplicationMap::default()),
        });
    }

    /// How the coordinator finds a table's replication by id (batch
    /// replays): through this adapter's map of `processor`'s schema.
    pub fn lookup(processor: &Arc<Processor>) -> ReplicationLookup {
        let processor = Arc::downgrade(processor);
        Box::new(move |table| {
            let schema = processor.upgrade()?.schema();
            ReplicationMap::of(schema)
                .tables
                .get(&table)
                .map(|r| (*r.replication).clone())
        })
    }

    /// How conditional statements other coordinators forward here are
    /// rebuilt (docs/design/paxos.md, section 7.1): by query, against
    /// `processor`'s schema.
    pub fn rebuild(processor: &Arc<Processor>) -> RebuildFn {
        let processor = Arc::downgrade(processor);
        Arc::new(move |table, bytes| {
            let schema = processor
                .upgrade()
                .ok_or_else(|| "the node is stopping".to_string())?
                .schema();
            let decider = varve_query::cas_portable::rebuild(&schema, table, bytes)?;
            Ok(decide_fn(decider))
        })
    }

    /// The coordinator and the replication of `table`, when bound and the
    /// table is known.
    fn route(&self, table: TableId) -> Option<(&Coordinator, Arc<Replication>)> {
        self.route_full(table)
            .map(|(c, route)| (c, route.replication))
    }

    fn route_full(&self, table: TableId) -> Option<(&Coordinator, Route)> {
        let bound = self.bound.get()?;
        let route = bound.route_of(table)?;
        Some((&bound.coordinator, route))
    }
}

impl Bound {
    fn route_of(&self, table: TableId) -> Option<Route> {
        let schema = self.processor.upgrade()?.schema();
        let map = self.replication.load();
        let current = map.schema.as_ref().is_some_and(|s| Arc::ptr_eq(s, &schema));
        if current {
            return map.tables.get(&table).cloned();
        }
        let rebuilt = ReplicationMap::of(schema);
        let found = rebuilt.tables.get(&table).cloned();
        self.replication.store(Arc::new(rebuilt));
        found
    }
}

impl ReplicationMap {
    fn of(schema: Arc<Schema>) -> ReplicationMap {
        let mut tables = BTreeMap::new();
        for ks in schema.keyspaces.values() {
            let replication = Arc::new(if ks.is_system {
                Replication::Local
            } else {
                replication(&ks.replication)
            });
            for t in ks.tables.values() {
                tables.insert(
                    t.id,
                    Route {
                        replication: Arc::clone(&replication),
                        speculation: speculation(t.options.speculative_retry),
                        blocking_repair: t.options.read_repair == ReadRepair::Blocking,
                    },
                );
            }
        }
        ReplicationMap {
            schema: Some(schema),
            tables,
        }
    }
}

/// A keyspace's replication as the coordinator takes it.
pub fn replication(r: &ReplicationParams) -> Replication {
    match r.strategy {
        ReplicationStrategy::Local => Replication::Local,
        ReplicationStrategy::Simple => Replication::Simple(r.replication_factor("")),
        ReplicationStrategy::NetworkTopology => Replication::PerDc(
            r.options
                .keys()
                .map(|dc| (dc.clone(), r.replication_factor(dc)))
                .collect(),
        ),
    }
}

/// A table's `speculative_retry` as the coordinator takes it.
pub fn speculation(s: SpeculativeRetry) -> Speculation {
    let ms = |n: i32| Duration::from_millis(n.max(0) as u64);
    match s {
        SpeculativeRetry::Never => Speculation::Never,
        SpeculativeRetry::Always => Speculation::Always,
        SpeculativeRetry::Percentile(p) => Speculation::Percentile(p),
        SpeculativeRetry::FixedMs(n) => Speculation::Fixed(ms(n)),
        SpeculativeRetry::Hybrid {
            max: false,
            percentile,
            fixed_ms,
        } => Speculation::Min(percentile, ms(fixed_ms)),
        SpeculativeRetry::Hybrid {
            max: true,
            percentile,
            fixed_ms,
        } => Speculation::Max(percentile, ms(fixed_ms)),
    }
}

fn write_type(kind: WriteKind) -> WriteType {
    match kind {
        WriteKind::Simple => WriteType::Simple,
        WriteKind::UnloggedBatch => WriteType::UnloggedBatch,
        WriteKind::LoggedBatch => WriteType::Batch,
        WriteKind::Cas => WriteType::Cas,
    }
}

impl DataPath for ClusterPath {
    fn write(&self, w: WriteCommand) -> DataFuture<'_, ()> {
        let Some((coordinator, replication)) = self.route(w.table) else {
            return self.local.write(w);
        };
        // This node the only replica: done now, nothing boxed.
        if coordinator.is_only_here(w.key.token, &replication) {
            return DataFuture::ready(coordinator.write_here(Write {
                table: w.table,
                key: w.key,
                update: w.update,
                replication: &replication,
                consistency: w.consistency,
                write_type: write_type(w.kind),
            }));
        }
        let (table, key, update, consistency, write_type) =
            (w.table, w.key, w.update, w.consistency, write_type(w.kind));
        DataFuture::Boxed(Box::pin(async move {
            coordinator
                .write(Write {
                    table,
                    key,
                    update,
                    replication: &replication,
                    consistency,
                    write_type,
                })
                .await
        }))
    }

    fn write_logged_batch(&self, writes: Vec<WriteCommand>) -> DataFuture<'_, ()> {
        let Some(bound) = self.bound.get() else {
            return self.local.write_logged_batch(writes);
        };
        let Some(consistency) = writes.first().map(|w| w.consistency) else {
            return DataFuture::ready(Ok(()));
        };
        let mut batch = Vec::with_capacity(writes.len());
        for w in writes {
            // A table the schema does not know: the engine reports it.
            let Some(route) = bound.route_of(w.table) else {
                return self.local.write(w);
            };
            batch.push(BatchWrite {
                table: w.table,
                key: w.key,
                update: w.update,
                replication: route.replication,
            });
        }
        DataFuture::Boxed(Box::pin(
            bound.coordinator.write_logged_batch(batch, consistency),
        ))
    }

    fn read<'a>(&'a self, r: ReadCommand<'a>) -> DataFuture<'a, PartitionRead> {
        let Some((coordinator, route)) = self.route_full(r.table) else {
            return self.local.read(r);
        };
        if r.consistency.is_serial() && coordinator.node_count() > 1 {
            return serial_read(coordinator, route, r);
        }
        DataFuture::Boxed(Box::pin(async move {
            let found = coordinator
                .read(Read {
                    table: r.table,
                    key: r.key,
                    slices: r.slices,
                    reversed: r.reversed,
                    now_seconds: r.now_seconds,
                    row_limit: r.row_limit,
                    replication: &route.replication,
                    consistency: r.consistency,
                    speculation: route.speculation,
                    blocking_repair: route.blocking_repair,
                })
                .await?;
            Ok(PartitionRead {
                partition: found.partition,
                tombstones: found.tombstones,
                complete: found.complete,
                sstables: found.sstables,
            })
        }))
    }

    /// On a node alone, under its partition lock; on a cluster of several
    /// nodes, a Paxos transaction across the partition's replicas
    /// (docs/design/paxos.md). Every coordinator of a cluster runs Paxos,
    /// whatever the replication, so no two ways of ordering a partition's
    /// transactions ever mix.
    fn cas<'a>(&'a self, c: CasCommand<'a>) -> DataFuture<'a, CasOutcome> {
        let Some((coordinator, replication)) = self.route(c.table) else {
            return self.local.cas(c);
        };
        if coordinator.node_count() <= 1 {
            // One node: its lock orders the partition's transactions; the
            // levels still need their replicas (RF 3 on one node cannot
            // give a quorum).
            for level in [c.serial, c.commit] {
                if let Err(e) = coordinator.check_live(c.key.token, &replication, level) {
                    return DataFuture::ready(Err(DataError::Unavailable(e)));
                }
            }
            return self.local.cas(c);
        }
        DataFuture::Boxed(Box::pin(async move {
            let portable = c.decider.portable();
            let decide = decide_fn(Arc::clone(&c.decider));
            let found = coordinator
                .cas(Cas {
                    table: c.table,
                    key: c.key,
                    slices: c.slices,
                    replication: &replication,
                    serial: c.serial,
                    commit: c.commit,
                    now_seconds: c.now_seconds,
                    reversed: false,
                    row_limit: usize::MAX,
                    decide: Some(decide),
                    portable,
                })
                .await?;
            Ok(CasOutcome {
                current: found.current,
                applied: found.applied,
                contention: found.contention,
            })
        }))
    }

    fn scan_keys<'a>(&'a self, s: QueryKeyScan<'a>) -> DataFuture<'a, Vec<PartitionKey>> {
        let Some((coordinator, replication)) = self.route(s.table) else {
            return self.local.scan_keys(s);
        };
        DataFuture::Boxed(Box::pin(async move {
            coordinator
                .scan_keys(KeyScan {
                    table: s.table,
                    start: s.start,
                    end: s.end,
                    limit: s.limit,
                    replication: &replication,
                    consistency: s.consistency,
                })
                .await
        }))
    }

    fn scan_rows<'a>(&'a self, s: QueryRowScan<'a>) -> Option<DataFuture<'a, ScannedPartitions>> {
        let (coordinator, route) = self.route_full(s.table)?;
        Some(DataFuture::Boxed(Box::pin(async move {
            let found = coordinator
                .scan_rows(RowScan {
                    table: s.table,
                    start: s.start,
                    end: s.end,
                    slices: s.slices,
                    reversed: s.reversed,
                    now_seconds: s.now_seconds,
                    row_limit: s.row_limit,
                    total_rows: s.total_rows,
                    limit: s.limit,
                    replication: &route.replication,
                    consistency: s.consistency,
                    blocking_repair: route.blocking_repair,
                })
                .await?;
            let partitions = found
                .partitions
                .into_iter()
                .map(|(key, r)| {
                    let read = PartitionRead {
                        partition: r.partition,
                        tombstones: r.tombstones,
                        complete: r.complete,
                        sstables: r.sstables,
                    };
                    (key, read)
                })
                .collect();
            Ok(ScannedPartitions {
                partitions,
                more: found.more,
            })
        })))
    }

    fn truncate(&self, table: TableId) -> DataFuture<'_, ()> {
        let Some((coordinator, _)) = self.route(table) else {
            return self.local.truncate(table);
        };
        DataFuture::Boxed(Box::pin(coordinator.truncate(table)))
    }

    fn checks_replicas(&self) -> bool {
        self.bound.get().is_some()
    }

    fn assure_live(&self, table: TableId, token: i64, consistency: Consistency) -> DataResult<()> {
        let Some((coordinator, replication)) = self.route(table) else {
            return Ok(());
        };
        coordinator
            .check_live(token, &replication, consistency)
            .map_err(DataError::Unavailable)
    }
}

/// A read at SERIAL or LOCAL_SERIAL: a Paxos round without a proposal
/// (it finishes any round left half-way first).
fn serial_read<'a>(
    coordinator: &'a Coordinator,
    route: Route,
    r: ReadCommand<'a>,
) -> DataFuture<'a, PartitionRead> {
    DataFuture::Boxed(Box::pin(async move {
        let found = coordinator
            .cas(Cas {
                table: r.table,
                key: r.key,
                slices: r.slices,
                replication: &route.replication,
                serial: r.consistency,
                commit: r.consistency,
                now_seconds: r.now_seconds,
                reversed: r.reversed,
                row_limit: r.row_limit,
                decide: None,
                portable: None,
            })
            .await?;
        let empty = found.current.is_empty();
        Ok(PartitionRead {
            partition: (!empty).then_some(found.current),
            tombstones: 0,
            complete: found.complete,
            sstables: 0,
        })
    }))
}

/// A query decider as the coordinator calls it.
fn decide_fn(decider: Arc<dyn CasDecider>) -> DecideFn {
    Arc::new(move |current: &Partition, timestamp: i64| {
        decider
            .decide(current, timestamp)
            .map(|d| (d.applied, d.update))
    })
}
