//! The current rustls configuration, rebuilt when the keystore or
//! truststore changes on disk, without a restart.
//!
//! A new handshake looks at the files' modification times and lengths at
//! most once per [`RELOAD_CHECK_INTERVAL`] (a `stat` per file, cheap
//! enough for the accepting task). When they differ from those last
//! loaded, the configuration is built again and swapped in for the
//! handshakes that follow; connections already open keep theirs. A new
//! file that does not build keeps the old configuration and is logged
//! once (not again until the files change once more).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use arc_swap::ArcSwap;
use parking_lot::Mutex;
use rustls::ServerConfig;

use super::settings::{ClientTlsSettings, Result};
use super::{context, RELOAD_CHECK_INTERVAL};

/// What a file looked like: modification time and length (`None`: could
/// not be read).
type Stamp = Option<(SystemTime, u64)>;

/// Client TLS for the node: the settings and the configuration in force.
pub struct ClientTls {
    settings: ClientTlsSettings,
    current: ArcSwap<ServerConfig>,
    check: Mutex<Check>,
}

struct Check {
    last: Instant,
    /// The files as they were when `current` was built.
    loaded: Vec<Stamp>,
    /// The files as they were when a rebuild last failed.
    failed: Option<Vec<Stamp>>,
}

impl std::fmt::Debug for ClientTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientTls")
            .field("settings", &self.settings)
            .finish()
    }
}

impl ClientTls {
    /// Reads the files and builds the configuration; an error names the
    /// cassandra.yaml key, and the node must not start.
    pub fn new(settings: ClientTlsSettings) -> Result<ClientTls> {
        let loaded = stamps(&files(&settings));
        let config = context::build(&settings)?;
        Ok(ClientTls {
            settings,
            current: ArcSwap::new(config),
            check: Mutex::new(Check {
                last: Instant::now(),
                loaded,
                failed: None,
            }),
        })
    }

    pub fn settings(&self) -> &ClientTlsSettings {
        &self.settings
    }

    /// The configuration for a new handshake, reloaded first if the files
    /// changed (checked at most once per [`RELOAD_CHECK_INTERVAL`]).
    pub fn config(&self) -> Arc<ServerConfig> {
        self.reload_if_changed();
        self.current.load_full()
    }

    fn reload_if_changed(&self) {
        // Another handshake is checking: use what is there.
        let Some(mut check) = self.check.try_lock() else {
            return;
        };
        if check.last.elapsed() < RELOAD_CHECK_INTERVAL {
            return;
        }
        check.last = Instant::now();
        let now = stamps(&files(&self.settings));
        if now == check.loaded || check.failed.as_ref() == Some(&now) {
            return;
        }
        match context::build(&self.settings) {
            Ok(config) => {
                self.current.store(config);
                check.loaded = now;
                check.failed = None;
                tracing::info!("client TLS: certificate files changed; new connections use them");
            }
            Err(e) => {
                check.failed = Some(now);
                tracing::warn!("client TLS: the changed certificate files are not usable, keeping the ones loaded before: {e}");
            }
        }
    }
}

fn files(settings: &ClientTlsSettings) -> Vec<PathBuf> {
    let mut files = vec![settings.keystore.clone()];
    files.extend(settings.truststore.clone());
    files
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
