//! A JVM's GC pauses, read from its unified GC log (`-Xlog:gc`, as
//! ../shared/cassandra/start.sh writes `logs/gc.log`): every line that
//! reports a pause ends with its duration, e.g.
//! `[...][4.484s] GC(0) Pause Young (Normal) (G1 Evacuation Pause) 63M->23M(1024M) 39.421ms`.
//! Each sample reads what the log gained since the last one and counts
//! its pauses; the sampler turns the totals into pauses and milliseconds
//! paused per second, the columns Varve's runtime stalls fill.

use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;

/// Most bytes read from one log per sample (the rest waits for the next).
pub const MAX_READ_BYTES: u64 = 4 * 1024 * 1024;

/// The milliseconds of a pause line, `None` for any other line.
pub fn pause_ms(line: &str) -> Option<f64> {
    if !line.contains(" Pause ") {
        return None;
    }
    let last = line.split_whitespace().last()?;
    last.strip_suffix("ms")?
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
}

/// One log, followed from where the last sample stopped.
#[derive(Debug)]
pub struct GcLog {
    path: PathBuf,
    offset: u64,
    /// The start of a line whose end has not been written yet.
    partial: String,
    pauses: u64,
    ms: f64,
}

impl GcLog {
    pub fn new(path: PathBuf) -> GcLog {
        GcLog {
            path,
            offset: 0,
            partial: String::new(),
            pauses: 0,
            ms: 0.0,
        }
    }

    /// Pauses and milliseconds paused since the log was first read; a log
    /// that cannot be read keeps its totals. A log that shrank (rotated) is
    /// read again from its start.
    pub fn poll(&mut self) -> (u64, f64) {
        let Ok(mut file) = std::fs::File::open(&self.path) else {
            return (self.pauses, self.ms);
        };
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        if len < self.offset {
            self.offset = 0;
            self.partial.clear();
        }
        let mut bytes = Vec::new();
        let read = file
            .seek(SeekFrom::Start(self.offset))
            .and_then(|_| file.take(MAX_READ_BYTES).read_to_end(&mut bytes));
        if read.is_ok() {
            self.offset += bytes.len() as u64;
            self.take(&String::from_utf8_lossy(&bytes));
        }
        (self.pauses, self.ms)
    }

    fn take(&mut self, text: &str) {
        self.partial.push_str(text);
        let Some(end) = self.partial.rfind('\n') else {
            return;
        };
        let complete: String = self.partial.drain(..=end).collect();
        for ms in complete.lines().filter_map(pause_ms) {
            self.pauses += 1;
            self.ms += ms;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    const YOUNG: &str = "[2026-11-29T03:11:12.687+0000][4.484s] GC(0) Pause Young (Normal) (G1 Evacuation Pause) 63M->23M(1024M) 39.421ms";

    #[test]
    fn pause_lines_give_their_milliseconds() {
        assert_eq!(pause_ms(YOUNG), Some(39.421));
        assert_eq!(
            pause_ms("[..] GC(3) Pause Cleanup 28M->28M(1024M) 0.026ms"),
            Some(0.026)
        );
        assert_eq!(pause_ms("[..] Using G1"), None);
        assert_eq!(pause_ms("[..] GC(4) Concurrent Mark Cycle 12.5ms"), None);
        assert_eq!(pause_ms("[..] GC(5) Pause Young garbage"), None);
    }

    #[test]
    fn a_log_is_followed_line_by_line_and_from_the_start_after_rotation() {
        let dir = std::env::temp_dir().join(format!("varve-gc-log-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("gc.log");
        let mut f = std::fs::File::create(&path).unwrap();
        let mut log = GcLog::new(path.clone());
        assert_eq!(log.poll(), (0, 0.0));
        writeln!(f, "{YOUNG}").unwrap();
        // Half a line: not counted until it ends.
        write!(f, "[..] GC(1) Pause Young (Normal) 55M->26M(1024M) 2").unwrap();
        f.flush().unwrap();
        assert_eq!(log.poll(), (1, 39.421));
        writeln!(f, "1.5ms").unwrap();
        f.flush().unwrap();
        let (n, ms) = log.poll();
        assert_eq!(n, 2);
        assert!((ms - 60.921).abs() < 1e-9);
        // Rotated: a new, shorter file is read from its start.
        drop(f);
        std::fs::write(&path, "[..] GC(9) Pause Remark 1M->1M(1M) 1.000ms\n").unwrap();
        assert_eq!(log.poll().0, 3);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
