//! Lightweight transactions across replicas: Paxos in the shape of
//! Cassandra's v2 (docs/design/paxos.md). [`ballot`] makes the ballots,
//! [`state`] holds an acceptor's rules, [`store`] keeps its state durably in
//! `system.paxos`, [`replica`] answers the three verbs, [`codec`] is their
//! payloads, [`forward`] those of a statement handed to its partition's
//! home replica, [`checked`] the checks and payloads of the two-round path
//! (docs/design/paxos-two-rounds.md), and the coordinator's rounds live in
//! `crate::coordinator::paxos`.

pub mod ballot;
pub mod checked;
pub mod codec;
pub mod forward;
pub mod replica;
pub mod state;
pub mod store;
#[cfg(test)]
pub(crate) mod test_support;

pub use ballot::{Ballot, BallotClock};
pub use replica::PaxosReplica;
pub use state::{PaxosState, PrepareAnswer, Proposal};
pub use store::PaxosStore;
