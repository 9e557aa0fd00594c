//! `varve nodetool`: node operations over the admin HTTP port, with
//! nodetool's flags (`-h HOST -p PORT`) and command names; `--ssl
//! --cafile PATH` (and `--certfile`, `--keyfile`) for an HTTPS admin port
//! ([`crate::admin_client`]).

use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use std::time::Duration;

use crate::admin_client::{self, AdminTlsArgs, Endpoint};

/// How long a nodetool command waits for the node (a flush can take a while).
const NODETOOL_TIMEOUT: Duration = Duration::from_secs(600);

/// Whether a command answers only once its work is done, however long that
/// takes (a major compaction or garbagecollect of many GB can take longer
/// than [`NODETOOL_TIMEOUT`]): it then waits without a timeout, as
/// Cassandra's nodetool does.
fn waits_for_completion(target: &str) -> bool {
    [
        "/nodetool/compact",
        "/nodetool/garbagecollect",
        "/nodetool/decommission",
        "/nodetool/cleanup",
        "/nodetool/removenode",
        "/nodetool/repair",
        "/nodetool/import",
    ]
    .iter()
    .any(|p| target.starts_with(p) && !target.starts_with("/nodetool/compactionstats"))
}

/// `-h` is the host, as in nodetool; help is `--help` only.
#[derive(Args, Debug)]
#[command(disable_help_flag = true)]
pub struct NodetoolArgs {
    /// Print help.
    #[arg(long, action = clap::ArgAction::Help)]
    pub help: Option<bool>,
    /// Node host (its admin HTTP port listens there).
    #[arg(short = 'h', long = "host", default_value = "127.0.0.1")]
    pub host: String,
    /// The node's admin HTTP port.
    #[arg(short = 'p', long = "port", default_value_t = 9180)]
    pub port: u16,
    #[command(flatten)]
    pub tls: AdminTlsArgs,
    #[command(subcommand)]
    pub command: NodetoolCommand,
}

#[derive(Subcommand, Debug)]
pub enum NodetoolCommand {
    /// Write memtables to sstables: all tables, a keyspace's, or some tables.
    Flush {
        keyspace: Option<String>,
        tables: Vec<String>,
    },
    /// Flush everything and sync the commitlog (before a restart).
    Drain,
    /// Drop the partitions this node no longer replicates (after nodes
    /// joined): every table, a keyspace's, or some tables.
    Cleanup {
        keyspace: Option<String>,
        tables: Vec<String>,
    },
    /// Compare this node's ranges with their other replicas (Merkle trees)
    /// and exchange what differs: every table, a keyspace's, or some.
    Repair {
        /// Only the ranges this node is the first replica of (`-pr`).
        #[arg(long = "pr")]
        primary: bool,
        /// A full repair (`-full`): everything each replica holds, not
        /// only what no repair has covered (incremental, the default).
        #[arg(long = "full")]
        full: bool,
        keyspace: Option<String>,
        tables: Vec<String>,
    },
    /// Streams in flight (bootstrap, decommission, removenode, repair):
    /// ranges done and bytes moved; bytes received and sent.
    Netstats,
    /// The addresses of the nodes that replicate a partition key (plain
    /// text; the components of a composite key joined by `:`).
    Getendpoints {
        keyspace: String,
        table: String,
        key: String,
    },
    /// Restore a dead node's ranges from the surviving replicas and remove
    /// it from the cluster (its host id, as `status` shows it).
    Removenode { host_id: String },
    /// Give this node's ranges to the nodes that take them over, leave the
    /// cluster and stop. Refused when a keyspace would keep fewer nodes
    /// than its replication factor, unless `--force`.
    Decommission {
        #[arg(long, short = 'f')]
        force: bool,
    },
    /// Major compaction: merge each table's sstables into one, purging what
    /// gc_grace_seconds allows.
    Compact {
        keyspace: Option<String>,
        tables: Vec<String>,
    },
    /// Print compaction_throughput (MiB/s; 0 = unlimited).
    Getcompactionthroughput,
    /// Set compaction_throughput in MiB/s (0 = unlimited), at once.
    Setcompactionthroughput { mib_per_sec: u64 },
    /// Per-table statistics: `tablestats [keyspace[.table]]`.
    Tablestats { name: Option<String> },
    /// The node's identity, load, uptime, memory and CPU.
    Info,
    /// Rewrite each sstable alone, dropping what newer sstables delete (ROW)
    /// or also overwrite (CELL); returns when done.
    Garbagecollect {
        /// ROW or CELL.
        #[arg(short = 'g', long = "granularity", default_value = "ROW")]
        granularity: String,
        /// Sstables rewritten at once (0: concurrent_compactors).
        #[arg(short = 'j', long = "jobs", default_value_t = 1)]
        jobs: usize,
        keyspace: Option<String>,
        tables: Vec<String>,
    },
    /// Pending and running compactions.
    Compactionstats,
    /// Every node of the cluster: up or down, address, load, tokens, host id, rack.
    Status,
    /// What gossip knows of every node: generation, heartbeat, each key's version and value.
    Gossipinfo,
    /// The cluster's name, snitch, partitioner and schema versions.
    Describecluster,
    /// Every node's tokens, by data centre in token order.
    Ring,
    /// Stops delivering hints.
    Pausehandoff,
    /// Starts delivering hints again.
    Resumehandoff,
    /// Deletes every hint this node keeps.
    Truncatehints,
    /// Whether hints are delivered, and how many bytes wait.
    Statushandoff,
    /// Flush, then snapshot tables (hard links of their sstables, under
    /// each table's `snapshots/<tag>/`): every user keyspace's, the
    /// keyspaces named, or one table.
    Snapshot {
        /// The snapshot's name (default: the time in milliseconds).
        #[arg(short = 't', long = "tag")]
        tag: Option<String>,
        /// Only this table (of the one keyspace named).
        #[arg(long = "table", visible_alias = "column-family")]
        table: Option<String>,
        keyspaces: Vec<String>,
    },
    /// Every snapshot on the node's disk, with its true size (bytes that no
    /// live sstable shares) and its size on disk.
    Listsnapshots,
    /// Remove the snapshots called TAG, or all of them with --all, of every
    /// keyspace or of those named.
    Clearsnapshot {
        /// The snapshot to remove.
        #[arg(short = 't', long = "tag")]
        tag: Option<String>,
        /// Remove every snapshot.
        #[arg(long = "all")]
        all: bool,
        keyspaces: Vec<String>,
    },
    /// Load the sstables of a directory (on the node's machine) into a live
    /// table: each is checked whole first, and they are moved into the
    /// table unless --copy-data.
    Import {
        /// Leave the source files where they are.
        #[arg(long = "copy-data")]
        copy_data: bool,
        keyspace: String,
        table: String,
        directory: std::path::PathBuf,
    },
}

/// A query parameter value with every byte but `A-Za-z0-9-._~/,`
/// percent-encoded (the admin port decodes it).
fn encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/,".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The request of a snapshot command, or `None` for another command.
fn snapshot_request(command: &NodetoolCommand) -> anyhow::Result<Option<(&'static str, String)>> {
    Ok(Some(match command {
        NodetoolCommand::Snapshot {
            tag,
            table,
            keyspaces,
        } => {
            let mut t = format!(
                "/nodetool/snapshot?keyspaces={}",
                encode(&keyspaces.join(","))
            );
            if let Some(tag) = tag {
                t.push_str(&format!("&tag={}", encode(tag)));
            }
            if let Some(table) = table {
                t.push_str(&format!("&table={}", encode(table)));
            }
            ("POST", t)
        }
        NodetoolCommand::Listsnapshots => ("GET", "/nodetool/listsnapshots".to_string()),
        NodetoolCommand::Clearsnapshot {
            tag,
            all,
            keyspaces,
        } => {
            let mut t = format!(
                "/nodetool/clearsnapshot?all={all}&keyspaces={}",
                encode(&keyspaces.join(","))
            );
            if let Some(tag) = tag {
                t.push_str(&format!("&tag={}", encode(tag)));
            }
            ("POST", t)
        }
        NodetoolCommand::Import {
            copy_data,
            keyspace,
            table,
            directory,
        } => {
            // The node resolves the path in its own working directory.
            let dir = std::path::absolute(directory)
                .with_context(|| format!("resolving {}", directory.display()))?;
            let Some(dir) = dir.to_str() else {
                bail!("{} is not UTF-8", dir.display());
            };
            let t = format!(
                "/nodetool/import?keyspace={}&table={}&dir={}&copy_data={copy_data}",
                encode(keyspace),
                encode(table),
                encode(dir)
            );
            ("POST", t)
        }
        _ => return Ok(None),
    }))
}

pub fn run(args: NodetoolArgs) -> anyhow::Result<()> {
    let (method, target) = match &args.command {
        c @ (NodetoolCommand::Snapshot { .. }
        | NodetoolCommand::Listsnapshots
        | NodetoolCommand::Clearsnapshot { .. }
        | NodetoolCommand::Import { .. }) => {
            snapshot_request(c)?.context("a snapshot command without its request")?
        }
        NodetoolCommand::Flush { keyspace, tables } => {
            let mut t = String::from("/nodetool/flush?");
            if let Some(k) = keyspace {
                t.push_str(&format!("keyspace={k}&tables={}", tables.join(",")));
            }
            ("POST", t)
        }
        NodetoolCommand::Drain => ("POST", "/nodetool/drain".to_string()),
        NodetoolCommand::Cleanup { keyspace, tables } => (
            "POST",
            format!(
                "/nodetool/cleanup?keyspace={}&tables={}",
                keyspace.clone().unwrap_or_default(),
                tables.join(",")
            ),
        ),
        NodetoolCommand::Repair {
            primary,
            full,
            keyspace,
            tables,
        } => (
            "POST",
            format!(
                "/nodetool/repair?pr={primary}&full={full}&keyspace={}&tables={}",
                keyspace.clone().unwrap_or_default(),
                tables.join(",")
            ),
        ),
        NodetoolCommand::Netstats => ("GET", "/nodetool/netstats".to_string()),
        NodetoolCommand::Getendpoints {
            keyspace,
            table,
            key,
        } => (
            "GET",
            format!(
                "/nodetool/getendpoints?keyspace={}&table={}&key={}",
                encode(keyspace),
                encode(table),
                encode(key)
            ),
        ),
        NodetoolCommand::Removenode { host_id } => {
            ("POST", format!("/nodetool/removenode?host={host_id}"))
        }
        NodetoolCommand::Decommission { force } => {
            ("POST", format!("/nodetool/decommission?force={force}"))
        }
        NodetoolCommand::Info => ("GET", "/nodetool/info".to_string()),
        NodetoolCommand::Getcompactionthroughput => {
            ("GET", "/nodetool/compactionthroughput".to_string())
        }
        NodetoolCommand::Setcompactionthroughput { mib_per_sec } => (
            "POST",
            format!("/nodetool/compactionthroughput?value={mib_per_sec}"),
        ),
        NodetoolCommand::Compact { keyspace, tables } => {
            let mut t = String::from("/nodetool/compact?");
            if let Some(k) = keyspace {
                t.push_str(&format!("keyspace={k}&tables={}", tables.join(",")));
            }
            ("POST", t)
        }
        NodetoolCommand::Garbagecollect {
            granularity,
            jobs,
            keyspace,
            tables,
        } => {
            let g = granularity.to_ascii_uppercase();
            if g != "ROW" && g != "CELL" {
                bail!("granularity must be ROW or CELL, not {granularity}");
            }
            let mut t = format!("/nodetool/garbagecollect?granularity={g}&jobs={jobs}");
            if let Some(k) = keyspace {
                t.push_str(&format!("&keyspace={k}&tables={}", tables.join(",")));
            }
            ("POST", t)
        }
        NodetoolCommand::Compactionstats => ("GET", "/nodetool/compactionstats".to_string()),
        NodetoolCommand::Status => ("GET", "/nodetool/status".to_string()),
        NodetoolCommand::Gossipinfo => ("GET", "/nodetool/gossipinfo".to_string()),
        NodetoolCommand::Describecluster => ("GET", "/nodetool/describecluster".to_string()),
        NodetoolCommand::Ring => ("GET", "/nodetool/ring".to_string()),
        NodetoolCommand::Pausehandoff => ("POST", "/nodetool/pausehandoff".to_string()),
        NodetoolCommand::Resumehandoff => ("POST", "/nodetool/resumehandoff".to_string()),
        NodetoolCommand::Truncatehints => ("POST", "/nodetool/truncatehints".to_string()),
        NodetoolCommand::Statushandoff => ("GET", "/nodetool/statushandoff".to_string()),
        NodetoolCommand::Tablestats { name } => {
            let mut t = String::from("/nodetool/tablestats?");
            if let Some(n) = name {
                match n.split_once('.') {
                    Some((k, table)) => t.push_str(&format!("keyspace={k}&table={table}")),
                    None => t.push_str(&format!("keyspace={n}")),
                }
            }
            ("GET", t)
        }
    };
    let endpoint = Endpoint {
        host: &args.host,
        port: args.port,
        tls: args.tls.client_config()?,
        // The admin port's token, when the node has one
        // (docs/design/security.md).
        token: std::env::var(crate::admin_config::ADMIN_TOKEN_ENV)
            .ok()
            .filter(|t| !t.is_empty()),
    };
    let timeout = (!waits_for_completion(&target)).then_some(NODETOOL_TIMEOUT);
    let (status, body) = admin_client::request(&endpoint, method, &target, timeout)?;
    if status != 200 {
        bail!("{}", body.trim_end());
    }
    print!("{body}");
    Ok(())
}

/// nodetool's single-dash long flags (`repair -pr -full`) as clap reads
/// them (`--pr --full`), after the `nodetool` word only.
pub fn cassandra_flags(args: impl Iterator<Item = String>) -> Vec<String> {
    let mut after_nodetool = false;
    args.map(|a| {
        let mapped = match a.as_str() {
            "-pr" | "-full" if after_nodetool => format!("-{a}"),
            _ => a,
        };
        after_nodetool |= mapped == "nodetool";
        mapped
    })
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_dash_long_flags_are_read_after_nodetool() {
        let args = ["varve", "nodetool", "repair", "-pr", "-full", "ks"].map(String::from);
        assert_eq!(
            cassandra_flags(args.into_iter()),
            ["varve", "nodetool", "repair", "--pr", "--full", "ks"]
        );
        let server = ["varve", "server", "-full"].map(String::from);
        assert_eq!(
            cassandra_flags(server.into_iter()),
            ["varve", "server", "-full"]
        );
    }

    #[test]
    fn compactions_wait_for_completion_and_the_rest_time_out() {
        assert!(waits_for_completion("/nodetool/compact?keyspace=ks"));
        assert!(waits_for_completion(
            "/nodetool/garbagecollect?granularity=ROW&jobs=2"
        ));
        assert!(waits_for_completion("/nodetool/decommission?force=false"));
        assert!(!waits_for_completion("/nodetool/compactionstats"));
        assert!(!waits_for_completion("/nodetool/flush"));
        assert!(!waits_for_completion("/nodetool/info"));
        assert!(waits_for_completion("/nodetool/import?keyspace=ks"));
        assert!(!waits_for_completion("/nodetool/snapshot"));
    }

    #[test]
    fn parameters_are_percent_encoded() {
        assert_eq!(encode("/tmp/a b,c%&d=é"), "/tmp/a%20b,c%25%26d%3D%C3%A9");
        assert_eq!(encode("ks_1.t-2~"), "ks_1.t-2~");
    }

    #[test]
    fn snapshot_commands_become_their_requests() {
        let request = |c: NodetoolCommand| snapshot_request(&c).unwrap().unwrap();
        let snapshot = NodetoolCommand::Snapshot {
            tag: Some("t1".into()),
            table: None,
            keyspaces: vec!["a".into(), "b".into()],
        };
        assert_eq!(
            request(snapshot),
            (
                "POST",
                "/nodetool/snapshot?keyspaces=a,b&tag=t1".to_string()
            )
        );
        let clear = NodetoolCommand::Clearsnapshot {
            tag: None,
            all: true,
            keyspaces: vec![],
        };
        assert_eq!(
            request(clear),
            (
                "POST",
                "/nodetool/clearsnapshot?all=true&keyspaces=".to_string()
            )
        );
        let import = NodetoolCommand::Import {
            copy_data: false,
            keyspace: "ks".into(),
            table: "t".into(),
            directory: "/x y".into(),
        };
        assert_eq!(
            request(import),
            (
                "POST",
                "/nodetool/import?keyspace=ks&table=t&dir=/x%20y&copy_data=false".to_string()
            )
        );
        assert!(snapshot_request(&NodetoolCommand::Info).unwrap().is_none());
    }
}
