//! The consistency level a statement asked for, checked before it touches
//! any data, as a coordinator checks it: levels a statement kind cannot
//! use are InvalidRequest (Cassandra's messages), and a level that needs
//! more live replicas than there are is Unavailable. This node is the one
//! replica of every token of every keyspace it holds, so a QUORUM write to
//! an RF=3 keyspace is refused (required 2, alive 1) rather than
//! acknowledged by one node. System keyspaces are node-local and not
//! checked. docs/design/cluster.md, "Levels".

use crate::context::Ctx;
use crate::error::{QueryError, Result};
use crate::processor::Processor;
use varve_schema::options::{ReplicationParams, ReplicationStrategy};
use varve_schema::Table;
use varve_types::consistency::{Consistency, Factors, LiveReplicas};

/// A plain read at the statement's level (SERIAL ones go through Paxos,
/// which needs a quorum of the replicas).
pub fn check_read(p: &Processor, ctx: &Ctx, table: &Table) -> Result<()> {
    let cl = level(ctx.opts.consistency)?;
    if cl == Consistency::Any {
        return Err(QueryError::Invalid(
            "ANY ConsistencyLevel is only supported for writes".into(),
        ));
    }
    if cl.is_serial() && !table.is_virtual {
        // A Paxos read: like a conditional write.
        if let Some(why) = p.data_path().lwt_refusal() {
            return Err(QueryError::Invalid(why));
        }
        return assure_live(p, ctx, table, cl);
    }
    assure_live(p, ctx, table, cl)
}

/// A write without a condition.
pub fn check_write(p: &Processor, ctx: &Ctx, table: &Table) -> Result<()> {
    let cl = level(ctx.opts.consistency)?;
    if cl.is_serial() {
        return Err(QueryError::Invalid(
            "You must use conditional updates for serializable writes".into(),
        ));
    }
    assure_live(p, ctx, table, cl)
}

/// A conditional write: its Paxos round at the serial level (SERIAL when
/// the client named none), its commit at the statement's level.
pub fn check_cas(p: &Processor, ctx: &Ctx, table: &Table) -> Result<()> {
    let serial = match ctx.opts.serial_consistency {
        Some(code) => level(code)?,
        None => Consistency::Serial,
    };
    if !serial.is_serial() {
        return Err(QueryError::Invalid(
            "Invalid consistency for conditional update. Must be one of SERIAL or LOCAL_SERIAL"
                .into(),
        ));
    }
    if let Some(why) = p.data_path().lwt_refusal() {
        return Err(QueryError::Invalid(why));
    }
    let commit = level(ctx.opts.consistency)?;
    if commit.is_serial() {
        return Err(QueryError::Invalid(format!(
            "{commit} is not supported as conditional update commit consistency. Use ANY if you mean \"make sure it is accepted but I don't care how many replicas commit it for non-SERIAL reads\""
        )));
    }
    if commit == Consistency::EachQuorum {
        require_network_topology(ctx, table, commit)?;
    }
    // Both levels are the data path's to check when it checks replicas
    // (the Paxos round's participants, the commit's replicas).
    assure_live(p, ctx, table, serial)?;
    assure_live(p, ctx, table, commit)
}

/// Cassandra's rule for EACH_QUORUM as a conditional update's commit
/// level: the keyspace must count replicas per data centre.
fn require_network_topology(ctx: &Ctx, table: &Table, cl: Consistency) -> Result<()> {
    let Some(ks) = ctx.schema.keyspace(&table.keyspace) else {
        return Ok(());
    };
    let class = match ks.replication.strategy {
        ReplicationStrategy::NetworkTopology => return Ok(()),
        ReplicationStrategy::Simple => "SimpleStrategy",
        ReplicationStrategy::Local => "LocalStrategy",
    };
    Err(QueryError::Invalid(format!(
        "consistency level {cl} not compatible with replication strategy (org.apache.cassandra.locator.{class})"
    )))
}

/// The level a protocol code names.
pub fn level(code: u16) -> Result<Consistency> {
    Consistency::from_code(code)
        .ok_or_else(|| QueryError::Invalid(format!("unknown consistency level 0x{code:04x}")))
}

/// Unavailable when the live replicas are not enough for `cl`: left to
/// the data path when it checks replicas itself (a cluster's
/// coordinator), else checked with this node as the only live replica. A
/// serial level is checked as the Paxos round checks its participants, and
/// named as Cassandra names it there: SERIAL as QUORUM, LOCAL_SERIAL as
/// LOCAL_QUORUM (same counts).
fn assure_live(p: &Processor, ctx: &Ctx, table: &Table, cl: Consistency) -> Result<()> {
    if p.data_path().checks_replicas() {
        return Ok(());
    }
    assure_live_here(p, ctx, table, cl)
}

/// [`assure_live`] with this node as the only replica.
fn assure_live_here(p: &Processor, ctx: &Ctx, table: &Table, cl: Consistency) -> Result<()> {
    let cl = match cl {
        Consistency::Serial => Consistency::Quorum,
        Consistency::LocalSerial => Consistency::LocalQuorum,
        other => other,
    };
    if table.is_virtual {
        return Ok(());
    }
    let Some(ks) = ctx.schema.keyspace(&table.keyspace) else {
        return Ok(());
    };
    if ks.is_system {
        return Ok(());
    }
    let local_dc = p.node.data_center.as_str();
    let factors = factors(&ks.replication);
    // One node: it holds every token, so it is a replica wherever its data
    // centre has a factor.
    let here = [(local_dc, u32::from(factors.in_dc(local_dc) > 0))];
    let live = LiveReplicas { per_dc: &here };
    cl.assure_live(&factors, local_dc, &live)
        .map_err(QueryError::Unavailable)
}

/// The configured factors of a keyspace's replication.
pub fn factors(r: &ReplicationParams) -> Factors<'_> {
    match r.strategy {
        ReplicationStrategy::Local => Factors::Simple(1),
        ReplicationStrategy::Simple => Factors::Simple(r.replication_factor("")),
        ReplicationStrategy::NetworkTopology => Factors::PerDc(
            r.options
                .keys()
                .map(|dc| (dc.as_str(), r.replication_factor(dc)))
                .collect(),
        ),
    }
}
