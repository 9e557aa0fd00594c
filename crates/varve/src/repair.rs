//! `nodetool repair [-pr] [-full] [keyspace [tables]]`: this node's
//! ranges of each table compared with their other replicas by Merkle
//! leaves, and what differs exchanged (docs/design/topology.md, section
//! 6). Every repair is a full one for now: incremental repair (sstables
//! marked repaired) is not built, and the output says so when it was not
//! asked for with `-full`.

use varve_cluster::repair::{local_ranges, repair_table};
use varve_cluster::streaming::StreamTable;

use crate::bootstrap::user_tables;
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
    let mut out = String::new();
    if !full {
        out.push_str("incremental repair is not built yet: running a full repair\n");
    }
    for t in &chosen {
        let ranges = local_ranges(&ops.coordinator, t, primary);
        let done = repair_table(&ops.coordinator, &puller, t, &ranges).await?;
        out.push_str(&format!(
            "{}: {} ranges repaired, {} out of sync ({} leaves), {} bytes streamed\n",
            t.name, done.ranges, done.ranges_out_of_sync, done.leaves_out_of_sync, done.moved.bytes
        ));
    }
    Ok(out)
}
