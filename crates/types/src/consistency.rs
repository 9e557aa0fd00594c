//! Consistency levels: their wire codes and names, how many replica
//! answers each one waits for, and whether enough replicas are alive to try
//! (Cassandra's rules: block_for comes from the keyspace's configured
//! factors, never from how many nodes exist, so a QUORUM write to an RF=3
//! keyspace on a single node is Unavailable with required 2, alive 1).
//! docs/design/cluster.md, "Levels", has the table.

/// A consistency level, as the native protocol's `[consistency]` carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Consistency {
    Any,
    One,
    Two,
    Three,
    Quorum,
    All,
    LocalQuorum,
    EachQuorum,
    Serial,
    LocalSerial,
    LocalOne,
}

impl Consistency {
    /// Every level, in code order.
    pub const ALL_LEVELS: [Consistency; 11] = [
        Consistency::Any,
        Consistency::One,
        Consistency::Two,
        Consistency::Three,
        Consistency::Quorum,
        Consistency::All,
        Consistency::LocalQuorum,
        Consistency::EachQuorum,
        Consistency::Serial,
        Consistency::LocalSerial,
        Consistency::LocalOne,
    ];

    /// The wire code.
    pub fn code(self) -> u16 {
        match self {
            Consistency::Any => 0x0000,
            Consistency::One => 0x0001,
            Consistency::Two => 0x0002,
            Consistency::Three => 0x0003,
            Consistency::Quorum => 0x0004,
            Consistency::All => 0x0005,
            Consistency::LocalQuorum => 0x0006,
            Consistency::EachQuorum => 0x0007,
            Consistency::Serial => 0x0008,
            Consistency::LocalSerial => 0x0009,
            Consistency::LocalOne => 0x000A,
        }
    }

    /// The level of a wire code; `None` for a code no level has.
    pub fn from_code(code: u16) -> Option<Consistency> {
        Consistency::ALL_LEVELS.get(usize::from(code)).copied()
    }

    /// The name Cassandra prints (`LOCAL_QUORUM`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Consistency::Any => "ANY",
            Consistency::One => "ONE",
            Consistency::Two => "TWO",
            Consistency::Three => "THREE",
            Consistency::Quorum => "QUORUM",
            Consistency::All => "ALL",
            Consistency::LocalQuorum => "LOCAL_QUORUM",
            Consistency::EachQuorum => "EACH_QUORUM",
            Consistency::Serial => "SERIAL",
            Consistency::LocalSerial => "LOCAL_SERIAL",
            Consistency::LocalOne => "LOCAL_ONE",
        }
    }

    /// True for SERIAL and LOCAL_SERIAL.
    pub fn is_serial(self) -> bool {
        matches!(self, Consistency::Serial | Consistency::LocalSerial)
    }

    /// Whether only replicas of the coordinator's data centre count.
    pub fn is_datacenter_local(self) -> bool {
        matches!(
            self,
            Consistency::LocalOne | Consistency::LocalQuorum | Consistency::LocalSerial
        )
    }

    /// How many replica answers the level waits for, from the keyspace's
    /// configured factors; `local_dc` is the coordinator's data centre.
    pub fn block_for(self, factors: &Factors<'_>, local_dc: &str) -> u32 {
        match self {
            Consistency::Any | Consistency::One | Consistency::LocalOne => 1,
            Consistency::Two => 2,
            Consistency::Three => 3,
            Consistency::Quorum | Consistency::Serial => quorum(factors.total()),
            Consistency::All => factors.total(),
            Consistency::LocalQuorum | Consistency::LocalSerial => quorum(factors.in_dc(local_dc)),
            Consistency::EachQuorum => match factors {
                Factors::Simple(rf) => quorum(*rf),
                Factors::PerDc(dcs) => dcs.iter().map(|(_, rf)| quorum(*rf)).sum(),
            },
        }
    }

    /// Whether `live` replicas are enough to try at this level: Unavailable
    /// (before anything is sent) when they are not. ANY is always tried (a
    /// hint counts as its answer).
    pub fn assure_live(
        self,
        factors: &Factors<'_>,
        local_dc: &str,
        live: &LiveReplicas<'_>,
    ) -> Result<(), Unavailable> {
        self.assure_live_with_pending(factors, local_dc, live, &LiveReplicas { per_dc: &[] })
    }

    /// [`Consistency::assure_live`] for a write that also goes to
    /// `pending` replicas (a node joining: docs/design/topology.md,
    /// section 2): the level needs one more acknowledgement for each
    /// pending replica where its answers count, and `live` counts the
    /// live pending replicas with the natural ones.
    pub fn assure_live_with_pending(
        self,
        factors: &Factors<'_>,
        local_dc: &str,
        live: &LiveReplicas<'_>,
        pending: &LiveReplicas<'_>,
    ) -> Result<(), Unavailable> {
        let required = self.block_for(factors, local_dc) + self.pending_for(pending, local_dc);
        let short = |alive: u32| {
            (alive < required).then_some(Unavailable {
                consistency: self,
                required,
                alive,
                dc: None,
            })
        };
        let missing = match self {
            Consistency::Any => None,
            Consistency::LocalOne | Consistency::LocalQuorum | Consistency::LocalSerial => {
                short(live.in_dc(local_dc))
            }
            Consistency::EachQuorum => match factors {
                Factors::Simple(_) => short(live.total()),
                Factors::PerDc(dcs) => dcs.iter().find_map(|(dc, rf)| {
                    let required = quorum(*rf) + pending.in_dc(dc);
                    let alive = live.in_dc(dc);
                    (alive < required).then(|| Unavailable {
                        consistency: self,
                        required,
                        alive,
                        dc: Some(dc.to_string()),
                    })
                }),
            },
            _ => short(live.total()),
        };
        missing.map_or(Ok(()), Err)
    }

    /// The extra acknowledgements `pending` replicas add to the level
    /// (over all data centres; EACH_QUORUM per data centre is the
    /// caller's).
    pub fn pending_for(self, pending: &LiveReplicas<'_>, local_dc: &str) -> u32 {
        match self {
            Consistency::Any => 0,
            Consistency::LocalOne | Consistency::LocalQuorum | Consistency::LocalSerial => {
                pending.in_dc(local_dc)
            }
            _ => pending.total(),
        }
    }
}

impl std::fmt::Display for Consistency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A majority of `n`.
pub fn quorum(n: u32) -> u32 {
    n / 2 + 1
}

/// A keyspace's configured replication factors (data centre names borrowed
/// from its definition: checking a level allocates nothing for
/// SimpleStrategy).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Factors<'a> {
    /// One factor over the whole ring (SimpleStrategy; LocalStrategy is 1).
    Simple(u32),
    /// A factor per data centre (NetworkTopologyStrategy), including data
    /// centres that have no node.
    PerDc(Vec<(&'a str, u32)>),
}

impl Factors<'_> {
    /// Replicas over all data centres.
    pub fn total(&self) -> u32 {
        match self {
            Factors::Simple(rf) => *rf,
            Factors::PerDc(dcs) => dcs.iter().map(|(_, rf)| rf).sum(),
        }
    }

    /// Replicas in data centre `dc` (SimpleStrategy: its one factor).
    pub fn in_dc(&self, dc: &str) -> u32 {
        match self {
            Factors::Simple(rf) => *rf,
            Factors::PerDc(dcs) => dcs.iter().find(|(d, _)| *d == dc).map_or(0, |(_, rf)| *rf),
        }
    }
}

/// The replicas of one token that are up, counted per data centre.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LiveReplicas<'a> {
    pub per_dc: &'a [(&'a str, u32)],
}

impl LiveReplicas<'_> {
    pub fn total(&self) -> u32 {
        self.per_dc.iter().map(|(_, n)| n).sum()
    }

    pub fn in_dc(&self, dc: &str) -> u32 {
        self.per_dc
            .iter()
            .find(|(d, _)| *d == dc)
            .map_or(0, |(_, n)| *n)
    }
}

/// Too few replicas are up for a level (the native protocol's Unavailable,
/// 0x1000).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unavailable {
    pub consistency: Consistency,
    pub required: u32,
    pub alive: u32,
    /// The data centre that fell short, for EACH_QUORUM.
    pub dc: Option<String>,
}

impl std::fmt::Display for Unavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Cannot achieve consistency level {}", self.consistency)?;
        if let Some(dc) = &self.dc {
            write!(f, " in DC {dc}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nts<'a>(dcs: &[(&'a str, u32)]) -> Factors<'a> {
        Factors::PerDc(dcs.to_vec())
    }

    fn live<'a>(dcs: &'a [(&'a str, u32)]) -> LiveReplicas<'a> {
        LiveReplicas { per_dc: dcs }
    }

    #[test]
    fn pending_replicas_raise_what_a_write_needs() {
        use Consistency::*;
        let simple3 = Factors::Simple(3);
        let one_pending = live(&[("dc1", 1)]);
        // Three natural replicas up and the pending one: QUORUM needs 3.
        assert!(Quorum
            .assure_live_with_pending(&simple3, "dc1", &live(&[("dc1", 4)]), &one_pending)
            .is_ok());
        // One natural replica down: 2 + 1 up of the 3 needed is fine...
        assert!(Quorum
            .assure_live_with_pending(&simple3, "dc1", &live(&[("dc1", 3)]), &one_pending)
            .is_ok());
        // ... two down is not, though 2 would be a quorum without it.
        let short = Quorum
            .assure_live_with_pending(&simple3, "dc1", &live(&[("dc1", 2)]), &one_pending)
            .unwrap_err();
        assert_eq!((short.required, short.alive), (3, 2));
        assert!(Quorum
            .assure_live(&simple3, "dc1", &live(&[("dc1", 2)]))
            .is_ok());
        // Local levels count the local data centre's pending replicas only.
        let two_dcs = nts(&[("dc1", 3), ("dc2", 3)]);
        let remote_pending = live(&[("dc2", 1)]);
        assert_eq!(LocalQuorum.pending_for(&remote_pending, "dc1"), 0);
        assert_eq!(Quorum.pending_for(&remote_pending, "dc1"), 1);
        assert_eq!(Any.pending_for(&remote_pending, "dc1"), 0);
        // EACH_QUORUM: the pending replica's data centre needs one more.
        let up = live(&[("dc1", 3), ("dc2", 2)]);
        let each = EachQuorum
            .assure_live_with_pending(&two_dcs, "dc1", &up, &remote_pending)
            .unwrap_err();
        assert_eq!(
            (each.required, each.alive, each.dc.as_deref()),
            (3, 2, Some("dc2"))
        );
    }

    #[test]
    fn codes_round_trip_and_unknown_is_none() {
        for level in Consistency::ALL_LEVELS {
            assert_eq!(Consistency::from_code(level.code()), Some(level));
        }
        assert_eq!(Consistency::from_code(0x000B), None);
    }

    #[test]
    fn block_for_follows_the_configured_factors() {
        use Consistency::*;
        let simple3 = Factors::Simple(3);
        let two_dcs = nts(&[("dc1", 3), ("dc2", 5)]);
        let cases = [
            (One, &simple3, 1),
            (Two, &simple3, 2),
            (Three, &simple3, 3),
            (Quorum, &simple3, 2),
            (All, &simple3, 3),
            (LocalQuorum, &simple3, 2),
            (EachQuorum, &simple3, 2),
            (Serial, &simple3, 2),
            (Quorum, &two_dcs, 5),
            (All, &two_dcs, 8),
            (LocalQuorum, &two_dcs, 2),
            (LocalSerial, &two_dcs, 2),
            (EachQuorum, &two_dcs, 2 + 3),
            (LocalOne, &two_dcs, 1),
            (Any, &two_dcs, 1),
        ];
        for (cl, f, want) in cases {
            assert_eq!(cl.block_for(f, "dc1"), want, "{cl} over {f:?}");
        }
        // Quorum of every factor from 1 to 6: 1, 2, 2, 3, 3, 4.
        let quorums: Vec<u32> = (1..=6).map(quorum).collect();
        assert_eq!(quorums, [1, 2, 2, 3, 3, 4]);
    }

    #[test]
    fn one_live_node_of_an_rf3_keyspace_serves_one_but_not_quorum() {
        let f = Factors::Simple(3);
        let one = live(&[("datacenter1", 1)]);
        for ok in [Consistency::Any, Consistency::One, Consistency::LocalOne] {
            assert_eq!(ok.assure_live(&f, "datacenter1", &one), Ok(()), "{ok}");
        }
        let err = Consistency::Quorum
            .assure_live(&f, "datacenter1", &one)
            .expect_err("quorum of 3 with one alive");
        assert_eq!((err.required, err.alive), (2, 1));
        assert_eq!(err.to_string(), "Cannot achieve consistency level QUORUM");
        let err = Consistency::All
            .assure_live(&f, "datacenter1", &one)
            .expect_err("all of 3");
        assert_eq!((err.required, err.alive), (3, 1));
        let none = LiveReplicas::default();
        assert_eq!(
            Consistency::Any.assure_live(&f, "datacenter1", &none),
            Ok(()),
            "ANY is stored as a hint when no replica is up"
        );
    }

    #[test]
    fn the_live_count_is_exact_at_block_for_and_one_below() {
        let f = Factors::Simple(5);
        for cl in [Consistency::Quorum, Consistency::All, Consistency::Three] {
            let need = cl.block_for(&f, "dc1");
            assert!(cl.assure_live(&f, "dc1", &live(&[("dc1", need)])).is_ok());
            let err = cl
                .assure_live(&f, "dc1", &live(&[("dc1", need - 1)]))
                .expect_err("one short");
            assert_eq!((err.required, err.alive), (need, need - 1), "{cl}");
        }
    }

    #[test]
    fn local_levels_count_the_local_data_centre_only() {
        let f = nts(&[("dc1", 3), ("dc2", 3)]);
        let remote_only = live(&[("dc2", 3)]);
        let err = Consistency::LocalQuorum
            .assure_live(&f, "dc1", &remote_only)
            .expect_err("no local replica");
        assert_eq!((err.required, err.alive), (2, 0));
        assert!(Consistency::LocalOne
            .assure_live(&f, "dc1", &remote_only)
            .is_err());
        assert!(Consistency::Quorum
            .assure_live(&f, "dc1", &live(&[("dc2", 3), ("dc1", 1)]))
            .is_ok());
    }

    #[test]
    fn each_quorum_names_the_data_centre_that_falls_short() {
        let f = nts(&[("dc1", 3), ("dc2", 3)]);
        let err = Consistency::EachQuorum
            .assure_live(&f, "dc1", &live(&[("dc1", 3), ("dc2", 1)]))
            .expect_err("dc2 has one of three");
        assert_eq!(err.dc.as_deref(), Some("dc2"));
        assert_eq!((err.required, err.alive), (2, 1));
        assert_eq!(
            err.to_string(),
            "Cannot achieve consistency level EACH_QUORUM in DC dc2"
        );
        assert!(Consistency::EachQuorum
            .assure_live(&f, "dc1", &live(&[("dc1", 2), ("dc2", 2)]))
            .is_ok());
    }
}
