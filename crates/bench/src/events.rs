//! events.csv: marks on the run's time axis (a phase starts, an ALTER
//! TABLE, a garbagecollect starts or ends). Shared between the task that
//! runs phases and the background tasks of actions, hence the mutex.
//!
//! The format (docs/format/run-directory.md) takes the label as the rest of
//! the line after `t,`, so labels need no quoting; line breaks in a label
//! become spaces so that one event stays one line.

use std::path::Path;
use std::sync::{Arc, Mutex};

use crate::clock::Clock;
use crate::error::{BenchError, Result};

/// The header line of events.csv (without newline).
pub const HEADER: &str = "t,label";
/// Longest label kept (an ALTER TABLE is far shorter; error texts may not be).
pub const LABEL_CHARS_MAX: usize = 300;

/// One mark.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// Seconds since the start of the run.
    pub t: f64,
    pub label: String,
}

/// The events of a run, in the order they were recorded.
#[derive(Debug, Clone)]
pub struct EventLog {
    clock: Clock,
    events: Arc<Mutex<Vec<Event>>>,
}

impl EventLog {
    /// An empty log on `clock`.
    pub fn new(clock: Clock) -> EventLog {
        EventLog {
            clock,
            events: Arc::default(),
        }
    }

    /// Records `label` now; also printed on stderr unless `quiet`.
    pub fn record(&self, label: &str, quiet: bool) {
        self.record_at(self.clock.now_s(), label, quiet);
    }

    /// Records `label` at `t` (an action whose outcome decides its label).
    pub fn record_at(&self, t: f64, label: &str, quiet: bool) {
        let event = Event {
            t,
            label: clean_label(label),
        };
        if !quiet {
            eprintln!("[event] {:8.3}s {}", event.t, event.label);
        }
        self.lock().push(event);
    }

    /// The log's clock.
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// A copy of the events so far.
    pub fn snapshot(&self) -> Vec<Event> {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Event>> {
        // A panic while holding the lock cannot leave a Vec half-pushed.
        self.events.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Writes events.csv into `dir`.
    pub fn write(&self, dir: &Path) -> Result<()> {
        let path = dir.join("events.csv");
        std::fs::write(&path, render(&self.snapshot())).map_err(|e| BenchError::io(path, e))
    }
}

/// One line per event, `t` with millisecond precision, sorted by time.
pub fn render(events: &[Event]) -> String {
    let mut sorted = events.to_vec();
    sorted.sort_by(|a, b| a.t.total_cmp(&b.t));
    let mut out = format!("{HEADER}\n");
    for e in sorted {
        out.push_str(&format!("{:.3},{}\n", e.t.max(0.0), clean_label(&e.label)));
    }
    out
}

/// Line breaks and control characters become spaces; long labels are cut.
pub fn clean_label(label: &str) -> String {
    label
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(LABEL_CHARS_MAX)
        .collect::<String>()
        .trim()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_sorted_one_per_line_and_parse_back() {
        let events = vec![
            Event { t: 2.5, label: "ALTER TABLE ks.t WITH compaction = {'class': 'LeveledCompactionStrategy', 'sstable_size_in_mb': '1'}".into() },
            Event { t: 0.0, label: "phase load".into() },
            Event { t: 3.25, label: "nodetool garbagecollect ks.t failed:\nline two\r".into() },
        ];
        let text = render(&events);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], HEADER);
        assert_eq!(lines[1], "0.000,phase load");
        assert!(lines[2].starts_with("2.500,ALTER TABLE ks.t WITH compaction = {'class'"));
        assert_eq!(
            lines[3],
            "3.250,nodetool garbagecollect ks.t failed: line two"
        );
        assert_eq!(lines.len(), 4);
        let parsed = varve_report::load::parse_events(Path::new("events.csv"), text.as_bytes())
            .expect("the report reads what we write");
        assert_eq!(parsed.len(), 3);
        assert_eq!(parsed[1].t, 2.5);
        assert!(
            parsed[1].label.contains("'sstable_size_in_mb': '1'"),
            "commas survive"
        );
    }

    #[test]
    fn labels_are_cut_and_the_log_records_on_its_clock() {
        assert_eq!(
            clean_label(&"x".repeat(LABEL_CHARS_MAX + 1)).len(),
            LABEL_CHARS_MAX
        );
        let log = EventLog::new(Clock::start());
        log.record("phase a", true);
        log.record("phase b", true);
        let snap = log.snapshot();
        assert_eq!(snap.len(), 2);
        assert!(snap[0].t <= snap[1].t && snap[1].t < 5.0);
        let dir = std::env::temp_dir().join(format!("varve-bench-events-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        log.write(&dir).unwrap();
        let text = std::fs::read_to_string(dir.join("events.csv")).unwrap();
        assert!(text.starts_with("t,label\n") && text.contains(",phase b\n"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
