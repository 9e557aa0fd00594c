//! Logging at most once per interval per peer address, so a
//! misconfigured or hostile peer cannot flood the log (invalid frames,
//! rejected handshakes, failed connections).

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

/// Addresses remembered at most; past it the memory starts over.
const ADDRESSES_MAX: usize = 1024;

#[derive(Debug)]
pub struct LogLimiter {
    interval: Duration,
    last: Mutex<BTreeMap<IpAddr, Instant>>,
}

impl LogLimiter {
    pub fn new(interval: Duration) -> LogLimiter {
        LogLimiter {
            interval,
            last: Mutex::new(BTreeMap::new()),
        }
    }

    /// Whether to log about `ip` now (and if so, remembers that it did).
    pub fn allow(&self, ip: IpAddr, now: Instant) -> bool {
        let mut last = self.last.lock();
        if let Some(at) = last.get(&ip) {
            if now.saturating_duration_since(*at) < self.interval {
                return false;
            }
        }
        if last.len() >= ADDRESSES_MAX {
            last.clear();
        }
        last.insert(ip, now);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::{Clock, SystemClock};

    #[test]
    fn once_per_interval_per_address() {
        let limiter = LogLimiter::new(Duration::from_secs(60));
        let a = IpAddr::from([127, 0, 0, 1]);
        let b = IpAddr::from([127, 0, 0, 2]);
        let t = SystemClock.now();
        assert!(limiter.allow(a, t));
        assert!(!limiter.allow(a, t + Duration::from_secs(59)));
        assert!(limiter.allow(b, t));
        assert!(limiter.allow(a, t + Duration::from_secs(60)));
    }
}
