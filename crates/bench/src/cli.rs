//! The flags of `varve bench` and their checks, turned into [`BenchOptions`].

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::error::{BenchError, Result};
use crate::http::BaseUrl;
use crate::plan::{RateSearch, Scenario, Size, Variant};

/// The seeds' replication factor: a cluster the bench starts gets it.
pub const SEED_REPLICATION_FACTOR: u32 = 3;
/// Nodes the bench starts when neither `--nodes` nor `--hosts` is given:
/// the seeds' three.
pub const DEFAULT_NODES: usize = 3;

/// Sampling period of server.csv (and the progress/intervals period).
pub const SAMPLE_INTERVAL: Duration = Duration::from_secs(1);

/// `varve bench <SCENARIO> --out DIR ...`
#[derive(Args, Debug, Clone)]
pub struct BenchArgs {
    /// tombstone-gc, compaction, docsize or lwt.
    pub scenario: String,
    /// The run directory to write (must not exist, or be empty).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// tombstone-gc only: overlapping (seed 000) or garbagecollect (seed 001).
    #[arg(long)]
    pub variant: Option<String>,
    /// tiny (seconds), small (2-3 min), full (10-20 min) or a factor of full.
    #[arg(long, default_value = "small")]
    pub size: String,
    /// Nodes to start: 1, one embedded node; more, a local cluster on
    /// 127.0.0.1 .. 127.0.0.N (`varve cluster start`), every node sampled.
    /// Default 3, as the seeds ran.
    #[arg(long)]
    pub nodes: Option<usize>,
    /// Caps each node the bench starts at SIZE (2GiB, 1536MiB...), page
    /// cache included: every node in a fresh cgroup v1 memory cgroup of its
    /// own, removed after the run. Needs root and the cgroup v1 memory
    /// controller; refused otherwise.
    #[arg(long, value_name = "SIZE")]
    pub memory_cap: Option<String>,
    /// With --hosts: the nodes' existing cgroup v1 memory directories (one
    /// per node, comma separated, e.g. from
    /// scripts/bench/cassandra_capped.sh): their caps, peaks and OOM kills
    /// go to memory.csv. Read only.
    #[arg(long, value_name = "DIR", value_delimiter = ',')]
    pub memory_cgroup: Vec<PathBuf>,
    /// Use an existing cluster (host:port,...) instead of an embedded node.
    #[arg(long, value_delimiter = ',')]
    pub hosts: Vec<String>,
    /// With --hosts: Varve nodes' admin addresses (http://host:port, comma
    /// separated: every node of a cluster) for /metrics sampling (summed)
    /// and garbagecollect (on each).
    #[arg(long, value_name = "URL", value_delimiter = ',')]
    pub admin: Vec<String>,
    /// YAML config of the embedded node (default: small memtables per --size).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// With --hosts (Cassandra): a nodetool command prefix, e.g.
    /// "/tmp/cass-lab/nodetool.sh", for compactionstats, tablestats and
    /// garbagecollect; once per node of a cluster (numbers summed,
    /// garbagecollect on each).
    #[arg(long, value_name = "CMD")]
    pub nodetool: Vec<String>,
    /// With --hosts (Cassandra): a node's Jolokia agent (http://host:port,
    /// comma separated: every node of a cluster), read every second for
    /// the numbers nodetool prints (summed); nodetool then only runs the
    /// actions (scripts/bench/cassandra_capped.sh starts nodes with one).
    #[arg(long, value_name = "URL", value_delimiter = ',')]
    pub jolokia: Vec<String>,
    /// With --hosts (Cassandra): a node's JVM GC log (`-Xlog:gc`, e.g.
    /// /tmp/cass-lab/c1/logs/gc.log), once per node: its pauses fill the
    /// pause columns (Varve's come from its runtime stall probe).
    #[arg(long, value_name = "FILE")]
    pub gc_log: Vec<PathBuf>,
    /// With --hosts (Cassandra): a node's commitlog directory, once per
    /// node: the blocks its segments take fill the commitlog column
    /// (Cassandra counts no bytes its commitlog wrote).
    #[arg(long, value_name = "DIR")]
    pub commitlog_dir: Vec<PathBuf>,
    /// With --hosts: the server's process ids (a cluster's nodes, comma
    /// separated), for CPU and RSS from /proc, summed over them.
    #[arg(long, value_name = "PID", value_delimiter = ',')]
    pub server_pid: Vec<u32>,
    /// Replication factor of the benchmark's keyspace (NetworkTopologyStrategy
    /// in the contact node's data centre). Default: 3 on a cluster the bench
    /// starts (its node count when fewer), as the seeds ran; else 1.
    #[arg(long)]
    pub replication_factor: Option<u32>,
    /// Consistency level of the statements (a conditional statement's
    /// commit included): ONE, QUORUM, LOCAL_QUORUM, ALL... Default:
    /// LOCAL_QUORUM, the seeds' level where they name none (the same as ONE
    /// at replication factor 1).
    #[arg(long, default_value = "LOCAL_QUORUM")]
    pub consistency: String,
    /// compaction only: seed 002's question. Step the W:D 4:1 rate up in
    /// LCS phases (the ladder, or --rates) and stop at the first rate where
    /// pending compactions and unleveled sstables keep growing.
    #[arg(long)]
    pub find_rate: bool,
    /// compaction only: LCS phases at these rates (operations per second
    /// over the cluster, comma separated), each judged; with --find-rate,
    /// the ladder to step up.
    #[arg(long, value_name = "R,R,...", value_delimiter = ',')]
    pub rates: Vec<u32>,
    /// Another run directory: also write compare.md/html (this run as A).
    #[arg(long, value_name = "DIR")]
    pub compare_with: Option<PathBuf>,
    /// Print the plan and exit.
    #[arg(long)]
    pub plan_only: bool,
    /// No progress lines.
    #[arg(long)]
    pub quiet: bool,
}

/// Where the load goes.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// Start this executable as a node (its config file, if given).
    Embedded {
        exe: PathBuf,
        config: Option<PathBuf>,
    },
    /// Start a local cluster of `nodes` nodes of this executable, each
    /// with the config file, if given.
    Cluster {
        exe: PathBuf,
        config: Option<PathBuf>,
        nodes: usize,
    },
    /// An existing cluster.
    Hosts {
        hosts: Vec<String>,
        admin: Vec<BaseUrl>,
        nodetool: Vec<Vec<String>>,
        jolokia: Vec<BaseUrl>,
        server_pids: Vec<u32>,
        gc_logs: Vec<PathBuf>,
        /// Its nodes' commitlog directories (`--commitlog-dir`).
        commitlog_dirs: Vec<PathBuf>,
        /// Its nodes' memory cgroups, read at the end (`--memory-cgroup`).
        memory_cgroups: Vec<PathBuf>,
    },
}

/// Checked options of a run.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    pub scenario: Scenario,
    pub variant: Option<Variant>,
    pub size: Size,
    pub out: PathBuf,
    pub target: Target,
    pub compare_with: Option<PathBuf>,
    pub plan_only: bool,
    pub quiet: bool,
    /// The keyspace's replication factor.
    pub replication_factor: u32,
    /// The statements' consistency level.
    pub consistency: varve_stress::config::Consistency,
    /// `--memory-cap` in bytes: each node the bench starts in a cgroup of
    /// this limit.
    pub memory_cap: Option<u64>,
    /// `--find-rate` / `--rates`: the compaction scenario as a rate search.
    pub rate_search: Option<RateSearch>,
    /// The command line, for summary.json.
    pub command: String,
}

impl BenchArgs {
    /// Checks the flags; `exe` is the executable to start as the node.
    pub fn options(&self, exe: PathBuf, command: &str) -> Result<BenchOptions> {
        let scenario = Scenario::parse(&self.scenario)?;
        let variant = self.variant.as_deref().map(Variant::parse).transpose()?;
        let size = Size::parse(&self.size)?;
        let rate_search = RateSearch::from_flags(&self.rates, self.find_rate)?;
        if rate_search.is_some() && scenario != Scenario::Compaction {
            return Err(BenchError::config(
                "rates",
                format!("--find-rate and --rates are for the compaction scenario, not {scenario}"),
            ));
        }
        let target = if self.hosts.is_empty() {
            for (flag, given) in [
                ("admin", !self.admin.is_empty()),
                ("nodetool", !self.nodetool.is_empty()),
                ("jolokia", !self.jolokia.is_empty()),
                ("server-pid", !self.server_pid.is_empty()),
                ("gc-log", !self.gc_log.is_empty()),
                ("commitlog-dir", !self.commitlog_dir.is_empty()),
                ("memory-cgroup", !self.memory_cgroup.is_empty()),
            ] {
                if given {
                    return Err(BenchError::config(
                        "flags",
                        format!("--{flag} goes with --hosts (the embedded node is sampled through its own admin port)"),
                    ));
                }
            }
            match self.nodes.unwrap_or(DEFAULT_NODES) {
                0 => return Err(BenchError::config("nodes", "at least 1")),
                1 => Target::Embedded {
                    exe,
                    config: self.config.clone(),
                },
                n if n <= crate::cluster::MAX_BENCH_NODES => Target::Cluster {
                    exe,
                    config: self.config.clone(),
                    nodes: n,
                },
                n => {
                    return Err(BenchError::config(
                        "nodes",
                        format!("{n} is more than {}", crate::cluster::MAX_BENCH_NODES),
                    ))
                }
            }
        } else {
            if self.nodes.is_some() {
                return Err(BenchError::config(
                    "flags",
                    "--nodes starts a cluster; --hosts uses one already running",
                ));
            }
            if self.memory_cap.is_some() {
                return Err(BenchError::config(
                    "flags",
                    "--memory-cap caps the nodes the bench starts; for --hosts start them capped \
                     (scripts/bench/cassandra_capped.sh) and pass --memory-cgroup",
                ));
            }
            if self.config.is_some() {
                return Err(BenchError::config(
                    "flags",
                    "--config is for the embedded node, not --hosts",
                ));
            }
            let mut nodetool = Vec::with_capacity(self.nodetool.len());
            for cmd in &self.nodetool {
                let words: Vec<String> = cmd.split_whitespace().map(str::to_string).collect();
                if words.is_empty() {
                    return Err(BenchError::config("nodetool", "empty command"));
                }
                nodetool.push(words);
            }
            let admin = self
                .admin
                .iter()
                .map(|a| BaseUrl::parse(a))
                .collect::<Result<Vec<_>>>()?;
            let jolokia = self
                .jolokia
                .iter()
                .map(|a| BaseUrl::parse(a))
                .collect::<Result<Vec<_>>>()?;
            Target::Hosts {
                hosts: self.hosts.clone(),
                admin,
                nodetool,
                jolokia,
                server_pids: self.server_pid.clone(),
                gc_logs: self.gc_log.clone(),
                commitlog_dirs: self.commitlog_dir.clone(),
                memory_cgroups: self.memory_cgroup.clone(),
            }
        };
        let replication_factor = self.replication_factor.unwrap_or(match &target {
            Target::Cluster { nodes, .. } => (*nodes).min(SEED_REPLICATION_FACTOR as usize) as u32,
            _ => 1,
        });
        if replication_factor == 0 {
            return Err(BenchError::config(
                "replication-factor",
                "at least 1".to_string(),
            ));
        }
        let consistency = varve_stress::config::parse_consistency(&self.consistency)
            .map_err(|e| BenchError::config("consistency", e.to_string()))?;
        Ok(BenchOptions {
            scenario,
            variant,
            size,
            out: self.out.clone(),
            target,
            compare_with: self.compare_with.clone(),
            plan_only: self.plan_only,
            quiet: self.quiet,
            replication_factor,
            consistency,
            memory_cap: self
                .memory_cap
                .as_deref()
                .map(crate::cgroup::parse_size)
                .transpose()?,
            rate_search,
            command: command.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: BenchArgs,
    }

    fn options(line: &str) -> Result<BenchOptions> {
        let cli = Cli::try_parse_from(line.split_whitespace()).expect("clap accepts it");
        cli.args.options(PathBuf::from("/bin/varve"), line)
    }

    #[test]
    fn every_node_of_a_given_cluster_can_be_sampled() {
        let o = options("x lwt --out d --hosts a:1,b:1 --admin http://a:2,http://b:2").unwrap();
        let Target::Hosts { admin, .. } = o.target else {
            panic!()
        };
        assert_eq!(admin.len(), 2);
        let cli = Cli::try_parse_from([
            "x",
            "lwt",
            "--out",
            "d",
            "--hosts",
            "a:1,b:1",
            "--nodetool",
            "/n.sh -p 7201",
            "--nodetool",
            "/n.sh -p 7202",
        ])
        .expect("clap accepts it");
        let o = cli.args.options(PathBuf::from("/bin/varve"), "x").unwrap();
        let Target::Hosts { nodetool, .. } = o.target else {
            panic!()
        };
        assert_eq!(nodetool, [["/n.sh", "-p", "7201"], ["/n.sh", "-p", "7202"]]);
    }

    #[test]
    fn nodes_start_a_local_cluster_up_to_the_most_the_bench_starts() {
        let max = crate::cluster::MAX_BENCH_NODES;
        let o = options(&format!("x lwt --out d --nodes {max}")).unwrap();
        assert!(matches!(o.target, Target::Cluster { nodes, .. } if nodes == max));
        let o = options("x lwt --out d --nodes 3").unwrap();
        assert!(matches!(o.target, Target::Cluster { nodes: 3, .. }));
        assert_eq!(
            o.replication_factor, 3,
            "the seeds' RF on a cluster of three"
        );
        assert_eq!(
            options("x lwt --out d --nodes 2")
                .unwrap()
                .replication_factor,
            2
        );
        assert_eq!(
            options("x lwt --out d --nodes 5")
                .unwrap()
                .replication_factor,
            3
        );
        let o = options("x lwt --out d --nodes 3 --replication-factor 1").unwrap();
        assert_eq!(o.replication_factor, 1);
        assert!(options(&format!("x lwt --out d --nodes {}", max + 1)).is_err());
        assert!(options("x lwt --out d --nodes 0").is_err());
        assert!(matches!(
            options("x lwt --out d --nodes 1").unwrap().target,
            Target::Embedded { .. }
        ));
        assert!(options("x lwt --out d --nodes 3 --hosts a:1").is_err());
        assert!(options("x lwt --out d --nodes 1 --hosts a:1").is_err());
    }

    #[test]
    fn the_seeds_three_nodes_at_rf_3_are_the_default() {
        let o = options("x tombstone-gc --variant overlapping --out d").unwrap();
        assert!(matches!(o.target, Target::Cluster { nodes, .. } if nodes == DEFAULT_NODES));
        assert_eq!(DEFAULT_NODES, 3);
        assert_eq!(o.replication_factor, SEED_REPLICATION_FACTOR);
        assert_eq!(o.memory_cap, None, "no cap unless asked");
    }

    #[test]
    fn rate_searches_are_for_the_compaction_scenario() {
        let o = options("x compaction --out d --find-rate").unwrap();
        let search = o.rate_search.unwrap();
        assert!(search.stop_when_behind && search.rates.is_empty());
        let o = options("x compaction --out d --rates 2700,3000").unwrap();
        assert_eq!(
            o.rate_search,
            Some(RateSearch {
                rates: vec![2700, 3000],
                stop_when_behind: false
            })
        );
        assert_eq!(options("x compaction --out d").unwrap().rate_search, None);
        assert!(options("x lwt --out d --find-rate").is_err());
        assert!(options("x compaction --out d --rates 0").is_err());
    }

    #[test]
    fn a_memory_cap_is_for_nodes_the_bench_starts() {
        let o = options("x lwt --out d --memory-cap 2GiB").unwrap();
        assert_eq!(o.memory_cap, Some(2 << 30));
        let o = options("x lwt --out d --nodes 1 --memory-cap 512M").unwrap();
        assert_eq!(o.memory_cap, Some(512 << 20));
        assert!(
            options("x lwt --out d --memory-cap 1M").is_err(),
            "below the floor"
        );
        assert!(options("x lwt --out d --memory-cap lots").is_err());
        let err = options("x lwt --out d --hosts a:1 --memory-cap 2G").unwrap_err();
        assert!(err.to_string().contains("--memory-cgroup"), "{err}");
        let o = options("x lwt --out d --hosts a:1,b:1 --memory-cgroup /c/1,/c/2").unwrap();
        let Target::Hosts { memory_cgroups, .. } = o.target else {
            panic!()
        };
        assert_eq!(
            memory_cgroups,
            [PathBuf::from("/c/1"), PathBuf::from("/c/2")]
        );
        assert!(
            options("x lwt --out d --memory-cgroup /c/1").is_err(),
            "goes with --hosts"
        );
    }

    #[test]
    fn flags() {
        let o = options("x tombstone-gc --out d --variant garbagecollect --size tiny --nodes 1")
            .unwrap();
        assert_eq!(o.scenario, Scenario::TombstoneGc);
        assert_eq!(o.variant, Some(Variant::GarbageCollect));
        assert_eq!(o.size, Size::Tiny);
        assert!(matches!(o.target, Target::Embedded { .. }));
        assert_eq!(o.replication_factor, 1, "one node: RF 1");
        assert_eq!(
            o.consistency,
            varve_stress::config::Consistency::LocalQuorum
        );
        let o = options(
            "x lwt --out d --hosts a:1,b:2 --nodetool /x/nodetool.sh --server-pid 7 --gc-log /g1 --gc-log /g2",
        )
        .unwrap();
        let Target::Hosts {
            hosts,
            nodetool,
            server_pids,
            admin,
            gc_logs,
            ..
        } = o.target
        else {
            panic!()
        };
        assert_eq!(hosts, ["a:1", "b:2"]);
        assert_eq!(nodetool, vec![vec!["/x/nodetool.sh".to_string()]]);
        assert_eq!((server_pids, admin), (vec![7], vec![]));
        assert_eq!(gc_logs, [PathBuf::from("/g1"), PathBuf::from("/g2")]);
        assert!(
            options("x lwt --out d --gc-log /g1").is_err(),
            "--gc-log goes with --hosts"
        );
        let o = options(
            "x lwt --out d --hosts a:1,b:2 --jolokia http://a:8778,http://b:8778 --nodetool /n.sh",
        )
        .unwrap();
        let Target::Hosts { jolokia, .. } = o.target else {
            panic!()
        };
        assert_eq!(
            jolokia
                .iter()
                .map(|j| j.authority.as_str())
                .collect::<Vec<_>>(),
            ["a:8778", "b:8778"]
        );
        assert!(
            options("x lwt --out d --jolokia http://a:8778").is_err(),
            "--jolokia goes with --hosts"
        );
        assert!(options("x lwt --out d --hosts a:1 --jolokia https://a:8778").is_err());
        let o =
            options("x lwt --out d --hosts a:1 --commitlog-dir /c1 --commitlog-dir /c2").unwrap();
        let Target::Hosts { commitlog_dirs, .. } = o.target else {
            panic!()
        };
        assert_eq!(commitlog_dirs, [PathBuf::from("/c1"), PathBuf::from("/c2")]);
        assert!(
            options("x lwt --out d --commitlog-dir /c1").is_err(),
            "--commitlog-dir goes with --hosts"
        );
        // A three-node cluster, as the seeds ran.
        let o = options(
            "x lwt --out d --hosts a:1 --server-pid 7,8,9 --replication-factor 3 --consistency quorum",
        )
        .unwrap();
        assert!(
            matches!(&o.target, Target::Hosts { server_pids, .. } if server_pids == &[7, 8, 9])
        );
        assert_eq!(o.replication_factor, 3);
        assert_eq!(o.consistency, varve_stress::config::Consistency::Quorum);
        assert!(options("x lwt --out d --replication-factor 0").is_err());
        assert!(options("x lwt --out d --consistency MOST").is_err());
        assert!(
            options("x lwt --out d --admin http://h:1").is_err(),
            "--admin needs --hosts"
        );
        assert!(options("x lwt --out d --hosts h:1 --config c.yaml").is_err());
        assert!(options("x nope --out d").is_err());
        assert!(options("x lwt --out d --size 0").is_err());
        assert!(options("x lwt --out d --hosts h:1 --admin https://h:1").is_err());
    }
}
