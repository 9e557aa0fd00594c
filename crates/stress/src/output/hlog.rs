//! hdr/<op>.hlog: one HdrHistogram interval log per operation kind
//! (microseconds), written with the hdrhistogram crate's interval log
//! writer. Intervals are buffered in memory, compressed (V2 + deflate, a few
//! hundred bytes each), and written with the header at the end of the run.
//! Interval timestamps are seconds since `BaseTime`, the start of the run;
//! each interval is tagged with its phase name.

use std::time::{Duration, SystemTime};

use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::Histogram;

/// The interval log of one operation kind.
pub struct HlogBuffer {
    body: Vec<u8>,
    serializer: V2DeflateSerializer,
}

impl std::fmt::Debug for HlogBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HlogBuffer")
            .field("bytes", &self.body.len())
            .finish()
    }
}

impl Default for HlogBuffer {
    fn default() -> Self {
        HlogBuffer {
            body: Vec::new(),
            serializer: V2DeflateSerializer::new(),
        }
    }
}

impl HlogBuffer {
    /// Appends one interval starting `start` after the run began.
    pub fn append(
        &mut self,
        h: &Histogram<u64>,
        start: Duration,
        length: Duration,
        phase: &str,
    ) -> std::io::Result<()> {
        let mut writer =
            IntervalLogWriterBuilder::new().begin_log_with(&mut self.body, &mut self.serializer)?;
        writer
            .write_histogram(h, start, length, Tag::new(phase))
            .map_err(|e| std::io::Error::other(e.to_string()))
    }

    /// The complete log: header lines, then the intervals.
    pub fn render(&self, op: &str, run_start: SystemTime) -> std::io::Result<Vec<u8>> {
        let mut out = Vec::with_capacity(self.body.len() + 256);
        let mut serializer = V2DeflateSerializer::new();
        IntervalLogWriterBuilder::new()
            .add_comment(&format!("varve stress: {op} latency, microseconds"))
            .with_start_time(run_start)
            .with_base_time(run_start)
            .begin_log_with(&mut out, &mut serializer)?;
        out.extend_from_slice(&self.body);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::new_histogram;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    use hdrhistogram::serialization::Deserializer;

    #[test]
    fn intervals_can_be_read_back() {
        let mut buf = HlogBuffer::default();
        let mut h = new_histogram();
        for us in 1..=1000u64 {
            h.record(us).unwrap();
        }
        buf.append(&h, Duration::from_secs(0), Duration::from_secs(1), "steady")
            .unwrap();
        buf.append(
            &new_histogram(),
            Duration::from_secs(1),
            Duration::from_secs(1),
            "bad tag,with comma",
        )
        .unwrap();
        let text = buf
            .render("write", SystemTime::UNIX_EPOCH + Duration::from_secs(1000))
            .unwrap();
        let mut intervals = Vec::new();
        for entry in IntervalLogIterator::new(&text) {
            if let Ok(LogEntry::Interval(i)) = entry {
                intervals.push(i);
            }
        }
        assert_eq!(intervals.len(), 2);
        assert_eq!(intervals[0].tag().map(|t| t.as_str()), Some("steady"));
        assert_eq!(intervals[1].tag(), None);
        assert_eq!(intervals[1].start_timestamp(), Duration::from_secs(1));
        let decoded = base64_decode(intervals[0].encoded_histogram());
        let back: Histogram<u64> = Deserializer::new()
            .deserialize(&mut decoded.as_slice())
            .unwrap();
        assert_eq!(back.len(), 1000);
        assert_eq!(back.max(), h.max());
    }

    /// Enough base64 for the test (the crate's own decoder is private).
    fn base64_decode(s: &str) -> Vec<u8> {
        const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut out = Vec::new();
        let (mut acc, mut bits) = (0u32, 0u32);
        for c in s.bytes().filter(|c| *c != b'=') {
            let v = ALPHABET.iter().position(|a| *a == c).unwrap() as u32;
            acc = (acc << 6) | v;
            bits += 6;
            if bits >= 8 {
                bits -= 8;
                out.push((acc >> bits) as u8);
                acc &= (1 << bits) - 1;
            }
        }
        out
    }
}
