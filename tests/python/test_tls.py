"""Client TLS (docs/design/security.md, "TLS"): `client_encryption_options`
against a real `varve server`, with certificates made in the test (trustme;
no key is checked in).

- cassandra-driver with an `ssl_context` verifying the node's certificate
  against the test CA and its host name; a certificate that is self-signed,
  expired or for another host is refused by the client;
- mutual TLS (`require_client_auth: true`): a client certificate signed by
  the truststore is let in, none or one from another CA is not; with
  `require_client_auth: optional`, none is let in too;
- `optional: true`: plain and TLS clients on one port;
- a plain client on a TLS-only port, a garbage handshake and a half-finished
  one are closed, and other clients are unaffected;
- reload: new certificate files are used by new connections without a
  restart; a broken file keeps the old ones, logged once;
- settings rustls cannot honour stop the node at start, naming the key;
- cqlsh --ssl.
"""

import datetime
import os
import socket
import ssl
import subprocess
import time

import pytest
import trustme
from cassandra.cluster import NoHostAvailable

from conftest import VarveNode, connect
from test_cqlsh import CQLSH, CQLSH_TIMEOUT_S

# The server's RELOAD_CHECK_INTERVAL (a new handshake looks at the files at
# most this often).
RELOAD_CHECK_INTERVAL_S = 1.0
HOST = "127.0.0.1"


class Pki:
    """A test CA and files written from it into `dir`."""

    def __init__(self, dir):
        self.dir = dir
        self.dir.mkdir(parents=True, exist_ok=True)
        self.ca = trustme.CA()
        self.ca_file = self.write("ca.pem", self.ca.cert_pem.bytes())

    def write(self, name, data):
        path = self.dir / name
        path.write_bytes(data)
        return path

    def keystore(self, name, cert):
        """A PEM keystore: the private key, then the chain."""
        data = cert.private_key_pem.bytes() + b"".join(c.bytes() for c in cert.cert_chain_pems)
        return self.write(name, data)

    def server_keystore(self, name="node.pem", hosts=("127.0.0.1", "localhost"), **kwargs):
        return self.keystore(name, self.ca.issue_cert(*hosts, **kwargs))


def start_tls(dir, options, extra_yaml="", section="client_encryption_options"):
    """A node whose `section` (client_encryption_options by default) is
    `options` (YAML lines)."""
    dir.mkdir(parents=True, exist_ok=True)
    config = dir.parent / f"{dir.name}.yaml"
    body = "".join(f"  {line}\n" for line in options)
    config.write_text(f"{section}:\n" + body + extra_yaml)
    return VarveNode(dir, ["--config", str(config)]).start()


def client_context(pki, cert=None):
    ctx = ssl.create_default_context(cafile=str(pki.ca_file))
    if cert is not None:
        cert.configure_cert(ctx)
    return ctx


def tls_session(node, ctx, protocol_version=5):
    c = connect(node.host, node.port, protocol_version, ssl_context=ctx)
    return c, c.connect()


def release_version(session):
    return session.execute("SELECT release_version FROM system.local").one()[0]


def served(node, ctx):
    c, s = tls_session(node, ctx)
    try:
        return release_version(s)
    finally:
        c.shutdown()


def refused(node, **kwargs):
    c = connect(node.host, node.port, 5, connect_timeout=5, control_connection_timeout=5, **kwargs)
    try:
        with pytest.raises(NoHostAvailable):
            c.connect()
    finally:
        c.shutdown()


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return Pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def node(tmp_path_factory, pki):
    n = start_tls(tmp_path_factory.mktemp("tls") / "node",
                  ["enabled: true", f"keystore: {pki.server_keystore()}"])
    yield n
    assert n.stop() == 0, n.log_tail()


@pytest.mark.parametrize("protocol_version", [4, 5])
def test_the_driver_verifies_the_node_and_connects(node, pki, protocol_version):
    ctx = client_context(pki)
    assert ctx.check_hostname and ctx.verify_mode == ssl.CERT_REQUIRED
    c, s = tls_session(node, ctx, protocol_version)
    try:
        s.execute("CREATE KEYSPACE IF NOT EXISTS tlsks WITH replication = "
                  "{'class': 'SimpleStrategy', 'replication_factor': 1}")
        s.execute("CREATE TABLE IF NOT EXISTS tlsks.t (k int PRIMARY KEY, v text)")
        s.execute("INSERT INTO tlsks.t (k, v) VALUES (%s, %s)", (protocol_version, "secret" * 1000))
        assert s.execute("SELECT v FROM tlsks.t WHERE k = %s", (protocol_version,)).one()[0] == "secret" * 1000
    finally:
        c.shutdown()


def test_a_plain_client_on_a_tls_only_port_is_closed_and_others_go_on(node, pki):
    refused(node)
    with socket.create_connection((node.host, node.port), timeout=5) as sock:
        # An OPTIONS frame in clear text: the node answers no CQL, it closes.
        sock.sendall(bytes([0x04, 0, 0, 1, 0x05, 0, 0, 0, 0]))
        assert recv_until_closed(sock) is not None
    assert served(node, client_context(pki))


def recv_until_closed(sock):
    """Reads until the node closes; returns what it sent (never CQL here)."""
    data = b""
    while True:
        try:
            chunk = sock.recv(4096)
        except ConnectionResetError:
            return data
        if not chunk:
            return data
        data += chunk
        assert not data.startswith(b"\x84"), "a CQL answer in clear text on a TLS-only port"


def test_a_garbage_or_half_finished_handshake_harms_no_one(node, pki):
    garbage = socket.create_connection((node.host, node.port), timeout=5)
    garbage.sendall(b"\x16\x03\x01\x00\x05hello, this is no ClientHello")
    assert recv_until_closed(garbage) is not None
    garbage.close()
    # Stops after the record header: the node waits (HANDSHAKE_TIMEOUT) and
    # meanwhile serves everyone else.
    half = socket.create_connection((node.host, node.port), timeout=5)
    half.sendall(b"\x16\x03\x01\x02")
    assert served(node, client_context(pki))
    half.close()
    assert node.running


@pytest.mark.parametrize("case", ["self-signed", "expired", "other host"])
def test_the_client_refuses_a_bad_node_certificate(tmp_path, pki, case):
    if case == "self-signed":
        other = Pki(tmp_path / "other")
        keystore = other.server_keystore()
    elif case == "expired":
        keystore = pki.server_keystore(
            "expired.pem", not_before=datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc),
            not_after=datetime.datetime(2021, 1, 1, tzinfo=datetime.timezone.utc))
    else:
        keystore = pki.server_keystore("other.pem", hosts=("db.example.com",))
    n = start_tls(tmp_path / "node", ["enabled: true", f"keystore: {keystore}"])
    try:
        refused(n, ssl_context=client_context(pki))
        # The same node with verification off is reachable: only the
        # certificate was wrong.
        lax = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        lax.check_hostname = False
        lax.verify_mode = ssl.CERT_NONE
        assert served(n, lax)
    finally:
        assert n.stop() == 0, n.log_tail()


def test_mutual_tls_lets_in_only_a_trusted_client_certificate(tmp_path, pki):
    n = start_tls(tmp_path / "node", ["enabled: true", f"keystore: {pki.server_keystore()}",
                                      f"truststore: {pki.ca_file}", "require_client_auth: true"])
    try:
        assert served(n, client_context(pki, pki.ca.issue_cert("client@example.com")))
        refused(n, ssl_context=client_context(pki))
        stranger = Pki(tmp_path / "stranger")
        refused(n, ssl_context=client_context(pki, stranger.ca.issue_cert("client@example.com")))
        assert "TLS handshake with" in n.log()
    finally:
        assert n.stop() == 0, n.log_tail()


def test_optional_client_auth_lets_in_no_certificate_but_not_an_untrusted_one(tmp_path, pki):
    n = start_tls(tmp_path / "node", ["enabled: true", f"keystore: {pki.server_keystore()}",
                                      f"truststore: {pki.ca_file}", "require_client_auth: optional"])
    try:
        assert served(n, client_context(pki))
        assert served(n, client_context(pki, pki.ca.issue_cert("client@example.com")))
        stranger = Pki(tmp_path / "stranger")
        refused(n, ssl_context=client_context(pki, stranger.ca.issue_cert("client@example.com")))
    finally:
        assert n.stop() == 0, n.log_tail()


def test_optional_mode_serves_plain_and_tls_on_one_port(tmp_path, pki):
    n = start_tls(tmp_path / "node", ["enabled: true", "optional: true",
                                      f"keystore: {pki.server_keystore()}"])
    try:
        plain = connect(n.host, n.port, 5)
        try:
            assert release_version(plain.connect())
        finally:
            plain.shutdown()
        assert served(n, client_context(pki))
    finally:
        assert n.stop() == 0, n.log_tail()


def peer_certificate(node, pki):
    ctx = client_context(pki)
    with socket.create_connection((node.host, node.port), timeout=5) as raw:
        with ctx.wrap_socket(raw, server_hostname=HOST) as tls:
            return tls.getpeercert(binary_form=True)


def test_new_certificate_files_are_used_without_a_restart(tmp_path, pki):
    keystore = pki.server_keystore("reloaded.pem")
    n = start_tls(tmp_path / "node", ["enabled: true", f"keystore: {keystore}"])
    try:
        first = peer_certificate(n, pki)
        # A broken file: the certificate loaded before stays in force.
        keystore.write_bytes(b"-----BEGIN PRIVATE KEY-----\nnot base64\n")
        time.sleep(RELOAD_CHECK_INTERVAL_S * 1.5)
        assert peer_certificate(n, pki) == first
        assert peer_certificate(n, pki) == first
        assert n.log().count("not usable, keeping the ones loaded before") == 1, n.log_tail()
        # A new certificate, written as a tool would (a new file renamed
        # over the old one).
        fresh = pki.server_keystore("fresh.pem")
        os.replace(fresh, keystore)
        time.sleep(RELOAD_CHECK_INTERVAL_S * 1.5)
        second = peer_certificate(n, pki)
        assert second != first
        assert served(n, client_context(pki))
        assert "certificate files changed" in n.log()
    finally:
        assert n.stop() == 0, n.log_tail()


@pytest.mark.parametrize("options, named", [
    (["enabled: true"], "client_encryption_options.keystore"),
    (["enabled: true", "keystore: /nonexistent.pem"], "client_encryption_options.keystore"),
    (["enabled: true", "KEYSTORE", "accepted_protocols: [TLSv1.1]"], "client_encryption_options.accepted_protocols"),
    (["enabled: true", "KEYSTORE", "cipher_suites: [TLS_RSA_WITH_RC4_128_MD5]"], "client_encryption_options.cipher_suites"),
    (["enabled: true", "KEYSTORE", "require_client_auth: true"], "client_encryption_options.truststore"),
    (["enabled: true", "KEYSTORE", "store_type: JKS"], "client_encryption_options.store_type"),
    (["enabled: true", "KEYSTORE", "require_endpoint_verification: true"],
     "client_encryption_options.require_endpoint_verification"),
])
def test_settings_rustls_cannot_honour_stop_the_node(tmp_path, pki, options, named):
    keystore = pki.server_keystore()
    options = [f"keystore: {keystore}" if o == "KEYSTORE" else o for o in options]
    with pytest.raises(RuntimeError) as e:
        start_tls(tmp_path / "refused", options)
    assert named in str(e.value) and "exited with" in str(e.value), e.value


def test_protocols_and_cipher_suites_are_enforced(tmp_path, pki):
    n = start_tls(tmp_path / "node", ["enabled: true", f"keystore: {pki.server_keystore()}",
                                      "accepted_protocols: [TLSv1.3]",
                                      "cipher_suites: [TLS_CHACHA20_POLY1305_SHA256]"])
    try:
        ctx = client_context(pki)
        with socket.create_connection((n.host, n.port), timeout=5) as raw:
            with ctx.wrap_socket(raw, server_hostname=HOST) as tls:
                assert tls.version() == "TLSv1.3"
                assert tls.cipher()[0] == "TLS_CHACHA20_POLY1305_SHA256"
        old = client_context(pki)
        old.maximum_version = ssl.TLSVersion.TLSv1_2
        with socket.create_connection((n.host, n.port), timeout=5) as raw:
            with pytest.raises(ssl.SSLError):
                old.wrap_socket(raw, server_hostname=HOST)
    finally:
        assert n.stop() == 0, n.log_tail()


def test_cqlsh_connects_with_ssl(node, pki, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = dict(os.environ, HOME=str(home), SSL_CERTFILE=str(pki.ca_file), SSL_VALIDATE="true")
    run = [CQLSH, node.host, str(node.port), "--connect-timeout", "20", "--request-timeout", "20"]
    out = subprocess.run([*run, "--ssl", "-e", "SELECT cluster_name FROM system.local"], capture_output=True,
                         text=True, timeout=CQLSH_TIMEOUT_S, env=env, stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "cluster_name" in out.stdout
    plain = subprocess.run([*run, "-e", "SELECT cluster_name FROM system.local"], capture_output=True,
                           text=True, timeout=CQLSH_TIMEOUT_S, env=env, stdin=subprocess.DEVNULL)
    assert plain.returncode != 0
