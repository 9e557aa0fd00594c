//! Tests of the `/proc` parsers (fixed texts) and of a live sample.

use super::*;

const STAT: &str = "4242 (my (odd) cmd) S 1 4242 4242 0 -1 4194560 1000 0 0 0 \
                    250 50 0 0 20 0 7 0 12345 1000000 300 18446744073709551615";

#[test]
fn stat_fields_are_counted_after_the_last_paren() {
    let s = parse_stat(STAT).expect("stat parses");
    assert_eq!(
        s,
        StatFields {
            utime: 250,
            stime: 50,
            threads: 7,
            start_ticks: 12345
        }
    );
    assert_eq!(parse_stat("garbage"), None);
    assert_eq!(parse_stat("1 (x) S 1 2"), None);
    assert_eq!(parse_stat(""), None);
}

#[test]
fn status_limits_and_btime() {
    let status = "Name:\tvarve\nVmRSS:\t  2048 kB\nThreads:\t9\n";
    assert_eq!(status_field(status, "VmRSS:"), Some(2048));
    assert_eq!(status_field(status, "Threads:"), Some(9));
    assert_eq!(status_field(status, "VmSwap:"), None);
    assert_eq!(
        parse_btime("cpu 1 2 3\nbtime 1700000000\n"),
        Some(1_700_000_000)
    );
    let limits = "Limit                     Soft Limit           Hard Limit           Units\n\
                  Max open files            1024                 524288               files\n";
    assert_eq!(parse_max_open_files(limits), Some(1024));
    let unlimited = "Max open files            unlimited            unlimited            files\n";
    assert_eq!(parse_max_open_files(unlimited), None);
}

#[test]
fn auxv_is_read_as_native_words() {
    let mut bytes = Vec::new();
    for w in [6usize, 4096, 17, 250, 0, 0] {
        bytes.extend_from_slice(&w.to_ne_bytes());
    }
    assert_eq!(parse_auxv(&bytes, 17), Some(250));
    assert_eq!(parse_auxv(&bytes, 99), None);
    assert_eq!(parse_auxv(&bytes[..5], 17), None);
}

#[test]
fn missing_proc_fails_soft() {
    let stats = sample_from(Path::new("/nonexistent/proc"));
    assert_eq!(stats, ProcessStats::default());
    assert!(families(&stats).is_empty());
    assert!(rows(&stats).is_empty());
}

#[cfg(target_os = "linux")]
#[test]
fn live_sample_sees_cpu_and_memory() {
    let before = sample();
    let rss = before.rss_bytes.expect("rss on Linux");
    assert!(rss > 0);
    assert!(before.open_fds.expect("fds") >= 3);
    assert!(before.threads.expect("threads") >= 1);
    let start = before.start_time_seconds.expect("start time");
    assert!(start > 1_500_000_000.0, "{start}");
    let cpu0 = before.cpu_seconds.expect("cpu on Linux");
    // Burn CPU until the tick counter moves (at 100 Hz, 10 ms of work).
    let t0 = std::time::Instant::now();
    let mut x = 0u64;
    let mut cpu1 = cpu0;
    while cpu1 <= cpu0 && t0.elapsed() < std::time::Duration::from_secs(10) {
        for i in 0..1_000_000u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(i);
        }
        std::hint::black_box(x);
        cpu1 = sample().cpu_seconds.expect("cpu");
    }
    assert!(cpu1 > cpu0, "cpu {cpu0} -> {cpu1}");
    let names: Vec<String> = families(&sample()).into_iter().map(|f| f.name).collect();
    for n in [
        "process_cpu_seconds_total",
        "process_resident_memory_bytes",
        "process_open_fds",
    ] {
        assert!(names.iter().any(|x| x == n), "{n} in {names:?}");
    }
}
