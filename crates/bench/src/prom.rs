//! A tolerant reader of the Prometheus text exposition format (what
//! `GET /metrics` returns), for server-side sampling.
//!
//! Tolerant means: a line that does not parse is skipped (and counted), a
//! metric that is absent is `None`; the caller leaves that cell of
//! server.csv empty. Label values may contain the escapes `\\`, `\"` and
//! `\n`; values may be `NaN`, `+Inf` and `-Inf`; an optional timestamp after
//! the value is ignored. The text is untrusted and never causes a panic.

/// Longest exposition accepted (larger responses are cut here).
pub const EXPOSITION_BYTES_MAX: usize = 16 * 1024 * 1024;

/// One sample line: `name{labels} value`.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub name: String,
    /// In the order written.
    pub labels: Vec<(String, String)>,
    pub value: f64,
}

impl Sample {
    /// The value of label `key`, if present.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// True when every `(key, value)` of `filter` is a label of the sample.
    pub fn matches(&self, filter: &[(&str, &str)]) -> bool {
        filter.iter().all(|(k, v)| self.label(k) == Some(*v))
    }
}

/// A parsed exposition.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Exposition {
    pub samples: Vec<Sample>,
    /// Lines that were neither comments nor parsable samples.
    pub skipped_lines: usize,
}

impl Exposition {
    /// Parses `text`; never fails (see the module documentation).
    pub fn parse(text: &str) -> Exposition {
        let text = cut_at_char_boundary(text, EXPOSITION_BYTES_MAX);
        let mut out = Exposition::default();
        for line in text.lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            match parse_line(line) {
                Some(s) => out.samples.push(s),
                None => out.skipped_lines += 1,
            }
        }
        out
    }

    /// The sum over every series of `name` whose labels include `filter`;
    /// `None` when there is no such series (NaN values are left out).
    pub fn sum(&self, name: &str, filter: &[(&str, &str)]) -> Option<f64> {
        let mut found = None;
        for s in &self.samples {
            if s.name == name && s.matches(filter) && !s.value.is_nan() {
                *found.get_or_insert(0.0) += s.value;
            }
        }
        found
    }

    /// True when some series of `name` has labels including `filter`.
    pub fn has(&self, name: &str, filter: &[(&str, &str)]) -> bool {
        self.samples
            .iter()
            .any(|s| s.name == name && s.matches(filter))
    }
}

fn cut_at_char_boundary(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

fn is_name_char(c: char, first: bool) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == ':' || (!first && c.is_ascii_digit())
}

/// One sample line, or `None` when it is malformed.
fn parse_line(line: &str) -> Option<Sample> {
    let name_end = line
        .char_indices()
        .find(|&(i, c)| !is_name_char(c, i == 0))
        .map_or(line.len(), |(i, _)| i);
    if name_end == 0 {
        return None;
    }
    let name = &line[..name_end];
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if let Some(after) = rest.strip_prefix('{') {
        let (parsed, remaining) = parse_labels(after)?;
        labels = parsed;
        rest = remaining;
    }
    let mut fields = rest.split_whitespace();
    let value = parse_value(fields.next()?)?;
    // An optional timestamp; anything more is malformed.
    if let Some(ts) = fields.next() {
        ts.parse::<i64>().ok()?;
    }
    if fields.next().is_some() {
        return None;
    }
    Some(Sample {
        name: name.to_string(),
        labels,
        value,
    })
}

/// Parses `key="value",...}` and returns the labels and the text after `}`.
fn parse_labels(mut s: &str) -> Option<(Vec<(String, String)>, &str)> {
    let mut labels = Vec::new();
    loop {
        s = s.trim_start();
        if let Some(after) = s.strip_prefix('}') {
            return Some((labels, after));
        }
        let eq = s.find('=')?;
        let key = s[..eq].trim();
        if key.is_empty()
            || !key
                .chars()
                .enumerate()
                .all(|(i, c)| is_name_char(c, i == 0))
        {
            return None;
        }
        let after_eq = s[eq + 1..].trim_start().strip_prefix('"')?;
        let (value, after_value) = parse_quoted(after_eq)?;
        labels.push((key.to_string(), value));
        s = after_value.trim_start();
        if let Some(after) = s.strip_prefix(',') {
            s = after;
        } else if !s.starts_with('}') {
            return None;
        }
    }
}

/// Reads a label value up to its closing quote, undoing the escapes.
fn parse_quoted(s: &str) -> Option<(String, &str)> {
    let mut out = String::new();
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((out, &s[i + 1..])),
            '\\' => match chars.next()?.1 {
                'n' => out.push('\n'),
                '\\' => out.push('\\'),
                '"' => out.push('"'),
                other => {
                    // Unknown escapes are kept as written.
                    out.push('\\');
                    out.push(other);
                }
            },
            c => out.push(c),
        }
    }
    None
}

fn parse_value(s: &str) -> Option<f64> {
    match s {
        "NaN" => Some(f64::NAN),
        "+Inf" | "Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        _ => s.parse::<f64>().ok(),
    }
}

/// Turns successive readings of a cumulative counter into a per-second
/// rate: the first reading, a counter that went backwards (a restart) or a
/// missing reading give `None`.
#[derive(Debug, Clone, Default)]
pub struct Derivative {
    last: Option<(f64, f64)>,
}

impl Derivative {
    /// Feeds the counter's `value` at time `t_s`; returns the rate since
    /// the previous reading.
    pub fn next(&mut self, t_s: f64, value: Option<f64>) -> Option<f64> {
        let Some(value) = value.filter(|v| v.is_finite()) else {
            self.last = None;
            return None;
        };
        let rate = match self.last {
            Some((t0, v0)) if t_s > t0 && value >= v0 => Some((value - v0) / (t_s - t0)),
            _ => None,
        };
        self.last = Some((t_s, value));
        rate
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Written by hand after crates/metrics' golden file and the names in
    /// crates/metrics/src/names.rs, with the awkward cases added.
    const SAMPLE: &str = r#"# HELP varve_compaction_pending_tasks Compactions waiting to run, estimated.
# TYPE varve_compaction_pending_tasks gauge
varve_compaction_pending_tasks 2
varve_compaction_pending_tasks{keyspace="tlp_stress"} 3
# TYPE varve_compaction_bytes_compacted_total counter
varve_compaction_bytes_compacted_total 1048576
# TYPE varve_table_live_sstables gauge
varve_table_live_sstables{keyspace="tlp_stress",table="keyvaluelargeblob_2"} 7
varve_table_live_sstables{keyspace="other",table="keyvaluelargeblob_2"} 100
varve_table_sstables_per_level{keyspace="tlp_stress",level="0",table="keyvaluelargeblob_2"} 4
varve_table_sstables_per_level{keyspace="tlp_stress",level="1",table="keyvaluelargeblob_2"} 10
varve_table_sstables_per_level{keyspace="ks",level="0",table="t\"1\n\\"} 9
varve_table_live_disk_space_used_bytes{ table = "keyvaluelargeblob_2" , keyspace="tlp_stress", } 123456789 1700000000000
varve_client_request_latency_seconds{operation="read",quantile="0.5"} NaN
process_cpu_seconds_total 12.5
process_resident_memory_bytes 5.24288e+07
weird{a="unterminated} 1
{a="b"} 2
varve_x 1 2 3
varve_inf +Inf
"#;

    fn table(ks: &'static str) -> [(&'static str, &'static str); 2] {
        [("keyspace", ks), ("table", "keyvaluelargeblob_2")]
    }

    #[test]
    fn parses_names_labels_values_and_skips_garbage() {
        let e = Exposition::parse(SAMPLE);
        assert_eq!(e.skipped_lines, 3, "{:?}", e.samples.last());
        assert_eq!(e.sum("varve_compaction_pending_tasks", &[]), Some(5.0));
        assert_eq!(
            e.sum("varve_compaction_bytes_compacted_total", &[]),
            Some(1048576.0)
        );
        assert_eq!(
            e.sum("varve_table_live_sstables", &table("tlp_stress")),
            Some(7.0)
        );
        let l0 = [
            ("keyspace", "tlp_stress"),
            ("table", "keyvaluelargeblob_2"),
            ("level", "0"),
        ];
        assert_eq!(e.sum("varve_table_sstables_per_level", &l0), Some(4.0));
        assert_eq!(
            e.sum(
                "varve_table_live_disk_space_used_bytes",
                &table("tlp_stress")
            ),
            Some(123456789.0),
            "spaces, a trailing comma and a timestamp"
        );
        assert_eq!(e.sum("process_cpu_seconds_total", &[]), Some(12.5));
        assert_eq!(
            e.sum("process_resident_memory_bytes", &[]),
            Some(52428800.0)
        );
        assert_eq!(e.sum("varve_inf", &[]), Some(f64::INFINITY));
    }

    #[test]
    fn escapes_in_label_values() {
        let e = Exposition::parse(SAMPLE);
        let weird = [("keyspace", "ks"), ("table", "t\"1\n\\")];
        assert_eq!(e.sum("varve_table_sstables_per_level", &weird), Some(9.0));
    }

    #[test]
    fn missing_metrics_and_nan_are_none() {
        let e = Exposition::parse(SAMPLE);
        assert_eq!(e.sum("varve_no_such_metric", &[]), None);
        assert_eq!(e.sum("varve_table_live_sstables", &table("nope")), None);
        assert!(e.has("varve_client_request_latency_seconds", &[]));
        assert_eq!(e.sum("varve_client_request_latency_seconds", &[]), None);
        assert_eq!(Exposition::parse("").samples.len(), 0);
    }

    #[test]
    fn counters_become_per_second_rates() {
        let mut d = Derivative::default();
        assert_eq!(d.next(1.0, Some(100.0)), None, "first reading");
        assert_eq!(d.next(2.0, Some(1100.0)), Some(1000.0));
        assert_eq!(d.next(4.0, Some(2100.0)), Some(500.0));
        assert_eq!(d.next(5.0, Some(50.0)), None, "went backwards: restart");
        assert_eq!(d.next(6.0, Some(150.0)), Some(100.0));
        assert_eq!(d.next(7.0, None), None, "missing");
        assert_eq!(d.next(8.0, Some(200.0)), None, "a gap restarts");
        assert_eq!(d.next(8.0, Some(300.0)), None, "no time passed");
    }

    proptest! {
        #[test]
        fn arbitrary_text_never_panics(text in ".{0,400}") {
            let e = Exposition::parse(&text);
            prop_assert!(e.samples.len() + e.skipped_lines <= text.lines().count());
        }

        #[test]
        fn label_values_round_trip(value in "[ -~\n]{0,40}", v in -1e12f64..1e12) {
            let escaped = value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n");
            let text = format!("m{{k=\"{escaped}\"}} {v}\n");
            let e = Exposition::parse(&text);
            prop_assert_eq!(e.samples.len(), 1);
            prop_assert_eq!(e.samples[0].label("k"), Some(value.as_str()));
            prop_assert_eq!(e.samples[0].value, v);
        }
    }
}
