//! Which internode connections must be TLS (cassandra.yaml
//! `server_encryption_options.internode_encryption`): the pure decision,
//! from this node's location and what it knows of the peer's.
//!
//! - `all`: every connection;
//! - `dc`: connections to nodes of another data centre;
//! - `rack`: connections to nodes of another rack, or of another data
//!   centre (a rack name is only meaningful inside its data centre);
//! - a peer whose location this node does not know (a seed before the
//!   first gossip, a node that has not announced itself) always needs TLS:
//!   clear text is only ever chosen on positive knowledge.
//!
//! `none` never reaches this module: without internode TLS there is no
//! [`super::TlsNetwork`] or [`super::PerPeerTls`].

use std::fmt;

use crate::ring::Location;

/// `internode_encryption` when it is not `none`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InternodeEncryption {
    /// Every connection is TLS.
    All,
    /// Connections between data centres are TLS.
    Dc,
    /// Connections between racks (or data centres) are TLS.
    Rack,
}

impl InternodeEncryption {
    /// The cassandra.yaml spelling.
    pub fn name(self) -> &'static str {
        match self {
            InternodeEncryption::All => "all",
            InternodeEncryption::Dc => "dc",
            InternodeEncryption::Rack => "rack",
        }
    }

    /// The mode a cassandra.yaml value names (`none` is not a mode here).
    pub fn parse(value: &str) -> Option<InternodeEncryption> {
        match value {
            "all" => Some(InternodeEncryption::All),
            "dc" => Some(InternodeEncryption::Dc),
            "rack" => Some(InternodeEncryption::Rack),
            _ => None,
        }
    }
}

impl fmt::Display for InternodeEncryption {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether a connection between a node at `local` and a peer at `peer`
/// (`None`: not known yet) must be TLS under `mode`. The same answer
/// decides both sides: what a node opens, and what it accepts in clear.
pub fn must_encrypt(mode: InternodeEncryption, local: &Location, peer: Option<&Location>) -> bool {
    let Some(peer) = peer else {
        return true;
    };
    match mode {
        InternodeEncryption::All => true,
        InternodeEncryption::Dc => peer.dc != local.dc,
        InternodeEncryption::Rack => peer.dc != local.dc || peer.rack != local.rack,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use InternodeEncryption::{All, Dc, Rack};

    fn at(dc: &str, rack: &str) -> Location {
        Location {
            dc: dc.to_string(),
            rack: rack.to_string(),
        }
    }

    #[test]
    fn same_data_centre_and_rack_may_be_plain_except_with_all() {
        let here = at("dc1", "r1");
        assert!(!must_encrypt(Dc, &here, Some(&at("dc1", "r1"))));
        assert!(!must_encrypt(Rack, &here, Some(&at("dc1", "r1"))));
        assert!(must_encrypt(All, &here, Some(&at("dc1", "r1"))));
    }

    #[test]
    fn another_data_centre_is_always_encrypted() {
        let here = at("dc1", "r1");
        for mode in [All, Dc, Rack] {
            assert!(must_encrypt(mode, &here, Some(&at("dc2", "r1"))), "{mode}");
            assert!(must_encrypt(mode, &here, Some(&at("dc2", "r2"))), "{mode}");
        }
    }

    #[test]
    fn another_rack_of_the_same_data_centre_is_encrypted_only_with_rack_or_all() {
        let here = at("dc1", "r1");
        assert!(!must_encrypt(Dc, &here, Some(&at("dc1", "r2"))));
        assert!(must_encrypt(Rack, &here, Some(&at("dc1", "r2"))));
        assert!(must_encrypt(All, &here, Some(&at("dc1", "r2"))));
    }

    #[test]
    fn an_unknown_peer_is_encrypted_in_every_mode() {
        let here = at("dc1", "r1");
        for mode in [All, Dc, Rack] {
            assert!(must_encrypt(mode, &here, None), "{mode}");
        }
    }

    #[test]
    fn modes_parse_from_their_yaml_names() {
        for mode in [All, Dc, Rack] {
            assert_eq!(InternodeEncryption::parse(mode.name()), Some(mode));
        }
        assert_eq!(InternodeEncryption::parse("none"), None);
        assert_eq!(InternodeEncryption::parse("DC"), None);
    }
}
