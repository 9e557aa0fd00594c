//! What a replica keeps for one partition of one table, and how each Paxos
//! message changes it (docs/design/paxos.md, section 4): pure functions, so
//! the rules are tested without storage or network.

use varve_types::data::Partition;

use super::ballot::Ballot;

/// An update under a ballot: accepted, or committed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proposal {
    pub ballot: Ballot,
    pub update: Partition,
}

/// One partition's Paxos state on a replica.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PaxosState {
    /// The newest ballot promised.
    pub promised: Option<Ballot>,
    /// The last proposal accepted.
    pub accepted: Option<Proposal>,
    /// The newest commit applied here.
    pub committed: Option<Proposal>,
}

/// A replica's answer to a prepare.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(clippy::large_enum_variant)] // a promise is the common answer
pub enum PrepareAnswer {
    /// Promised: nothing older than the ballot will be accepted here. With
    /// the accepted proposal when it is newer than the latest commit (an
    /// unfinished round), and the latest commit.
    Promise {
        accepted: Option<Proposal>,
        committed: Option<Proposal>,
    },
    /// A newer ballot was promised already.
    Reject { promised: Ballot },
}

impl PaxosState {
    /// The state that knows everything `self` and `other` know (another
    /// replica's state streamed here): the newest promise, the newest
    /// accepted proposal and the newest commit, each by ballot. Promises
    /// only move forward, so nothing this replica promised is forgotten.
    pub fn merge(self, other: PaxosState) -> PaxosState {
        let newest = |a: Option<Proposal>, b: Option<Proposal>| match (a, b) {
            (Some(a), Some(b)) => Some(if b.ballot > a.ballot { b } else { a }),
            (a, b) => a.or(b),
        };
        PaxosState {
            promised: self.promised.max(other.promised),
            accepted: newest(self.accepted, other.accepted),
            committed: newest(self.committed, other.committed),
        }
    }

    /// The state without anything older than `horizon_micros` (the table's
    /// `gc_grace_seconds` ago): an update that old may predate a tombstone
    /// compaction purged since, and must never be replayed
    /// (CASSANDRA-19617).
    pub fn without_older_than(mut self, horizon_micros: i64) -> PaxosState {
        let fresh = |b: &Ballot| b.micros() >= horizon_micros;
        self.promised = self.promised.filter(fresh);
        self.accepted = self.accepted.filter(|p| fresh(&p.ballot));
        self.committed = self.committed.filter(|p| fresh(&p.ballot));
        self
    }

    /// Promises `ballot` if it is newer than every promise made.
    pub fn prepare(&mut self, ballot: Ballot) -> PrepareAnswer {
        match self.promised {
            Some(promised) if promised >= ballot => PrepareAnswer::Reject { promised },
            _ => {
                self.promised = Some(ballot);
                let newest_commit = self.committed.as_ref().map(|c| c.ballot);
                let accepted = self
                    .accepted
                    .clone()
                    .filter(|a| newest_commit.is_none_or(|c| a.ballot > c));
                PrepareAnswer::Promise {
                    accepted,
                    committed: self.committed.clone(),
                }
            }
        }
    }

    /// Accepts `proposal` unless a newer ballot was promised; the newer
    /// promise otherwise.
    pub fn propose(&mut self, proposal: Proposal) -> Result<(), Ballot> {
        if let Some(promised) = self.promised {
            if promised > proposal.ballot {
                return Err(promised);
            }
        }
        self.promised = Some(proposal.ballot);
        self.accepted = Some(proposal);
        Ok(())
    }

    /// Records a commit (a decided update, applied to the data by the
    /// caller whatever this returns). Whether it is newer than the latest
    /// commit known here (only then is it recorded).
    pub fn commit(&mut self, proposal: Proposal) -> bool {
        if self
            .committed
            .as_ref()
            .is_some_and(|c| c.ballot >= proposal.ballot)
        {
            return false;
        }
        if self
            .accepted
            .as_ref()
            .is_some_and(|a| a.ballot <= proposal.ballot)
        {
            self.accepted = None;
        }
        self.committed = Some(proposal);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(micros: i64) -> Ballot {
        Ballot::new(micros, 0x8000_0000_0000_0001)
    }

    fn p(micros: i64) -> Proposal {
        Proposal {
            ballot: b(micros),
            update: Partition::default(),
        }
    }

    #[test]
    fn a_promise_refuses_older_and_equal_ballots() {
        let mut s = PaxosState::default();
        assert!(matches!(s.prepare(b(10)), PrepareAnswer::Promise { .. }));
        assert_eq!(s.prepare(b(10)), PrepareAnswer::Reject { promised: b(10) });
        assert_eq!(s.prepare(b(9)), PrepareAnswer::Reject { promised: b(10) });
        assert!(matches!(s.prepare(b(11)), PrepareAnswer::Promise { .. }));
        assert_eq!(s.propose(p(10)), Err(b(11)));
        assert_eq!(s.propose(p(11)), Ok(()));
    }

    #[test]
    fn a_promise_reports_an_unfinished_proposal_but_not_a_committed_one() {
        let mut s = PaxosState::default();
        s.prepare(b(1));
        s.propose(p(1)).expect("accepted");
        let PrepareAnswer::Promise { accepted, .. } = s.prepare(b(2)) else {
            panic!("promised")
        };
        assert_eq!(accepted, Some(p(1)));
        assert!(s.commit(p(1)));
        assert_eq!(s.accepted, None, "a commit settles what it covers");
        let PrepareAnswer::Promise {
            accepted,
            committed,
        } = s.prepare(b(3))
        else {
            panic!("promised")
        };
        assert_eq!((accepted, committed), (None, Some(p(1))));
        // An older commit arriving late is applied by the caller but not
        // recorded over the newer one.
        assert!(!s.commit(p(0)));
        assert_eq!(s.committed, Some(p(1)));
    }

    #[test]
    fn state_older_than_the_horizon_is_forgotten() {
        let s = PaxosState {
            promised: Some(b(50)),
            accepted: Some(p(5)),
            committed: Some(p(40)),
        };
        let kept = s.without_older_than(30);
        assert_eq!(kept.promised, Some(b(50)));
        assert_eq!(kept.accepted, None);
        assert_eq!(kept.committed, Some(p(40)));
        assert_eq!(kept.without_older_than(60), PaxosState::default());
    }
}
