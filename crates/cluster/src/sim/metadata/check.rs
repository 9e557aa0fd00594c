//! The metadata log's properties, judged on what a run observed:
//!
//! 1. *Order*: each incarnation of a node hears strictly rising epochs.
//! 2. *Agreement*: every node that heard an epoch heard the same
//!    metadata at it (a listener sees one history of the log).
//! 3. *Durability*: a proposal acknowledged at epoch `e` is the schema
//!    every node heard at `e`, and no node ends before `e`.
//! 4. *Convergence*: at the end every running node holds the same
//!    metadata, listing every node, with `min(nodes, 5)` voters.
//! 5. *Progress*: some proposal was acknowledged.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::node::Seen;
use crate::metadata::{ClusterMetadata, SchemaVersion, METADATA_VOTERS_MAX};

/// Checks `seen` and the final metadata of each running node; the
/// violations found.
pub fn check(seen: &[Seen], finals: &[(usize, Arc<ClusterMetadata>)], nodes: usize) -> Vec<String> {
    let mut violations = Vec::new();
    let mut last: BTreeMap<(usize, u64), u64> = BTreeMap::new();
    let mut at: BTreeMap<u64, (usize, Arc<ClusterMetadata>)> = BTreeMap::new();
    for s in seen {
        let Seen::Heard {
            node,
            incarnation,
            metadata,
        } = s
        else {
            continue;
        };
        let previous = last.insert((*node, *incarnation), metadata.epoch);
        if previous.is_some_and(|p| p >= metadata.epoch) && metadata.epoch > 0 {
            violations.push(format!(
                "order: n{node} (start {incarnation}) heard epoch {} after {previous:?}",
                metadata.epoch
            ));
        }
        match at.get(&metadata.epoch) {
            Some((other, first)) if first != metadata => violations.push(format!(
                "agreement: at epoch {} n{node} heard {:?} but n{other} heard {:?}",
                metadata.epoch, metadata, first
            )),
            Some(_) => {}
            None => {
                at.insert(metadata.epoch, (*node, metadata.clone()));
            }
        }
    }
    durability(seen, &at, finals, &mut violations);
    convergence(finals, nodes, &mut violations);
    if !seen.iter().any(|s| matches!(s, Seen::Acked { .. })) {
        violations.push("progress: no proposal was acknowledged".to_string());
    }
    violations
}

fn durability(
    seen: &[Seen],
    at: &BTreeMap<u64, (usize, Arc<ClusterMetadata>)>,
    finals: &[(usize, Arc<ClusterMetadata>)],
    violations: &mut Vec<String>,
) {
    for s in seen {
        let Seen::Acked {
            node,
            schema,
            epoch,
        } = s
        else {
            continue;
        };
        match at.get(epoch) {
            Some((_, m)) if m.schema_version == SchemaVersion::of(schema) => {}
            other => violations.push(format!(
                "durability: n{node}'s {schema:?} acknowledged at epoch {epoch}, heard there: {:?}",
                other.map(|(_, m)| m.schema.clone())
            )),
        }
        for (n, m) in finals {
            if m.epoch < *epoch {
                violations.push(format!(
                    "durability: n{n} ended at {} before {epoch}",
                    m.epoch
                ));
            }
        }
    }
}

fn convergence(
    finals: &[(usize, Arc<ClusterMetadata>)],
    nodes: usize,
    violations: &mut Vec<String>,
) {
    let Some((first, reference)) = finals.first() else {
        violations.push("convergence: no node running at the end".to_string());
        return;
    };
    for (n, m) in finals {
        if m != reference {
            violations.push(format!(
                "convergence: n{n} ended at epoch {} ({}), n{first} at {} ({})",
                m.epoch, m.schema_version, reference.epoch, reference.schema_version
            ));
        }
    }
    if reference.nodes.len() != nodes {
        violations.push(format!(
            "convergence: {} of {nodes} nodes listed",
            reference.nodes.len()
        ));
    }
    if reference.voters.len() != nodes.min(METADATA_VOTERS_MAX) {
        violations.push(format!(
            "convergence: {} voters of {nodes} nodes",
            reference.voters.len()
        ));
    }
}
