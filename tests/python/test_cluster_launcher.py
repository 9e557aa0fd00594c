"""`varve cluster`: a local cluster of real `varve server` processes on
127.0.0.1 .. 127.0.0.N with the same ports on every address.

These check the launcher's own promises: every node runs on its address
with its data centre and rack, `status` tells running from killed nodes,
`kill N` is a crash (SIGKILL) after which `start N` brings the node back
with its data, and `stop` ends every process. (That the nodes form one
cluster, with peers and replication, belongs to the cluster's own tests.)
The ports are not the defaults, so a node a developer runs on 9042 does not
collide with these.
"""

import re
import subprocess

import pytest

from conftest import connect, varve_bin

PORTS = ["--native-port", "19042", "--admin-port", "19180", "--storage-port", "17000"]


def varve_cluster(directory, *args, check=True):
    cmd = [varve_bin(), "cluster", "--dir", str(directory), *args]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if check and done.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed:\n{done.stdout}\n{done.stderr}")
    return done


def status(directory):
    """{node index: (address, dc, state)} from `varve cluster status`."""
    out = varve_cluster(directory, "status").stdout
    nodes = {}
    for line in out.splitlines()[1:]:
        m = re.match(r"node(\d+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(.*)$", line)
        assert m, line
        nodes[int(m.group(1))] = (m.group(2), m.group(3), m.group(5).strip())
    return nodes


def local_row(host, dc):
    cluster = connect(host, 19042, 5, local_dc=dc)
    try:
        row = cluster.connect().execute(
            "SELECT listen_address, data_center, rack, cluster_name FROM system.local").one()
        return (str(row.listen_address), row.data_center, row.rack, row.cluster_name)
    finally:
        cluster.shutdown()


@pytest.fixture
def cluster_dir(tmp_path):
    directory = tmp_path / "cluster"
    yield directory
    if (directory / "cluster.json").exists():
        varve_cluster(directory, "stop", check=False)


def test_three_nodes_over_two_data_centres_start_and_answer_on_their_addresses(cluster_dir):
    out = varve_cluster(cluster_dir, "start", "--nodes", "3", "--dcs", "2", *PORTS).stdout
    assert "127.0.0.1:19042,127.0.0.2:19042,127.0.0.3:19042" in out, out
    assert status(cluster_dir) == {
        1: ("127.0.0.1", "dc1", "up"),
        2: ("127.0.0.2", "dc1", "up"),
        3: ("127.0.0.3", "dc2", "up"),
    }
    assert local_row("127.0.0.1", "dc1") == ("127.0.0.1", "dc1", "rack1", "varve-local")
    assert local_row("127.0.0.3", "dc2") == ("127.0.0.3", "dc2", "rack1", "varve-local")
    cluster = connect("127.0.0.2", 19042, 5, local_dc="dc1")
    host_id = cluster.connect().execute("SELECT host_id FROM system.local").one().host_id
    cluster.shutdown()
    info = varve_cluster(cluster_dir, "nodetool", "2", "info").stdout
    assert str(host_id) in info, info


def test_a_killed_node_is_down_until_started_again_with_its_data(cluster_dir):
    varve_cluster(cluster_dir, "start", "--nodes", "2", *PORTS)
    cluster = connect("127.0.0.2", 19042, 5)
    s = cluster.connect()
    s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}")
    s.execute("CREATE TABLE ks.t (k int PRIMARY KEY, v text)")
    s.execute("INSERT INTO ks.t (k, v) VALUES (1, 'kept')")
    cluster.shutdown()

    varve_cluster(cluster_dir, "kill", "2")
    nodes = status(cluster_dir)
    assert nodes[1][2] == "up" and nodes[2][2] == "down", nodes

    varve_cluster(cluster_dir, "start", "2")
    assert status(cluster_dir)[2][2] == "up"
    cluster = connect("127.0.0.2", 19042, 5)
    row = cluster.connect().execute("SELECT v FROM ks.t WHERE k = 1").one()
    cluster.shutdown()
    assert row.v == "kept"

    varve_cluster(cluster_dir, "stop")
    assert all(state == "down" for _, _, state in status(cluster_dir).values())


def test_commands_on_a_directory_without_a_cluster_say_so(tmp_path):
    done = varve_cluster(tmp_path / "none", "status", check=False)
    assert done.returncode != 0
    assert "holds no cluster" in done.stderr
    done = varve_cluster(tmp_path / "none", "start", "--nodes", "33", *PORTS, check=False)
    assert done.returncode != 0 and "between 1 and 32" in done.stderr
