//! The Prometheus text exposition format, version 0.0.4, written by hand:
//! name and label sanitizing, escaping, number formatting and one writer per
//! metric kind. Input is a list of [`FamilyView`]s already taken out of the
//! registry, so no lock is held while text is produced.
//!
//! Format reminders: one `# HELP` and one `# TYPE` line per family, before
//! its samples; a sample is `name{label="value",...} value`; label values
//! escape `\`, `"` and newline; HELP text escapes `\` and newline; floats
//! are Go-parsable (`NaN`, `+Inf`, `-Inf`, decimals).

use std::fmt::Write;

use crate::histogram::{Snapshot, SUMMARY_QUANTILES};

/// Prefix of every Varve metric name in Prometheus.
pub const PREFIX: &str = "varve_";
/// Content type to serve the text with.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";
/// Label name the summary uses for its quantiles (reserved: a user label of
/// this name is renamed to `_quantile`).
pub const QUANTILE_LABEL: &str = "quantile";

/// A sorted, de-duplicated label set.
pub type Labels = Vec<(String, String)>;

/// A metric name made valid: `[a-zA-Z0-9_:]`, anything else becomes `_`;
/// a leading digit gets a `_` in front; empty becomes `_`.
pub fn sanitize_metric_name(name: &str) -> String {
    sanitize(name, true)
}

/// A label name made valid: `[a-zA-Z0-9_]`, not starting with a digit, not
/// starting with the reserved `__`, and not [`QUANTILE_LABEL`].
pub fn sanitize_label_name(name: &str) -> String {
    let mut s = sanitize(name, false);
    while s.starts_with("__") {
        s.remove(0);
    }
    if s == QUANTILE_LABEL {
        s.insert(0, '_');
    }
    s
}

fn sanitize(name: &str, allow_colon: bool) -> String {
    let mut out: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || (allow_colon && c == ':') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    out
}

/// Labels sanitized, sorted by name, last value winning on duplicates.
pub fn normalize_labels(labels: &[(&str, &str)]) -> Labels {
    let mut out: Labels = Vec::with_capacity(labels.len());
    for (k, v) in labels {
        let k = sanitize_label_name(k);
        match out.binary_search_by(|(name, _)| name.as_str().cmp(&k)) {
            Ok(i) => out[i].1 = (*v).to_string(),
            Err(i) => out.insert(i, (k, (*v).to_string())),
        }
    }
    out
}

/// Escapes a label value: `\` → `\\`, `"` → `\"`, newline → `\n`.
pub fn escape_label_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// Escapes HELP text: `\` → `\\`, newline → `\n`.
pub fn escape_help(help: &str) -> String {
    help.replace('\\', "\\\\").replace('\n', "\\n")
}

/// A sample value as Prometheus parses it.
pub fn format_value(v: f64) -> String {
    if v.is_nan() {
        "NaN".to_string()
    } else if v == f64::INFINITY {
        "+Inf".to_string()
    } else if v == f64::NEG_INFINITY {
        "-Inf".to_string()
    } else {
        format!("{v}")
    }
}

/// What one series holds at render time.
#[derive(Debug, Clone)]
pub enum SeriesValue {
    Counter(u64),
    /// A counter with a fractional value (CPU seconds).
    FloatCounter(f64),
    Gauge(f64),
    /// All-time count and sum, recent quantiles; values are divided by
    /// `divisor` (1e6 turns microseconds into seconds).
    Summary {
        count: u64,
        sum: u64,
        recent: Snapshot,
        divisor: f64,
    },
}

/// One family, ready to render.
#[derive(Debug, Clone)]
pub struct FamilyView {
    /// Full exposed name (prefix and suffix included).
    pub name: String,
    pub help: String,
    pub series: Vec<(Labels, SeriesValue)>,
}

impl FamilyView {
    fn type_name(&self) -> &'static str {
        match self.series.first().map(|(_, v)| v) {
            Some(SeriesValue::Counter(_) | SeriesValue::FloatCounter(_)) => "counter",
            Some(SeriesValue::Summary { .. }) => "summary",
            _ => "gauge",
        }
    }
}

fn write_labels(out: &mut String, labels: &Labels, extra: Option<(&str, &str)>) {
    if labels.is_empty() && extra.is_none() {
        return;
    }
    out.push('{');
    let all = labels
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .chain(extra);
    for (i, (k, v)) in all.enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "{k}=\"{}\"", escape_label_value(v));
    }
    out.push('}');
}

fn write_sample(
    out: &mut String,
    name: &str,
    labels: &Labels,
    extra: Option<(&str, &str)>,
    value: &str,
) {
    out.push_str(name);
    write_labels(out, labels, extra);
    out.push(' ');
    out.push_str(value);
    out.push('\n');
}

/// Appends one family (HELP, TYPE, samples) to `out`. Empty families are
/// skipped.
pub fn write_family(out: &mut String, family: &FamilyView) {
    if family.series.is_empty() {
        return;
    }
    let name = &family.name;
    let _ = writeln!(out, "# HELP {name} {}", escape_help(&family.help));
    let _ = writeln!(out, "# TYPE {name} {}", family.type_name());
    for (labels, value) in &family.series {
        match value {
            SeriesValue::Counter(v) => write_sample(out, name, labels, None, &v.to_string()),
            SeriesValue::Gauge(v) | SeriesValue::FloatCounter(v) => {
                write_sample(out, name, labels, None, &format_value(*v))
            }
            SeriesValue::Summary {
                count,
                sum,
                recent,
                divisor,
            } => {
                for q in SUMMARY_QUANTILES {
                    let v = if recent.count == 0 {
                        f64::NAN
                    } else {
                        recent.quantile(q) / divisor
                    };
                    let q = format_value(q);
                    let extra = Some((QUANTILE_LABEL, q.as_str()));
                    write_sample(out, name, labels, extra, &format_value(v));
                }
                let sum = format_value(*sum as f64 / divisor);
                write_sample(out, &format!("{name}_sum"), labels, None, &sum);
                write_sample(
                    out,
                    &format!("{name}_count"),
                    labels,
                    None,
                    &count.to_string(),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_sanitized() {
        assert_eq!(sanitize_metric_name("a.b-c:d"), "a_b_c:d");
        assert_eq!(sanitize_metric_name("9lives"), "_9lives");
        assert_eq!(sanitize_metric_name(""), "_");
        assert_eq!(sanitize_metric_name("é"), "_");
        assert_eq!(sanitize_label_name("a:b"), "a_b");
        assert_eq!(sanitize_label_name("__name__"), "_name__");
        assert_eq!(sanitize_label_name("quantile"), "_quantile");
    }

    #[test]
    fn labels_sorted_and_deduplicated() {
        let l = normalize_labels(&[("z", "1"), ("a", "2"), ("z", "3")]);
        assert_eq!(
            l,
            vec![("a".into(), "2".into()), ("z".into(), "3".into())] as Labels
        );
    }

    #[test]
    fn escaping() {
        assert_eq!(escape_label_value("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
        assert_eq!(escape_help("x\\y\nz\"q"), "x\\\\y\\nz\"q");
    }

    #[test]
    fn values_format_as_prometheus_parses_them() {
        assert_eq!(format_value(5.0), "5");
        assert_eq!(format_value(0.25), "0.25");
        assert_eq!(format_value(-1.5), "-1.5");
        assert_eq!(format_value(f64::NAN), "NaN");
        assert_eq!(format_value(f64::INFINITY), "+Inf");
        assert_eq!(format_value(f64::NEG_INFINITY), "-Inf");
    }
}
