"""Roles and permissions on a three-node cluster of real processes (`varve
cluster start` with PasswordAuthenticator and CassandraAuthorizer): they
live in the cluster metadata, so a role created on node 1 logs in on nodes
2 and 3 at once, a grant made on one node holds on the others, and the
default superuser is created once for the whole cluster."""

import pytest
from cassandra import Unauthorized
from cassandra.auth import PlainTextAuthProvider
from cassandra.cluster import NoHostAvailable

from conftest import pinned_cluster
from test_cluster_launcher import varve_cluster

# Ports no other test_cluster_* module uses.
NATIVE, ADMIN, STORAGE = 19542, 19680, 17500
FIXED_PORTS = NATIVE  # conftest.py: modules on this port set run in order
PORTS = ["--native-port", str(NATIVE), "--admin-port", str(ADMIN), "--storage-port", str(STORAGE)]
HOSTS = ["127.0.0.1", "127.0.0.2", "127.0.0.3"]
REPLICATION = "{'class': 'SimpleStrategy', 'replication_factor': 3}"


@pytest.fixture
def cluster_dir(tmp_path):
    config = tmp_path / "cassandra.yaml"
    config.write_text("authenticator: PasswordAuthenticator\nauthorizer: CassandraAuthorizer\n")
    directory = tmp_path / "cluster"
    varve_cluster(directory, "start", "--nodes", "3", *PORTS, "--", "--config", str(config))
    yield directory
    varve_cluster(directory, "stop", check=False)


def pinned(host, user, password):
    """A session whose requests all go to `host`, logged in as `user`."""
    cluster = pinned_cluster(host, NATIVE, auth_provider=PlainTextAuthProvider(user, password))
    return cluster, cluster.connect()


def logs(directory):
    return [p.read_text(errors="replace") for p in sorted(directory.rglob("*.log"))]


def test_a_role_created_on_one_node_works_on_every_node_at_once(cluster_dir):
    c1, admin = pinned(HOSTS[0], "cassandra", "cassandra")
    try:
        admin.execute(f"CREATE KEYSPACE IF NOT EXISTS aks WITH replication = {REPLICATION}")
        admin.execute("CREATE TABLE IF NOT EXISTS aks.t (k int PRIMARY KEY, v int)")
        admin.execute("CREATE ROLE alice WITH PASSWORD = 'wonder' AND LOGIN = true")
        # No wait: the statement returned once every node applied the change.
        for host in HOSTS[1:]:
            c, s = pinned(host, "alice", "wonder")
            try:
                with pytest.raises(Unauthorized, match="User alice has no SELECT permission on <table aks.t>"):
                    s.execute("SELECT * FROM aks.t")
            finally:
                c.shutdown()
        c2, admin2 = pinned(HOSTS[1], "cassandra", "cassandra")
        admin2.execute("GRANT SELECT ON KEYSPACE aks TO alice")
        c2.shutdown()
        for host in HOSTS:
            c, s = pinned(host, "alice", "wonder")
            try:
                s.execute("SELECT * FROM aks.t")
            finally:
                c.shutdown()
            c, s = pinned(host, "cassandra", "cassandra")
            roles = {r.role for r in s.execute("SELECT role FROM system_auth.roles")}
            c.shutdown()
            assert roles == {"cassandra", "alice"}, (host, roles)
        admin.execute("ALTER ROLE alice WITH PASSWORD = 'changed'")
        for host in HOSTS[1:]:
            with pytest.raises(NoHostAvailable):
                pinned(host, "alice", "wonder")
            c, _ = pinned(host, "alice", "changed")
            c.shutdown()
        admin.execute("DROP ROLE alice")
        with pytest.raises(NoHostAvailable):
            pinned(HOSTS[2], "alice", "changed")
    finally:
        c1.shutdown()
    created = sum(text.count("Created default superuser role") for text in logs(cluster_dir))
    assert created == 1, created
