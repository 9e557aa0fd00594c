//! Counting a write's answers: when a write at a consistency level has
//! succeeded, when it can no longer succeed, and what a timeout reports.
//!
//! Pure state: the coordinator creates a [`WriteAcks`] for the replicas
//! of a mutation (live and down alike), feeds it each replica's answer,
//! and answers the client when [`Progress`] says so, or with a write
//! timeout carrying [`WriteAcks::received`] and [`WriteAcks::block_for`]
//! when the time is up. The rules are Cassandra's:
//!
//! - ONE, TWO, THREE, QUORUM, ALL: any replica's acknowledgement counts;
//!   LOCAL_ONE and LOCAL_QUORUM: only those of the coordinator's data
//!   centre; EACH_QUORUM: every data centre needs its own quorum
//!   (SimpleStrategy: as QUORUM). ANY: one acknowledgement or one hint
//!   the coordinator stored.
//! - A replica's failure counts against the write only where its
//!   acknowledgement would have counted; the write has failed once
//!   `block_for + failures` exceeds the replicas whose answers count.
//! - Answers after the outcome, and a second answer from one replica,
//!   change nothing.

use varve_types::consistency::{quorum, Consistency, Factors};

/// Where a write stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// Not enough answers yet, and success is still possible.
    Waiting,
    /// The level is met: the client gets success.
    Succeeded,
    /// Too many replicas failed for the level to be met: the client gets
    /// a write failure.
    Failed,
}

/// One replica of the write.
#[derive(Debug, Clone, Copy)]
struct Replica {
    /// Whether its answers count at the level.
    counts: bool,
    /// Its data centre's entry in `per_dc` (EACH_QUORUM).
    quorum: Option<usize>,
    answered: bool,
}

/// A data centre's own quorum, for EACH_QUORUM.
#[derive(Debug, Clone, Copy)]
struct DcQuorum {
    need: u32,
    acks: u32,
}

/// The answers of one write's replicas, counted at its level.
#[derive(Debug, Clone)]
pub struct WriteAcks {
    consistency: Consistency,
    block_for: u32,
    replicas: Vec<Replica>,
    /// EACH_QUORUM over NetworkTopologyStrategy: a quorum per data centre.
    per_dc: Vec<DcQuorum>,
    received: u32,
    failures: u32,
    /// Replicas whose answers count at this level.
    candidates: u32,
    progress: Progress,
}

impl WriteAcks {
    /// Counting for a write at `consistency` to `replicas` (the data centre
    /// of each, live and down), on a keyspace with `factors`, coordinated
    /// from `local_dc`.
    pub fn new(
        consistency: Consistency,
        factors: &Factors<'_>,
        local_dc: &str,
        replicas: &[&str],
    ) -> WriteAcks {
        let dcs: &[(&str, u32)] = match (consistency, factors) {
            (Consistency::EachQuorum, Factors::PerDc(dcs)) => dcs,
            _ => &[],
        };
        let local_only = consistency.is_datacenter_local();
        let replicas: Vec<Replica> = replicas
            .iter()
            .map(|dc| Replica {
                counts: !local_only || *dc == local_dc,
                quorum: dcs.iter().position(|(d, _)| d == dc),
                answered: false,
            })
            .collect();
        WriteAcks {
            consistency,
            block_for: consistency.block_for(factors, local_dc),
            candidates: replicas.iter().filter(|r| r.counts).count() as u32,
            replicas,
            per_dc: dcs
                .iter()
                .map(|(_, rf)| DcQuorum {
                    need: quorum(*rf),
                    acks: 0,
                })
                .collect(),
            received: 0,
            failures: 0,
            progress: Progress::Waiting,
        }
    }

    /// The replicas from `first` on are pending ones (a node joining:
    /// docs/design/topology.md, section 2): each whose answers count
    /// raises what the level waits for by one (its data centre's quorum,
    /// at EACH_QUORUM).
    pub fn with_pending(mut self, first: usize) -> WriteAcks {
        if self.consistency == Consistency::Any {
            return self;
        }
        for replica in self.replicas.iter().skip(first).filter(|r| r.counts) {
            if let Some(q) = replica.quorum.and_then(|i| self.per_dc.get_mut(i)) {
                q.need += 1;
            }
            self.block_for += 1;
        }
        self
    }

    /// Acknowledgements that counted so far (what a timeout reports).
    pub fn received(&self) -> u32 {
        self.received
    }

    /// Acknowledgements the level waits for.
    pub fn block_for(&self) -> u32 {
        self.block_for
    }

    /// Failures that counted against the write so far.
    pub fn failures(&self) -> u32 {
        self.failures
    }

    /// Whether replica `index`'s answers count at this level.
    pub fn counts(&self, index: usize) -> bool {
        self.replicas.get(index).is_some_and(|r| r.counts)
    }

    /// Where the write stands.
    pub fn progress(&self) -> Progress {
        self.progress
    }

    /// Replica `index` (in the order given to [`WriteAcks::new`])
    /// acknowledged the write.
    pub fn ack(&mut self, index: usize) -> Progress {
        let Some(replica) = self.first_answer(index) else {
            return self.progress;
        };
        if !replica.counts {
            return self.progress;
        }
        self.received += 1;
        if let Some(q) = replica.quorum.and_then(|i| self.per_dc.get_mut(i)) {
            q.acks += 1;
        }
        if self.met() {
            self.progress = Progress::Succeeded;
        }
        self.progress
    }

    /// Replica `index` answered that it could not apply the write.
    pub fn fail(&mut self, index: usize) -> Progress {
        let Some(replica) = self.first_answer(index) else {
            return self.progress;
        };
        if !replica.counts {
            return self.progress;
        }
        self.failures += 1;
        if self.block_for + self.failures > self.candidates {
            self.progress = Progress::Failed;
        }
        self.progress
    }

    /// The coordinator stored a hint for a replica that did not answer:
    /// an acknowledgement at ANY, nothing at any other level.
    pub fn hint_stored(&mut self) -> Progress {
        if self.progress == Progress::Waiting && self.consistency == Consistency::Any {
            self.received += 1;
            self.progress = Progress::Succeeded;
        }
        self.progress
    }

    /// Replica `index`, if this is its first answer and the outcome is
    /// still open.
    fn first_answer(&mut self, index: usize) -> Option<Replica> {
        if self.progress != Progress::Waiting {
            return None;
        }
        let replica = self.replicas.get_mut(index)?;
        if replica.answered {
            return None;
        }
        replica.answered = true;
        Some(*replica)
    }

    fn met(&self) -> bool {
        if self.per_dc.is_empty() {
            return self.received >= self.block_for;
        }
        self.per_dc.iter().all(|q| q.acks >= q.need)
    }
}

#[cfg(test)]
mod tests;
