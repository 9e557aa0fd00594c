"""Authentication, roles and permissions (docs/design/security.md) against a
real `varve server` with PasswordAuthenticator and CassandraAuthorizer:

- logins through cassandra-driver's PlainTextAuthProvider (v4 and v5): the
  default superuser, a wrong password, an unknown role, no credentials; a
  failed login is answered after the delay and logged once without the
  password;
- the SASL exchange over raw frames: AUTHENTICATE, requests before
  AUTH_SUCCESS refused, garbled and over-long tokens;
- role statements and the system_auth tables;
- every statement kind run by a role without its permission (Unauthorized)
  and with it (allowed), prepared statements and batches included;
- roles that survive a restart; security the node does not provide refused
  at start; cqlsh -u / -p.
"""

import struct
import time
import uuid

import pytest
from cassandra import AuthenticationFailed, InvalidRequest, Unauthorized
from cassandra.auth import PlainTextAuthProvider
from cassandra.cluster import NoHostAvailable
from cassandra.query import BatchStatement

from conftest import VarveNode, connect
from helpers import OPCODE_ERROR, OPCODE_OPTIONS, OPCODE_STARTUP, error_code, open_socket, read_frame, string_map, \
    v4_frame

SECURED = "authenticator: PasswordAuthenticator\nauthorizer: CassandraAuthorizer\n"
OPCODE_AUTHENTICATE = 0x03
OPCODE_QUERY = 0x07
OPCODE_RESULT = 0x08
OPCODE_AUTH_RESPONSE = 0x0F
OPCODE_AUTH_SUCCESS = 0x10
ERROR_BAD_CREDENTIALS = 0x0100
ERROR_PROTOCOL = 0x000A
# The server's LOGIN_FAILURE_DELAY and SASL_TOKEN_MAX_BYTES.
LOGIN_FAILURE_DELAY_S = 0.5
SASL_TOKEN_MAX_BYTES = 1024
KEYSPACE = "authks"
REPLICATION = "{'class': 'SimpleStrategy', 'replication_factor': 1}"


def start_secured(data_dir, extra_yaml=""):
    data_dir.mkdir(parents=True, exist_ok=True)
    config = data_dir.parent / f"{data_dir.name}.yaml"
    config.write_text(SECURED + extra_yaml)
    return VarveNode(data_dir, ["--config", str(config)]).start()


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    n = start_secured(tmp_path_factory.mktemp("auth") / "node")
    yield n
    assert n.stop() == 0, n.log_tail()


def login(node, user, password, protocol_version=5):
    c = connect(node.host, node.port, protocol_version,
                auth_provider=PlainTextAuthProvider(user, password))
    return c, c.connect()


@pytest.fixture(scope="module")
def admin(node):
    c, s = login(node, "cassandra", "cassandra")
    s.execute(f"CREATE KEYSPACE IF NOT EXISTS {KEYSPACE} WITH replication = {REPLICATION}")
    s.execute(f"CREATE TABLE IF NOT EXISTS {KEYSPACE}.t (k int PRIMARY KEY, v int)")
    yield s
    c.shutdown()


def new_role(admin, password="pw"):
    name = f"r_{uuid.uuid4().hex[:10]}"
    admin.execute(f"CREATE ROLE {name} WITH PASSWORD = '{password}' AND LOGIN = true")
    return name


def auth_error(excinfo):
    """The AuthenticationFailed inside a driver's NoHostAvailable."""
    errors = list(excinfo.value.errors.values())
    assert len(errors) == 1 and isinstance(errors[0], AuthenticationFailed), errors
    return str(errors[0])


@pytest.mark.parametrize("version", [4, 5])
def test_the_default_superuser_logs_in(node, version):
    c, s = login(node, "cassandra", "cassandra", version)
    try:
        row = s.execute("SELECT role, is_superuser, can_login, salted_hash FROM system_auth.roles "
                        "WHERE role = 'cassandra'").one()
        assert row.is_superuser and row.can_login
        assert row.salted_hash.startswith("$2a$10$") and "cassandra" not in row.salted_hash
    finally:
        c.shutdown()
    assert node.log().count("Created default superuser role 'cassandra'") == 1


def test_wrong_password_and_unknown_role_fail_after_the_delay(node, admin):
    name = new_role(admin, password="right-password")
    for user, password in [(name, "wrong-password"), ("nobody_at_all", "whatever")]:
        started = time.monotonic()
        with pytest.raises(NoHostAvailable) as e:
            login(node, user, password)
        waited = time.monotonic() - started
        message = auth_error(e)
        assert f"Provided username {user} and/or password are incorrect" in message
        assert waited >= LOGIN_FAILURE_DELAY_S, waited
    log = node.log()
    assert log.count(f'failed login as role "{name}"') == 1
    assert "wrong-password" not in log and "right-password" not in log


def test_a_client_without_credentials_is_refused(node):
    c = connect(node.host, node.port, 5)
    with pytest.raises(NoHostAvailable) as e:
        c.connect()
    assert "requires authentication" in str(e.value), e.value
    c.shutdown()


def query_frame(text, stream=1):
    body = struct.pack(">i", len(text)) + text.encode() + struct.pack(">HB", 1, 0)
    return v4_frame(OPCODE_QUERY, body, stream=stream)


def auth_response(token, stream=1):
    return v4_frame(OPCODE_AUTH_RESPONSE, struct.pack(">i", len(token)) + token, stream=stream)


def error_message(body):
    (length,) = struct.unpack(">H", body[4:6])
    return body[6:6 + length].decode()


def test_the_sasl_exchange_refuses_skipping_and_bad_tokens(node):
    sock = open_socket(node.host, node.port, timeout=10)
    try:
        sock.sendall(v4_frame(OPCODE_STARTUP, string_map({"CQL_VERSION": "3.0.0"})))
        opcode, body = read_frame(sock)
        assert opcode == OPCODE_AUTHENTICATE
        assert b"org.apache.cassandra.auth.PasswordAuthenticator" in body
        # A client that skips authentication: a protocol error, still open.
        sock.sendall(query_frame("SELECT * FROM system.local"))
        opcode, body = read_frame(sock)
        assert opcode == OPCODE_ERROR and error_code(body) == ERROR_PROTOCOL
        assert error_message(body) == "Unexpected message QUERY, expecting SASL_RESPONSE"
        # OPTIONS too, as Cassandra 5.0.4 answers.
        sock.sendall(v4_frame(OPCODE_OPTIONS))
        opcode, body = read_frame(sock)
        assert error_message(body) == "Unexpected message OPTIONS, expecting SASL_RESPONSE"
        # Garbage, an empty token, and tokens at the limit and one past it.
        at_limit = b"\0cassandra\0" + b"p" * (SASL_TOKEN_MAX_BYTES - len(b"\0cassandra\0"))
        for token, expected in [
            (b"no nul bytes at all", "Password must not be null"),
            (b"", "Password must not be null"),
            (b"\0cassandra\0", "Password must not be null"),
            (b"cassandra\0cassandra", "Authentication ID must not be null"),
            (b"a\0b\0cassandra\0cassandra", "Credential format error"),
            (at_limit, "Provided username cassandra and/or password are incorrect"),
            (at_limit + b"p", f"longer than the {SASL_TOKEN_MAX_BYTES} allowed"),
        ]:
            started = time.monotonic()
            sock.sendall(auth_response(token))
            opcode, body = read_frame(sock)
            assert opcode == OPCODE_ERROR and error_code(body) == ERROR_BAD_CREDENTIALS, body
            assert expected in error_message(body)
            assert time.monotonic() - started >= LOGIN_FAILURE_DELAY_S
        sock.sendall(auth_response(b"\0cassandra\0cassandra"))
        assert read_frame(sock)[0] == OPCODE_AUTH_SUCCESS
        sock.sendall(query_frame("SELECT key FROM system.local"))
        assert read_frame(sock)[0] == OPCODE_RESULT
        # Logged in, another AUTH_RESPONSE logs in again, as in Cassandra.
        sock.sendall(auth_response(b"\0cassandra\0cassandra"))
        assert read_frame(sock)[0] == OPCODE_AUTH_SUCCESS
    finally:
        sock.close()


def test_a_handshake_that_stops_half_way_leaves_the_node_serving(node, admin):
    for sent in [
        v4_frame(OPCODE_STARTUP, string_map({"CQL_VERSION": "3.0.0"})),
        v4_frame(OPCODE_STARTUP, string_map({"CQL_VERSION": "3.0.0"})) + auth_response(b"\0cassandra\0cass")[:12],
        v4_frame(OPCODE_STARTUP, string_map({"CQL_VERSION": "3.0.0"})) + auth_response(b"\0bad\0token"),
    ]:
        sock = open_socket(node.host, node.port)
        sock.sendall(sent)
        sock.close()
    # The node still logs clients in and answers them.
    c, s = login(node, "cassandra", "cassandra")
    assert s.execute("SELECT key FROM system.local").one().key == "local"
    c.shutdown()
    assert admin.execute("SELECT key FROM system.local").one().key == "local"


def test_role_statements_and_system_auth_tables(node, admin):
    admin.execute("CREATE ROLE IF NOT EXISTS reader")
    name = new_role(admin)
    with pytest.raises(InvalidRequest, match=f"{name} already exists"):
        admin.execute(f"CREATE ROLE {name}")
    admin.execute(f"GRANT reader TO {name}")
    listed = {r.role for r in admin.execute(f"LIST ROLES OF {name}")}
    assert listed == {name, "reader"}
    members = {(r.role, r.member) for r in admin.execute("SELECT role, member FROM system_auth.role_members")}
    assert ("reader", name) in members
    admin.execute(f"GRANT SELECT ON KEYSPACE {KEYSPACE} TO reader")
    perms = admin.execute("SELECT role, resource, permissions FROM system_auth.role_permissions WHERE role = 'reader'")
    assert [(r.resource, set(r.permissions)) for r in perms] == [(f"data/{KEYSPACE}", {"SELECT"})]
    index = {(r.resource, r.role) for r in admin.execute("SELECT * FROM system_auth.resource_role_permissons_index")}
    assert (f"data/{KEYSPACE}", "reader") in index
    admin.execute(f"ALTER ROLE {name} WITH PASSWORD = 'new'")
    c, s = login(node, name, "new")
    assert {r.role for r in s.execute(f"LIST ROLES OF {name}")} == {name, "reader"}
    c.shutdown()
    admin.execute("CREATE USER IF NOT EXISTS olduser WITH PASSWORD 'u' NOSUPERUSER")
    assert "olduser" in {r.name for r in admin.execute("LIST USERS")}
    admin.execute(f"REVOKE reader FROM {name}")
    admin.execute(f"DROP ROLE {name}")
    with pytest.raises(InvalidRequest, match=f"{name} doesn't exist"):
        admin.execute(f"DROP ROLE {name}")
    with pytest.raises(NoHostAvailable):
        login(node, name, "new")


# (statement run by the role, permission it needs, resource to grant it on,
# what it creates: the creator gets every permission there, taken back so
# that the next statements need their own grant)
STATEMENTS = [
    (f"SELECT * FROM {KEYSPACE}.t", "SELECT", f"TABLE {KEYSPACE}.t", None),
    (f"INSERT INTO {KEYSPACE}.t (k, v) VALUES (1, 1)", "MODIFY", f"TABLE {KEYSPACE}.t", None),
    (f"UPDATE {KEYSPACE}.t SET v = 2 WHERE k = 1", "MODIFY", f"TABLE {KEYSPACE}.t", None),
    (f"DELETE FROM {KEYSPACE}.t WHERE k = 1", "MODIFY", f"TABLE {KEYSPACE}.t", None),
    (f"BEGIN BATCH INSERT INTO {KEYSPACE}.t (k, v) VALUES (2, 2); APPLY BATCH", "MODIFY", f"TABLE {KEYSPACE}.t",
     None),
    (f"TRUNCATE {KEYSPACE}.t", "MODIFY", f"TABLE {KEYSPACE}.t", None),
    ("CREATE KEYSPACE {ks} WITH replication = " + REPLICATION, "CREATE", "ALL KEYSPACES", "KEYSPACE {ks}"),
    ("CREATE TABLE {ks}.t2 (k int PRIMARY KEY)", "CREATE", "KEYSPACE {ks}", "TABLE {ks}.t2"),
    ("ALTER TABLE {ks}.t2 ADD v int", "ALTER", "TABLE {ks}.t2", None),
    ("DROP TABLE {ks}.t2", "DROP", "TABLE {ks}.t2", None),
    ("ALTER KEYSPACE {ks} WITH durable_writes = false", "ALTER", "KEYSPACE {ks}", None),
    ("DROP KEYSPACE {ks}", "DROP", "KEYSPACE {ks}", None),
    ("CREATE ROLE {role}", "CREATE", "ALL ROLES", "ROLE {role}"),
    ("ALTER ROLE {role} WITH PASSWORD = 'x'", "ALTER", "ROLE {role}", None),
    ("GRANT {role} TO {other}", "AUTHORIZE", "ROLE {role}", None),
    (f"GRANT AUTHORIZE ON TABLE {KEYSPACE}.t TO {{other}}", "AUTHORIZE", f"TABLE {KEYSPACE}.t", None),
    (f"REVOKE AUTHORIZE ON TABLE {KEYSPACE}.t FROM {{other}}", "AUTHORIZE", f"TABLE {KEYSPACE}.t", None),
    ("DROP ROLE {role}", "DROP", "ROLE {role}", None),
]


def fill(text, names):
    """`text` with each `{name}` replaced (str.format would trip on the
    replication map's braces)."""
    for key, value in names.items():
        text = text.replace("{" + key + "}", value)
    return text


def test_every_statement_kind_needs_its_permission(node, admin):
    user = new_role(admin)
    names = {"ks": f"ks_{uuid.uuid4().hex[:8]}", "role": f"made_{uuid.uuid4().hex[:8]}", "other": new_role(admin)}
    c, s = login(node, user, "pw")
    try:
        for text, permission, resource, creates in STATEMENTS:
            text, resource = fill(text, names), fill(resource, names)
            with pytest.raises(Unauthorized) as e:
                s.execute(text)
            expected = f"User {user} has no {permission} permission on"
            if resource.startswith(("ROLE", "ALL ROLES")):
                # Cassandra's role statements do not name the permission.
                expected = f"User {user} does not have sufficient privileges to perform the requested operation"
            assert expected in str(e.value), (text, str(e.value))
            admin.execute(f"GRANT {permission} ON {resource} TO {user}")
            s.execute(text)
            if not text.startswith("DROP"):
                # A drop removed every permission on what it dropped.
                admin.execute(f"REVOKE {permission} ON {resource} FROM {user}")
            if creates:
                admin.execute(f"REVOKE ALL ON {fill(creates, names)} FROM {user}")
        assert list(admin.execute(f"LIST ALL PERMISSIONS OF {user}")) == []
    finally:
        c.shutdown()


def test_prepared_statements_and_batches_are_checked_when_executed(node, admin):
    user = new_role(admin)
    c, s = login(node, user, "pw")
    try:
        select = s.prepare(f"SELECT * FROM {KEYSPACE}.t WHERE k = ?")
        insert = s.prepare(f"INSERT INTO {KEYSPACE}.t (k, v) VALUES (?, ?)")
        with pytest.raises(Unauthorized, match="no SELECT permission"):
            s.execute(select, [1])
        admin.execute(f"GRANT SELECT ON {KEYSPACE}.t TO {user}")
        s.execute(select, [1])
        batch = BatchStatement()
        batch.add(insert, [5, 5])
        with pytest.raises(Unauthorized, match="no MODIFY permission"):
            s.execute(batch)
        admin.execute(f"GRANT MODIFY ON {KEYSPACE}.t TO {user}")
        s.execute(batch)
        admin.execute(f"REVOKE SELECT ON {KEYSPACE}.t FROM {user}")
        with pytest.raises(Unauthorized):
            s.execute(select, [1])
    finally:
        c.shutdown()


def test_permissions_are_listed_and_inherited(node, admin):
    user = new_role(admin)
    group = f"g_{uuid.uuid4().hex[:8]}"
    admin.execute(f"CREATE ROLE {group}")
    admin.execute(f"GRANT SELECT ON ALL KEYSPACES TO {group}")
    admin.execute(f"GRANT {group} TO {user}")
    c, s = login(node, user, "pw")
    try:
        s.execute(f"SELECT * FROM {KEYSPACE}.t")
        listed = [(r.role, r.resource, r.permission) for r in s.execute(f"LIST ALL PERMISSIONS OF {user}")]
        assert (group, "<all keyspaces>", "SELECT") in listed
        # NORECURSIVE leaves out the resource's parents (not the granted roles).
        assert list(s.execute(f"LIST ALL PERMISSIONS ON KEYSPACE {KEYSPACE} OF {user} NORECURSIVE")) == []
        listed = [(r.role, r.resource) for r in s.execute(f"LIST SELECT ON KEYSPACE {KEYSPACE} OF {user}")]
        assert listed == [(group, "<all keyspaces>")]
        with pytest.raises(Unauthorized, match="not authorized to view everyone's permissions"):
            s.execute("LIST ALL PERMISSIONS")
    finally:
        c.shutdown()


def test_roles_survive_a_restart(tmp_path):
    node = start_secured(tmp_path / "restart")
    try:
        c, s = login(node, "cassandra", "cassandra")
        s.execute("CREATE ROLE keeper WITH PASSWORD = 'kept' AND LOGIN = true")
        s.execute(f"CREATE KEYSPACE kk WITH replication = {REPLICATION}")
        s.execute("GRANT SELECT ON KEYSPACE kk TO keeper")
        c.shutdown()
        assert node.stop() == 0
        node.start()
        c, s = login(node, "keeper", "kept")
        assert [(r.role, r.resource) for r in s.execute("LIST ALL PERMISSIONS OF keeper")] == [
            ("keeper", "<keyspace kk>")]
        c.shutdown()
        assert node.log().count("Created default superuser role") == 1
    finally:
        node.stop()


@pytest.mark.parametrize("yaml, named", [
    ("client_encryption_options:\n  enabled: true\n", "client_encryption_options"),
    ("server_encryption_options:\n  internode_encryption: all\n", "server_encryption_options"),
    ("role_manager: LDAPRoleManager\n", "role_manager"),
])
def test_security_the_node_does_not_provide_stops_it(tmp_path, yaml, named):
    with pytest.raises(RuntimeError) as e:
        start_secured(tmp_path / "refused", yaml)
    assert named in str(e.value) and "exited with" in str(e.value)


def test_cqlsh_logs_in_with_user_and_password(node, admin, tmp_path):
    from test_cqlsh import lines, run_cqlsh
    home = tmp_path / "home"
    home.mkdir()
    addr = (node.host, node.port)
    # cqlsh warns on stderr about a password on the command line.
    out = run_cqlsh(addr, "-u", "cassandra", "-p", "cassandra", "-e", "LIST ROLES", home=home, check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    assert any(line.split("|")[0].strip() == "cassandra" for line in lines(out)), out.stdout
    bad = run_cqlsh(addr, "-u", "cassandra", "-p", "nope", "-e", "LIST ROLES", home=home, check=False)
    assert bad.returncode != 0
    assert "Provided username cassandra and/or password are incorrect" in bad.stdout + bad.stderr
