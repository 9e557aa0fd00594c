//! [`LocalSchema`]: the schema of a node on its own, kept in memory, saved
//! to the schema file, and applied to the node's storage engine.
//!
//! Publishing a change, one at a time: the tables it adds are created in
//! storage first (so a statement that sees the new schema can write to
//! them), storage gets the altered options, the file is saved (durable
//! before visible: an acknowledged change survives a crash), the schema is
//! swapped, and only then are the dropped tables' files removed.

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use varve_schema::{Schema, Table};
use varve_storage::{Engine, TableDescriptor};
use varve_types::data_error::DataError;

use crate::data_path::{DataFuture, DataResult};
use crate::local::on_read;
use crate::persist::SchemaStore;
use crate::schema_source::SchemaSource;

/// One node's schema over its storage engine.
pub struct LocalSchema {
    schema: RwLock<Arc<Schema>>,
    /// Where the schema is saved; `None` for a node kept in memory.
    store: Option<SchemaStore>,
    engine: Arc<Engine>,
    /// Serialises publishing.
    publishing: Mutex<()>,
}

impl LocalSchema {
    /// `schema` as the current one; its tables already exist in `engine`
    /// (which is told their CQL, for snapshots).
    pub fn new(schema: Schema, store: Option<SchemaStore>, engine: Arc<Engine>) -> Self {
        for (id, (t, _)) in tables(&schema) {
            engine.set_table_schema_cql(id, &crate::describe::snapshot_cql(&schema, &t));
        }
        LocalSchema {
            schema: RwLock::new(Arc::new(schema)),
            store,
            engine,
            publishing: Mutex::new(()),
        }
    }

    fn apply(&self, base: &Arc<Schema>, next: Schema) -> DataResult<()> {
        let _one = self.publishing.lock();
        if !Arc::ptr_eq(&self.current(), base) {
            return Err(DataError::Conflict(
                "the schema changed while this schema change was prepared; retry it".into(),
            ));
        }
        self.replace(base, next)
    }

    /// Makes `next` the schema whatever the current one is (a cluster
    /// node applying a change its metadata log decided): its tables
    /// created, altered and dropped in storage, the file saved.
    pub fn install(&self, next: Schema) -> DataResult<()> {
        let _one = self.publishing.lock();
        let base = self.current();
        self.replace(&base, next)
    }

    /// The work of [`Self::apply`] once `base` is known to be current
    /// (the publishing lock held).
    fn replace(&self, base: &Arc<Schema>, next: Schema) -> DataResult<()> {
        let before = tables(base);
        let after = tables(&next);
        for (id, (t, durable)) in &after {
            let changed = match before.get(id) {
                None => self
                    .engine
                    .create_table(descriptor(t, *durable))
                    .map(|()| true),
                Some((old, old_durable)) if !Arc::ptr_eq(old, t) || old_durable != durable => self
                    .engine
                    .update_table(descriptor(t, *durable))
                    .map(|()| true),
                Some(_) => Ok(false),
            }
            .map_err(on_read)?;
            if changed {
                self.engine
                    .set_table_schema_cql(*id, &crate::describe::snapshot_cql(&next, t));
            }
        }
        if let Some(store) = &self.store {
            store
                .save(&next)
                .map_err(|e| DataError::Server(e.to_string()))?;
        }
        *self.schema.write() = Arc::new(next);
        for id in before.keys().filter(|id| !after.contains_key(id)) {
            self.engine.drop_table(*id).map_err(on_read)?;
        }
        Ok(())
    }
}

impl SchemaSource for LocalSchema {
    fn current(&self) -> Arc<Schema> {
        self.schema.read().clone()
    }

    fn publish<'a>(&'a self, base: &'a Arc<Schema>, next: Schema) -> DataFuture<'a, ()> {
        DataFuture::ready(self.apply(base, next))
    }
}

/// The tables storage holds for a schema (every table that is not
/// generated when read: user tables and `system.paxos`), by id, with their
/// keyspace's `durable_writes`.
pub fn tables(schema: &Schema) -> BTreeMap<u128, (Arc<Table>, bool)> {
    schema
        .keyspaces
        .values()
        .flat_map(|k| {
            k.tables
                .values()
                .filter(|t| !t.is_virtual)
                .map(move |t| (t.id, (Arc::clone(t), k.durable_writes)))
        })
        .collect()
}

/// What storage needs to know of a table, from its schema and options.
pub fn descriptor(t: &Table, durable_writes: bool) -> TableDescriptor {
    use varve_schema::options::CompressionAlgorithm;
    use varve_storage::sstable::{Compression, SstableParams};
    let c = &t.options.compression;
    let compression = match c.algorithm {
        None | Some(CompressionAlgorithm::Noop) => Compression::None,
        Some(_) => Compression::Lz4,
    };
    TableDescriptor {
        id: t.id,
        keyspace: t.keyspace.clone(),
        name: t.name.clone(),
        comparator: crate::comparator::build(t),
        params: SstableParams {
            chunk_length: (c.chunk_length_kb.max(1) as usize) * 1024,
            compression,
            bloom_fp_chance: t.options.bloom_filter_fp_chance,
            min_index_interval: t.options.min_index_interval.max(1) as usize,
            max_index_interval: t.options.max_index_interval.max(1) as usize,
            crc_check_chance: t.options.crc_check_chance,
        },
        durable_writes,
        gc_grace_seconds: t.options.gc_grace_seconds,
        compaction: crate::compaction_config::compaction_config(t),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use varve_schema::options::{ReplicationParams, TableOptions};
    use varve_schema::table::TableSpec;
    use varve_schema::Keyspace;
    use varve_types::CqlType;

    fn node() -> (LocalSchema, Arc<Engine>) {
        let engine = varve_storage::Storage::new().engine();
        let schema = LocalSchema::new(crate::system::initial_schema(), None, Arc::clone(&engine));
        (schema, engine)
    }

    /// The current schema with keyspace `ks` holding table `t` (id 42).
    fn with_table(base: &Schema) -> Schema {
        let t = Table::create(TableSpec {
            keyspace: "ks".into(),
            name: "t".into(),
            id: 42,
            columns: vec![("k".into(), CqlType::Int, false)],
            partition_key: vec!["k".into()],
            clustering: vec![],
            options: TableOptions::default(),
        })
        .expect("valid table");
        let mut next = base.clone();
        next.keyspaces.insert(
            "ks".into(),
            Arc::new(Keyspace {
                name: "ks".into(),
                replication: ReplicationParams::simple(1),
                durable_writes: true,
                tables: [("t".to_string(), Arc::new(t))].into(),
                types: Default::default(),
                is_system: false,
            }),
        );
        next
    }

    fn publish(s: &LocalSchema, base: &Arc<Schema>, next: Schema) -> DataResult<()> {
        crate::run::block_on(s.publish(base, next))
    }

    #[test]
    fn a_published_table_exists_in_storage_until_a_schema_drops_it() {
        let (s, engine) = node();
        let base = s.current();
        assert!(engine.comparator(42).is_err());
        publish(&s, &base, with_table(&base)).expect("publishes");
        assert!(s.current().keyspace("ks").is_some());
        assert!(engine.comparator(42).is_ok(), "created in storage");
        let with = s.current();
        let mut without = (*with).clone();
        without.keyspaces.remove("ks");
        publish(&s, &with, without).expect("publishes the drop");
        assert!(s.current().keyspace("ks").is_none());
        assert!(engine.comparator(42).is_err(), "dropped from storage");
    }

    #[test]
    fn a_change_prepared_on_a_stale_schema_is_refused_and_changes_nothing() {
        let (s, engine) = node();
        let stale = s.current();
        publish(&s, &stale, (*stale).clone()).expect("a first change");
        let now = s.current();
        let err = publish(&s, &stale, with_table(&stale)).unwrap_err();
        assert!(
            matches!(err, DataError::Conflict(ref m) if m.contains("retry")),
            "{err:?}"
        );
        assert!(Arc::ptr_eq(&s.current(), &now));
        assert!(engine.comparator(42).is_err(), "no table was created");
    }
}
