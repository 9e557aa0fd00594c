//! Client TLS for the node: the settings and the rustls configuration in
//! force, rebuilt when the keystore or truststore changes on disk
//! (varve-tls's [`Reloading`]).

use std::sync::Arc;

use rustls::ServerConfig;
use varve_tls::reload::Reloading;

use super::context;
use super::settings::{ClientTlsSettings, Result};

/// Client TLS for the node.
pub struct ClientTls {
    settings: ClientTlsSettings,
    config: Reloading<ServerConfig>,
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
        let mut files = vec![settings.keystore.clone()];
        files.extend(settings.truststore.clone());
        let for_build = settings.clone();
        let config = Reloading::new(
            settings.section,
            files,
            Box::new(move || context::build(&for_build)),
        )?;
        Ok(ClientTls { settings, config })
    }

    pub fn settings(&self) -> &ClientTlsSettings {
        &self.settings
    }

    /// The configuration for a new handshake, reloaded first if the files
    /// changed.
    pub fn config(&self) -> Arc<ServerConfig> {
        self.config.current()
    }
}
