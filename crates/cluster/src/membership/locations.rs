//! Peers' data centres and racks as gossip knows them, for per-peer
//! internode TLS (`internode_encryption: dc` or `rack`,
//! [`crate::env::tls::PerPeerTls`]). A node that has not gossiped both
//! keys is not known: the caller then requires TLS.

use std::net::SocketAddr;
use std::sync::Weak;

use super::keys::GossipKey;
use super::Membership;
use crate::env::tls::PeerDirectory;
use crate::ring::Location;

/// A [`PeerDirectory`] over membership (weak: messaging, which holds the
/// directory, is itself held by membership).
pub struct GossipLocations(pub Weak<dyn Membership>);

impl PeerDirectory for GossipLocations {
    fn location(&self, addr: SocketAddr) -> Option<Location> {
        let known = |dc: Option<&str>, rack: Option<&str>| {
            let (dc, rack) = (
                dc.filter(|d| !d.is_empty())?,
                rack.filter(|r| !r.is_empty())?,
            );
            Some(Location {
                dc: dc.to_string(),
                rack: rack.to_string(),
            })
        };
        // An UP peer first (a snapshot, no copy); else any node gossip
        // knows of at that address, DOWN or not UP yet.
        let membership = self.0.upgrade()?;
        if let Some(peer) = membership.live().by_address(addr) {
            return known(peer.get(GossipKey::DC), peer.get(GossipKey::RACK));
        }
        let peers = membership.peers();
        let peer = peers.iter().find(|p| p.address == addr && !p.is_local)?;
        known(peer.get(GossipKey::DC), peer.get(GossipKey::RACK))
    }
}
