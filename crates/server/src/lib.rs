//! varve-server: the network face of a Varve node. It owns the CQL native
//! protocol listener (v4 and v5, through the pure codec of
//! `varve-protocol`) and the admin HTTP port (HTTPS with
//! `admin_encryption_options`: `admin_tls`), and hands statements to the
//! `varve-query` [`Processor`].
//!
//! This is the only crate that wires network, query and storage together;
//! nothing below it knows about sockets or tokio.
//!
//! Shape (after tokio's mini-redis): a listener bounded by a semaphore
//! ([`listener`]), one task per connection owning its codec state
//! ([`connection`], [`framing`]), one task per statement request
//! ([`dispatch`]), error codes mapped in one place ([`errors`]), every limit
//! named in [`limits`], client TLS (rustls) behind [`tls`], which hands
//! the connection a plain or encrypted byte stream. Shutdown: stop
//! accepting, let in-flight requests finish within
//! [`ServerConfig::shutdown_grace`], then return.
//!
//! Invariants: no input bytes make the server panic or allocate more than
//! the frame limit per connection; a panicking request is answered with
//! ServerError and the node keeps serving.

mod admin;
mod admin_snapshots;
mod admin_tls;
pub mod admin_token;
pub mod authenticate;
mod compaction_control;
mod connection;
mod convert;
mod dispatch;
pub mod errors;
mod framing;
mod info;
pub mod limits;
mod listener;
pub mod metrics;
pub mod read_route;
pub mod read_stage;
mod statements;
mod status;
pub mod tls;
mod vectored;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::{broadcast, mpsc, watch};
pub use varve_query::Processor;

pub use connection::{supported_options, CQL_VERSION, REPLY_BATCH_MAX};
pub use metrics::Metrics;
pub use statements::PART_MIN_STATEMENTS;

/// The network settings of a node.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// CQL native protocol address (port 0: pick a free one).
    pub cql_addr: SocketAddr,
    /// Admin HTTP address (port 0: pick a free one).
    pub admin_addr: SocketAddr,
    pub max_connections: usize,
    pub max_in_flight_per_connection: usize,
    pub max_frame_body_bytes: usize,
    pub shutdown_grace: Duration,
    /// Statements that need the disk running at once (cassandra.yaml
    /// `concurrent_reads`; see [`read_stage`]).
    pub concurrent_reads: usize,
    /// `client_encryption_options`: TLS on the CQL port (`None`: plain).
    pub client_tls: Option<tls::ClientTlsSettings>,
    /// A token every admin request must carry (see [`admin_token`]).
    pub admin_token: Option<String>,
    /// `admin_encryption_options`: HTTPS on the admin port (`None`: plain
    /// HTTP).
    pub admin_tls: Option<tls::ClientTlsSettings>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            cql_addr: SocketAddr::from(([127, 0, 0, 1], 9042)),
            admin_addr: SocketAddr::from(([127, 0, 0, 1], 9180)),
            max_connections: limits::MAX_CONNECTIONS,
            max_in_flight_per_connection: limits::MAX_IN_FLIGHT_PER_CONNECTION,
            max_frame_body_bytes: limits::MAX_FRAME_BODY_BYTES,
            shutdown_grace: limits::SHUTDOWN_GRACE,
            concurrent_reads: limits::CONCURRENT_READS,
            client_tls: None,
            admin_token: None,
            admin_tls: None,
        }
    }
}

/// TLS settings made into the configuration in force; an error (files
/// unreadable, a setting rustls cannot honour) stops the node.
fn load_tls(
    settings: Option<&tls::ClientTlsSettings>,
) -> std::io::Result<Option<Arc<tls::ClientTls>>> {
    settings
        .map(|s| {
            tls::ClientTls::new(s.clone())
                .map(Arc::new)
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))
        })
        .transpose()
}

/// What every connection shares.
pub(crate) struct Shared {
    pub config: ServerConfig,
    pub processor: Arc<Processor>,
    pub metrics: Arc<Metrics>,
    /// Writes may wait on an fsync (commitlog batch/group): statements then
    /// run on the blocking pool instead of the event loop.
    pub writes_wait_for_sync: bool,
    /// Events (schema changes, nodes up and down), fanned out to the
    /// connections registered for their type.
    pub events: broadcast::Sender<varve_protocol::Event>,
    /// Where statements that need the disk run.
    pub read_stage: Arc<read_stage::ReadStage>,
    /// Client TLS, when on.
    pub tls: Option<Arc<tls::ClientTls>>,
}

/// A node's listeners, bound but not yet serving.
pub struct Server {
    config: ServerConfig,
    cql: TcpListener,
    /// Taken by [`Server::serve_admin_early`].
    admin: Option<TcpListener>,
    /// Once the admin port serves ahead of the CQL port: what stops it.
    admin_early: Option<(tokio::task::JoinHandle<()>, watch::Sender<bool>)>,
    admin_addr: SocketAddr,
    metrics: Arc<Metrics>,
    events: broadcast::Sender<varve_protocol::Event>,
    tls: Option<Arc<tls::ClientTls>>,
    /// HTTPS on the admin port, when on.
    admin_tls: Option<Arc<tls::ClientTls>>,
}

impl Server {
    /// Binds the CQL and admin ports. Connections that arrive before
    /// [`Server::run`] wait in the listen backlog.
    pub async fn bind(config: ServerConfig) -> std::io::Result<Server> {
        Server::bind_with_registry(config, Arc::new(varve_metrics::Registry::new())).await
    }

    /// [`Server::bind`], recording into the node's metrics `registry`
    /// (the one the [`Processor`] records into, so `/metrics` shows both).
    pub async fn bind_with_registry(
        config: ServerConfig,
        registry: Arc<varve_metrics::Registry>,
    ) -> std::io::Result<Server> {
        // Certificates are read before any port is bound: a node whose TLS
        // settings cannot be honoured never serves.
        let tls = load_tls(config.client_tls.as_ref())?;
        let admin_tls = load_tls(config.admin_tls.as_ref())?;
        let cql = TcpListener::bind(config.cql_addr).await?;
        let admin = TcpListener::bind(config.admin_addr).await?;
        let admin_addr = admin.local_addr().unwrap_or(config.admin_addr);
        let (events, _) = broadcast::channel(limits::EVENT_QUEUE_DEPTH);
        Ok(Server {
            config,
            cql,
            admin: Some(admin),
            admin_early: None,
            admin_addr,
            metrics: Arc::new(Metrics::new(registry)),
            events,
            tls,
            admin_tls,
        })
    }

    /// Where the rest of the node sends events for registered clients
    /// (STATUS_CHANGE and TOPOLOGY_CHANGE from the cluster; the server
    /// sends SCHEMA_CHANGE itself).
    pub fn events(&self) -> broadcast::Sender<varve_protocol::Event> {
        self.events.clone()
    }

    /// The bound CQL address (with the real port when 0 was asked).
    pub fn cql_addr(&self) -> SocketAddr {
        self.cql.local_addr().unwrap_or(self.config.cql_addr)
    }

    /// The bound admin address.
    pub fn admin_addr(&self) -> SocketAddr {
        self.admin_addr
    }

    /// The admin port's URL scheme: `https` with admin TLS, else `http`.
    pub fn admin_scheme(&self) -> &'static str {
        match self.admin_tls {
            Some(_) => "https",
            None => "http",
        }
    }

    /// What the admin port's connections share.
    fn admin_port(&self, processor: Arc<Processor>) -> Arc<admin::AdminPort> {
        Arc::new(admin::AdminPort {
            metrics: Arc::clone(&self.metrics),
            processor,
            token: self.config.admin_token.clone().map(Arc::from),
            tls: self.admin_tls.clone(),
        })
    }

    /// Serves the admin port at once, before [`Server::run`] serves CQL (a
    /// bootstrapping node answers `nodetool netstats` and `/metrics`
    /// while it streams). The listener moves to the task; `run` stops it.
    pub fn serve_admin_early(&mut self, processor: Arc<Processor>) {
        let Some(listener) = self.admin.take() else {
            return;
        };
        let (stop_tx, stop_rx) = watch::channel(false);
        let port = self.admin_port(processor);
        let task = tokio::spawn(admin::serve(listener, port, stop_rx));
        self.admin_early = Some((task, stop_tx));
    }

    /// The node's counters.
    pub fn metrics(&self) -> Arc<Metrics> {
        Arc::clone(&self.metrics)
    }

    /// Serves until `shutdown` resolves, then drains: no new connections,
    /// in-flight requests get [`ServerConfig::shutdown_grace`] to finish.
    pub async fn run(
        self,
        processor: Arc<Processor>,
        shutdown: impl Future<Output = ()>,
    ) -> std::io::Result<()> {
        let (stop_tx, stop_rx) = watch::channel(false);
        self.metrics.set_serving();
        let admin_port = self.admin_port(Arc::clone(&processor));
        let events = self.events;
        let grace = self.config.shutdown_grace;
        let read_stage = Arc::new(read_stage::ReadStage::new(
            self.config.concurrent_reads,
            self.metrics.registry(),
        ));
        let shared = Arc::new(Shared {
            read_stage,
            config: self.config,
            writes_wait_for_sync: processor.writes_wait_for_sync(),
            processor,
            metrics: Arc::clone(&self.metrics),
            events,
            tls: self.tls,
        });
        let (done_tx, mut done_rx) = mpsc::channel::<()>(1);
        let accept = tokio::spawn(listener::accept_loop(
            self.cql,
            Arc::clone(&shared),
            stop_rx.clone(),
            done_tx,
        ));
        let control = tokio::spawn(compaction_control::control_compactions(
            Arc::clone(&shared.read_stage),
            Arc::clone(&shared.processor),
            self.metrics
                .registry()
                .gauge(varve_metrics::names::COMPACTION_THROUGHPUT_SHARE, &[]),
            stop_rx.clone(),
        ));
        let admin = match (self.admin_early, self.admin) {
            (Some((task, early_stop)), _) => {
                // Stopped with the rest: the early task's own channel.
                let mut stop = stop_rx.clone();
                tokio::spawn(async move {
                    let _ = stop.changed().await;
                    let _ = early_stop.send(true);
                    let _ = task.await;
                })
            }
            (None, Some(listener)) => {
                tokio::spawn(admin::serve(listener, admin_port, stop_rx.clone()))
            }
            (None, None) => tokio::spawn(async {}),
        };
        drop(stop_rx);
        shutdown.await;
        tracing::info!("shutting down: no new connections, draining in-flight requests");
        let _ = stop_tx.send(true);
        let _ = accept.await;
        let _ = admin.await;
        let _ = control.await;
        // Every connection task holds a sender; recv() returns None once
        // all are gone. Connections wait `grace` for requests, then close.
        let waited = grace + grace / 2;
        if tokio::time::timeout(waited, done_rx.recv()).await.is_err() {
            tracing::warn!("connections still open after {waited:?}; stopping anyway");
        }
        Ok(())
    }
}
