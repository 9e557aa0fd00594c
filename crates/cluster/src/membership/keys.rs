//! The keys a node gossips about itself (docs/design/cluster.md, section
//! 5) and the values of `status`.
//!
//! A [`GossipKey`] travels as its one-byte code. A key this node does not
//! know is kept and passed on as it arrived, so a newer node can add keys
//! without older ones dropping them; only [`GossipKey::KNOWN`] keys have
//! names. The heartbeat is a key like the others (code 0) whose value is
//! empty: every round gives it a new version, which is what the failure
//! detector listens to. It is gossip's own and cannot be announced.

use std::fmt;

/// A gossip key, by its wire code.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GossipKey(pub u8);

impl GossipKey {
    /// Gossip's own: a new version every round while the node runs.
    pub const HEARTBEAT: GossipKey = GossipKey(0);
    /// The host id as a UUID.
    pub const HOST_ID: GossipKey = GossipKey(1);
    /// Data centre (the snitch's `dc`).
    pub const DC: GossipKey = GossipKey(2);
    /// Rack (the snitch's `rack`).
    pub const RACK: GossipKey = GossipKey(3);
    /// The address clients connect to.
    pub const RPC_ADDRESS: GossipKey = GossipKey(4);
    /// The CQL port.
    pub const NATIVE_PORT: GossipKey = GossipKey(5);
    /// The Cassandra release the node reports (`system.local`).
    pub const RELEASE_VERSION: GossipKey = GossipKey(6);
    /// The schema digest, as a UUID.
    pub const SCHEMA_VERSION: GossipKey = GossipKey(7);
    /// The last applied metadata entry.
    pub const EPOCH: GossipKey = GossipKey(8);
    /// [`Status`]: `NORMAL`, or `SHUTDOWN` from a draining node.
    pub const STATUS: GossipKey = GossipKey(9);
    /// Bytes of data on disk.
    pub const LOAD: GossipKey = GossipKey(10);
    /// The node's tokens, comma-separated: what drivers route by until the
    /// metadata log holds the ring (docs/design/cluster.md, step 9).
    pub const TOKENS: GossipKey = GossipKey(11);

    /// Every key of this version with its name, in code order.
    pub const KNOWN: [(GossipKey, &'static str); 12] = [
        (GossipKey::HEARTBEAT, "heartbeat"),
        (GossipKey::HOST_ID, "host_id"),
        (GossipKey::DC, "dc"),
        (GossipKey::RACK, "rack"),
        (GossipKey::RPC_ADDRESS, "rpc_address"),
        (GossipKey::NATIVE_PORT, "native_port"),
        (GossipKey::RELEASE_VERSION, "release_version"),
        (GossipKey::SCHEMA_VERSION, "schema_version"),
        (GossipKey::EPOCH, "epoch"),
        (GossipKey::STATUS, "status"),
        (GossipKey::LOAD, "load"),
        (GossipKey::TOKENS, "tokens"),
    ];

    pub fn code(self) -> u8 {
        self.0
    }

    /// The key's name, if this node knows it.
    pub fn name(self) -> Option<&'static str> {
        GossipKey::KNOWN
            .iter()
            .find(|(k, _)| *k == self)
            .map(|(_, name)| *name)
    }

    /// Whether a node may announce the key (all but the heartbeat).
    pub fn is_announceable(self) -> bool {
        self != GossipKey::HEARTBEAT
    }
}

impl fmt::Debug for GossipKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "key({})", self.0),
        }
    }
}

impl fmt::Display for GossipKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// The value of [`GossipKey::STATUS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Status {
    /// Serving.
    Normal,
    /// Draining: peers mark the node down at once rather than waiting for
    /// the failure detector.
    Shutdown,
}

impl Status {
    pub const fn as_str(self) -> &'static str {
        match self {
            Status::Normal => "NORMAL",
            Status::Shutdown => "SHUTDOWN",
        }
    }

    /// The status a gossiped value names; `None` for a value this version
    /// does not know (treated like `NORMAL`: only `SHUTDOWN` marks a node
    /// down without the detector).
    pub fn parse(value: &str) -> Option<Status> {
        match value {
            "NORMAL" => Some(Status::Normal),
            "SHUTDOWN" => Some(Status::Shutdown),
            _ => None,
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_keys_are_named_in_code_order() {
        let codes: Vec<u8> = GossipKey::KNOWN.iter().map(|(k, _)| k.code()).collect();
        assert_eq!(codes, (0..12).collect::<Vec<u8>>());
        for (key, name) in GossipKey::KNOWN {
            assert_eq!(key.name(), Some(name));
            assert_eq!(key.to_string(), name);
        }
        assert_eq!(GossipKey(200).name(), None);
        assert_eq!(format!("{:?}", GossipKey(200)), "key(200)");
        assert!(!GossipKey::HEARTBEAT.is_announceable());
        assert!(GossipKey::LOAD.is_announceable());
        assert!(GossipKey(200).is_announceable());
    }

    #[test]
    fn statuses_parse_back() {
        for status in [Status::Normal, Status::Shutdown] {
            assert_eq!(Status::parse(status.as_str()), Some(status));
        }
        assert_eq!(Status::parse("LEAVING"), None);
        assert_eq!(Status::parse("shutdown"), None);
    }
}
