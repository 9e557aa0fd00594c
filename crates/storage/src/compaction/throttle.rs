//! `compaction_throughput`: the rate compactions may write at, in MiB/s
//! (0 = unlimited), changeable at runtime. Cassandra's default is 64 MiB/s.

use std::time::Duration;

/// Cassandra 5.0's default `compaction_throughput`.
pub const DEFAULT_COMPACTION_THROUGHPUT_MIB_PER_SEC: u64 = 64;
const MIB: u64 = 1 << 20;

/// How long a compaction that has written `bytes` in `elapsed` must pause
/// to stay at or under `mib_per_sec` (0: never).
pub fn delay(mib_per_sec: u64, bytes: u64, elapsed: Duration) -> Duration {
    if mib_per_sec == 0 {
        return Duration::ZERO;
    }
    let allowed_secs = bytes as f64 / (mib_per_sec.saturating_mul(MIB)) as f64;
    let due = Duration::from_secs_f64(allowed_secs);
    due.saturating_sub(elapsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_only_when_ahead_of_the_rate() {
        // 64 MiB written at 64 MiB/s must take one second.
        assert_eq!(
            delay(64, 64 * MIB, Duration::from_millis(250)),
            Duration::from_millis(750)
        );
        assert_eq!(delay(64, 64 * MIB, Duration::from_secs(2)), Duration::ZERO);
        assert_eq!(
            delay(0, u64::MAX, Duration::ZERO),
            Duration::ZERO,
            "0 means unlimited"
        );
        assert_eq!(
            delay(1, MIB / 2, Duration::ZERO),
            Duration::from_millis(500)
        );
    }
}
