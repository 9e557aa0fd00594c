//! `nodetool getendpoints KEYSPACE TABLE KEY`: the nodes that replicate
//! KEY's partition, one address per line, as Cassandra prints them (the
//! natural replicas in the order the replication strategy picks them; a
//! node about to take the range over while another joins or leaves is not
//! listed, as in Cassandra).
//!
//! KEY is plain text read by each partition key column's type
//! ([`varve_types::literal::from_text`]: `42`, `alice`, `0x00ff`, a uuid).
//! A partition key of several columns is given as its components joined
//! by `:`, a `:` inside a component written `\:`, as Cassandra reads it.

use varve_types::{codec, literal, token};

use crate::cluster_path::replication;
use crate::decommission::Decommission;

/// The replicas of `args` (keyspace, table, key), one address per line.
pub fn run(ops: &Decommission, args: &[String]) -> Result<String, String> {
    let [keyspace, table, key] = args else {
        return Err("usage: getendpoints <keyspace> <table> <key>".into());
    };
    let processor = ops.processor.upgrade().ok_or("the node is stopping")?;
    let schema = processor.schema();
    let ks = schema
        .keyspaces
        .get(keyspace)
        .ok_or_else(|| format!("Keyspace {keyspace} does not exist"))?;
    let def = ks
        .tables
        .get(table)
        .ok_or_else(|| format!("Table {table} does not exist in keyspace {keyspace}"))?;
    let components = key_components(key);
    if components.len() != def.partition_key_len() {
        return Err(format!(
            "the partition key of {keyspace}.{table} has {} component(s), the key given {}",
            def.partition_key_len(),
            components.len()
        ));
    }
    let mut parts = Vec::with_capacity(components.len());
    for (column, text) in def.partition_key().zip(&components) {
        let value = literal::from_text(&column.ty, text).map_err(|e| {
            format!(
                "key component {} ({}): {e}",
                column.name,
                column.ty.cql_name()
            )
        })?;
        parts.push(codec::serialize(&value));
    }
    let token = token::murmur3_token(&token::partition_key(&parts));
    let topology = ops.coordinator.topology();
    let replicas = topology.replicas(token, &replication(&ks.replication));
    Ok(replicas
        .into_iter()
        .map(|n| format!("{}\n", topology.host(n).address.ip()))
        .collect())
}

/// KEY split at each `:` that is not escaped, `\:` turned back into `:`.
fn key_components(key: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut chars = key.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&':') => {
                chars.next();
                out.last_mut().expect("never empty").push(':');
            }
            ':' => out.push(String::new()),
            c => out.last_mut().expect("never empty").push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_splits_at_unescaped_colons() {
        assert_eq!(key_components("alice"), vec!["alice"]);
        assert_eq!(key_components("1:b"), vec!["1", "b"]);
        assert_eq!(key_components(r"a\:b:c"), vec!["a:b", "c"]);
        assert_eq!(key_components(""), vec![""]);
    }
}
