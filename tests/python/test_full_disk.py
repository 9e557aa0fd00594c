"""A real full disk under a real node: its data directory is a small tmpfs
(mounting one needs root, which CI has; elsewhere the test is skipped). Writes
fill it until one fails; the client gets a WriteFailure that says the disk is full,
the node keeps serving every acknowledged write, takes writes again once space
returns, and after a SIGKILL and restart nothing acknowledged is missing."""

import os
import signal
import subprocess

import pytest

from test_durability import KS_CQL, open_session, select_all, server_error, write_config

DISK_MIB = 24
VALUE_BYTES = 64 * 1024
MAX_WRITES = 2000  # 125 MiB of values: far past the disk


@pytest.fixture
def small_disk(tmp_path):
    """A DISK_MIB tmpfs to hold a node's data directory (its log stays outside)."""
    path = tmp_path / "small" / "data"
    path.mkdir(parents=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DISK_MIB}m", "tmpfs", str(path)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (root only): {mounted.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def test_full_disk_fails_writes_clearly_and_loses_nothing(start_varve, tmp_path, small_disk):
    cfg = write_config(tmp_path / "full.yaml", commitlog_sync="batch", commitlog_segment_size="1MiB",
                       memtable_heap_space="4MiB")
    node = start_varve("--config", cfg, data_dir=small_disk)
    cluster, s = open_session(node)
    s.execute(KS_CQL.format("fd"))
    s.execute("CREATE TABLE fd.t (k int PRIMARY KEY, v blob)")
    insert = s.prepare("INSERT INTO fd.t (k, v) VALUES (?, ?)")
    acked = {}
    failure = None
    for k in range(MAX_WRITES):
        value = os.urandom(VALUE_BYTES)
        try:
            s.execute(insert, (k, value))
        except Exception as e:  # noqa: BLE001 - inspected below
            failure = server_error(e)
            break
        acked[k] = value
    assert failure is not None, f"{MAX_WRITES} writes of {VALUE_BYTES} B fit on a {DISK_MIB} MiB disk"
    assert acked, "not one write fit"
    assert type(failure).__name__ == "WriteFailure", repr(failure)  # 0x1500, as Cassandra
    assert "No space left on device" in str(failure), repr(failure)

    # The node still serves every acknowledged write.
    assert select_all(s, "fd.t") == {k: (v,) for k, v in acked.items()}

    # Space returns: writes are taken again.
    subprocess.run(["mount", "-o", f"remount,size={16 * DISK_MIB}m", str(small_disk)], check=True)
    late = {MAX_WRITES + i: os.urandom(VALUE_BYTES) for i in range(20)}
    for k, value in late.items():
        s.execute(insert, (k, value))
    acked.update(late)
    cluster.shutdown()

    # A crash and a restart: everything acknowledged is back.
    node.stop(signal.SIGKILL)
    node.start()
    cluster, s = open_session(node)
    assert select_all(s, "fd.t") == {k: (v,) for k, v in acked.items()}
    cluster.shutdown()
