//! A node's Prometheus text from its admin port (`GET /metrics`), over a
//! plain `TcpStream` (the admin port answers one request per connection
//! with `Connection: close`, so the body is what follows the head), and
//! the samples of a counter in it.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// How long one metrics request may take.
const METRICS_TIMEOUT: Duration = Duration::from_secs(5);

/// The body of `GET /metrics` on `admin` (`host:port`); panics (a test
/// helper) on a failure or a status other than 200.
pub fn fetch(admin: &str) -> String {
    let mut stream =
        TcpStream::connect(admin).unwrap_or_else(|e| panic!("connecting to {admin}: {e}"));
    stream.set_read_timeout(Some(METRICS_TIMEOUT)).ok();
    let request = format!("GET /metrics HTTP/1.1\r\nHost: {admin}\r\nConnection: close\r\n\r\n");
    stream
        .write_all(request.as_bytes())
        .unwrap_or_else(|e| panic!("asking {admin} for its metrics: {e}"));
    let mut response = String::new();
    stream
        .read_to_string(&mut response)
        .unwrap_or_else(|e| panic!("reading {admin}'s metrics: {e}"));
    let (head, body) = response
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("no HTTP head from {admin}: {response:?}"));
    assert!(head.starts_with("HTTP/1.1 200"), "{admin}: {head}");
    body.to_string()
}

/// `{label value: count}` of the samples of `name` labelled `label`, e.g.
/// `varve_coordinator_requests_total{placement="replica"} 5` gives
/// `{"replica": 5}`.
pub fn by_label(text: &str, name: &str, label: &str) -> HashMap<String, u64> {
    let prefix = format!("{name}{{{label}=\"");
    text.lines()
        .filter_map(|line| line.strip_prefix(&prefix))
        .filter_map(|rest| {
            let (value, count) = rest.split_once("\"}")?;
            Some((value.to_string(), count.trim().parse().ok()?))
        })
        .collect()
}

/// The value of the unlabelled sample `name` (0 if absent).
pub fn value(text: &str, name: &str) -> u64 {
    text.lines()
        .filter_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
        .find_map(|count| count.trim().parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::{by_label, value};

    #[test]
    fn reads_the_samples_of_one_labelled_counter() {
        let text = "# TYPE varve_x_total counter\nvarve_x_total{placement=\"replica\"} 7\n\
                    varve_x_total{placement=\"not_replica\"} 0\nvarve_y_total{placement=\"a\"} 1\n";
        let counts = by_label(text, "varve_x_total", "placement");
        assert_eq!(counts.len(), 2);
        assert_eq!(counts["replica"], 7);
        assert_eq!(counts["not_replica"], 0);
    }

    #[test]
    fn reads_an_unlabelled_counter() {
        let text = "# HELP varve_h_total x\nvarve_h_total_more 3\nvarve_h_total 12\n";
        assert_eq!(value(text, "varve_h_total"), 12);
        assert_eq!(value(text, "varve_absent_total"), 0);
    }
}
