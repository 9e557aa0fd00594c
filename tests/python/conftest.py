"""Fixtures for the driver tests: a real `varve server` process over TCP.

- `varve_server` (session): one node for the whole run, on free ports
  (`--port 0 --admin-port 0`; the real ports are read from the ready line),
  with a temporary data dir. Stopped with SIGTERM at the end; it must exit 0.
- `varve_addr`: its (host, port).
- `start_varve` (per test): a factory for separate nodes, for tests that need
  isolation (restart, overload, shutdown); every node it made is stopped after
  the test.
- `cluster` / `session` (per module, parametrized v4 and v5): a
  cassandra-driver Cluster / Session on the shared node.
- `keyspace`: a fresh keyspace per module (and protocol version), set as the
  session's keyspace; `make_keyspace(session)` makes more.

The binary is `$VARVE_BIN`, else target/debug/varve of this repo.

Runs under pytest-xdist (`--dist loadgroup`, scripts/test.sh). The
`test_cluster_*` modules run nodes on fixed addresses and ports
(127.0.0.x:19042 and the like). Each names the native port of the port set it
uses (`FIXED_PORTS`); the modules that share a set run in order on one worker,
and different sets run side by side. The single-node tests, on free ports, go
to any worker.
"""

import os
import re
import signal
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
READY_TIMEOUT_S = 30
STOP_TIMEOUT_S = 15
PROTOCOL_VERSIONS = [4, 5]
READY_RE = re.compile(r"varve ready: CQL on (?P<host>[^\s:]+):(?P<port>\d+), admin on https?://[^\s:]+:(?P<admin>\d+)")


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the markers
def pytest_collection_modifyitems(config, items):
    """Puts the tests of the multi-node modules that share a port set in one
    xdist group (see above)."""
    for item in items:
        module = item.module
        if not module.__name__.startswith("test_cluster_"):
            continue
        ports = getattr(module, "FIXED_PORTS", None)
        if ports is None:
            raise pytest.UsageError(f"{module.__name__} runs nodes on fixed ports: set FIXED_PORTS (conftest.py)")
        item.add_marker(pytest.mark.xdist_group(f"fixed-ports-{ports}"))


def varve_bin():
    path = os.environ.get("VARVE_BIN") or str(REPO / "target" / "debug" / "varve")
    if not os.path.exists(path):
        pytest.exit(f"varve binary not found at {path}: run `cargo build -p varve` or set VARVE_BIN", 2)
    return path


class VarveNode:
    """A `varve server` child process and what its ready line said."""

    def __init__(self, data_dir, extra_args=(), listen="127.0.0.1", storage_port=0):
        self.listen = listen
        self.storage_port = storage_port
        self.data_dir = Path(data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.extra_args = list(extra_args)
        self.log_path = self.data_dir.parent / f"{self.data_dir.name}.log"
        self.proc = None
        self.host = self.port = self.admin_port = None

    def start(self, port=0, admin_port=0, timeout_s=READY_TIMEOUT_S):
        cmd = [varve_bin(), "server", "--listen", self.listen, "--port", str(port),
               "--admin-port", str(admin_port), "--storage-port", str(self.storage_port),
               "--data-dir", str(self.data_dir),
               *self.extra_args]
        self._log = open(self.log_path, "ab")
        self._log_offset = self.log_path.stat().st_size  # a restart appends to the same log
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self._started_at = time.monotonic()
        deadline = self._started_at + timeout_s
        while time.monotonic() < deadline:
            match = READY_RE.search(self.log()[self._log_offset:])
            if match:
                self.ready_after_s = time.monotonic() - self._started_at
                self.host, self.port, self.admin_port = match["host"], int(match["port"]), int(match["admin"])
                return self
            if self.proc.poll() is not None:
                raise RuntimeError(f"varve exited with {self.proc.returncode} before ready:\n{self.log_tail()}")
            time.sleep(0.02)
        self.proc.kill()
        raise RuntimeError(f"varve not ready after {timeout_s}s:\n{self.log_tail()}")

    def log(self):
        """The whole log, every start of this node included."""
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def log_tail(self, lines=40):
        return "\n".join(self.log().splitlines()[-lines:])

    def stop(self, sig=signal.SIGTERM):
        """Sends `sig` and returns the exit code (killing after a timeout)."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()
        code = self.proc.returncode
        self.proc = None
        return code

    @property
    def running(self):
        return self.proc is not None and self.proc.poll() is None


@pytest.fixture(scope="session")
def varve_server():
    with tempfile.TemporaryDirectory(prefix="varve-test-") as tmp:
        node = VarveNode(Path(tmp) / "node").start()
        yield node
        code = node.stop()
        assert code == 0, f"varve exited with {code} on SIGTERM:\n{node.log_tail()}"


@pytest.fixture(scope="session")
def varve_addr(varve_server):
    return varve_server.host, varve_server.port


@pytest.fixture
def start_varve(tmp_path):
    """`start_varve(*extra_args, data_dir=None)` starts a separate node."""
    nodes = []

    def start(*extra_args, data_dir=None):
        node = VarveNode(data_dir or tmp_path / f"node{len(nodes)}", extra_args).start()
        nodes.append(node)
        return node

    yield start
    for node in nodes:
        if node.running:
            node.stop(signal.SIGKILL)


def nodetool(node, *args, timeout=300):
    """Runs `varve nodetool` against `node`'s admin port; returns its stdout."""
    out = subprocess.run([varve_bin(), "nodetool", "-p", str(node.admin_port), *args],
                         capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, out.stderr
    return out.stdout


def connect(host, port, protocol_version, local_dc="datacenter1", **kwargs):
    """A Cluster pinned to one protocol version, token-aware, local DC."""
    from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
    from cassandra.policies import DCAwareRoundRobinPolicy, TokenAwarePolicy

    profile = ExecutionProfile(
        load_balancing_policy=TokenAwarePolicy(DCAwareRoundRobinPolicy(local_dc=local_dc)),
        request_timeout=20,
    )
    kwargs.setdefault("connect_timeout", 10)
    kwargs.setdefault("control_connection_timeout", 10)
    return Cluster([host], port=port, protocol_version=protocol_version,
                   execution_profiles={EXEC_PROFILE_DEFAULT: profile}, **kwargs)


def pinned_cluster(host, port, protocol_version=5, **kwargs):
    """A Cluster that sends every request to `host` as coordinator.

    system.local and system.peers answer for the node that coordinates the
    query, so a test of one node's view must pin its queries to that node:
    a round-robin driver spreads them over every node it has found."""
    from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
    from cassandra.policies import WhiteListRoundRobinPolicy

    profile = ExecutionProfile(load_balancing_policy=WhiteListRoundRobinPolicy([host]),
                               request_timeout=20)
    kwargs.setdefault("max_schema_agreement_wait", 0)
    return Cluster([host], port=port, protocol_version=protocol_version,
                   execution_profiles={EXEC_PROFILE_DEFAULT: profile}, **kwargs)


def peer_rows(host, port, columns):
    """The rows of `host`'s own system.peers (`columns` selected)."""
    cluster = pinned_cluster(host, port)
    try:
        return list(cluster.connect().execute(f"SELECT {columns} FROM system.peers"))
    finally:
        cluster.shutdown()


@pytest.fixture(scope="module", params=PROTOCOL_VERSIONS, ids=lambda v: f"v{v}")
def protocol_version(request):
    return request.param


@pytest.fixture(scope="module")
def cluster(varve_addr, protocol_version):
    c = connect(*varve_addr, protocol_version)
    yield c
    c.shutdown()


@pytest.fixture(scope="module")
def session(cluster):
    s = cluster.connect()
    yield s
    s.shutdown()


def make_keyspace(session, name=None, rf=1):
    """Creates a fresh SimpleStrategy keyspace and returns its name."""
    name = name or f"ks_{uuid.uuid4().hex[:12]}"
    session.execute(
        f"CREATE KEYSPACE {name} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': {rf}}}"
    )
    return name


@pytest.fixture(scope="module")
def keyspace(session):
    name = make_keyspace(session)
    session.set_keyspace(name)
    yield name
    try:
        session.execute(f"DROP KEYSPACE IF EXISTS {name}")
    except Exception:  # noqa: BLE001 - cleanup must not mask the test result
        pass
