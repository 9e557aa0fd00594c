//! The entry point: statements in, outcomes out.

use crate::api::*;
use crate::auth::{Auth, AuthSettings};
use crate::cluster_view::{ClusterView, NoPeers};
use crate::context::{order_values, Ctx};
use crate::data_path::DataPath;
use crate::error::{QueryError, Result};
use crate::local::LocalNode;
use crate::local_schema::{self, LocalSchema};
use crate::metrics::{Operation, QueryMetrics};
use crate::persist::SchemaStore;
use crate::schema_source::SchemaSource;
use crate::{auth, ddl, describe, dry_run, prepare, request, select, system, write};
use bytes::Bytes;
use parking_lot::RwLock;
use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Instant;
use varve_cql::ast::{Parsed, Statement};
use varve_metrics::{Registry, RegistryOptions};
use varve_schema::Schema;
use varve_storage::{Storage, StorageOptions, TableDescriptor};

/// How many prepared statements are kept (`prepared_statements_cache_size`
/// in spirit); past it the oldest half is dropped and drivers re-prepare.
pub const MAX_PREPARED_STATEMENTS: usize = 10_000;

/// A statement kept by PREPARE.
pub(crate) struct Prepared {
    /// The statement's text (the `query` of a traced EXECUTE).
    pub text: String,
    pub parsed: Parsed,
    pub keyspace: Option<String>,
    pub info: PreparedInfo,
    pub spec_names: Vec<String>,
}

/// Runs statements for every connection of the node.
pub struct Processor {
    pub(crate) node: NodeInfo,
    /// This node's tokens now: `node.tokens` at start, replaced once the
    /// cluster metadata gave the node its own (see [`Processor::set_tokens`]).
    tokens: RwLock<Arc<[i64]>>,
    /// The schema, and where changes to it go (see [`SchemaSource`]).
    schema: Arc<dyn SchemaSource>,
    /// The node's own schema and its tables in storage (what `schema`
    /// wraps in a cluster).
    local_schema: Arc<LocalSchema>,
    /// One schema change at a time on this node.
    ddl_lock: tokio::sync::Mutex<()>,
    pub(crate) storage: Storage,
    /// Where statements read and write partitions (see [`DataPath`]).
    pub(crate) data: Arc<dyn DataPath>,
    /// The other nodes, for system.peers (see [`ClusterView`]).
    cluster_view: RwLock<Arc<dyn ClusterView>>,
    gossip_active: std::sync::atomic::AtomicBool,
    prepared: RwLock<HashMap<Bytes, Arc<Prepared>>>,
    last_micros: AtomicI64,
    /// Client-request and table metrics (see [`crate::metrics`]).
    pub(crate) metrics: QueryMetrics,
    /// Authentication and authorization, set once at start
    /// ([`Processor::set_auth`]); unset means allow all.
    auth: std::sync::OnceLock<Auth>,
}

/// What a processor whose authentication was never set runs with.
static ALLOW_ALL: std::sync::LazyLock<Auth> =
    std::sync::LazyLock::new(|| Auth::new(AuthSettings::default()));

/// How many times a schema change is analysed again when another change
/// came first.
pub const SCHEMA_CONFLICT_RETRIES: usize = 50;

impl Processor {
    /// A node that keeps everything in memory (tests).
    pub fn new(node: NodeInfo) -> Arc<Processor> {
        let schema = system::initial_schema();
        let storage = memory_storage(&schema);
        Arc::new(Processor::build(
            node,
            schema,
            None,
            storage,
            private_registry(),
        ))
    }

    /// A node kept in memory whose statements reach its data through
    /// `wrap`'s data path, given the node's own [`LocalNode`]: for tests of
    /// data paths that answer later, or not at all.
    pub fn with_data_path(
        node: NodeInfo,
        wrap: impl FnOnce(LocalNode) -> Arc<dyn DataPath>,
    ) -> Arc<Processor> {
        let schema = system::initial_schema();
        let storage = memory_storage(&schema);
        let mut p = Processor::build(node, schema, None, storage, private_registry());
        p.data = wrap(LocalNode::new(p.storage.engine()));
        Arc::new(p)
    }

    /// A durable node: its schema and data live under the storage options'
    /// data directory; the saved schema is read back, every table opened and
    /// the commitlog replayed.
    pub fn open(node: NodeInfo, options: StorageOptions) -> Result<Arc<Processor>> {
        Processor::open_with_registry(node, options, private_registry())
    }

    /// [`Processor::open`], recording metrics into the node's `registry`.
    pub fn open_with_registry(
        node: NodeInfo,
        options: StorageOptions,
        registry: Arc<Registry>,
    ) -> Result<Arc<Processor>> {
        Processor::open_with_data_path(node, options, registry, |local| Arc::new(local), |s| s)
    }

    /// [`Processor::open_with_registry`] whose statements reach the data
    /// through `wrap`'s data path, given the node's own [`LocalNode`], and
    /// change the schema through `wrap_schema`'s source, given the node's
    /// [`LocalSchema`] (a node of a cluster wraps them in the
    /// coordinator's and the metadata log's adapters).
    pub fn open_with_data_path(
        node: NodeInfo,
        options: StorageOptions,
        registry: Arc<Registry>,
        wrap: impl FnOnce(LocalNode) -> Arc<dyn DataPath>,
        wrap_schema: impl FnOnce(Arc<LocalSchema>) -> Arc<dyn SchemaSource>,
    ) -> Result<Arc<Processor>> {
        let store = SchemaStore::new(options.fs.clone(), &options.data_dir.join("schema"))?;
        let mut schema = system::initial_schema();
        if let Some((keyspaces, version, access)) = store.load()? {
            for ks in keyspaces {
                schema.keyspaces.insert(ks.name.clone(), Arc::new(ks));
            }
            schema.version = version;
            schema.access = Arc::new(access);
        }
        let tables: Vec<TableDescriptor> = local_schema::tables(&schema)
            .values()
            .map(|(t, durable)| local_schema::descriptor(t, *durable))
            .collect();
        let storage = Storage::open(options, tables)?;
        let mut p = Processor::build(node, schema, Some(store), storage, registry);
        p.data = wrap(LocalNode::new(p.storage.engine()));
        p.schema = wrap_schema(Arc::clone(&p.local_schema));
        Ok(Arc::new(p))
    }

    fn build(
        node: NodeInfo,
        schema: Schema,
        schema_store: Option<SchemaStore>,
        storage: Storage,
        registry: Arc<Registry>,
    ) -> Processor {
        let data: Arc<dyn DataPath> = Arc::new(LocalNode::new(storage.engine()));
        let local_schema = Arc::new(LocalSchema::new(schema, schema_store, storage.engine()));
        Processor {
            tokens: RwLock::new(node.tokens.clone().into()),
            node,
            schema: local_schema.clone(),
            local_schema,
            ddl_lock: tokio::sync::Mutex::new(()),
            storage,
            data,
            cluster_view: RwLock::new(Arc::new(NoPeers)),
            gossip_active: std::sync::atomic::AtomicBool::new(false),
            prepared: RwLock::new(HashMap::new()),
            last_micros: AtomicI64::new(0),
            metrics: QueryMetrics::new(registry),
            auth: std::sync::OnceLock::new(),
        }
    }

    /// Sets how the node authenticates and authorizes; only the first
    /// call counts (at start, before serving).
    pub fn set_auth(&self, settings: AuthSettings) {
        let _ = self.auth.set(Auth::new(settings));
    }

    /// How the node authenticates and authorizes.
    pub fn auth(&self) -> &Auth {
        self.auth.get().unwrap_or(&ALLOW_ALL)
    }

    /// Checks that the session may run `statement` (CassandraAuthorizer).
    fn authorize(
        &self,
        state: &ClientState,
        schema: &Schema,
        statement: &Statement,
        keyspace: Option<&str>,
    ) -> Result<()> {
        if !self.auth().settings.cassandra_authorizer {
            return Ok(());
        }
        auth::required::check(&schema.access, state.user.as_deref(), statement, keyspace)
    }

    /// The node's metrics registry.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.metrics.registry
    }

    /// The query layer's metrics.
    pub fn metrics(&self) -> &QueryMetrics {
        &self.metrics
    }

    /// The current schema snapshot.
    pub fn schema(&self) -> Arc<Schema> {
        self.schema.current()
    }

    /// QUERY: parse and run `text`.
    pub async fn query(
        &self,
        state: &mut ClientState,
        text: &str,
        opts: &QueryOptions,
    ) -> Result<Outcome> {
        crate::trace::event(|| format!("Parsing {text}"));
        let parsed = parse(text)?;
        crate::trace::event(|| "Preparing statement".into());
        let keyspace = opts.keyspace.clone().or_else(|| state.keyspace.clone());
        let schema = self.schema();
        let (specs, _) = prepare::bind_specs(&schema, keyspace.as_deref(), &parsed)?;
        let names: Vec<String> = specs.iter().map(|s| s.name.clone()).collect();
        self.run(state, &parsed, &names, keyspace, opts).await
    }

    /// PREPARE: parse and analyse `text`, cache it, describe its markers.
    pub fn prepare(
        &self,
        state: &ClientState,
        text: &str,
        keyspace: Option<&str>,
    ) -> Result<PreparedInfo> {
        crate::trace::event(|| format!("Parsing {text}"));
        let parsed = parse(text)?;
        crate::trace::event(|| "Preparing statement".into());
        let keyspace = keyspace
            .map(str::to_string)
            .or_else(|| state.keyspace.clone());
        let schema = self.schema();
        let (bind, pk_indices) = prepare::bind_specs(&schema, keyspace.as_deref(), &parsed)?;
        dry_run::check(schema.clone(), keyspace.clone(), &parsed.statement, &bind)?;
        let result = match &parsed.statement {
            Statement::Select(s) => select::result_columns(&schema, keyspace.as_deref(), s)?,
            _ => Vec::new(),
        };
        let id = statement_id(keyspace.as_deref(), text);
        let info = PreparedInfo {
            id: id.clone(),
            result_metadata_id: prepare::metadata_id(&result),
            bind,
            pk_indices,
            result,
            is_lwt: request::is_conditional(&parsed.statement),
        };
        let spec_names = info.bind.iter().map(|s| s.name.clone()).collect();
        let entry = Arc::new(Prepared {
            text: text.to_string(),
            parsed,
            keyspace,
            info: info.clone(),
            spec_names,
        });
        let mut cache = self.prepared.write();
        if cache.len() >= MAX_PREPARED_STATEMENTS {
            let drop: Vec<Bytes> = cache
                .keys()
                .take(MAX_PREPARED_STATEMENTS / 2)
                .cloned()
                .collect();
            for k in drop {
                cache.remove(&k);
            }
        }
        cache.insert(id, entry);
        Ok(info)
    }

    /// EXECUTE a prepared statement.
    pub async fn execute(
        &self,
        state: &mut ClientState,
        id: &[u8],
        opts: &QueryOptions,
    ) -> Result<Outcome> {
        let prepared = self.lookup(id)?;
        let keyspace = prepared.keyspace.clone().or_else(|| state.keyspace.clone());
        self.run(
            state,
            &prepared.parsed,
            &prepared.spec_names,
            keyspace,
            opts,
        )
        .await
    }

    /// The result columns a prepared statement returns now (they change
    /// when the table is altered).
    pub fn prepared_result(&self, id: &[u8]) -> Result<PreparedInfo> {
        Ok(self.lookup(id)?.info.clone())
    }

    /// How a traced EXECUTE of prepared statement `id` is described in
    /// `system_traces.sessions` (its text and bound values).
    pub fn traced_execute(&self, id: &[u8], opts: &QueryOptions) -> crate::trace::Request {
        let prepared = self.lookup(id).ok();
        let found = prepared
            .as_ref()
            .map(|p| (p.text.as_str(), &p.info.bind[..]));
        crate::trace::request::execute(found, opts)
    }

    /// Statements in the prepared cache.
    pub fn prepared_count(&self) -> usize {
        self.prepared.read().len()
    }

    fn lookup(&self, id: &[u8]) -> Result<Arc<Prepared>> {
        self.prepared
            .read()
            .get(id)
            .cloned()
            .ok_or_else(|| QueryError::Unprepared {
                id: Bytes::copy_from_slice(id),
            })
    }

    /// BATCH of inserts, updates and deletes.
    pub async fn batch(
        &self,
        state: &mut ClientState,
        kind: BatchType,
        items: &[BatchItem],
        opts: &QueryOptions,
    ) -> Result<Outcome> {
        if kind == BatchType::Counter {
            return Err(QueryError::Invalid(
                "counter batches are not supported yet (counters come later)".into(),
            ));
        }
        let schema = self.schema();
        let mut statements = Vec::with_capacity(items.len());
        for item in items {
            let (parsed, names, keyspace, values) = match item {
                BatchItem::Query { text, values } => {
                    let parsed = parse(text)?;
                    let keyspace = opts.keyspace.clone().or_else(|| state.keyspace.clone());
                    let (specs, _) = prepare::bind_specs(&schema, keyspace.as_deref(), &parsed)?;
                    let names = specs.iter().map(|s| s.name.clone()).collect();
                    (Arc::new(parsed), names, keyspace, values.clone())
                }
                BatchItem::Prepared { id, values } => {
                    let p = self.lookup(id)?;
                    let keyspace = p.keyspace.clone().or_else(|| state.keyspace.clone());
                    (
                        Arc::new(p.parsed.clone()),
                        p.spec_names.clone(),
                        keyspace,
                        values.clone(),
                    )
                }
            };
            self.authorize(state, &schema, &parsed.statement, keyspace.as_deref())?;
            statements.push(write::BatchEntry {
                parsed,
                spec_names: names,
                keyspace,
                values,
            });
        }
        let started = opts.started.unwrap_or_else(Instant::now);
        let outcome = write::execute_batch(self, &schema, kind, &statements, opts).await;
        let conditional = statements
            .iter()
            .any(|e| request::is_conditional(&e.parsed.statement));
        let op = Operation::of_write(conditional);
        self.metrics
            .requests
            .finish(op, started, outcome.as_ref().err());
        if outcome.is_ok() {
            // Once per table, however many of its statements the batch has.
            let mut seen = Vec::new();
            for e in &statements {
                let (ks, stmt) = (e.keyspace.as_deref(), &e.parsed.statement);
                request::record_table(self, &schema, ks, stmt, op, started, &mut seen);
            }
        }
        outcome
    }

    async fn run(
        &self,
        state: &mut ClientState,
        parsed: &Parsed,
        spec_names: &[String],
        keyspace: Option<String>,
        opts: &QueryOptions,
    ) -> Result<Outcome> {
        let values = order_values(spec_names, opts)?;
        let schema = self.schema();
        self.authorize(state, &schema, &parsed.statement, keyspace.as_deref())?;
        let creator = match self.auth().settings.cassandra_authorizer {
            true => state.user.clone(),
            false => None,
        };
        let mut ctx = Ctx {
            schema,
            creator,
            values,
            keyspace,
            opts,
            timestamp_micros: opts.timestamp.unwrap_or_else(|| self.next_timestamp()),
            now_seconds: opts
                .now_in_seconds
                .unwrap_or_else(|| varve_types::time::now_seconds() as i32),
            warnings: Vec::new(),
            allow_filtering: false,
            read_shape: None,
        };
        let started = opts.started.unwrap_or_else(Instant::now);
        let result = self.run_statement(state, parsed, &mut ctx).await;
        request::record(self, &ctx, &parsed.statement, started, &result);
        Ok(Outcome {
            result: result?,
            warnings: ctx.warnings,
        })
    }

    async fn run_statement(
        &self,
        state: &mut ClientState,
        parsed: &Parsed,
        ctx: &mut Ctx<'_>,
    ) -> Result<QueryResult> {
        let result = match &parsed.statement {
            Statement::Select(s) => select::execute(self, ctx, s).await?,
            Statement::Insert(_) | Statement::Update(_) | Statement::Delete(_) => {
                write::execute(self, ctx, &parsed.statement).await?
            }
            // Boxed, as the rarer kinds below: a statement's future is as
            // large as its largest kind, and every statement moves it.
            Statement::Batch(b) => Box::pin(write::execute_inline_batch(self, ctx, b)).await?,
            Statement::Truncate(name) => ddl::truncate(self, ctx, name).await?,
            Statement::Use(name) => {
                if ctx.schema.keyspace(name).is_none() {
                    return Err(QueryError::Invalid(format!(
                        "Keyspace '{name}' does not exist"
                    )));
                }
                state.keyspace = Some(name.clone());
                QueryResult::SetKeyspace(name.clone())
            }
            Statement::Describe(d) => describe::execute(self, ctx, d)?,
            Statement::Auth(a) => {
                let user = state.user.clone();
                Box::pin(auth::execute(self, ctx, user.as_deref(), a)).await?
            }
            Statement::Unsupported(what) => {
                return Err(QueryError::Invalid(format!(
                    "{what} are not supported by Varve yet"
                )));
            }
            ddl_statement => {
                let _guard = self.ddl_lock.lock().await;
                Box::pin(ddl::execute(self, ctx, ddl_statement)).await?
            }
        };
        Ok(result)
    }

    /// Replaces the schema with `f` applied to a copy, bumping its version:
    /// durable and in effect when this returns (see [`SchemaSource`]).
    pub(crate) async fn update_schema<R>(
        &self,
        mut f: impl FnMut(&mut Schema) -> Result<R>,
    ) -> Result<R> {
        let mut attempt = 0;
        loop {
            let base = self.schema();
            let mut next = (*base).clone();
            let r = f(&mut next)?;
            next.version = varve_types::time::random_uuid();
            match self.schema.publish(&base, next).await {
                Ok(()) => return Ok(r),
                // Another change came first (another node's, in a cluster):
                // analyse the statement again on the schema now.
                Err(varve_types::data_error::DataError::Conflict(_))
                    if attempt < SCHEMA_CONFLICT_RETRIES =>
                {
                    attempt += 1
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Whether SCHEMA_CHANGE events come from the schema source (a
    /// cluster's metadata log) rather than from each statement's outcome.
    pub fn schema_events_elsewhere(&self) -> bool {
        self.schema.emits_events()
    }

    /// A server timestamp in microseconds, strictly increasing.
    pub(crate) fn next_timestamp(&self) -> i64 {
        let now = varve_types::time::now_micros();
        let mut last = self.last_micros.load(Ordering::Relaxed);
        loop {
            let next = now.max(last + 1);
            match self.last_micros.compare_exchange_weak(
                last,
                next,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return next,
                Err(seen) => last = seen,
            }
        }
    }

    /// Where statements read and write partitions.
    pub fn data_path(&self) -> &Arc<dyn DataPath> {
        &self.data
    }

    /// This node's own facts (system.local). Its `tokens` are those it
    /// started with; [`Processor::tokens`] has the current ones.
    pub fn node(&self) -> &NodeInfo {
        &self.node
    }

    /// This node's tokens (system.local, `nodetool status` and `ring`).
    pub fn tokens(&self) -> Arc<[i64]> {
        self.tokens.read().clone()
    }

    /// Replaces this node's tokens: the cluster metadata allocated them
    /// when the node joined.
    pub fn set_tokens(&self, tokens: Vec<i64>) {
        *self.tokens.write() = tokens.into();
    }

    /// What the node knows of the other nodes (system.peers).
    pub fn cluster_view(&self) -> Arc<dyn ClusterView> {
        self.cluster_view.read().clone()
    }

    /// Shows `view`'s peers from now on (the server sets it once the
    /// cluster's membership runs).
    pub fn set_cluster_view(&self, view: Arc<dyn ClusterView>) {
        *self.cluster_view.write() = view;
        self.gossip_active.store(true, Ordering::Relaxed);
    }

    /// Whether the cluster's membership runs (a view was set).
    pub fn gossip_active(&self) -> bool {
        self.gossip_active.load(Ordering::Relaxed)
    }

    /// Forgets prepared statements of a dropped keyspace or table.
    pub(crate) fn forget_prepared(&self) {
        self.prepared.write().clear();
    }

    /// Writes a finished trace session into `system_traces` on this node.
    pub fn store_trace(
        &self,
        session: &crate::trace::Session,
        request: &crate::trace::Request,
    ) -> Result<()> {
        crate::trace::store::store(self, session, request)
    }

    /// Runs one statement for internal callers with no bound values.
    pub async fn execute_internal(&self, text: &str) -> Result<Outcome> {
        let mut state = ClientState::default();
        self.query(&mut state, text, &QueryOptions::default()).await
    }
}

/// A registry of the processor's own, for nodes built without one (tests):
/// no process metrics, since those belong to the node's registry.
fn private_registry() -> Arc<Registry> {
    Arc::new(Registry::with_options(RegistryOptions {
        process_metrics: false,
        ..RegistryOptions::default()
    }))
}

/// A storage in memory holding the tables of `schema` that are stored
/// (`system.paxos`, `system_traces.*`), as a durable node opens them.
fn memory_storage(schema: &Schema) -> Storage {
    let storage = Storage::new();
    for (t, durable) in local_schema::tables(schema).values() {
        // A fresh storage holds no table yet: creating one cannot clash.
        let _ = storage.create_table(local_schema::descriptor(t, *durable));
    }
    storage
}

fn parse(text: &str) -> Result<Parsed> {
    varve_cql::parse(text).map_err(|e| match e.kind {
        varve_cql::ParseErrorKind::Syntax => QueryError::Syntax(e.to_string()),
        varve_cql::ParseErrorKind::Unsupported | varve_cql::ParseErrorKind::Invalid => {
            QueryError::Invalid(e.message.clone())
        }
    })
}

/// MD5 of keyspace and text, as Cassandra computes prepared ids.
fn statement_id(keyspace: Option<&str>, text: &str) -> Bytes {
    use md5::{Digest, Md5};
    let mut h = Md5::new();
    if let Some(k) = keyspace {
        h.update(k.as_bytes());
    }
    h.update(text.as_bytes());
    Bytes::copy_from_slice(&h.finalize())
}
