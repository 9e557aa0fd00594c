//! intervals.csv: one row per (interval, operation), `t` at the end of the
//! interval in seconds since the start of the run. Latency columns are empty
//! when no operation of the kind succeeded in the interval.

use crate::error::{Result, StressError};
use crate::stats::{round3, OpCounters};

/// The header line (without newline).
pub const HEADER: &str =
    "t,phase,op,count,errors,timeouts,throughput,mean_ms,p50_ms,p95_ms,p99_ms,max_ms";

/// One row.
#[derive(Debug, Clone, PartialEq)]
pub struct IntervalRow {
    /// End of the interval, seconds since the run started.
    pub t: f64,
    pub phase: String,
    pub op: String,
    pub count: u64,
    pub errors: u64,
    pub timeouts: u64,
    /// Successful operations per second over the interval.
    pub throughput: f64,
    /// mean, p50, p95, p99, max in milliseconds; `None` when count is 0.
    pub latency_ms: Option<[f64; 5]>,
}

impl IntervalRow {
    /// The row for `counters` gathered over `seconds`, ending at `t`.
    pub fn from_counters(
        t: f64,
        seconds: f64,
        phase: &str,
        op: &str,
        counters: &OpCounters,
    ) -> IntervalRow {
        let r = counters.result(std::time::Duration::from_secs_f64(seconds.max(0.0)));
        IntervalRow {
            t: round3(t),
            phase: phase.to_string(),
            op: op.to_string(),
            count: r.count,
            errors: r.errors,
            timeouts: r.timeouts,
            throughput: r.throughput,
            latency_ms: r.latency_ms.map(|l| [l.mean, l.p50, l.p95, l.p99, l.max]),
        }
    }

    /// The CSV line (without newline). Phase names never contain commas
    /// (they are checked when a phase starts).
    pub fn to_csv(&self) -> String {
        let latency = match self.latency_ms {
            Some(l) => l
                .iter()
                .map(|x| format!("{x:.3}"))
                .collect::<Vec<_>>()
                .join(","),
            None => ",,,,".to_string(),
        };
        format!(
            "{:.3},{},{},{},{},{},{:.1},{}",
            self.t,
            self.phase,
            self.op,
            self.count,
            self.errors,
            self.timeouts,
            self.throughput,
            latency
        )
    }

    /// Parses a line written by [`IntervalRow::to_csv`] (extra trailing
    /// columns are ignored, as the format asks of readers).
    pub fn parse(line: &str) -> Result<IntervalRow> {
        let bad =
            |what: &str| StressError::config("intervals.csv row", format!("{what} in `{line}`"));
        let f: Vec<&str> = line.split(',').collect();
        if f.len() < 12 {
            return Err(bad("fewer than 12 columns"));
        }
        let num = |i: usize| f[i].parse::<f64>().map_err(|_| bad("a bad number"));
        let int = |i: usize| f[i].parse::<u64>().map_err(|_| bad("a bad count"));
        let latency_ms = if f[7..12].iter().all(|x| x.is_empty()) {
            None
        } else {
            Some([num(7)?, num(8)?, num(9)?, num(10)?, num(11)?])
        };
        Ok(IntervalRow {
            t: num(0)?,
            phase: f[1].to_string(),
            op: f[2].to_string(),
            count: int(3)?,
            errors: int(4)?,
            timeouts: int(5)?,
            throughput: num(6)?,
            latency_ms,
        })
    }
}

/// The whole file: header and rows.
pub fn render(rows: &[IntervalRow]) -> String {
    let mut out = String::with_capacity(64 * (rows.len() + 1));
    out.push_str(HEADER);
    out.push('\n');
    for row in rows {
        out.push_str(&row.to_csv());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::errors::ErrorKind;
    use std::time::Duration;

    #[test]
    fn rows_round_trip_through_the_csv() {
        let mut c = OpCounters::default();
        for us in [500u64, 600, 700, 1900, 7200] {
            c.record(Ok(Duration::from_micros(us)));
        }
        c.record(Err(ErrorKind::Timeout));
        let rows = vec![
            IntervalRow::from_counters(1.0, 1.0, "steady", "write", &c),
            IntervalRow::from_counters(2.0004, 1.0, "steady", "read", &OpCounters::default()),
        ];
        let text = render(&rows);
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some(HEADER));
        let back: Vec<IntervalRow> = lines.map(|l| IntervalRow::parse(l).unwrap()).collect();
        assert_eq!(back.len(), 2);
        assert_eq!(back[0].count, 5);
        assert_eq!(back[0].errors, 1);
        assert_eq!(back[0].timeouts, 1);
        assert_eq!(back[0].throughput, 5.0);
        let l = back[0].latency_ms.unwrap();
        assert!((l[4] - 7.2).abs() < 0.01, "{l:?}");
        assert_eq!(back[1].latency_ms, None);
        assert_eq!(back[1].t, 2.0);
        assert!(text.lines().nth(2).unwrap().ends_with(",,,,,"), "{text}");
        // A reader ignores columns added later.
        let extended = format!("{},42", rows[0].to_csv());
        assert_eq!(IntervalRow::parse(&extended).unwrap().count, 5);
        assert!(IntervalRow::parse("1.0,steady,write").is_err());
    }
}
