//! Counters of the node, rendered in the Prometheus text format by the
//! admin port. Lock-free atomics; relaxed ordering is enough for counters.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};

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

/// The node's counters.
#[derive(Debug, Default)]
pub struct Metrics {
    connections_open: AtomicU64,
    connections_total: AtomicU64,
    connections_rejected: AtomicU64,
    requests: [AtomicU64; OPCODE_SLOTS],
    requests_other: AtomicU64,
    error_responses: AtomicU64,
    overloaded_responses: AtomicU64,
    protocol_errors: AtomicU64,
}

impl Metrics {
    pub fn connection_opened(&self) {
        self.connections_open.fetch_add(1, Ordering::Relaxed);
        self.connections_total.fetch_add(1, Ordering::Relaxed);
    }

    pub fn connection_closed(&self) {
        self.connections_open.fetch_sub(1, Ordering::Relaxed);
    }

    pub fn connection_rejected(&self) {
        self.connections_rejected.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts one request frame by its opcode byte.
    pub fn request(&self, op: u8) {
        match self.requests.get(usize::from(op)) {
            Some(c) if REQUEST_OPCODES.iter().any(|(o, _)| *o == op) => {
                c.fetch_add(1, Ordering::Relaxed)
            }
            _ => self.requests_other.fetch_add(1, Ordering::Relaxed),
        };
    }

    pub fn error_response(&self) {
        self.error_responses.fetch_add(1, Ordering::Relaxed);
    }

    pub fn overloaded(&self) {
        self.overloaded_responses.fetch_add(1, Ordering::Relaxed);
    }

    pub fn protocol_error(&self) {
        self.protocol_errors.fetch_add(1, Ordering::Relaxed);
    }

    /// Open connections now.
    pub fn connections_open(&self) -> u64 {
        self.connections_open.load(Ordering::Relaxed)
    }

    /// Requests counted for `op`.
    pub fn requests_for(&self, op: u8) -> u64 {
        self.requests
            .get(usize::from(op))
            .map_or(0, |c| c.load(Ordering::Relaxed))
    }

    /// The Prometheus text exposition of every counter.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let mut one = |name: &str, kind: &str, help: &str, value: u64| {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}"
            );
        };
        one(
            "varve_connections_open",
            "gauge",
            "CQL connections open now.",
            load(&self.connections_open),
        );
        one(
            "varve_connections_total",
            "counter",
            "CQL connections accepted.",
            load(&self.connections_total),
        );
        one(
            "varve_connections_rejected_total",
            "counter",
            "CQL connections refused past the connection limit.",
            load(&self.connections_rejected),
        );
        one(
            "varve_error_responses_total",
            "counter",
            "ERROR responses sent.",
            load(&self.error_responses),
        );
        one(
            "varve_overloaded_responses_total",
            "counter",
            "Overloaded errors sent (connection or in-flight limit).",
            load(&self.overloaded_responses),
        );
        one(
            "varve_protocol_errors_total",
            "counter",
            "Malformed or unexpected frames.",
            load(&self.protocol_errors),
        );
        let _ = writeln!(
            out,
            "# HELP varve_requests_total CQL requests received, by opcode."
        );
        let _ = writeln!(out, "# TYPE varve_requests_total counter");
        for (op, name) in REQUEST_OPCODES {
            let _ = writeln!(
                out,
                "varve_requests_total{{opcode=\"{name}\"}} {}",
                self.requests_for(op)
            );
        }
        let _ = writeln!(
            out,
            "varve_requests_total{{opcode=\"OTHER\"}} {}",
            load(&self.requests_other)
        );
        out
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
        assert!(text.contains("varve_connections_open 1\n"));
        assert!(text.contains("varve_requests_total{opcode=\"QUERY\"} 2\n"));
        assert!(text.contains("varve_requests_total{opcode=\"OTHER\"} 2\n"));
        m.connection_closed();
        assert_eq!(m.connections_open(), 0);
    }
}
