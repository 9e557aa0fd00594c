//! A micro benchmark of `LatencyHistogram::record`: prints ns per record
//! with 1, 2 and 4 threads hammering one histogram.
//! Run: `cargo run -p varve-metrics --example record_bench [records_per_thread]`.

use std::sync::Arc;
use std::time::Instant;

use varve_metrics::LatencyHistogram;

fn main() {
    let per_thread: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(2_000_000);
    for threads in [1u64, 2, 4] {
        let h = Arc::new(LatencyHistogram::new());
        let start = Instant::now();
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let h = h.clone();
                std::thread::spawn(move || {
                    let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ t;
                    for _ in 0..per_thread {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        h.record(x % 20_000);
                    }
                })
            })
            .collect();
        for w in workers {
            if w.join().is_err() {
                eprintln!("worker panicked");
                return;
            }
        }
        let elapsed = start.elapsed();
        let total = per_thread * threads;
        // Wall time per record per thread: what one recording thread pays.
        let ns = elapsed.as_nanos() as f64 / per_thread as f64;
        println!(
            "threads={threads} records={total} wall={elapsed:?} ns/record/thread={ns:.1} count_ok={}",
            h.count() == total
        );
    }
}
