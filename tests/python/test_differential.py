"""The differential corpus (tests/differential/) against the test server, checked
against results recorded from Apache Cassandra 5.0.4 (tests/differential/expected/).

One test per corpus file; the role and permission corpus (corpus_auth/) runs
on a node of its own with PasswordAuthenticator and CassandraAuthorizer,
logged in as the default superuser. A mismatch listed in known_differences.md is allowed;
any other mismatch fails the test with Cassandra's and Varve's results side by
side. Re-record with tests/differential/record.py when the corpus changes.
"""

import sys
from pathlib import Path

import pytest

from conftest import VarveNode, connect

DIFF_DIR = Path(__file__).resolve().parents[1] / "differential"
sys.path.insert(0, str(DIFF_DIR))

import harness  # noqa: E402  (lives in tests/differential)

CORPUS = harness.corpus_files()
AUTH_CORPUS = harness.corpus_files(auth=True)


@pytest.fixture(scope="module")
def diff_session(varve_addr):
    # Protocol v4 as the recordings were made with v4; the harness sets keyspaces itself.
    cluster = connect(*varve_addr, 4)
    session = cluster.connect()
    yield session
    cluster.shutdown()


@pytest.fixture(scope="module")
def auth_session(tmp_path_factory):
    home = tmp_path_factory.mktemp("diff-auth")
    config = home / "cassandra.yaml"
    config.write_text("authenticator: PasswordAuthenticator\nauthorizer: CassandraAuthorizer\n")
    node = VarveNode(home / "node", ["--config", str(config)]).start()
    cluster, session = harness.connect(node.host, node.port, 4, harness.AUTH_LOGIN)
    yield session
    cluster.shutdown()
    assert node.stop() == 0, node.log_tail()


def describe(m):
    def one(res):
        if res["kind"] == "error":
            return f"{res['class']}: {res['message'][:200]}"
        return f"columns={res['columns']} rows={str(res['rows'])[:300]}"

    return (f"{m['file']}:{m['line']}: {m['reason']}\n  {harness.normalize_ws(m['statement'])[:200]}\n"
            f"  Cassandra: {one(m['expected'])}\n  Varve:     {one(m['actual'])}")


@pytest.mark.parametrize("corpus_file", CORPUS, ids=[f.stem for f in CORPUS])
def test_matches_cassandra_recording(diff_session, corpus_file):
    mismatches, problems = harness.compare_with_expected(diff_session, corpus_file, harness.load_known())
    assert not problems, problems
    unexpected = [m for m in mismatches if not m["known"]]
    assert not unexpected, f"{len(unexpected)} differences from Cassandra:\n" + "\n".join(
        describe(m) for m in unexpected)


@pytest.mark.parametrize("corpus_file", AUTH_CORPUS, ids=[f.stem for f in AUTH_CORPUS])
def test_roles_and_permissions_match_cassandra_recording(auth_session, corpus_file):
    test_matches_cassandra_recording(auth_session, corpus_file)


def test_corpus_splitter_keeps_batches_and_quotes():
    statements = harness.split_statements(
        "-- @unordered\nSELECT ';' FROM t;\nBEGIN BATCH INSERT INTO t (k) VALUES (1); APPLY BATCH;\n"
        "SELECT $$a;b$$ FROM t; -- trailing\nSELECT 'it''s' FROM t;")
    assert [s.text for s in statements] == [
        "SELECT ';' FROM t", "BEGIN BATCH INSERT INTO t (k) VALUES (1); APPLY BATCH",
        "SELECT $$a;b$$ FROM t", "SELECT 'it''s' FROM t"]
    assert statements[0].flag("unordered") and not statements[1].directives


def test_known_differences_name_real_statements():
    known = harness.load_known()
    assert known, "known_differences.md parsed to nothing"
    in_corpus = {(f.name, harness.normalize_ws(st.raw)) for f in CORPUS + AUTH_CORPUS
                 for st in harness.load_corpus(f)[1]}
    stale = [k for k in known if k not in in_corpus]
    assert not stale, f"known_differences.md names statements not in the corpus: {stale}"
