//! The schema of a cluster node (docs/design/cluster.md, section 6): a
//! schema change is proposed to the metadata log and applied by every
//! node as the log applies it, this one included, so a DDL statement on
//! any node reaches all, and two concurrent ones never diverge.
//!
//! [`ClusterSchema`] is query's [`SchemaSource`]: it reads the node's own
//! [`LocalSchema`]; a change waits until the node is a member of the log
//! (never changing this node alone), then `publish` proposes the new
//! schema against the epoch the current one was applied at (another
//! change first makes it a conflict, which query answers by analysing the
//! statement again), returns once this node applied it, and then waits
//! (at most [`SCHEMA_AGREEMENT_TIMEOUT`]) until every UP peer gossips the
//! same schema version, so a driver's agreement check right after passes.
//! [`SchemaInstaller`] is the log's listener: each metadata whose schema
//! differs from the installed one is decoded and installed (tables
//! created, altered and dropped in storage, the file saved), its version
//! being the log's digest (identical on every node), and the differences
//! are sent to registered clients as SCHEMA_CHANGE events.
//!
//! The log carries the schema as the schema file's JSON with a zero
//! version (docs/format/schema-file.md): the digest depends on the
//! content only.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use parking_lot::Mutex;
use tokio::sync::broadcast;
use varve_cluster::membership::{GossipKey, Gossiper, Membership};
use varve_cluster::metadata::{ClusterMetadata, Command, MetadataError, MetadataLog};
use varve_protocol::{Event, SchemaChange, SchemaChangeTarget, SchemaChangeType};
use varve_query::data_path::DataFuture;
use varve_query::info::uuid_text;
use varve_query::local_schema::LocalSchema;
use varve_query::schema_source::SchemaSource;
use varve_schema::Schema;
use varve_types::data_error::DataError;

/// How long a schema change waits for this node to join the metadata log
/// (`metadata_request_timeout`).
pub const MEMBER_WAIT: Duration = Duration::from_secs(10);

/// The most a schema change that lost a race waits before trying again.
const CONFLICT_JITTER_MICROS: i64 = 20_000;

/// How long a schema change waits for every UP node to report it.
pub const SCHEMA_AGREEMENT_TIMEOUT: Duration = Duration::from_secs(10);
const AGREEMENT_POLL: Duration = Duration::from_millis(50);

/// The schema source of a node that runs the cluster machinery.
pub struct ClusterSchema {
    local: Arc<LocalSchema>,
    bound: OnceLock<Bound>,
    /// Woken when the log is bound.
    bound_now: tokio::sync::Notify,
}

struct Bound {
    log: Arc<dyn MetadataLog>,
    membership: Arc<Gossiper>,
}

impl ClusterSchema {
    pub fn new(local: Arc<LocalSchema>) -> ClusterSchema {
        ClusterSchema {
            local,
            bound: OnceLock::new(),
            bound_now: tokio::sync::Notify::new(),
        }
    }

    /// From now on, schema changes go through `log`.
    pub fn bind(&self, log: Arc<dyn MetadataLog>, membership: Arc<Gossiper>) {
        let _ = self.bound.set(Bound { log, membership });
        self.bound_now.notify_waiters();
    }

    /// The log, once this node is a member; a schema change waits for it
    /// (at most [`MEMBER_WAIT`]) rather than change this node alone.
    async fn log(&self) -> Result<&Bound, DataError> {
        let deadline = tokio::time::Instant::now() + MEMBER_WAIT;
        loop {
            let woken = self.bound_now.notified();
            if let Some(b) = self.bound.get() {
                return Ok(b);
            }
            if tokio::time::timeout_at(deadline, woken).await.is_err() {
                return Err(DataError::Server(
                    "schema change not applied: this node is not yet a member of the cluster's metadata log (are its seeds reachable?); reads and writes continue".into(),
                ));
            }
        }
    }

    async fn propose(&self, b: &Bound, base: &Arc<Schema>, next: Schema) -> Result<(), DataError> {
        let metadata = b.log.current();
        // The base must be what the log holds now (installed at its epoch),
        // or the log must hold no schema yet (a cluster just created: this
        // node's schema becomes the cluster's).
        let installed = metadata.schema.is_empty() || base.version == metadata.schema_version.0;
        if !Arc::ptr_eq(base, &self.local.current()) || !installed {
            // This node's installed schema may lag the log for a moment:
            // the statement is analysed again after a short pause, not at
            // once (fifty immediate retries could all fall in that moment).
            conflict_pause().await;
            return Err(DataError::Conflict(
                "the schema changed while this schema change was prepared".into(),
            ));
        }
        let change = Command::SchemaChange {
            schema: encode(&next),
            expected_epoch: metadata.epoch,
        };
        match b.log.propose(change).await {
            Ok(_) => {}
            Err(MetadataError::Stale { current_epoch }) => {
                let _ = b.log.wait_applied(current_epoch).await;
                conflict_pause().await;
                return Err(DataError::Conflict(
                    "another schema change came first".into(),
                ));
            }
            Err(e @ MetadataError::NoQuorum { .. }) => {
                return Err(DataError::Server(format!(
                    "schema change not applied: {e}; reads and writes continue"
                )))
            }
            Err(e) => return Err(DataError::Server(format!("schema change not applied: {e}"))),
        }
        // The log applied it here before propose returned; the installer
        // failing to install it must not pass for success.
        if self.local.current().version != b.log.current().schema_version.0 {
            return Err(DataError::Server(
                "the schema change was committed to the cluster but this node could not install it; see its log".into(),
            ));
        }
        self.wait_agreement(b).await;
        Ok(())
    }

    /// Waits until every UP peer gossips this node's schema version.
    async fn wait_agreement(&self, b: &Bound) {
        let ours = uuid_text(&self.local.current().version);
        let deadline = tokio::time::Instant::now() + SCHEMA_AGREEMENT_TIMEOUT;
        while tokio::time::Instant::now() < deadline {
            let live = b.membership.live();
            let agreed = live
                .peers
                .values()
                .all(|p| p.get(GossipKey::SCHEMA_VERSION) == Some(ours.as_str()));
            if agreed {
                return;
            }
            tokio::time::sleep(AGREEMENT_POLL).await;
        }
        tracing::warn!(
            "schema version {ours} not reported by every node within {SCHEMA_AGREEMENT_TIMEOUT:?}"
        );
    }
}

impl SchemaSource for ClusterSchema {
    fn current(&self) -> Arc<Schema> {
        self.local.current()
    }

    fn publish<'a>(&'a self, base: &'a Arc<Schema>, next: Schema) -> DataFuture<'a, ()> {
        DataFuture::Boxed(Box::pin(async move {
            let b = self.log().await?;
            self.propose(b, base, next).await
        }))
    }

    fn emits_events(&self) -> bool {
        true
    }
}

/// The schema as the log carries it: the schema file's JSON, version zero.
pub fn encode(schema: &Schema) -> Bytes {
    let mut canonical = schema.clone();
    canonical.version = [0; 16];
    Bytes::from(varve_schema::snapshot::to_json(&canonical).into_bytes())
}

/// The schema `bytes` carry, with `version`, over the system keyspaces.
pub fn decode(bytes: &[u8], version: [u8; 16]) -> Result<Schema, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| e.to_string())?;
    let (keyspaces, _, access) =
        varve_schema::snapshot::from_json_with_access(text).map_err(|e| e.to_string())?;
    let mut schema = varve_query::system_schema();
    schema.access = Arc::new(access);
    for ks in keyspaces {
        schema.keyspaces.insert(ks.name.clone(), Arc::new(ks));
    }
    schema.version = version;
    Ok(schema)
}

/// The metadata log's listener: installs each new schema and tells
/// registered clients what changed.
pub struct SchemaInstaller {
    pub local: Arc<LocalSchema>,
    pub events: broadcast::Sender<Event>,
    /// Where the epoch of the installed schema is kept.
    epoch_file: PathBuf,
    /// The epoch of the installed schema: at start the log replays older
    /// states, which must never be installed over a newer schema (that
    /// would drop the tables created since, and their data).
    installed_epoch: Mutex<u64>,
}

impl SchemaInstaller {
    /// An installer whose installed epoch is kept in `epoch_file`.
    pub fn new(
        local: Arc<LocalSchema>,
        events: broadcast::Sender<Event>,
        epoch_file: PathBuf,
    ) -> SchemaInstaller {
        let installed = std::fs::read_to_string(&epoch_file)
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or(0);
        SchemaInstaller {
            local,
            events,
            epoch_file,
            installed_epoch: Mutex::new(installed),
        }
    }

    /// Installs `m`'s schema if it is newer than the installed one and
    /// differs from it.
    pub fn on_applied(&self, m: &Arc<ClusterMetadata>) {
        let version = m.schema_version.0;
        let mut installed_epoch = self.installed_epoch.lock();
        if m.schema.is_empty() || m.epoch < *installed_epoch {
            return;
        }
        if self.local.current().version == version {
            return;
        }
        let next = match decode(&m.schema, version) {
            Ok(s) => keep_unchanged(&self.local.current(), s),
            Err(e) => {
                tracing::error!(
                    "the cluster's schema at epoch {} does not decode: {e}",
                    m.epoch
                );
                return;
            }
        };
        let before = self.local.current();
        match self.local.install(next) {
            Ok(()) => {
                *installed_epoch = m.epoch;
                if let Err(e) = save_epoch(&self.epoch_file, m.epoch) {
                    tracing::error!("saving the installed schema's epoch: {e}");
                }
                for change in differences(&before, &self.local.current()) {
                    let _ = self.events.send(Event::SchemaChange(change));
                }
            }
            Err(e) => tracing::error!("installing the schema of epoch {}: {e}", m.epoch),
        }
    }
}

/// `next` with every table equal to one of `before` replaced by that one,
/// so installing it touches in storage only the tables that changed.
fn keep_unchanged(before: &Schema, mut next: Schema) -> Schema {
    for (name, ks) in next.keyspaces.iter_mut() {
        let Some(old) = before.keyspaces.get(name) else {
            continue;
        };
        let mut changed = (**ks).clone();
        for (t, table) in changed.tables.iter_mut() {
            if let Some(o) = old.tables.get(t) {
                if format!("{o:?}") == format!("{table:?}") {
                    *table = Arc::clone(o);
                }
            }
        }
        *ks = Arc::new(changed);
    }
    next
}

/// Writes `epoch` to `path` durably (temporary file, sync, rename).
fn save_epoch(path: &Path, epoch: u64) -> std::io::Result<()> {
    use std::io::Write;
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(format!("{epoch}\n").as_bytes())?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)
}

/// The SCHEMA_CHANGE events that take `before` to `after`: keyspaces,
/// user types and tables created, updated and dropped (a keyspace's types
/// before its tables, as drivers need a type before a table using it).
pub fn differences(before: &Schema, after: &Schema) -> Vec<SchemaChange> {
    let mut out = Vec::new();
    let change = |change, target| SchemaChange { change, target };
    for (name, ks) in &after.keyspaces {
        let old_types = before.keyspaces.get(name).map(|k| &k.types);
        match before.keyspaces.get(name) {
            None => out.push(change(
                SchemaChangeType::Created,
                SchemaChangeTarget::Keyspace(name.clone()),
            )),
            Some(old)
                if old.replication != ks.replication || old.durable_writes != ks.durable_writes =>
            {
                out.push(change(
                    SchemaChangeType::Updated,
                    SchemaChangeTarget::Keyspace(name.clone()),
                ))
            }
            Some(_) => {}
        }
        for (t, u) in &ks.types {
            let kind = match old_types.and_then(|o| o.get(t)) {
                None => SchemaChangeType::Created,
                Some(o) if o != u => SchemaChangeType::Updated,
                Some(_) => continue,
            };
            out.push(change(kind, type_target(name, t)));
        }
        for (t, table) in &ks.tables {
            let old = before.keyspaces.get(name).and_then(|k| k.tables.get(t));
            let kind = match old {
                None => SchemaChangeType::Created,
                // Tables decoded from the log are new values: compared by
                // everything they hold.
                Some(o) if !Arc::ptr_eq(o, table) && format!("{o:?}") != format!("{table:?}") => {
                    SchemaChangeType::Updated
                }
                Some(_) => continue,
            };
            out.push(change(kind, table_target(name, t)));
        }
    }
    for (name, ks) in &before.keyspaces {
        match after.keyspaces.get(name) {
            None => out.push(change(
                SchemaChangeType::Dropped,
                SchemaChangeTarget::Keyspace(name.clone()),
            )),
            Some(now) => {
                for t in ks.tables.keys().filter(|t| !now.tables.contains_key(*t)) {
                    out.push(change(SchemaChangeType::Dropped, table_target(name, t)));
                }
                for t in ks.types.keys().filter(|t| !now.types.contains_key(*t)) {
                    out.push(change(SchemaChangeType::Dropped, type_target(name, t)));
                }
            }
        }
    }
    out
}

fn type_target(keyspace: &str, name: &str) -> SchemaChangeTarget {
    SchemaChangeTarget::Type {
        keyspace: keyspace.to_string(),
        name: name.to_string(),
    }
}

fn table_target(keyspace: &str, name: &str) -> SchemaChangeTarget {
    SchemaChangeTarget::Table {
        keyspace: keyspace.to_string(),
        name: name.to_string(),
    }
}

/// Nodes that lost the same race should not meet again at once: a few
/// milliseconds, different on each try.
async fn conflict_pause() {
    let jitter = varve_types::time::now_micros().rem_euclid(CONFLICT_JITTER_MICROS);
    tokio::time::sleep(Duration::from_micros(jitter as u64)).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use varve_schema::options::ReplicationParams;
    use varve_types::{CqlType, UserType};

    fn with_type(fields: &[&str]) -> Schema {
        let u = UserType {
            keyspace: "ks".into(),
            name: "addr".into(),
            field_names: fields.iter().map(|f| f.to_string()).collect(),
            field_types: fields.iter().map(|_| CqlType::Int).collect(),
        };
        let mut schema = varve_query::system_schema();
        let ks = varve_schema::Keyspace {
            name: "ks".into(),
            replication: ReplicationParams::simple(1),
            durable_writes: true,
            tables: Default::default(),
            types: [("addr".to_string(), Arc::new(u))].into(),
            is_system: false,
        };
        schema.keyspaces.insert("ks".into(), Arc::new(ks));
        schema
    }

    fn type_changes(before: &Schema, after: &Schema) -> Vec<SchemaChangeType> {
        differences(before, after)
            .into_iter()
            .filter(|c| matches!(c.target, SchemaChangeTarget::Type { .. }))
            .map(|c| c.change)
            .collect()
    }

    #[test]
    fn a_user_type_travels_in_the_log_and_its_changes_become_events() {
        let one = with_type(&["a"]);
        let back = decode(&encode(&one), [1; 16]).unwrap();
        assert_eq!(back.keyspaces["ks"].types, one.keyspaces["ks"].types);
        let none = varve_query::system_schema();
        assert_eq!(type_changes(&none, &one), [SchemaChangeType::Created]);
        assert_eq!(type_changes(&one, &back), []);
        let two = with_type(&["a", "b"]);
        assert_eq!(type_changes(&one, &two), [SchemaChangeType::Updated]);
        let mut dropped = with_type(&["a"]);
        Arc::make_mut(dropped.keyspaces.get_mut("ks").unwrap())
            .types
            .clear();
        assert_eq!(type_changes(&one, &dropped), [SchemaChangeType::Dropped]);
    }
}
