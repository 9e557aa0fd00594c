//! `nodetool repair [-pr] [-full] [keyspace [tables]]`: this node's
//! ranges of each table compared with their other replicas by Merkle
//! leaves, and what differs exchanged (docs/design/topology.md, section
//! 6). Incremental by default, as in Cassandra: only data no repair has
//! covered is compared, and what one compared is marked repaired; `-full`
//! compares everything. The Paxos state of the keyspaces' ranges
//! (`system.paxos`, once per distinct replication) is repaired first, in
//! full, as Cassandra's repair runs its Paxos repair first: afterwards
//! every replica of a range holds each commit and each proposal accepted
//! anywhere, so no later quorum can miss one.

use varve_cluster::repair::{local_ranges, repair_table, RepairKind};
use varve_cluster::streaming::StreamTable;

use crate::bootstrap::{paxos_tables, user_tables};
use crate::decommission::Decommission;

/// The repair `args` ask for: `pr` or `all`, `full` or `incremental`,
/// then a keyspace and tables (none: every user table); its report.
pub async fn run(ops: &Decommission, args: &[String]) -> Result<String, String> {
    let processor = ops.processor.upgrade().ok_or("the node is stopping")?;
    let primary = args.first().is_some_and(|a| a == "pr");
    let full = args.get(1).is_some_and(|a| a == "full");
    let keyspace = args.get(2).filter(|k| !k.is_empty());
    let tables = args.get(3..).unwrap_or_default();
    let chosen: Vec<StreamTable> = user_tables(&processor)
        .into_iter()
        .filter(|t| keyspace.is_none_or(|ks| t.name.split('.').next() == Some(ks.as_str())))
        .filter(|t| tables.is_empty() || tables.iter().any(|n| t.name.ends_with(&format!(".{n}"))))
        .collect();
    if let Some(ks) = keyspace.filter(|_| chosen.is_empty()) {
        return Err(format!("no user table in keyspace {ks} matches"));
    }
    let puller = ops.puller();
    let kind = match full {
        true => RepairKind::Full,
        false => RepairKind::Incremental {
            session: new_session(),
            started_at_ms: now_ms(),
        },
    };
    let mut out = match kind {
        RepairKind::Full => "full repair\n".to_string(),
        RepairKind::Incremental { session, .. } => {
            format!("incremental repair, session {session:032x}\n")
        }
    };
    let paxos = paxos_tables(&processor, &chosen);
    let jobs = paxos
        .iter()
        .map(|t| (t, RepairKind::Full))
        .chain(chosen.iter().map(|t| (t, kind)));
    for (t, kind) in jobs {
        let ranges = local_ranges(&ops.coordinator, t, primary);
        let done = repair_table(&ops.coordinator, &puller, t, &ranges, kind).await?;
        out.push_str(&format!(
            "{}: {} ranges repaired, {} out of sync ({} leaves), {} bytes streamed",
            t.name, done.ranges, done.ranges_out_of_sync, done.leaves_out_of_sync, done.moved.bytes
        ));
        if kind != RepairKind::Full {
            out.push_str(&format!(
                ", {} sstables marked repaired",
                done.sstables_repaired
            ));
        }
        out.push('\n');
    }
    Ok(out)
}

/// A fresh session id (random, never the full repair's 0).
fn new_session() -> u128 {
    rand::random::<u128>().max(1)
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}
