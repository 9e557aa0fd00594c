//! The cluster: where each partition's replicas are, messaging between
//! nodes, membership, and (to come, in the order of
//! docs/design/cluster.md, section 13) the metadata log, the coordinator,
//! hints and the batchlog.
//!
//! Built so far: [`ring`], the token ring, replica placement of
//! SimpleStrategy and NetworkTopologyStrategy, and a joining node's token
//! allocation, as pure functions of the ring (cluster.md, "Placement"), so they can be tested on thousands of
//! rings without a node; [`net`], internode messaging (the pure frame and
//! handshake codec of docs/format/internode.md, and the `Messaging`
//! service over it); [`membership`], gossip and failure detection over
//! that messaging (which peers are UP, and what each says about itself);
//! and [`env`](mod@env), the one owner of the node's sockets, timers and
//! randomness, so a simulation can stand in for all three. The
//! simulation itself (`sim`, test-only) runs several nodes on turmoil's
//! network and clock under a seeded nemesis and checks their histories.
//!
//! The coordinator ([`coordinator`]) stores and reads partitions on their
//! replicas at a consistency level, through the data verbs ([`verbs`])
//! that every node answers over its storage engine.
//!
//! This crate never sees CQL text and never depends on the query layer;
//! storage never sees the network.

pub mod batchlog;
pub mod coordinator;
pub mod env;
pub mod failpoint;
pub mod hints;
pub mod membership;
pub mod metadata;
pub mod net;
pub mod paxos;
pub mod repair;
pub mod ring;
#[cfg(test)]
pub mod sim;
pub mod streaming;
pub mod verbs;
