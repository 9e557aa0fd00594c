//! The run's clock: `t = 0` is when the first measured phase starts, and
//! server.csv, events.csv and the merged intervals.csv all count from it.

use std::sync::Arc;
use std::time::Instant;

/// A shared start instant.
#[derive(Debug, Clone)]
pub struct Clock {
    start: Arc<Instant>,
}

impl Clock {
    /// A clock whose `t = 0` is now.
    pub fn start() -> Clock {
        Clock {
            start: Arc::new(Instant::now()),
        }
    }

    /// Seconds since `t = 0`.
    pub fn now_s(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }
}
