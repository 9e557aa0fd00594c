//! The native-transport metrics of the node (connections, requests by
//! opcode, error responses), recorded into the node's
//! [`varve_metrics::Registry`] under the names of
//! [`varve_metrics::names`]. Handles are looked up once here, so recording
//! is one relaxed atomic add. `GET /metrics` renders the whole registry:
//! these, the query layer's, storage's and the process's.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use varve_metrics::names::{self, LABEL_OPCODE};
use varve_metrics::{Counter, Gauge, Registry, RegistryOptions};
use varve_protocol::frame::opcode;

/// The request opcodes we count, with their names.
const REQUEST_OPCODES: [(u8, &str); 8] = [
    (opcode::STARTUP, "STARTUP"),
    (opcode::OPTIONS, "OPTIONS"),
    (opcode::QUERY, "QUERY"),
    (opcode::PREPARE, "PREPARE"),
    (opcode::EXECUTE, "EXECUTE"),
    (opcode::REGISTER, "REGISTER"),
    (opcode::BATCH, "BATCH"),
    (opcode::AUTH_RESPONSE, "AUTH_RESPONSE"),
];
/// Counters indexed by opcode byte (every opcode fits below this).
const OPCODE_SLOTS: usize = 0x11;

/// The node's native-transport instruments.
#[derive(Debug)]
pub struct Metrics {
    registry: Arc<Registry>,
    connections_open: Arc<Gauge>,
    connections_total: Arc<Counter>,
    connections_rejected: Arc<Counter>,
    /// By opcode byte; `None` for opcodes that are not requests.
    requests: [Option<Arc<Counter>>; OPCODE_SLOTS],
    requests_other: Arc<Counter>,
    error_responses: Arc<Counter>,
    overloaded_responses: Arc<Counter>,
    protocol_errors: Arc<Counter>,
    /// Requests that ended in ServerError (a bug or an I/O failure):
    /// `nodetool info`'s "Exceptions". No Prometheus series of its own.
    exceptions: AtomicU64,
    /// Whether the node serves CQL (`GET /ready`): not while it joins.
    serving: std::sync::atomic::AtomicBool,
}

impl Default for Metrics {
    /// Metrics in a registry of their own, without process metrics (tests).
    fn default() -> Self {
        Metrics::new(Arc::new(Registry::with_options(RegistryOptions {
            process_metrics: false,
            ..RegistryOptions::default()
        })))
    }
}

impl Metrics {
    /// Registers the native-transport metrics in `registry`.
    pub fn new(registry: Arc<Registry>) -> Self {
        let counter = |name: &str| registry.counter(name, &[]);
        let mut requests: [Option<Arc<Counter>>; OPCODE_SLOTS] = Default::default();
        for (op, name) in REQUEST_OPCODES {
            if let Some(slot) = requests.get_mut(usize::from(op)) {
                *slot = Some(registry.counter(names::REQUESTS, &[(LABEL_OPCODE, name)]));
            }
        }
        Metrics {
            connections_open: registry.gauge(names::CONNECTIONS_OPEN, &[]),
            connections_total: counter(names::CONNECTIONS),
            connections_rejected: counter(names::CONNECTIONS_REJECTED),
            requests,
            requests_other: registry.counter(names::REQUESTS, &[(LABEL_OPCODE, "OTHER")]),
            error_responses: counter(names::ERROR_RESPONSES),
            overloaded_responses: counter(names::OVERLOADED_RESPONSES),
            protocol_errors: counter(names::PROTOCOL_ERRORS),
            exceptions: AtomicU64::new(0),
            serving: std::sync::atomic::AtomicBool::new(false),
            registry,
        }
    }

    /// The registry these metrics live in.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    pub fn connection_opened(&self) {
        self.connections_open.inc();
        self.connections_total.inc();
    }

    pub fn connection_closed(&self) {
        self.connections_open.dec();
    }

    pub fn connection_rejected(&self) {
        self.connections_rejected.inc();
    }

    /// Counts one request frame by its opcode byte.
    pub fn request(&self, op: u8) {
        match self.requests.get(usize::from(op)) {
            Some(Some(c)) => c.inc(),
            _ => self.requests_other.inc(),
        }
    }

    pub fn error_response(&self) {
        self.error_responses.inc();
    }

    pub fn overloaded(&self) {
        self.overloaded_responses.inc();
    }

    pub fn protocol_error(&self) {
        self.protocol_errors.inc();
    }

    pub fn exception(&self) {
        self.exceptions.fetch_add(1, Ordering::Relaxed);
    }

    /// Requests that ended in ServerError since start.
    pub fn exceptions(&self) -> u64 {
        self.exceptions.load(Ordering::Relaxed)
    }

    /// Notes that the node serves CQL.
    pub fn set_serving(&self) {
        self.serving.store(true, Ordering::Relaxed);
    }

    /// Whether the node serves CQL.
    pub fn serving(&self) -> bool {
        self.serving.load(Ordering::Relaxed)
    }

    /// Open connections now.
    pub fn connections_open(&self) -> u64 {
        self.connections_open.get().max(0.0) as u64
    }

    /// Requests counted for `op`.
    pub fn requests_for(&self, op: u8) -> u64 {
        match self.requests.get(usize::from(op)) {
            Some(Some(c)) => c.get(),
            _ => 0,
        }
    }

    /// The Prometheus text of the whole registry.
    pub fn render(&self) -> String {
        self.registry.render_prometheus()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_renders() {
        let m = Metrics::default();
        m.connection_opened();
        m.request(opcode::QUERY);
        m.request(opcode::QUERY);
        m.request(0x7f);
        m.request(opcode::RESULT);
        let text = m.render();
        assert!(text.contains("varve_connections_open 1\n"), "{text}");
        assert!(text.contains("varve_connections_total 1\n"));
        assert!(text.contains("varve_requests_total{opcode=\"QUERY\"} 2\n"));
        assert!(text.contains("varve_requests_total{opcode=\"OTHER\"} 2\n"));
        assert!(text.contains("varve_requests_total{opcode=\"STARTUP\"} 0\n"));
        for name in [
            "varve_connections_rejected_total 0",
            "varve_error_responses_total 0",
            "varve_overloaded_responses_total 0",
            "varve_protocol_errors_total 0",
        ] {
            assert!(text.contains(name), "{name} missing");
        }
        m.connection_closed();
        assert_eq!(m.connections_open(), 0);
        assert_eq!(m.requests_for(opcode::QUERY), 2);
    }

    #[test]
    fn shares_the_node_registry() {
        let registry = Arc::new(Registry::new());
        let m = Metrics::new(Arc::clone(&registry));
        m.protocol_error();
        assert!(registry
            .render_prometheus()
            .contains("varve_protocol_errors_total 1\n"));
    }
}
