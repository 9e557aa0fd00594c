//! Verbs: what a frame asks for or answers (docs/format/internode.md,
//! section 5), and the frame flags.
//!
//! A [`Verb`] is its wire code, so a verb this node does not know is kept
//! as it arrived and can be answered with UNKNOWN_VERB. Outside the
//! handshake, request verbs have even codes and a response's code is its
//! request's plus one; that is how a receiver tells a response from a
//! request even for a verb it does not know.

use std::fmt;

/// A verb, by its code.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Verb(pub u16);

impl Verb {
    pub const HELLO: Verb = Verb(0x0001);
    pub const HELLO_ACK: Verb = Verb(0x0002);
    pub const HELLO_REJECT: Verb = Verb(0x0003);
    pub const ECHO: Verb = Verb(0x0010);
    pub const ECHO_RSP: Verb = Verb(0x0011);
    pub const GOSSIP: Verb = Verb(0x0012);
    pub const MUTATION: Verb = Verb(0x0020);
    pub const MUTATION_RSP: Verb = Verb(0x0021);
    pub const READ: Verb = Verb(0x0022);
    pub const READ_RSP: Verb = Verb(0x0023);
    pub const RANGE_READ: Verb = Verb(0x0024);
    pub const RANGE_READ_RSP: Verb = Verb(0x0025);
    pub const TRUNCATE: Verb = Verb(0x0026);
    pub const TRUNCATE_RSP: Verb = Verb(0x0027);
    pub const HINT: Verb = Verb(0x0030);
    pub const HINT_RSP: Verb = Verb(0x0031);
    pub const BATCH_STORE: Verb = Verb(0x0032);
    pub const BATCH_STORE_RSP: Verb = Verb(0x0033);
    pub const BATCH_REMOVE: Verb = Verb(0x0034);
    pub const RAFT_VOTE: Verb = Verb(0x0040);
    pub const RAFT_VOTE_RSP: Verb = Verb(0x0041);
    pub const RAFT_APPEND: Verb = Verb(0x0042);
    pub const RAFT_APPEND_RSP: Verb = Verb(0x0043);
    pub const RAFT_SNAPSHOT: Verb = Verb(0x0044);
    pub const RAFT_SNAPSHOT_RSP: Verb = Verb(0x0045);
    pub const METADATA_PROPOSE: Verb = Verb(0x0046);
    pub const METADATA_PROPOSE_RSP: Verb = Verb(0x0047);
    /// Paxos (docs/design/paxos.md): a prepare that reads, a proposal, a
    /// commit. Codes up to 0x005F are kept for Paxos.
    pub const PAXOS_PREPARE: Verb = Verb(0x0050);
    pub const PAXOS_PREPARE_RSP: Verb = Verb(0x0051);
    pub const PAXOS_PROPOSE: Verb = Verb(0x0052);
    pub const PAXOS_PROPOSE_RSP: Verb = Verb(0x0053);
    pub const PAXOS_COMMIT: Verb = Verb(0x0054);
    pub const PAXOS_COMMIT_RSP: Verb = Verb(0x0055);
    /// A conditional statement handed to its partition's home replica
    /// (docs/design/paxos.md, section 7.1).
    pub const PAXOS_FORWARD: Verb = Verb(0x0056);
    pub const PAXOS_FORWARD_RSP: Verb = Verb(0x0057);
    /// A proposal sent with what its decision was based on, by a
    /// coordinator that promised locally (docs/design/paxos-two-rounds.md).
    pub const PAXOS_PROPOSE_CHECKED: Verb = Verb(0x0058);
    pub const PAXOS_PROPOSE_CHECKED_RSP: Verb = Verb(0x0059);
    /// First and last codes kept for Paxos (they travel on the urgent lane).
    pub const PAXOS_FIRST: Verb = Verb(0x0050);
    pub const PAXOS_LAST: Verb = Verb(0x005F);
    /// A page of a token range's partitions, pulled by a node that gains
    /// the range (docs/design/topology.md, section 4).
    pub const STREAM_PULL: Verb = Verb(0x0060);
    pub const STREAM_PULL_RSP: Verb = Verb(0x0061);
    /// A page of a range's partitions sent by a leaving node to one that
    /// takes the range over.
    pub const STREAM_PUSH: Verb = Verb(0x0062);
    pub const STREAM_PUSH_RSP: Verb = Verb(0x0063);
    /// Asks a node to pull one range of a table from a given source (a
    /// removenode: the node gaining the range fetches it).
    pub const STREAM_REQUEST: Verb = Verb(0x0064);
    pub const STREAM_REQUEST_RSP: Verb = Verb(0x0065);
    /// A repair asks a replica for its Merkle leaves of a range.
    pub const REPAIR_VALIDATE: Verb = Verb(0x0066);
    pub const REPAIR_VALIDATE_RSP: Verb = Verb(0x0067);
    /// Whole sstables: the list a source holds for a stream, one chunk of
    /// a file, the end of the session (docs/design/topology.md, section 4).
    pub const STREAM_FILE: Verb = Verb(0x0068);
    pub const STREAM_FILE_RSP: Verb = Verb(0x0069);
    /// A leaving node offers whole sstables to the node that takes its
    /// range over, which fetches them with STREAM_FILE.
    pub const STREAM_FILE_OFFER: Verb = Verb(0x006A);
    pub const STREAM_FILE_OFFER_RSP: Verb = Verb(0x006B);
    /// An incremental repair takes a replica's unrepaired data of some
    /// ranges into its session.
    pub const REPAIR_PREPARE: Verb = Verb(0x0070);
    pub const REPAIR_PREPARE_RSP: Verb = Verb(0x0071);
    /// An incremental repair ends on a replica: its sstables repaired, or
    /// unrepaired again.
    pub const REPAIR_FINALIZE: Verb = Verb(0x0072);
    pub const REPAIR_FINALIZE_RSP: Verb = Verb(0x0073);

    /// Every defined verb with its name, in code order.
    pub const KNOWN: [(Verb, &'static str); 53] = [
        (Verb::HELLO, "HELLO"),
        (Verb::HELLO_ACK, "HELLO_ACK"),
        (Verb::HELLO_REJECT, "HELLO_REJECT"),
        (Verb::ECHO, "ECHO"),
        (Verb::ECHO_RSP, "ECHO_RSP"),
        (Verb::GOSSIP, "GOSSIP"),
        (Verb::MUTATION, "MUTATION"),
        (Verb::MUTATION_RSP, "MUTATION_RSP"),
        (Verb::READ, "READ"),
        (Verb::READ_RSP, "READ_RSP"),
        (Verb::RANGE_READ, "RANGE_READ"),
        (Verb::RANGE_READ_RSP, "RANGE_READ_RSP"),
        (Verb::TRUNCATE, "TRUNCATE"),
        (Verb::TRUNCATE_RSP, "TRUNCATE_RSP"),
        (Verb::HINT, "HINT"),
        (Verb::HINT_RSP, "HINT_RSP"),
        (Verb::BATCH_STORE, "BATCH_STORE"),
        (Verb::BATCH_STORE_RSP, "BATCH_STORE_RSP"),
        (Verb::BATCH_REMOVE, "BATCH_REMOVE"),
        (Verb::RAFT_VOTE, "RAFT_VOTE"),
        (Verb::RAFT_VOTE_RSP, "RAFT_VOTE_RSP"),
        (Verb::RAFT_APPEND, "RAFT_APPEND"),
        (Verb::RAFT_APPEND_RSP, "RAFT_APPEND_RSP"),
        (Verb::RAFT_SNAPSHOT, "RAFT_SNAPSHOT"),
        (Verb::RAFT_SNAPSHOT_RSP, "RAFT_SNAPSHOT_RSP"),
        (Verb::METADATA_PROPOSE, "METADATA_PROPOSE"),
        (Verb::METADATA_PROPOSE_RSP, "METADATA_PROPOSE_RSP"),
        (Verb::PAXOS_PREPARE, "PAXOS_PREPARE"),
        (Verb::PAXOS_PREPARE_RSP, "PAXOS_PREPARE_RSP"),
        (Verb::PAXOS_PROPOSE, "PAXOS_PROPOSE"),
        (Verb::PAXOS_PROPOSE_RSP, "PAXOS_PROPOSE_RSP"),
        (Verb::PAXOS_COMMIT, "PAXOS_COMMIT"),
        (Verb::PAXOS_COMMIT_RSP, "PAXOS_COMMIT_RSP"),
        (Verb::PAXOS_FORWARD, "PAXOS_FORWARD"),
        (Verb::PAXOS_FORWARD_RSP, "PAXOS_FORWARD_RSP"),
        (Verb::PAXOS_PROPOSE_CHECKED, "PAXOS_PROPOSE_CHECKED"),
        (Verb::PAXOS_PROPOSE_CHECKED_RSP, "PAXOS_PROPOSE_CHECKED_RSP"),
        (Verb::STREAM_PULL, "STREAM_PULL"),
        (Verb::STREAM_PULL_RSP, "STREAM_PULL_RSP"),
        (Verb::STREAM_PUSH, "STREAM_PUSH"),
        (Verb::STREAM_PUSH_RSP, "STREAM_PUSH_RSP"),
        (Verb::STREAM_REQUEST, "STREAM_REQUEST"),
        (Verb::STREAM_REQUEST_RSP, "STREAM_REQUEST_RSP"),
        (Verb::REPAIR_VALIDATE, "REPAIR_VALIDATE"),
        (Verb::REPAIR_VALIDATE_RSP, "REPAIR_VALIDATE_RSP"),
        (Verb::STREAM_FILE, "STREAM_FILE"),
        (Verb::STREAM_FILE_RSP, "STREAM_FILE_RSP"),
        (Verb::STREAM_FILE_OFFER, "STREAM_FILE_OFFER"),
        (Verb::STREAM_FILE_OFFER_RSP, "STREAM_FILE_OFFER_RSP"),
        (Verb::REPAIR_PREPARE, "REPAIR_PREPARE"),
        (Verb::REPAIR_PREPARE_RSP, "REPAIR_PREPARE_RSP"),
        (Verb::REPAIR_FINALIZE, "REPAIR_FINALIZE"),
        (Verb::REPAIR_FINALIZE_RSP, "REPAIR_FINALIZE_RSP"),
    ];

    /// The wire code.
    pub fn code(self) -> u16 {
        self.0
    }

    /// The verb's name, if this node knows it.
    pub fn name(self) -> Option<&'static str> {
        Verb::KNOWN
            .iter()
            .find(|(v, _)| *v == self)
            .map(|(_, name)| *name)
    }

    /// Whether this node knows the verb.
    pub fn is_known(self) -> bool {
        self.name().is_some()
    }

    /// HELLO, HELLO_ACK or HELLO_REJECT.
    pub fn is_handshake(self) -> bool {
        matches!(self, Verb::HELLO | Verb::HELLO_ACK | Verb::HELLO_REJECT)
    }

    /// A response verb: an odd code outside the handshake.
    pub fn is_response(self) -> bool {
        !self.is_handshake() && self.0 & 1 == 1
    }

    /// The verb that answers this request verb (code + 1).
    pub fn response(self) -> Verb {
        Verb(self.0 | 1)
    }

    /// Verbs that are sent one way and never answered.
    pub fn is_one_way(self) -> bool {
        matches!(self, Verb::GOSSIP | Verb::BATCH_REMOVE)
    }
}

impl fmt::Debug for Verb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "Verb({:#06x})", self.0),
        }
    }
}

impl fmt::Display for Verb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// The flags byte of a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct Flags(pub u8);

impl Flags {
    pub const NONE: Flags = Flags(0);
    /// A response whose payload is a failure body.
    pub const FAILURE: Flags = Flags(0x01);
    /// A request that expects no response.
    pub const ONE_WAY: Flags = Flags(0x02);
    /// Every bit this version defines; the others must be zero.
    pub const KNOWN_BITS: u8 = 0x03;

    pub fn contains(self, other: Flags) -> bool {
        self.0 & other.0 == other.0
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Bits this version does not define.
    pub fn unknown_bits(self) -> u8 {
        self.0 & !Flags::KNOWN_BITS
    }

    /// Whether a frame of `verb` may carry these (known) flags: none on
    /// the handshake, FAILURE only on responses, ONE_WAY only on requests,
    /// never both.
    pub fn allowed_on(self, verb: Verb) -> bool {
        if verb.is_handshake() {
            return self.is_empty();
        }
        let failure = self.contains(Flags::FAILURE);
        let one_way = self.contains(Flags::ONE_WAY);
        match (failure, one_way) {
            (true, true) => false,
            (true, false) => verb.is_response(),
            (false, true) => !verb.is_response(),
            (false, false) => true,
        }
    }
}

impl std::ops::BitOr for Flags {
    type Output = Flags;
    fn bitor(self, rhs: Flags) -> Flags {
        Flags(self.0 | rhs.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_verb_is_named_and_paired() {
        let codes: Vec<u16> = Verb::KNOWN.iter().map(|(v, _)| v.code()).collect();
        assert!(codes.windows(2).all(|w| w[0] < w[1]), "distinct, in order");
        for (verb, name) in Verb::KNOWN {
            assert_eq!(verb.name(), Some(name));
            if verb.is_handshake() || verb.is_one_way() {
                continue;
            }
            // Every request has its response, and the reverse.
            let (request, response) = if verb.is_response() {
                (Verb(verb.0 - 1), verb)
            } else {
                (verb, verb.response())
            };
            let request_name = request.name().unwrap_or("?");
            assert_eq!(
                response.name(),
                Some(format!("{request_name}_RSP").as_str())
            );
        }
    }

    #[test]
    fn unknown_verbs_keep_their_code() {
        let v = Verb(0x0123);
        assert!(!v.is_known());
        assert!(v.is_response());
        assert_eq!(format!("{v:?}"), "Verb(0x0123)");
        assert_eq!(Verb(0x0122).response(), v);
        assert!(!Verb(0x005A).is_known());
    }

    #[test]
    fn flags_follow_the_verb() {
        assert!(Flags::NONE.allowed_on(Verb::HELLO));
        assert!(!Flags::FAILURE.allowed_on(Verb::HELLO_REJECT));
        assert!(!Flags::ONE_WAY.allowed_on(Verb::HELLO));
        assert!(Flags::FAILURE.allowed_on(Verb::ECHO_RSP));
        assert!(!Flags::FAILURE.allowed_on(Verb::ECHO));
        assert!(Flags::ONE_WAY.allowed_on(Verb::GOSSIP));
        assert!(!Flags::ONE_WAY.allowed_on(Verb::ECHO_RSP));
        assert!(!(Flags::ONE_WAY | Flags::FAILURE).allowed_on(Verb::ECHO));
        assert_eq!(Flags(0x84).unknown_bits(), 0x84);
    }
}
