//! Memory caps for the nodes the bench starts (`--memory-cap SIZE`): each
//! node in a fresh cgroup v1 memory cgroup of its own, so that what it
//! allocates *and the page cache of its files* are charged to one limit,
//! as on a machine whose data is many times its memory.
//!
//! Layout: `MEMORY_ROOT/varve-bench-<run>-<pid>/node<N>`, one directory per
//! node under one directory per run (`<run>` is the run directory's name,
//! `<pid>` the bench's process id, so two runs never share a cgroup). A
//! node joins its cgroup between fork and exec ([`join_before_exec`]):
//! everything it ever allocates is charged there. At the end the bench
//! reads each node's peak (`memory.max_usage_in_bytes`) and OOM kills
//! (`oom_kill` of `memory.oom_control`) into memory.csv, then removes the
//! directories ([`RunCgroups::remove`], also on drop and on a second
//! Ctrl-C through [`CgroupPaths`]).
//!
//! Invariants: only processes the bench started ever join these cgroups,
//! so the processes left in one when it is removed are the bench's own
//! nodes (killed by pid before the directory goes); the bench refuses to
//! start when the controller is missing or it is not root
//! ([`check_available`]), rather than run uncapped.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::error::{BenchError, Result};

/// Where the cgroup v1 memory controller is mounted.
pub const MEMORY_ROOT: &str = "/sys/fs/cgroup/memory";
/// Prefix of the directory of one run's cgroups.
pub const NAME_PREFIX: &str = "varve-bench-";
/// Characters of the run directory's name kept in the cgroup's name.
pub const RUN_NAME_CHARS_MAX: usize = 40;
/// The smallest cap: a node does not start in less.
pub const MEMORY_CAP_MIN: u64 = 64 << 20;
/// How long removal waits for a cgroup's processes to be gone.
pub const EMPTY_WAIT: Duration = Duration::from_secs(5);
/// The header of memory.csv (docs/format/run-directory.md).
pub const MEMORY_CSV_HEADER: &str = "node,cgroup,cap_bytes,peak_bytes,oom_kills";

/// Parses a cap: bytes, or a number with a binary unit (`K`/`KiB`, `M`/`MiB`,
/// `G`/`GiB`, any case; `1.5GiB` allowed), at least [`MEMORY_CAP_MIN`].
pub fn parse_size(text: &str) -> Result<u64> {
    let bad = |why: &str| BenchError::config("memory-cap", format!("`{text}`: {why}"));
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kib" | "kb" => 10,
        "m" | "mib" | "mb" => 20,
        "g" | "gib" | "gb" => 30,
        _ => return Err(bad("expected a size such as 2GiB or 1536MiB")),
    };
    let value: f64 = number
        .parse()
        .map_err(|_| bad("expected a size such as 2GiB or 1536MiB"))?;
    let bytes = value * (1u64 << shift) as f64;
    if !bytes.is_finite() || bytes >= u64::MAX as f64 {
        return Err(bad("too large"));
    }
    let bytes = bytes as u64;
    if bytes < MEMORY_CAP_MIN {
        return Err(bad(&format!(
            "less than the smallest cap, {} MiB",
            MEMORY_CAP_MIN >> 20
        )));
    }
    Ok(bytes)
}

/// The effective user id from the text of /proc/self/status.
fn effective_uid(status: &str) -> Option<u32> {
    let line = status.lines().find(|l| l.starts_with("Uid:"))?;
    line.split_whitespace().nth(2)?.parse().ok()
}

/// Refuses, with the reason, when caps cannot be set: not root, or no
/// cgroup v1 memory controller at `root`.
pub fn check_available(root: &Path) -> Result<()> {
    let refuse = |why: String| BenchError::config("memory-cap", why);
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    match effective_uid(&status) {
        Some(0) => {}
        Some(uid) => {
            return Err(refuse(format!(
                "creating memory cgroups needs root (this process runs as uid {uid})"
            )))
        }
        None => return Err(refuse("cannot tell this process's user id".into())),
    }
    if !root.join("memory.limit_in_bytes").is_file() {
        return Err(refuse(format!(
            "no cgroup v1 memory controller at {} (memory.limit_in_bytes is missing); \
             the cap needs it (cgroup v2 is not supported yet)",
            root.display()
        )));
    }
    Ok(())
}

/// The name of a run's cgroup directory: the prefix, the run directory's
/// name (characters other than letters, digits, `-`, `_` and `.` become
/// `_`, at most [`RUN_NAME_CHARS_MAX`]) and the bench's pid.
pub fn run_name(out: &Path, pid: u32) -> String {
    let base = out
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let clean: String = base
        .chars()
        .map(|c| match c.is_ascii_alphanumeric() || "-_.".contains(c) {
            true => c,
            false => '_',
        })
        .take(RUN_NAME_CHARS_MAX)
        .collect();
    let clean = clean.trim_start_matches('.');
    format!(
        "{NAME_PREFIX}{}-{pid}",
        if clean.is_empty() { "run" } else { clean }
    )
}

/// The directories of one run's cgroups: enough to remove them from any
/// thread (a second Ctrl-C), idempotently.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupPaths {
    /// The run's directory.
    pub dir: PathBuf,
    /// Each node's directory, node 1 first.
    pub nodes: Vec<PathBuf>,
}

impl CgroupPaths {
    /// Removes every node's cgroup, then the run's: processes still in one
    /// (the bench's own nodes) are killed by pid first. Already removed
    /// directories are fine. The first failure is returned after trying
    /// every directory.
    pub fn remove(&self) -> Result<()> {
        let mut first = None;
        for dir in self.nodes.iter().chain(std::iter::once(&self.dir)) {
            if let Err(e) = remove_one(dir) {
                first.get_or_insert(e);
            }
        }
        first.map_or(Ok(()), Err)
    }
}

/// The process ids in a cgroup.
fn procs(dir: &Path) -> Vec<i32> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

fn remove_one(dir: &Path) -> Result<()> {
    if !dir.exists() {
        return Ok(());
    }
    let deadline = Instant::now() + EMPTY_WAIT;
    loop {
        let left = procs(dir);
        if left.is_empty() {
            break;
        }
        for pid in &left {
            // SAFETY: kill(2) with a pid listed in a cgroup only the
            // bench's own nodes join; it touches no memory of this process.
            unsafe { libc::kill(*pid, libc::SIGKILL) };
        }
        if Instant::now() > deadline {
            return Err(BenchError::Node(format!(
                "cgroup {} still holds processes {left:?}",
                dir.display()
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    match std::fs::remove_dir(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(BenchError::io(dir, e)),
    }
}

/// One node's memory as its cgroup saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeMemory {
    /// 1-based, as the cluster numbers it.
    pub node: usize,
    pub cgroup: String,
    pub cap_bytes: u64,
    /// `memory.max_usage_in_bytes`: the most it ever held, page cache included.
    pub peak_bytes: Option<u64>,
    /// Processes the kernel's OOM killer killed in it.
    pub oom_kills: Option<u64>,
}

/// `oom_kill N` of a `memory.oom_control` text (kernels since 4.13).
pub fn parse_oom_kills(oom_control: &str) -> Option<u64> {
    oom_control.lines().find_map(|l| {
        let (key, value) = l.trim().split_once(' ')?;
        (key == "oom_kill").then(|| value.trim().parse().ok())?
    })
}

/// The text of memory.csv.
pub fn render_csv(rows: &[NodeMemory]) -> String {
    let cell = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
    let mut out = format!("{MEMORY_CSV_HEADER}\n");
    for r in rows {
        out.push_str(&format!(
            "{},{},{},{},{}\n",
            r.node,
            r.cgroup.replace(',', "_"),
            r.cap_bytes,
            cell(r.peak_bytes),
            cell(r.oom_kills)
        ));
    }
    out
}

/// Writes memory.csv into `dir`.
pub fn write_csv(dir: &Path, rows: &[NodeMemory]) -> Result<()> {
    let path = dir.join("memory.csv");
    std::fs::write(&path, render_csv(rows)).map_err(|e| BenchError::io(path, e))
}

/// The memory of existing cgroups, one per node (`--memory-cgroup` of a
/// cluster started elsewhere, or the bench's own): the cap from
/// `memory.limit_in_bytes` (0 when unreadable), the peak and the OOM kills.
pub fn observe(dirs: &[PathBuf]) -> Vec<NodeMemory> {
    let read = |dir: &Path, file: &str| std::fs::read_to_string(dir.join(file)).ok();
    let number = |text: Option<String>| text.and_then(|t| t.trim().parse::<u64>().ok());
    dirs.iter()
        .enumerate()
        .map(|(i, dir)| NodeMemory {
            node: i + 1,
            cgroup: dir.display().to_string(),
            cap_bytes: number(read(dir, "memory.limit_in_bytes")).unwrap_or(0),
            peak_bytes: number(read(dir, "memory.max_usage_in_bytes")),
            oom_kills: read(dir, "memory.oom_control").and_then(|t| parse_oom_kills(&t)),
        })
        .collect()
}

/// A run's cgroups, created capped; removed when dropped.
#[derive(Debug)]
pub struct RunCgroups {
    paths: CgroupPaths,
    cap_bytes: u64,
    removed: bool,
}

impl RunCgroups {
    /// Creates `root/name/node1..=nodes`, each with `cap_bytes` as its limit.
    /// On failure whatever was created is removed again.
    pub fn create(root: &Path, name: &str, nodes: usize, cap_bytes: u64) -> Result<RunCgroups> {
        let dir = root.join(name);
        let mut cgroups = RunCgroups {
            paths: CgroupPaths {
                dir: dir.clone(),
                nodes: Vec::new(),
            },
            cap_bytes,
            removed: false,
        };
        if dir.exists() {
            cgroups.removed = true; // not ours: never remove it
            return Err(BenchError::config(
                "memory-cap",
                format!("cgroup {} already exists", dir.display()),
            ));
        }
        std::fs::create_dir(&dir).map_err(|e| BenchError::io(&dir, e))?;
        for n in 1..=nodes {
            let node = dir.join(format!("node{n}"));
            std::fs::create_dir(&node).map_err(|e| BenchError::io(&node, e))?;
            cgroups.paths.nodes.push(node.clone());
            let limit = node.join("memory.limit_in_bytes");
            std::fs::write(&limit, cap_bytes.to_string()).map_err(|e| BenchError::io(&limit, e))?;
        }
        Ok(cgroups)
    }

    /// The directories, for a second Ctrl-C's cleanup.
    pub fn paths(&self) -> &CgroupPaths {
        &self.paths
    }

    /// Node `n`'s cgroup (1-based).
    pub fn node(&self, n: usize) -> Option<&Path> {
        self.paths
            .nodes
            .get(n.checked_sub(1)?)
            .map(PathBuf::as_path)
    }

    /// Each node's cap, peak and OOM kills, as the kernel counts them now.
    pub fn usage(&self) -> Vec<NodeMemory> {
        observe(&self.paths.nodes)
            .into_iter()
            .map(|m| NodeMemory {
                cap_bytes: self.cap_bytes,
                ..m
            })
            .collect()
    }

    /// Removes the cgroups ([`CgroupPaths::remove`]).
    pub fn remove(mut self) -> Result<()> {
        self.removed = true;
        self.paths.remove()
    }
}

impl Drop for RunCgroups {
    /// Cgroups left behind by an error are removed, never orphaned.
    fn drop(&mut self) {
        if !self.removed {
            if let Err(e) = self.paths.remove() {
                eprintln!("varve bench: {e}");
            }
        }
    }
}

/// Makes the process `command` starts join `cgroup` between fork and exec,
/// so that everything it allocates is charged there from its first byte.
/// Writing `0` to `cgroup.procs` moves the writing process (cgroup v1). A
/// failure (no such cgroup, no permission) fails the spawn with its error.
pub fn join_before_exec(command: &mut Command, cgroup: &Path) -> Result<()> {
    use std::os::unix::process::CommandExt;
    let procs = cgroup.join("cgroup.procs");
    let path = CString::new(procs.as_os_str().as_bytes()).map_err(|_| {
        BenchError::config(
            "memory-cap",
            format!("{} holds a NUL byte", procs.display()),
        )
    })?;
    let hook = move || -> std::io::Result<()> {
        // Between fork and exec only async-signal-safe calls: open, write,
        // close on a path prepared before the fork; no allocation.
        // SAFETY: `path` is a valid NUL-terminated string owned by the closure.
        let fd = unsafe { libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: writes one byte from a static buffer to the fd just opened.
        let written = unsafe { libc::write(fd, b"0".as_ptr().cast(), 1) };
        let error = std::io::Error::last_os_error();
        // SAFETY: closes the fd opened above, once.
        unsafe { libc::close(fd) };
        match written {
            1 => Ok(()),
            _ => Err(error),
        }
    };
    // SAFETY: the hook only makes async-signal-safe system calls (above).
    unsafe { command.pre_exec(hook) };
    Ok(())
}

#[cfg(test)]
mod tests;
