//! A keyspace's replication as the coordinator needs it: the strategy and
//! its factors, owned (the schema is query's; its adapter hands the
//! coordinator this).

use varve_types::consistency::Factors;

/// How a keyspace is replicated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Replication {
    /// LocalStrategy (system keyspaces): this node only.
    Local,
    /// SimpleStrategy with its factor.
    Simple(u32),
    /// NetworkTopologyStrategy: a factor per data centre.
    PerDc(Vec<(String, u32)>),
}

impl Replication {
    /// The factors the consistency levels count with.
    pub fn factors(&self) -> Factors<'_> {
        match self {
            Replication::Local => Factors::Simple(1),
            Replication::Simple(rf) => Factors::Simple(*rf),
            Replication::PerDc(dcs) => {
                Factors::PerDc(dcs.iter().map(|(dc, rf)| (dc.as_str(), *rf)).collect())
            }
        }
    }
}
