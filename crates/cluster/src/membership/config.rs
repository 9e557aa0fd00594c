//! Membership settings and their defaults (docs/design/cluster.md,
//! sections 5 and 12), and the errors of starting and announcing.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use super::generation::GenerationError;
use super::keys::GossipKey;
use crate::net::limits::{MAX_GOSSIP_ENTRIES_PER_NODE, MAX_GOSSIP_VALUE_BYTES};

/// `gossip_interval`: chitchat and Cassandra need about two heartbeats to
/// count a node live, and `varve cluster start` must be ready within 2 s.
pub const GOSSIP_INTERVAL_DEFAULT: Duration = Duration::from_millis(500);

/// The shortest `gossip_interval` accepted.
pub const GOSSIP_INTERVAL_MIN: Duration = Duration::from_millis(10);

/// cassandra.yaml's `phi_convict_threshold` default.
pub const PHI_CONVICT_THRESHOLD_DEFAULT: f64 = 8.0;

/// How long an ECHO that would make a peer UP may take.
pub const ECHO_TIMEOUT_DEFAULT: Duration = Duration::from_secs(2);

/// How long a node shutting down waits for its peers to have its
/// `SHUTDOWN` (Cassandra's `shutdown_announce_in_ms` is 2 s too).
pub const SHUTDOWN_ANNOUNCE_TIMEOUT_DEFAULT: Duration = Duration::from_secs(2);

/// Transitions a slow subscriber may fall behind by before it misses
/// some (it is then told how many, and can read the live set instead).
pub const TRANSITIONS_CAPACITY: usize = 1024;

/// The snitch's defaults (GossipingPropertyFileSnitch).
pub const DEFAULT_DC: &str = "datacenter1";
pub const DEFAULT_RACK: &str = "rack1";

/// The keys membership sets itself: the heartbeat, and the host id, dc,
/// rack and status from the node's identity and these settings.
pub const BUILT_IN_KEYS: [GossipKey; 5] = [
    GossipKey::HEARTBEAT,
    GossipKey::HOST_ID,
    GossipKey::DC,
    GossipKey::RACK,
    GossipKey::STATUS,
];

/// A node's membership settings. Its host id, listen address and
/// generation are its messaging identity's.
#[derive(Debug, Clone)]
pub struct MembershipConfig {
    /// Internode addresses of the seeds (this node's own is skipped).
    pub seeds: Vec<SocketAddr>,
    pub gossip_interval: Duration,
    /// On Cassandra's scale (see `detector`).
    pub phi_convict_threshold: f64,
    pub echo_timeout: Duration,
    pub shutdown_announce_timeout: Duration,
    pub dc: String,
    pub rack: String,
    /// Other keys gossiped from the start (`rpc_address`, `native_port`,
    /// `release_version`, `schema_version` ...); not the [`BUILT_IN_KEYS`].
    pub values: BTreeMap<GossipKey, String>,
}

impl MembershipConfig {
    /// The defaults, with these seeds.
    pub fn new(seeds: Vec<SocketAddr>) -> MembershipConfig {
        MembershipConfig {
            seeds,
            gossip_interval: GOSSIP_INTERVAL_DEFAULT,
            phi_convict_threshold: PHI_CONVICT_THRESHOLD_DEFAULT,
            echo_timeout: ECHO_TIMEOUT_DEFAULT,
            shutdown_announce_timeout: SHUTDOWN_ANNOUNCE_TIMEOUT_DEFAULT,
            dc: DEFAULT_DC.to_string(),
            rack: DEFAULT_RACK.to_string(),
            values: BTreeMap::new(),
        }
    }

    /// Refuses settings gossip cannot run with.
    pub fn validate(&self) -> Result<(), MembershipError> {
        let invalid = |why: String| Err(MembershipError::InvalidConfig(why));
        if self.gossip_interval < GOSSIP_INTERVAL_MIN {
            return invalid(format!(
                "gossip_interval {:?} is below {GOSSIP_INTERVAL_MIN:?}",
                self.gossip_interval
            ));
        }
        if !self.phi_convict_threshold.is_finite() || self.phi_convict_threshold <= 0.0 {
            return invalid(format!(
                "phi_convict_threshold {} is not a positive number",
                self.phi_convict_threshold
            ));
        }
        for (key, value) in [(GossipKey::DC, &self.dc), (GossipKey::RACK, &self.rack)] {
            if value.is_empty() {
                return invalid(format!("{key} is empty"));
            }
            check_value(key, value)?;
        }
        if self.values.len() + BUILT_IN_KEYS.len() > MAX_GOSSIP_ENTRIES_PER_NODE {
            return Err(MembershipError::TooManyKeys);
        }
        for (key, value) in &self.values {
            if BUILT_IN_KEYS.contains(key) {
                return Err(MembershipError::ReservedKey(*key));
            }
            check_value(*key, value)?;
        }
        Ok(())
    }
}

/// A value a node may gossip: at most [`MAX_GOSSIP_VALUE_BYTES`].
pub fn check_value(key: GossipKey, value: &str) -> Result<(), MembershipError> {
    if value.len() > MAX_GOSSIP_VALUE_BYTES {
        return Err(MembershipError::ValueTooLong {
            key,
            len: value.len(),
        });
    }
    Ok(())
}

/// Why membership did not start, or did not take a value.
#[derive(Debug, thiserror::Error)]
pub enum MembershipError {
    #[error("membership settings: {0}")]
    InvalidConfig(String),
    #[error("generation: {0}")]
    Generation(#[from] GenerationError),
    #[error("messaging was started without a generation (call generation::next_generation first)")]
    NoGeneration,
    #[error("the value of {key} is {len} bytes, over the limit of {MAX_GOSSIP_VALUE_BYTES}")]
    ValueTooLong { key: GossipKey, len: usize },
    #[error("{0} is set by membership itself")]
    ReservedKey(GossipKey),
    #[error("a node gossips at most {MAX_GOSSIP_ENTRIES_PER_NODE} keys")]
    TooManyKeys,
    #[error("membership is shut down")]
    Stopped,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid() {
        let c = MembershipConfig::new(vec![]);
        assert!(c.validate().is_ok());
        assert_eq!(c.gossip_interval, Duration::from_millis(500));
        assert_eq!(c.phi_convict_threshold, 8.0);
    }

    #[test]
    fn interval_at_the_minimum_and_below() {
        let mut c = MembershipConfig::new(vec![]);
        c.gossip_interval = GOSSIP_INTERVAL_MIN;
        assert!(c.validate().is_ok());
        c.gossip_interval = GOSSIP_INTERVAL_MIN - Duration::from_nanos(1);
        assert!(matches!(
            c.validate(),
            Err(MembershipError::InvalidConfig(_))
        ));
    }

    #[test]
    fn bad_thresholds_names_and_keys_are_refused() {
        for phi in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let mut c = MembershipConfig::new(vec![]);
            c.phi_convict_threshold = phi;
            assert!(c.validate().is_err(), "{phi}");
        }
        let mut c = MembershipConfig::new(vec![]);
        c.dc = String::new();
        assert!(c.validate().is_err());
        for key in BUILT_IN_KEYS {
            let mut c = MembershipConfig::new(vec![]);
            c.values.insert(key, "x".into());
            assert!(matches!(c.validate(), Err(MembershipError::ReservedKey(_))));
        }
    }

    #[test]
    fn value_length_at_n_and_n_plus_one() {
        let mut c = MembershipConfig::new(vec![]);
        c.rack = "r".repeat(MAX_GOSSIP_VALUE_BYTES);
        assert!(c.validate().is_ok());
        c.rack.push('r');
        assert!(matches!(
            c.validate(),
            Err(MembershipError::ValueTooLong {
                key: GossipKey::RACK,
                ..
            })
        ));
    }

    #[test]
    fn key_count_at_n_and_n_plus_one() {
        let mut c = MembershipConfig::new(vec![]);
        for i in 0..(MAX_GOSSIP_ENTRIES_PER_NODE - BUILT_IN_KEYS.len()) as u8 {
            c.values.insert(GossipKey(100 + i), "v".into());
        }
        assert!(c.validate().is_ok());
        c.values.insert(GossipKey(250), "v".into());
        assert!(matches!(c.validate(), Err(MembershipError::TooManyKeys)));
    }
}
