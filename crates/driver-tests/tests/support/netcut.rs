//! Network cuts between the nodes of a local cluster (a port of
//! tests/python/netcut.py).
//!
//! The nodes of `varve cluster` listen on 127.0.0.1 .. 127.0.0.N, one
//! storage port for all, and open their internode connections from their
//! own address (`listen_address`). A cut between two groups of nodes is a
//! set of policy-routing rules (`ip rule ... blackhole`) matching the
//! storage port's traffic between their addresses, both ways: open
//! connections stop carrying packets (their data waits in the socket, as
//! on a dead link), new ones fail, and nothing else is touched: clients
//! still reach every node's CQL and admin ports, and tests on other ports
//! run on. Healing deletes the rules; TCP then delivers what waited.
//!
//! The kernel looks its `lookup local` rule up first (preference 0), so
//! [`Cuts::new`] moves it to [`LOCAL_RULE_PREF`] (added there, then
//! deleted at 0: local addresses are never without a rule) before adding
//! cut rules at [`CUT_RULE_PREF`]; `Drop` heals every cut. The move is
//! left in place, as netcut.py leaves it: the routing is the same, and a
//! test cutting at the same time in another process must not have it
//! undone under it. Needs root (CAP_NET_ADMIN), as the tests have here and
//! in CI.

use std::process::{Command, Output};

/// Where the kernel's `lookup local` rule goes while cuts are in place.
pub const LOCAL_RULE_PREF: u32 = 1000;
/// The preference of every cut rule: before the moved local rule.
pub const CUT_RULE_PREF: u32 = 500;

/// Whether this process may change the routing rules (root, and `ip`).
pub fn available() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let effective_root = status
        .lines()
        .find_map(|line| line.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().nth(1))
        == Some("0");
    // Without `ip` on the machine, no cuts (and no panic).
    effective_root
        && Command::new("ip")
            .args(["rule", "show"])
            .output()
            .is_ok_and(|out| out.status.success())
}

/// The cuts of one test, on one storage port; healed when dropped.
pub struct Cuts {
    port: String,
    /// Each rule added, as `ip rule add` took it (`del` takes the same).
    rules: Vec<Vec<String>>,
}

impl Cuts {
    /// Makes room for cuts on `storage_port`: moves the local rule after
    /// [`CUT_RULE_PREF`]. Panics (a test helper) if `ip rule` refuses.
    pub fn new(storage_port: u16) -> Cuts {
        let pref = LOCAL_RULE_PREF.to_string();
        if !has_local_rule(LOCAL_RULE_PREF) {
            // Another process may add it at the same moment ("exists").
            let _ = ip_rule(&["add", "pref", &pref, "lookup", "local"]);
        }
        assert!(
            has_local_rule(LOCAL_RULE_PREF),
            "ip rule: could not add the local rule at {pref}"
        );
        let _ = ip_rule(&["del", "pref", "0", "lookup", "local"]);
        Cuts {
            port: storage_port.to_string(),
            rules: Vec::new(),
        }
    }

    /// Drops the internode traffic between every address of `side_a` and
    /// every address of `side_b`, both ways.
    pub fn cut(&mut self, side_a: &[String], side_b: &[String]) {
        for a in side_a {
            for b in side_b {
                for (src, dst) in [(a, b), (b, a)] {
                    for direction in ["dport", "sport"] {
                        self.add(src, dst, direction);
                    }
                }
            }
        }
    }

    /// Removes every cut of this object.
    pub fn heal(&mut self) {
        while let Some(rule) = self.rules.pop() {
            let mut args = vec!["del"];
            args.extend(rule.iter().map(String::as_str));
            let _ = ip_rule(&args);
        }
    }

    fn add(&mut self, src: &str, dst: &str, direction: &str) {
        let pref = CUT_RULE_PREF.to_string();
        let rule: Vec<String> = [
            "pref",
            &pref,
            "from",
            src,
            "to",
            dst,
            "ipproto",
            "tcp",
            direction,
            &self.port,
            "blackhole",
        ]
        .map(String::from)
        .to_vec();
        let mut args = vec!["add"];
        args.extend(rule.iter().map(String::as_str));
        ip_rule_ok(&args);
        self.rules.push(rule);
    }
}

impl Drop for Cuts {
    fn drop(&mut self) {
        self.heal();
    }
}

/// Whether a `lookup local` rule sits at `pref`.
fn has_local_rule(pref: u32) -> bool {
    let out = ip_rule(&["show", "pref", &pref.to_string()]);
    String::from_utf8_lossy(&out.stdout).contains("lookup local")
}

fn ip_rule(args: &[&str]) -> Output {
    Command::new("ip")
        .arg("rule")
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("running ip rule: {e}"))
}

fn ip_rule_ok(args: &[&str]) {
    let out = ip_rule(args);
    assert!(
        out.status.success(),
        "ip rule {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr).trim()
    );
}
