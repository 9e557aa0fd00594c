//! The node's identity, kept in the data directory so it survives restarts:
//! `host_id` (a random v4 UUID, text form) and `tokens` (one token a line,
//! `num_tokens` of them spread evenly around the Murmur3 ring from a random
//! start). Files are written to a temporary name and renamed into place.

use std::net::IpAddr;
use std::path::Path;

use anyhow::{bail, Context};
use rand::Rng;
use varve_query::NodeInfo;

use crate::config::Settings;

/// File holding the host id.
pub const HOST_ID_FILE: &str = "host_id";
/// File holding the tokens.
pub const TOKENS_FILE: &str = "tokens";
/// What drivers see as the Cassandra release (they pick features by it).
pub const RELEASE_VERSION: &str = "5.0.4";
/// The CQL version we speak.
pub const CQL_VERSION: &str = "3.4.7";
/// Highest native protocol version, as system.local shows it.
pub const NATIVE_PROTOCOL_VERSION: &str = "5";

/// Builds the facts system.local shows, loading or creating the identity.
pub fn node_info(settings: &Settings, native_port: u16) -> anyhow::Result<NodeInfo> {
    let host_id = load_or_create_host_id(&settings.data_dir)?;
    let tokens = tokens_at_start(&settings.data_dir, settings.num_tokens)?;
    Ok(NodeInfo {
        cluster_name: settings.cluster_name.clone(),
        listen_address: settings.listen_address,
        listen_port: settings.topology.storage_port,
        rpc_address: broadcast_rpc(settings.rpc_address, settings.listen_address),
        native_port,
        data_center: settings.topology.dc.clone(),
        rack: settings.topology.rack.clone(),
        tokens,
        host_id,
        release_version: RELEASE_VERSION.to_string(),
        cql_version: CQL_VERSION.to_string(),
        native_protocol_version: NATIVE_PROTOCOL_VERSION.to_string(),
    })
}

/// A node bound to 0.0.0.0 must still tell drivers a reachable address.
fn broadcast_rpc(rpc: IpAddr, listen: IpAddr) -> IpAddr {
    if rpc.is_unspecified() && !listen.is_unspecified() {
        listen
    } else {
        rpc
    }
}

fn write_atomically(path: &Path, text: &str) -> anyhow::Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path)
        .with_context(|| format!("renaming {} into place", tmp.display()))?;
    Ok(())
}

fn load_or_create_host_id(dir: &Path) -> anyhow::Result<[u8; 16]> {
    let path = dir.join(HOST_ID_FILE);
    if path.exists() {
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        return parse_uuid(text.trim()).with_context(|| format!("in {}", path.display()));
    }
    let id = random_v4_uuid(&mut rand::thread_rng());
    write_atomically(&path, &format!("{}\n", format_uuid(&id)))?;
    Ok(id)
}

/// A random (version 4, IETF variant) UUID.
pub fn random_v4_uuid(rng: &mut impl Rng) -> [u8; 16] {
    let mut id: [u8; 16] = rng.gen();
    id[6] = (id[6] & 0x0f) | 0x40;
    id[8] = (id[8] & 0x3f) | 0x80;
    id
}

/// The 8-4-4-4-12 text form.
pub fn format_uuid(id: &[u8; 16]) -> String {
    let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// Parses the 8-4-4-4-12 text form.
pub fn parse_uuid(text: &str) -> anyhow::Result<[u8; 16]> {
    let hex: String = text.chars().filter(|c| *c != '-').collect();
    if hex.len() != 32 || text.len() != 36 {
        bail!("'{text}' is not a UUID");
    }
    let mut id = [0u8; 16];
    for (i, byte) in id.iter_mut().enumerate() {
        let pair = hex.get(2 * i..2 * i + 2).context("not a UUID")?;
        *byte = u8::from_str_radix(pair, 16).with_context(|| format!("'{text}' is not a UUID"))?;
    }
    Ok(id)
}

/// The tokens this node saved when it joined its cluster, if it did.
pub fn saved_tokens(dir: &Path) -> anyhow::Result<Option<Vec<i64>>> {
    let path = dir.join(TOKENS_FILE);
    if !path.exists() {
        return Ok(None);
    }
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let tokens = parse_tokens(&text).with_context(|| format!("in {}", path.display()))?;
    Ok(Some(tokens))
}

/// Keeps the tokens the cluster metadata gave this node.
pub fn save_tokens(dir: &Path, tokens: &[i64]) -> anyhow::Result<()> {
    let text: String = tokens.iter().map(|t| format!("{t}\n")).collect();
    write_atomically(&dir.join(TOKENS_FILE), &text)
}

/// The saved tokens, or until the node joined (its first start) evenly
/// spaced ones from a random start, which are not saved: the metadata
/// log's token allocator chooses the tokens a new node keeps
/// (`crate::cluster_metadata`).
fn tokens_at_start(dir: &Path, num_tokens: usize) -> anyhow::Result<Vec<i64>> {
    if let Some(tokens) = saved_tokens(dir)? {
        if tokens.len() != num_tokens {
            tracing::warn!(
                "{} holds {} tokens but num_tokens is {num_tokens}; keeping the saved tokens",
                dir.join(TOKENS_FILE).display(),
                tokens.len()
            );
        }
        return Ok(tokens);
    }
    Ok(even_tokens(rand::thread_rng().gen(), num_tokens))
}

fn parse_tokens(text: &str) -> anyhow::Result<Vec<i64>> {
    let tokens = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(|l| {
            l.parse::<i64>()
                .with_context(|| format!("'{l}' is not a token"))
        })
        .collect::<anyhow::Result<Vec<i64>>>()?;
    if tokens.is_empty() {
        bail!("no tokens");
    }
    Ok(tokens)
}

/// `n` tokens spaced 2^64/n apart starting at `start`, sorted, never
/// `i64::MIN` (the Murmur3 partitioner's minimum token, which no node owns).
pub fn even_tokens(start: i64, n: usize) -> Vec<i64> {
    let n = n.max(1) as i128;
    let step = (1i128 << 64) / n;
    let mut tokens: Vec<i64> = (0..n)
        .map(|i| {
            let t = i128::from(start) + i * step;
            let wrapped = (t - i128::from(i64::MIN)).rem_euclid(1i128 << 64) + i128::from(i64::MIN);
            let t = wrapped as i64;
            if t == i64::MIN {
                t + 1
            } else {
                t
            }
        })
        .collect();
    tokens.sort_unstable();
    tokens.dedup();
    tokens
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_text_round_trips_and_is_v4() {
        let id = random_v4_uuid(&mut rand::thread_rng());
        assert_eq!(id[6] >> 4, 4);
        assert_eq!(id[8] >> 6, 0b10);
        assert_eq!(parse_uuid(&format_uuid(&id)).expect("parses"), id);
        assert!(parse_uuid("not-a-uuid").is_err());
        assert!(parse_uuid("zzzzzzzz-zzzz-zzzz-zzzz-zzzzzzzzzzzz").is_err());
    }

    #[test]
    fn tokens_are_even_sorted_and_distinct() {
        for start in [i64::MIN, -1, 0, 7, i64::MAX] {
            let t = even_tokens(start, 16);
            assert_eq!(t.len(), 16);
            assert!(t.windows(2).all(|w| w[0] < w[1]));
            assert!(!t.contains(&i64::MIN));
        }
        assert_eq!(
            even_tokens(0, 4),
            vec![i64::MIN + 1, -(1 << 62), 0, 1 << 62]
        );
    }

    #[test]
    fn identity_persists() {
        let dir = std::env::temp_dir().join(format!("varve-node-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let a = load_or_create_host_id(&dir).expect("create");
        let b = load_or_create_host_id(&dir).expect("load");
        assert_eq!(a, b);
        // Before the node joined nothing is saved, and each start proposes
        // other tokens; once saved they are the node's for good.
        assert_eq!(saved_tokens(&dir).expect("none yet"), None);
        let t1 = tokens_at_start(&dir, 16).expect("provisional");
        assert_ne!(t1, tokens_at_start(&dir, 16).expect("provisional"));
        save_tokens(&dir, &t1).expect("save");
        assert_eq!(saved_tokens(&dir).expect("load"), Some(t1.clone()));
        assert_eq!(tokens_at_start(&dir, 16).expect("load"), t1);
        std::fs::write(dir.join(TOKENS_FILE), "12\nabc\n").expect("write");
        assert!(tokens_at_start(&dir, 16).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
