//! The memory a node may use, from its cgroup, and the memory budgets'
//! defaults fitted to it (docs/design/read-path-io.md, "Memory budget").
//!
//! In a container the kernel charges the node's own memory and the page
//! cache of its files to one limit. The budgets Varve controls are the
//! memtables (writes wait past four times `memtable_heap_space`), the chunk
//! cache (`file_cache_size`) and the key cache. Their defaults (256 MiB,
//! 512 MiB, 100 MiB) suit a machine of several GiB; under a smaller limit,
//! each default that was not set explicitly shrinks to a share of the
//! limit, so that the memtables at their hard limit and the caches stay
//! within about 40% of it; the rest is for the node's own working memory
//! (its allocator keeps some of what it frees, per thread) and the page
//! cache, which holds the sstables' indexes. With `disk_access_mode:
//! direct` the page cache holds no sstable data and the chunk cache takes
//! a quarter instead of an eighth (about 53% in all).

/// Share of the limit that `memtable_heap_space` may default to (its hard
/// limit, four times it, is then a quarter of the limit). With an eighth,
/// a node in 1.5 GiB loading at full speed held 650 MiB of memtables
/// (flushes fell behind up to the hard limit, half the node's memory), and
/// the page cache left for indexes and data shrank to a tenth of it.
pub const MEMTABLE_SHARE_DIVISOR: u64 = 16;
/// Share of the node's memory (its cgroup's limit, else the machine's)
/// that `file_cache_size` defaults to. Cassandra's 512 MiB, on a machine
/// whose page cache held the data, made in-memory reads of a table larger
/// than it 0.65x as fast as reading the mapped files had been (every third
/// chunk missed and was copied in again); an eighth of the machine keeps
/// such a table in the cache, and an eighth of a container's limit leaves
/// the rest to the page cache that holds the indexes.
pub const FILE_CACHE_SHARE_DIVISOR: u64 = 8;
/// The share `file_cache_size` defaults to with `disk_access_mode: direct`,
/// where the chunk cache is the only cache of sstable data. With 8 GB in
/// 2.5 GiB a chunk cache of three eighths of the limit served 1.22x the
/// operations per CPU-second of `standard`'s default, with the node's
/// anonymous memory peaking at 70% of the limit; half of it peaked at 94%,
/// too near the limit. A quarter keeps the margin in smaller containers,
/// where the node's own working memory is a larger share.
pub const DIRECT_FILE_CACHE_SHARE_DIVISOR: u64 = 4;
/// The largest `file_cache_size` the default grows to on a large machine.
pub const FILE_CACHE_DEFAULT_MAX: u64 = 32 << 30;
/// Share of the limit that `key_cache_size` may default to.
pub const KEY_CACHE_SHARE_DIVISOR: u64 = 32;
/// A cgroup v1 limit at or above this means "no limit" (the kernel writes
/// `PAGE_COUNTER_MAX` pages, about 2^63 bytes).
const UNLIMITED_AT: u64 = 1 << 62;

/// The memory limit of this process's cgroup (the smallest along its path),
/// when one is set.
pub fn cgroup_memory_limit() -> Option<u64> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let v2_root = if std::path::Path::new("/sys/fs/cgroup/cgroup.controllers").exists() {
        "/sys/fs/cgroup"
    } else {
        "/sys/fs/cgroup/unified"
    };
    limit_from(&own, v2_root, |path| std::fs::read_to_string(path).ok())
}

/// [`cgroup_memory_limit`] from the text of /proc/self/cgroup, reading
/// control files with `read`.
fn limit_from(own: &str, v2_root: &str, read: impl Fn(&str) -> Option<String>) -> Option<u64> {
    let mut limit: Option<u64> = None;
    for line in own.lines() {
        let mut fields = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) =
            (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let file = if controllers.is_empty() {
            (v2_root, "memory.max")
        } else if controllers.split(',').any(|c| c == "memory") {
            ("/sys/fs/cgroup/memory", "memory.limit_in_bytes")
        } else {
            continue;
        };
        for dir in ancestors(path) {
            let text = read(&format!("{}{dir}/{}", file.0, file.1));
            let Some(bytes) = text.and_then(|t| t.trim().parse::<u64>().ok()) else {
                continue; // "max", or no such file at this level
            };
            if bytes < UNLIMITED_AT {
                limit = Some(limit.map_or(bytes, |l| l.min(bytes)));
            }
        }
    }
    limit
}

/// `/a/b` and its ancestors `/a` and `` (the root), deepest first.
fn ancestors(path: &str) -> Vec<&str> {
    let path = path.trim_end_matches('/');
    let mut out = vec![path];
    let mut rest = path;
    while let Some(at) = rest.rfind('/') {
        rest = &rest[..at];
        out.push(rest);
    }
    out.dedup();
    out
}

/// The machine's physical memory (`MemTotal` in /proc/meminfo), when known.
pub fn physical_memory() -> Option<u64> {
    mem_total_from(&std::fs::read_to_string("/proc/meminfo").ok()?)
}

/// `MemTotal` in bytes from the text of /proc/meminfo.
fn mem_total_from(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let mut words = line.split_whitespace().skip(1);
    let kib: u64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") => kib.checked_mul(1024),
        _ => None,
    }
}

/// `file_cache_size`'s default: `1 / divisor` of the node's memory, the
/// cgroup's limit when one is set, else the machine's (at most
/// [`FILE_CACHE_DEFAULT_MAX`]); `fallback` (Cassandra's 512 MiB) when
/// neither is known. The divisor is [`FILE_CACHE_SHARE_DIVISOR`], or
/// [`DIRECT_FILE_CACHE_SHARE_DIVISOR`] when reads bypass the page cache.
pub fn file_cache_default(
    cgroup_limit: Option<u64>,
    physical: Option<u64>,
    fallback: u64,
    divisor: u64,
) -> u64 {
    match cgroup_limit.or(physical) {
        Some(memory) => (memory / divisor.max(1)).min(FILE_CACHE_DEFAULT_MAX),
        None => fallback,
    }
}

/// A budget's default, fitted to `limit`: at most `limit / divisor`.
pub fn fitted(default: u64, limit: Option<u64>, divisor: u64) -> u64 {
    match limit {
        Some(l) => default.min(l / divisor),
        None => default,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn files(entries: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = entries
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |p| map.get(p).cloned()
    }

    #[test]
    fn a_v1_memory_limit_is_read_along_the_path() {
        let own = "12:memory:/bench/node\n11:cpu:/bench\n0::/bench\n";
        let read = files(&[
            (
                "/sys/fs/cgroup/memory/bench/node/memory.limit_in_bytes",
                "1610612736\n",
            ),
            (
                "/sys/fs/cgroup/memory/bench/memory.limit_in_bytes",
                "9223372036854771712\n",
            ),
            (
                "/sys/fs/cgroup/memory/memory.limit_in_bytes",
                "9223372036854771712\n",
            ),
        ]);
        assert_eq!(
            limit_from(own, "/sys/fs/cgroup/unified", read),
            Some(1_610_612_736)
        );
    }

    #[test]
    fn a_parents_smaller_limit_wins() {
        let own = "0::/a/b\n";
        let read = files(&[
            ("/sys/fs/cgroup/a/b/memory.max", "max\n"),
            ("/sys/fs/cgroup/a/memory.max", "2147483648\n"),
        ]);
        assert_eq!(limit_from(own, "/sys/fs/cgroup", read), Some(2 << 30));
    }

    #[test]
    fn no_limit_anywhere_is_none() {
        let own = "0::/user.slice\n5:memory:/user.slice\n";
        let read = files(&[
            ("/sys/fs/cgroup/user.slice/memory.max", "max"),
            (
                "/sys/fs/cgroup/memory/user.slice/memory.limit_in_bytes",
                "9223372036854771712",
            ),
        ]);
        assert_eq!(limit_from(own, "/sys/fs/cgroup", read), None);
        assert_eq!(limit_from("", "/sys/fs/cgroup", files(&[])), None);
        assert_eq!(limit_from("garbage\n", "/sys/fs/cgroup", files(&[])), None);
    }

    #[test]
    fn defaults_shrink_to_their_share_of_a_limit_and_no_further() {
        let mib = 1u64 << 20;
        let limit = Some(1536 * mib);
        assert_eq!(fitted(256 * mib, limit, MEMTABLE_SHARE_DIVISOR), 96 * mib);
        assert_eq!(fitted(100 * mib, limit, KEY_CACHE_SHARE_DIVISOR), 48 * mib);
        // A large limit keeps the defaults.
        assert_eq!(
            fitted(256 * mib, Some(64 << 30), MEMTABLE_SHARE_DIVISOR),
            256 * mib
        );
        assert_eq!(fitted(256 * mib, None, MEMTABLE_SHARE_DIVISOR), 256 * mib);
    }

    #[test]
    fn the_chunk_cache_defaults_to_an_eighth_of_the_limit_else_of_the_machine() {
        let mib = 1u64 << 20;
        let gib = 1u64 << 30;
        let fallback = 512 * mib;
        // A container's limit wins over the machine's memory, both ways.
        assert_eq!(
            file_cache_default(
                Some(1536 * mib),
                Some(24 * gib),
                fallback,
                FILE_CACHE_SHARE_DIVISOR
            ),
            192 * mib
        );
        assert_eq!(
            file_cache_default(
                Some(8 * gib),
                Some(4 * gib),
                fallback,
                FILE_CACHE_SHARE_DIVISOR
            ),
            gib
        );
        assert_eq!(
            file_cache_default(None, Some(24 * gib), fallback, FILE_CACHE_SHARE_DIVISOR),
            3 * gib
        );
        assert_eq!(
            file_cache_default(None, Some(4 * gib), fallback, FILE_CACHE_SHARE_DIVISOR),
            512 * mib
        );
        // Bounded on a large machine; Cassandra's 512 MiB when nothing is known.
        let at_max = FILE_CACHE_DEFAULT_MAX * FILE_CACHE_SHARE_DIVISOR;
        assert_eq!(
            file_cache_default(None, Some(at_max), fallback, FILE_CACHE_SHARE_DIVISOR),
            FILE_CACHE_DEFAULT_MAX
        );
        assert_eq!(
            file_cache_default(
                None,
                Some(at_max + 8 * gib),
                fallback,
                FILE_CACHE_SHARE_DIVISOR
            ),
            FILE_CACHE_DEFAULT_MAX
        );
        assert_eq!(
            file_cache_default(None, None, fallback, FILE_CACHE_SHARE_DIVISOR),
            fallback
        );
    }

    #[test]
    fn reads_around_the_page_cache_default_to_a_quarter_of_the_limit() {
        let mib = 1u64 << 20;
        let direct = DIRECT_FILE_CACHE_SHARE_DIVISOR;
        assert_eq!(
            file_cache_default(Some(2560 * mib), None, 512 * mib, direct),
            640 * mib
        );
        assert_eq!(
            file_cache_default(Some(1536 * mib), None, 512 * mib, direct),
            384 * mib
        );
        assert_eq!(file_cache_default(None, None, 512 * mib, direct), 512 * mib);
    }

    #[test]
    fn mem_total_is_read_in_kib() {
        let meminfo = "MemTotal:       24577612 kB\nMemFree:         1000 kB\n";
        assert_eq!(mem_total_from(meminfo), Some(24_577_612 * 1024));
        assert_eq!(mem_total_from("MemFree: 1 kB\n"), None);
        assert_eq!(mem_total_from("MemTotal: lots kB\n"), None);
        assert_eq!(mem_total_from("MemTotal: 12\n"), None, "no unit");
        assert!(
            physical_memory().is_some_and(|m| m > 0),
            "this machine's /proc/meminfo"
        );
    }

    #[test]
    fn ancestors_run_to_the_root() {
        assert_eq!(ancestors("/a/b"), vec!["/a/b", "/a", ""]);
        assert_eq!(ancestors("/"), vec![""]);
    }
}
