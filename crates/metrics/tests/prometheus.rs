//! The registry end to end: identity of handles, kind conflicts, the
//! Prometheus text (a golden file and a line-by-line format check) and rows.

use std::sync::Arc;
use std::time::Duration;

use varve_metrics::{names, Error, Registry, RegistryOptions};

fn quiet() -> Registry {
    Registry::with_options(RegistryOptions {
        process_metrics: false,
        ..RegistryOptions::default()
    })
}

#[test]
fn same_name_and_labels_give_the_same_handle() {
    let r = quiet();
    let a = r.latency("client_request_latency", &[("operation", "write")]);
    let b = r.latency("client_request_latency", &[("operation", "write")]);
    let c = r.latency("client_request_latency", &[("operation", "read")]);
    assert!(Arc::ptr_eq(&a, &b));
    assert!(!Arc::ptr_eq(&a, &c));
    // Label order does not matter.
    let x = r.counter("c", &[("a", "1"), ("b", "2")]);
    let y = r.counter("c", &[("b", "2"), ("a", "1")]);
    assert!(Arc::ptr_eq(&x, &y));
}

#[test]
fn kind_conflicts_are_errors_or_detached() {
    let r = quiet();
    r.counter("thing", &[]).inc();
    assert!(matches!(
        r.try_gauge("thing", &[]),
        Err(Error::KindConflict { .. })
    ));
    let detached = r.gauge("thing", &[]);
    detached.set(5.0);
    assert_eq!(r.conflicts(), 1);
    let text = r.render_prometheus();
    assert!(text.contains("varve_thing_total 1\n"), "{text}");
    assert!(!text.contains("varve_thing 5"), "{text}");
    assert!(
        text.contains("varve_metrics_registration_conflicts_total 1\n"),
        "{text}"
    );
    r.gauge_fn("g", &[], Box::new(|| 1.0));
    assert!(r.try_gauge("g", &[]).is_err());
}

fn golden_registry() -> Registry {
    let r = quiet();
    let w = r.latency(
        names::CLIENT_REQUEST_LATENCY,
        &[(names::LABEL_OPERATION, "write")],
    );
    for v in [100, 200, 300, 400, 1000] {
        w.record(v);
    }
    r.latency(
        names::CLIENT_REQUEST_LATENCY,
        &[(names::LABEL_OPERATION, "read")],
    );
    r.counter(
        names::CLIENT_REQUEST_TIMEOUTS,
        &[(names::LABEL_OPERATION, "write")],
    )
    .add(3);
    r.gauge(names::COMPACTION_PENDING_TASKS, &[]).set_i64(2);
    r.gauge_fn(
        names::TABLE_SSTABLES_PER_LEVEL,
        &[("keyspace", "ks"), ("table", "t\"1\n\\"), ("level", "0")],
        Box::new(|| 4.0),
    );
    r.meter(names::COMPACTIONS_COMPLETED, &[]).mark_n(7);
    let h = r.histogram(
        names::TABLE_SSTABLES_PER_READ,
        &[("keyspace", "ks"), ("table", "t")],
    );
    h.record(1);
    h.record(3);
    r.gauge("weird.name-1", &[("9bad label", "v")]).set(0.5);
    r.describe("weird.name-1", "Line one\nback\\slash");
    r
}

#[test]
fn golden_output() {
    let text = golden_registry().render_prometheus();
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/golden/small_registry.prom"
    );
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(path, &text).expect("write golden");
    }
    let expected = std::fs::read_to_string(path).expect("read golden");
    assert_eq!(text, expected, "\n---- got ----\n{text}");
}

/// A small checker of the 0.0.4 text format: every line is a comment or a
/// sample `name{labels} value`; HELP and TYPE once per family and before its
/// samples; samples belong to the family last typed.
fn check_exposition(text: &str) {
    let mut helped = std::collections::BTreeSet::new();
    let mut typed = std::collections::BTreeMap::new();
    let mut current: Option<(String, String)> = None;
    assert!(text.ends_with('\n'));
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let name = rest.split(' ').next().expect("help name");
            assert!(helped.insert(name.to_string()), "HELP twice: {name}");
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut parts = rest.split(' ');
            let name = parts.next().expect("type name").to_string();
            let kind = parts.next().expect("type kind").to_string();
            assert!(
                ["counter", "gauge", "summary"].contains(&kind.as_str()),
                "{line}"
            );
            assert!(helped.contains(&name), "TYPE before HELP: {line}");
            assert!(
                typed.insert(name.clone(), kind.clone()).is_none(),
                "TYPE twice: {name}"
            );
            current = Some((name, kind));
        } else {
            assert!(!line.starts_with('#'), "unknown comment {line}");
            let (name, labels, value) = split_sample(line);
            assert!(valid_name(name), "bad name in {line}");
            check_labels(labels, line);
            assert!(
                value.parse::<f64>().is_ok() || ["NaN", "+Inf", "-Inf"].contains(&value),
                "bad value in {line}"
            );
            let (family, kind) = current.as_ref().expect("sample before TYPE");
            let ok = name == family
                || (kind == "summary"
                    && (name == format!("{family}_sum") || name == format!("{family}_count")));
            assert!(ok, "sample {name} outside family {family}");
        }
    }
}

fn split_sample(line: &str) -> (&str, &str, &str) {
    let (head, value) = line.rsplit_once(' ').expect("sample has a value");
    match head.find('{') {
        Some(i) => {
            assert!(head.ends_with('}'), "unclosed labels: {line}");
            (&head[..i], &head[i + 1..head.len() - 1], value)
        }
        None => (head, "", value),
    }
}

fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

/// `k="v",...` with `\\`, `\"`, `\n` the only escapes and no raw newline.
fn check_labels(mut labels: &str, line: &str) {
    while !labels.is_empty() {
        let eq = labels
            .find("=\"")
            .unwrap_or_else(|| panic!("label without =\": {line}"));
        assert!(
            valid_name(&labels[..eq]) && !labels[..eq].contains(':'),
            "{line}"
        );
        let mut rest = labels[eq + 2..].chars();
        let mut consumed = eq + 2;
        loop {
            let c = rest
                .next()
                .unwrap_or_else(|| panic!("unterminated value: {line}"));
            consumed += c.len_utf8();
            match c {
                '"' => break,
                '\\' => {
                    let e = rest
                        .next()
                        .unwrap_or_else(|| panic!("dangling escape: {line}"));
                    assert!(['\\', '"', 'n'].contains(&e), "bad escape in {line}");
                    consumed += 1;
                }
                '\n' => panic!("raw newline: {line}"),
                _ => {}
            }
        }
        labels = &labels[consumed..];
        labels = labels.strip_prefix(',').unwrap_or(labels);
    }
}

#[test]
fn exposition_is_well_formed() {
    let r = golden_registry();
    r.counter("x", &[("v", "a\\b\"c\nd")]).inc();
    check_exposition(&r.render_prometheus());
    // And with process metrics, on whatever platform this runs.
    let full = Registry::new();
    full.counter("x", &[]).inc();
    let text = full.render_prometheus();
    check_exposition(&text);
    #[cfg(target_os = "linux")]
    assert!(text.contains("\nprocess_resident_memory_bytes "), "{text}");
}

#[test]
fn rows_flatten_every_value() {
    let r = golden_registry();
    let rows = r.rows();
    let find = |family: &str, field: &str| {
        rows.iter()
            .find(|row| row.family == family && row.field == field)
            .map(|row| row.value)
    };
    assert_eq!(find("compaction_pending_tasks", "value"), Some(2.0));
    assert_eq!(find("table_sstables_per_level", "value"), Some(4.0));
    assert_eq!(find("compactions_completed", "count"), Some(7.0));
    assert_eq!(find("table_sstables_per_read", "p50"), Some(1.0));
    assert_eq!(find("table_sstables_per_read", "max"), Some(3.0));
    let write = rows
        .iter()
        .find(|row| row.field == "p99_micros" && row.labels_text() == "operation=write")
        .expect("write p99");
    assert!((write.value - 1000.0).abs() <= 1000.0 / 64.0);
    assert!(!rows.iter().any(|row| row.family == "process"));
}

#[test]
fn tick_rotates_recent_windows() {
    let r = Registry::with_options(RegistryOptions {
        process_metrics: false,
        recent_window: Duration::from_secs(1),
    });
    let h = r.latency("l", &[]);
    h.record(10);
    let later = std::time::Instant::now() + Duration::from_secs(3);
    r.tick_at(later);
    r.tick_at(later + Duration::from_secs(3));
    assert_eq!(h.snapshot_recent_no_rotate().count, 0);
    let text = r.render_prometheus();
    assert!(
        text.contains("varve_l_seconds{quantile=\"0.99\"} NaN\n"),
        "{text}"
    );
    assert!(text.contains("varve_l_seconds_count 1\n"), "{text}");
}

#[test]
fn ticker_thread_stops_on_drop() {
    let r = Arc::new(quiet());
    let ticker = r.spawn_ticker(Duration::from_millis(5)).expect("spawn");
    std::thread::sleep(Duration::from_millis(20));
    drop(ticker);
    // The thread held only a weak reference.
    assert_eq!(Arc::strong_count(&r), 1);
}

#[test]
fn series_of_a_dropped_table_can_be_removed() {
    let r = quiet();
    let t1 = [("keyspace", "ks"), ("table", "t1")];
    let t2 = [("keyspace", "ks"), ("table", "t2")];
    r.histogram("table_tombstones_scanned", &t1).record(3);
    r.histogram("table_tombstones_scanned", &t2).record(4);
    r.gauge_fn(
        "table_sstables_per_level",
        &[("keyspace", "ks"), ("table", "t1"), ("level", "0")],
        Box::new(|| 1.0),
    );
    assert_eq!(r.remove_matching(&t1), 2);
    let text = r.render_prometheus();
    assert!(!text.contains("table=\"t1\""), "{text}");
    assert!(text.contains("table=\"t2\""), "{text}");
    assert_eq!(r.remove_matching(&t1), 0);
}
