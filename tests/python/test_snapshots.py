"""Snapshots, auto_snapshot and `nodetool import` against a real node: a
snapshot taken, the table dropped and created again, the snapshot's sstables
imported: every row is back. TRUNCATE and DROP snapshot first (their
auto_snapshot shows in listsnapshots) unless `auto_snapshot: false`; a damaged
sstable is refused and nothing of it is installed; clearsnapshot removes
snapshots."""

import json
import re
import shutil

from cassandra.concurrent import execute_concurrent_with_args

from test_durability import KS_CQL, nodetool, open_session, start_with, write_config

PARTITIONS = 200
ROWS_PER_PARTITION = 5
SCHEMA = "CREATE TABLE {}.tbl (k int, c int, v text, PRIMARY KEY (k, c))"


def fill(session, ks):
    """PARTITIONS x ROWS_PER_PARTITION rows, half flushed to sstables, half
    left in the memtable (the snapshot must flush them); returns them all."""
    insert = session.prepare(f"INSERT INTO {ks}.tbl (k, c, v) VALUES (?, ?, ?)")
    rows = [(k, c, f"value-{k}-{c}") for k in range(PARTITIONS) for c in range(ROWS_PER_PARTITION)]
    half = len(rows) // 2
    execute_concurrent_with_args(session, insert, rows[:half], concurrency=32, raise_on_first_error=True)
    return insert, rows, half


def all_rows(session, ks):
    return sorted((r.k, r.c, r.v) for r in session.execute(f"SELECT k, c, v FROM {ks}.tbl"))


def snapshots(node):
    """listsnapshots' lines as (name, keyspace, table), the header left out."""
    text = nodetool(node, "listsnapshots").stdout
    assert text.startswith("Snapshot Details: \n"), text
    if "There are no snapshots" in text:
        return []
    lines = text.splitlines()
    assert lines[1].split()[:4] == ["Snapshot", "name", "Keyspace", "name"], text
    assert "Total TrueDiskSpaceUsed:" in text, text
    return [tuple(line.split()[:3]) for line in lines[2:] if line and not line.startswith("Total")]


def snapshot_dir(node, ks, tag):
    dirs = list((node.data_dir / ks).glob(f"tbl-*/snapshots/{tag}"))
    assert len(dirs) == 1, dirs
    return dirs[0]


def test_a_snapshot_imported_after_drop_brings_every_row_back(start_varve, tmp_path):
    node = start_varve(data_dir=tmp_path / "node")
    cluster, s = open_session(node)
    ks = "snap"
    s.execute(KS_CQL.format(ks))
    s.execute(SCHEMA.format(ks))
    insert, rows, half = fill(s, ks)
    nodetool(node, "flush", ks)
    execute_concurrent_with_args(s, insert, rows[half:], concurrency=32, raise_on_first_error=True)
    assert all_rows(s, ks) == sorted(rows)

    out = nodetool(node, "snapshot", "-t", "t1", ks).stdout
    assert out == ("Requested creating snapshot(s) for [snap] with snapshot name [t1] and options "
                   "{skipFlush=false}\nSnapshot directory: t1\n"), out
    again = nodetool(node, "snapshot", "-t", "t1", ks, check=False)
    assert again.returncode != 0 and "snapshot t1 already exists for snap.tbl" in again.stderr, again
    assert snapshots(node) == [("t1", ks, "tbl")]

    snap = snapshot_dir(node, ks, "t1")
    manifest = json.loads((snap / "manifest.json").read_text())
    assert (manifest["keyspace"], manifest["table"]) == (ks, "tbl")
    assert sorted(manifest["files"]) == sorted(p.name for p in snap.glob("*.sst")) and manifest["files"]
    schema = (snap / "schema.cql").read_text()
    assert schema.startswith(f"CREATE TABLE {ks}.tbl ("), schema
    live = snap.parent.parent
    for name in manifest["files"]:
        assert (snap / name).stat().st_ino == (live / name).stat().st_ino, f"{name} is a hard link"

    restore = tmp_path / "restore"
    restore.mkdir()
    for name in manifest["files"]:
        shutil.copy(snap / name, restore / name)

    s.execute(f"DROP TABLE {ks}.tbl")
    s.execute(SCHEMA.format(ks))
    assert all_rows(s, ks) == []
    names = {name for name, _, _ in snapshots(node)}
    assert "t1" in names and any(re.fullmatch(r"dropped-\d+-tbl", n) for n in names), names

    out = nodetool(node, "import", ks, "tbl", str(restore)).stdout
    assert out.startswith(f"Imported {len(manifest['files'])} sstables ("), out
    assert all_rows(s, ks) == sorted(rows), "every row is back"
    assert list(restore.glob("*.sst")) == [], "moved into the table, as Cassandra does"

    # The imported sstables are the table's own: they survive a flush,
    # a compaction and a restart.
    nodetool(node, "compact", ks)
    cluster.shutdown()
    node.stop()
    node.start()
    cluster, s = open_session(node)
    assert all_rows(s, ks) == sorted(rows)

    cleared = nodetool(node, "clearsnapshot", "-t", "t1", ks).stdout
    assert cleared == "Requested clearing snapshot(s) for [snap] with snapshot name [t1]\n", cleared
    assert "t1" not in {name for name, _, _ in snapshots(node)}
    refused = nodetool(node, "clearsnapshot", check=False)
    assert refused.returncode != 0 and "Specify snapshot name or --all" in refused.stderr, refused
    nodetool(node, "clearsnapshot", "--all")
    assert snapshots(node) == []
    cluster.shutdown()


def test_truncate_takes_an_auto_snapshot(start_varve, tmp_path):
    node = start_varve(data_dir=tmp_path / "node")
    cluster, s = open_session(node)
    ks = "trunc"
    s.execute(KS_CQL.format(ks))
    s.execute(SCHEMA.format(ks))
    _, rows, half = fill(s, ks)
    s.execute(f"TRUNCATE {ks}.tbl")
    assert all_rows(s, ks) == []
    found = snapshots(node)
    assert len(found) == 1, found
    name, keyspace, table = found[0]
    assert re.fullmatch(r"truncated-\d+-tbl", name) and (keyspace, table) == (ks, "tbl"), found

    # Its sstables import back into the truncated table.
    out = nodetool(node, "import", "--copy-data", ks, "tbl", str(snapshot_dir(node, ks, name))).stdout
    assert out.startswith("Imported 1 sstables ("), out
    assert all_rows(s, ks) == sorted(rows[:half])
    assert list(snapshot_dir(node, ks, name).glob("*.sst")), "--copy-data keeps the sources"
    cluster.shutdown()


def test_auto_snapshot_false_takes_none(start_varve, tmp_path):
    node = start_with(start_varve, tmp_path, "off", auto_snapshot="false")
    cluster, s = open_session(node)
    ks = "nosnap"
    s.execute(KS_CQL.format(ks))
    s.execute(SCHEMA.format(ks))
    fill(s, ks)
    s.execute(f"TRUNCATE {ks}.tbl")
    fill(s, ks)
    s.execute(f"DROP TABLE {ks}.tbl")
    s.execute(SCHEMA.format(ks))
    s.execute(f"DROP KEYSPACE {ks}")
    assert snapshots(node) == []
    assert "There are no snapshots" in nodetool(node, "listsnapshots").stdout
    cluster.shutdown()


def test_a_damaged_sstable_is_refused_and_nothing_is_installed(start_varve, tmp_path):
    node = start_varve(data_dir=tmp_path / "node")
    cluster, s = open_session(node)
    ks = "damaged"
    s.execute(KS_CQL.format(ks))
    s.execute(SCHEMA.format(ks))
    _, rows, half = fill(s, ks)
    nodetool(node, "snapshot", "-t", "good", ks)
    snap = snapshot_dir(node, ks, "good")
    s.execute(f"TRUNCATE {ks}.tbl")

    for damage in ("cut", "flip"):
        bad = tmp_path / damage
        shutil.copytree(snap, bad)
        sstable = next(bad.glob("*.sst"))
        data = bytearray(sstable.read_bytes())
        if damage == "cut":
            data = data[:-200]
        else:
            data[64] ^= 0x01
        sstable.write_bytes(bytes(data))
        out = nodetool(node, "import", ks, "tbl", str(bad), check=False)
        assert out.returncode != 0, out
        assert "corrupt file" in out.stderr and sstable.name in out.stderr, out.stderr
        assert all_rows(s, ks) == [], "nothing of it is readable"
        assert sstable.exists(), "a refused source stays where it was"
    missing = nodetool(node, "import", ks, "nope", str(tmp_path), check=False)
    assert missing.returncode != 0 and "Unknown table nope" in missing.stderr, missing.stderr
    cluster.shutdown()
