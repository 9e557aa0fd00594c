//! A TLS configuration rebuilt when its files change on disk, without a
//! restart (docs/design/security.md, sections 10 and 11).
//!
//! A caller about to start a handshake asks for [`Reloading::current`].
//! At most once per [`RELOAD_CHECK_INTERVAL`] that looks at the files'
//! modification times and lengths (a `stat` each, cheap enough for the
//! task that calls it). When they differ from those last loaded, the
//! configuration is built again and swapped in for the handshakes that
//! follow; connections already open keep theirs. Files that do not build
//! keep the old configuration and are logged once (not again until they
//! change once more).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use arc_swap::ArcSwap;

use crate::Result;

/// How often, at most, the files are looked at.
pub const RELOAD_CHECK_INTERVAL: Duration = Duration::from_secs(1);

/// What a file looked like: modification time and length (`None`: could
/// not be read).
type Stamp = Option<(SystemTime, u64)>;

/// How a configuration is built from its files.
pub type Build<T> = Box<dyn Fn() -> Result<Arc<T>> + Send + Sync>;

/// A configuration and the files it is built from.
pub struct Reloading<T> {
    /// For the log: `client TLS`, `internode TLS`.
    what: &'static str,
    files: Vec<PathBuf>,
    build: Build<T>,
    current: ArcSwap<T>,
    check: Mutex<Check>,
}

struct Check {
    last: Instant,
    /// The files as they were when `current` was built.
    loaded: Vec<Stamp>,
    /// The files as they were when a rebuild last failed.
    failed: Option<Vec<Stamp>>,
}

impl<T> Reloading<T> {
    /// Builds the first configuration; its error is the caller's (the
    /// node must not start).
    pub fn new(what: &'static str, files: Vec<PathBuf>, build: Build<T>) -> Result<Self> {
        let loaded = stamps(&files);
        let first = build()?;
        Ok(Reloading {
            what,
            files,
            build,
            current: ArcSwap::new(first),
            check: Mutex::new(Check {
                last: Instant::now(),
                loaded,
                failed: None,
            }),
        })
    }

    /// The configuration for a new handshake, rebuilt first if the files
    /// changed (looked at most once per [`RELOAD_CHECK_INTERVAL`]).
    pub fn current(&self) -> Arc<T> {
        self.reload_if_changed();
        self.current.load_full()
    }

    fn reload_if_changed(&self) {
        // Another handshake is looking: use what is there.
        let Ok(mut check) = self.check.try_lock() else {
            return;
        };
        if check.last.elapsed() < RELOAD_CHECK_INTERVAL {
            return;
        }
        check.last = Instant::now();
        let now = stamps(&self.files);
        if now == check.loaded || check.failed.as_ref() == Some(&now) {
            return;
        }
        match (self.build)() {
            Ok(config) => {
                self.current.store(config);
                check.loaded = now;
                check.failed = None;
                tracing::info!(
                    "{}: certificate files changed; new connections use them",
                    self.what
                );
            }
            Err(e) => {
                check.failed = Some(now);
                tracing::warn!(
                    "{}: the changed certificate files are not usable, keeping the ones loaded before: {e}",
                    self.what
                );
            }
        }
    }
}

fn stamps(files: &[PathBuf]) -> Vec<Stamp> {
    files
        .iter()
        .map(|f| {
            let meta = std::fs::metadata(f).ok()?;
            Some((meta.modified().ok()?, meta.len()))
        })
        .collect()
}
