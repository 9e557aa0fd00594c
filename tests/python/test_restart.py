"""What survives a restart of a node: its schema (and, with the durable
engine of issue 3, its data)."""

import signal

from conftest import connect


def test_schema_survives_sigterm_and_sigkill(start_varve, tmp_path):
    node = start_varve(data_dir=tmp_path / "schema-node")
    cluster = connect(node.host, node.port, 5)
    s = cluster.connect()
    s.execute("CREATE KEYSPACE rs WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}"
              " AND durable_writes = false")
    s.execute("CREATE TABLE rs.t (k int, c text, v list<int>, s int static, PRIMARY KEY (k, c))"
              " WITH CLUSTERING ORDER BY (c DESC) AND comment = 'kept' AND gc_grace_seconds = 77")
    s.execute("ALTER TABLE rs.t ADD w blob")
    s.execute("ALTER TABLE rs.t DROP v")
    s.execute("CREATE TABLE rs.gone (k int PRIMARY KEY)")
    s.execute("DROP TABLE rs.gone")
    before = cluster.metadata.keyspaces["rs"].export_as_string()
    cluster.shutdown()

    for sig in (signal.SIGTERM, signal.SIGKILL):
        node.stop(sig)
        node.start()
        cluster = connect(node.host, node.port, 5)
        cluster.connect()
        ks = cluster.metadata.keyspaces["rs"]
        assert ks.export_as_string() == before
        assert not ks.durable_writes
        assert set(ks.tables) == {"t"}
        t = ks.tables["t"]
        assert list(t.columns) == ["k", "c", "s", "w"]
        assert t.options["comment"] == "kept" and t.options["gc_grace_seconds"] == 77
        cluster.shutdown()
