//! `nodetool cleanup [keyspace [tables]]`: each table rewritten without
//! the partitions this node no longer replicates, natural or pending
//! (docs/design/topology.md, section 5). Refused while a node joins or
//! leaves, as Cassandra refuses it: the replicas are about to change.

use varve_cluster::coordinator::Topology;
use varve_cluster::streaming::StreamTable;

use crate::bootstrap::user_tables;
use crate::decommission::Decommission;

/// Runs the cleanup of `args` (a keyspace, then tables; none: every user
/// table); its report.
pub fn run(ops: &Decommission, args: &[String]) -> Result<String, String> {
    let processor = ops.processor.upgrade().ok_or("the node is stopping")?;
    let topology = ops.coordinator.topology();
    if topology.is_moving() {
        return Err("a node is joining or leaving: cleanup waits until it is done".into());
    }
    let (keyspace, tables) = match args.split_first() {
        Some((ks, tables)) => (Some(ks.as_str()), tables),
        None => (None, &[][..]),
    };
    let chosen: Vec<StreamTable> = user_tables(&processor)
        .into_iter()
        .filter(|t| keyspace.is_none_or(|ks| t.name.split('.').next() == Some(ks)))
        .filter(|t| tables.is_empty() || tables.iter().any(|n| t.name.ends_with(&format!(".{n}"))))
        .collect();
    if let Some(ks) = keyspace.filter(|_| chosen.is_empty()) {
        return Err(format!("no user table in keyspace {ks} matches"));
    }
    let engine = processor.engine();
    let now = i32::try_from(varve_types::time::now_seconds()).unwrap_or(i32::MAX);
    let mut out = String::new();
    for t in &chosen {
        let keep = |token: i64| replicates_here(&topology, t, token);
        let done = engine
            .cleanup(t.table, &keep, now)
            .map_err(|e| format!("cleanup of {} failed: {e}", t.name))?;
        out.push_str(&format!(
            "{}: {} sstables rewritten, {} bytes to {} bytes\n",
            t.name,
            done.rewritten.len(),
            done.bytes_before,
            done.bytes_after
        ));
    }
    Ok(out)
}

/// Whether this node replicates `token` of `table`.
fn replicates_here(topology: &Topology, table: &StreamTable, token: i64) -> bool {
    topology
        .replicas(token, &table.replication)
        .into_iter()
        .chain(topology.pending(token, &table.replication))
        .any(|n| topology.host(n).is_local)
}
