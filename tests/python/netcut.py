"""Network cuts between the nodes of a local cluster, for tests.

The nodes of `varve cluster` listen on 127.0.0.1 .. 127.0.0.N, one storage
port for all, and open their internode connections from their own address
(`listen_address`). A cut between two groups of nodes is a set of policy
routing rules (`ip rule ... blackhole`) that match the storage port's
traffic between their addresses, in both directions: connections already
open stop carrying packets (their data waits in the socket, as on a dead
link), new ones fail, and nothing else on the host is touched: clients
still reach every node's CQL and admin ports, and other tests on other
ports run on. Healing deletes the rules; TCP then delivers what waited.

Why routing rules: this machine's kernel has no `netem` or `prio` queueing
discipline and no iptables or nftables, but policy routing is built in.
Rules are looked up before routes, except that the kernel's own rule for
local addresses comes first (preference 0, the lowest). `Cuts` therefore
moves that rule to `LOCAL_RULE_PREF` (adding it there, then deleting the
one at 0: local addresses are never without a rule) before adding its own
below it. The move is left in place: with no other rule below 1000 the
routing is the same, and tests that cut at the same time in other
processes (pytest workers, the Rust driver tests) must not have it undone
under them. Needs root (CAP_NET_ADMIN), as the tests run in CI.
"""

import os
import subprocess

# Where the kernel's `lookup local` rule goes while cuts are in place; the
# cut rules take the preferences below it.
LOCAL_RULE_PREF = 1000
CUT_RULE_PREF = 500


def available():
    """Whether this process may change the routing rules (root, and `ip`)."""
    if os.geteuid() != 0:
        return False
    try:
        return subprocess.run(["ip", "rule", "show"], capture_output=True).returncode == 0
    except OSError:  # no `ip` on this machine
        return False


def _ip_rule(*args, check=True):
    done = subprocess.run(["ip", "rule", *args], capture_output=True, text=True)
    if check and done.returncode != 0:
        raise RuntimeError(f"ip rule {' '.join(args)}: {done.stderr.strip()}")
    return done


def _has_rule(pref, text):
    return text in _ip_rule("show", "pref", str(pref)).stdout


class Cuts:
    """The cuts of one test, on one storage port; a context manager that
    heals them all on exit."""

    def __init__(self, storage_port):
        self.port = str(storage_port)
        self.rules = []

    def __enter__(self):
        if not _has_rule(LOCAL_RULE_PREF, "lookup local"):
            # Another process may add it at the same moment ("exists").
            _ip_rule("add", "pref", str(LOCAL_RULE_PREF), "lookup", "local", check=False)
        if not _has_rule(LOCAL_RULE_PREF, "lookup local"):
            raise RuntimeError("ip rule: could not add the local rule at %d" % LOCAL_RULE_PREF)
        _ip_rule("del", "pref", "0", "lookup", "local", check=False)
        return self

    def __exit__(self, *exc):
        self.heal()
        return False

    def cut(self, side_a, side_b):
        """Drops the internode traffic between every address of `side_a`
        and every address of `side_b`, both ways."""
        for a in side_a:
            for b in side_b:
                for src, dst in ((a, b), (b, a)):
                    for direction in ("dport", "sport"):
                        rule = ["pref", str(CUT_RULE_PREF), "from", src, "to", dst,
                                "ipproto", "tcp", direction, self.port, "blackhole"]
                        _ip_rule("add", *rule)
                        self.rules.append(rule)

    def heal(self):
        """Removes every cut of this object."""
        while self.rules:
            _ip_rule("del", *self.rules.pop(), check=False)
