//! What this node streams, for `nodetool netstats` and the metrics
//! (docs/design/metrics.md): each operation in flight (bootstrap,
//! decommission, removenode, repair) with its table, ranges done of its
//! total, bytes moved and whole sstables among them; bytes and whole
//! sstables in and out; ranges repairs found out of sync and the bytes
//! they moved.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use varve_metrics::names;
use varve_metrics::{Counter, Gauge, Registry};

/// One operation in flight.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamState {
    pub operation: &'static str,
    pub table: String,
    pub ranges_total: usize,
    pub ranges_done: usize,
    pub bytes: u64,
    /// Whole sstables moved (their bytes are in `bytes`).
    pub files: u64,
}

/// The node's streams and their counters.
#[derive(Debug)]
pub struct Streams {
    active: Mutex<BTreeMap<u64, StreamState>>,
    next: AtomicU64,
    pub bytes_in: Arc<Counter>,
    pub bytes_out: Arc<Counter>,
    /// Whole sstables received and installed, and sent to their end.
    pub files_in: Arc<Counter>,
    pub files_out: Arc<Counter>,
    pub ranges_out_of_sync: Arc<Counter>,
    pub repair_bytes: Arc<Counter>,
    registry: Option<Arc<Registry>>,
}

impl Streams {
    /// Counters registered in `registry`.
    pub fn new(registry: &Arc<Registry>) -> Streams {
        let bytes = |d| registry.counter(names::STREAMING_BYTES, &[(names::LABEL_DIRECTION, d)]);
        let files = |d| registry.counter(names::STREAMING_FILES, &[(names::LABEL_DIRECTION, d)]);
        Streams {
            active: Mutex::new(BTreeMap::new()),
            next: AtomicU64::new(1),
            bytes_in: bytes(names::DIRECTION_IN),
            bytes_out: bytes(names::DIRECTION_OUT),
            files_in: files(names::DIRECTION_IN),
            files_out: files(names::DIRECTION_OUT),
            ranges_out_of_sync: registry.counter(names::REPAIR_RANGES_OUT_OF_SYNC, &[]),
            repair_bytes: registry.counter(names::REPAIR_BYTES, &[]),
            registry: Some(Arc::clone(registry)),
        }
    }

    /// Counters of their own (tests, the simulation).
    pub fn detached() -> Streams {
        Streams {
            active: Mutex::new(BTreeMap::new()),
            next: AtomicU64::new(1),
            bytes_in: Arc::new(Counter::default()),
            bytes_out: Arc::new(Counter::default()),
            files_in: Arc::new(Counter::default()),
            files_out: Arc::new(Counter::default()),
            ranges_out_of_sync: Arc::new(Counter::default()),
            repair_bytes: Arc::new(Counter::default()),
            registry: None,
        }
    }

    /// Starts tracking `operation` on `table` over `ranges_total` ranges.
    pub fn begin(
        self: &Arc<Self>,
        operation: &'static str,
        table: &str,
        ranges_total: usize,
    ) -> Stream {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.active.lock().insert(
            id,
            StreamState {
                operation,
                table: table.to_string(),
                ranges_total,
                ranges_done: 0,
                bytes: 0,
                files: 0,
            },
        );
        let gauge = self.gauge(operation);
        if let Some(g) = &gauge {
            g.add(1.0);
        }
        Stream {
            streams: Arc::clone(self),
            id,
            gauge,
        }
    }

    fn gauge(&self, operation: &str) -> Option<Arc<Gauge>> {
        let registry = self.registry.as_ref()?;
        Some(registry.gauge(
            names::STREAMS_ACTIVE,
            &[(names::LABEL_STREAM_OPERATION, operation)],
        ))
    }

    /// The operations in flight, oldest first.
    pub fn active(&self) -> Vec<StreamState> {
        self.active.lock().values().cloned().collect()
    }

    /// `nodetool netstats`' text.
    pub fn netstats_text(&self) -> String {
        let active = self.active();
        let mut out = String::new();
        if active.is_empty() {
            out.push_str("Not sending or receiving any streams.\n");
        }
        for s in &active {
            out.push_str(&format!(
                "{} {}: {} of {} ranges, {} bytes, {} whole sstables\n",
                s.operation, s.table, s.ranges_done, s.ranges_total, s.bytes, s.files
            ));
        }
        out.push_str(&format!(
            "Bytes received {}, bytes sent {}\n",
            self.bytes_in.get(),
            self.bytes_out.get()
        ));
        out.push_str(&format!(
            "Whole sstables received {}, sent {}\n",
            self.files_in.get(),
            self.files_out.get()
        ));
        out
    }
}

/// One operation in flight; it ends when dropped.
#[derive(Debug)]
pub struct Stream {
    streams: Arc<Streams>,
    id: u64,
    gauge: Option<Arc<Gauge>>,
}

impl Stream {
    /// One more range done, with the bytes it moved.
    pub fn range_done(&self, bytes: u64) {
        if let Some(s) = self.streams.active.lock().get_mut(&self.id) {
            s.ranges_done += 1;
            s.bytes += bytes;
        }
    }

    /// Whole sstables moved, with their bytes (their ranges are done
    /// once their pages are).
    pub fn files_done(&self, files: u64, bytes: u64) {
        if let Some(s) = self.streams.active.lock().get_mut(&self.id) {
            s.files += files;
            s.bytes += bytes;
        }
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        self.streams.active.lock().remove(&self.id);
        if let Some(g) = &self.gauge {
            g.add(-1.0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_shows_while_it_runs_and_goes_when_done() {
        let streams = Arc::new(Streams::detached());
        assert!(streams.netstats_text().starts_with("Not sending"));
        let s = streams.begin("bootstrap", "ks.t", 4);
        s.range_done(100);
        s.files_done(2, 50);
        assert_eq!(
            streams.active(),
            vec![StreamState {
                operation: "bootstrap",
                table: "ks.t".into(),
                ranges_total: 4,
                ranges_done: 1,
                bytes: 150,
                files: 2,
            }]
        );
        assert!(streams
            .netstats_text()
            .contains("bootstrap ks.t: 1 of 4 ranges, 150 bytes, 2 whole sstables"));
        drop(s);
        assert!(streams.active().is_empty());
    }
}
