"""HTTPS on the admin port (docs/design/security.md, section 12):
`admin_encryption_options` against a real `varve server`, with
certificates made in the test (trustme, test_tls.Pki; no key is checked in).

- `varve nodetool --ssl --cafile` runs status and info, and /metrics answers
  over HTTPS, the node's certificate checked against the host name; a CA
  that did not sign it is refused by nodetool;
- a plain HTTP request to the HTTPS port gets no HTTP answer, and the node
  goes on serving HTTPS;
- mutual TLS (`require_client_auth: true`): a client without a certificate
  is refused, one signed by the truststore gets 200 (Python and nodetool
  --certfile, with the key in the same file or in --keyfile); it opens the
  admin port beyond loopback without a token;
- settings the admin port cannot honour stop the node at start.
"""

import http.client
import socket
import ssl
import subprocess

import pytest

from conftest import varve_bin
from test_tls import Pki, start_tls

HOST = "127.0.0.1"
TIMEOUT_S = 10


@pytest.fixture
def pki(tmp_path):
    return Pki(tmp_path / "pki")


def start(dir, options, extra_yaml=""):
    """A node whose admin_encryption_options are `options` (YAML lines)."""
    return start_tls(dir, options, extra_yaml, section="admin_encryption_options")


def https_get(port, path, ctx):
    """Status and body of `GET path` over HTTPS."""
    conn = http.client.HTTPSConnection(HOST, port, context=ctx, timeout=TIMEOUT_S)
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        return r.status, r.read().decode()
    finally:
        conn.close()


def context(pki, cert=None):
    ctx = ssl.create_default_context(cafile=str(pki.ca_file))
    if cert is not None:
        cert.configure_cert(ctx)
    return ctx


def nodetool(port, *args, host=HOST):
    return subprocess.run([varve_bin(), "nodetool", "-h", host, "-p", str(port), *args],
                          capture_output=True, text=True, timeout=60)


def test_nodetool_and_metrics_over_https(tmp_path, pki):
    node = start(tmp_path / "node", ["enabled: true", f"keystore: {pki.server_keystore()}"])
    try:
        assert f"admin on https://{HOST}:{node.admin_port}" in node.log()
        ssl_flags = ["--ssl", "--cafile", str(pki.ca_file)]
        for command, expected in [("status", "UN "), ("info", "Uptime")]:
            out = nodetool(node.admin_port, *ssl_flags, command)
            assert out.returncode == 0, out.stderr
            assert expected in out.stdout
        # The name checked is the one given with -h, a DNS name here.
        out = nodetool(node.admin_port, *ssl_flags, "info", host="localhost")
        assert out.returncode == 0, out.stderr
        status, body = https_get(node.admin_port, "/metrics", context(pki))
        assert status == 200 and "# TYPE" in body
        # nodetool checks the node's certificate, and says how to speak HTTPS.
        stranger = Pki(tmp_path / "stranger")
        out = nodetool(node.admin_port, "--ssl", "--cafile", str(stranger.ca_file), "info")
        assert out.returncode != 0 and "TLS handshake" in out.stderr, out.stderr
        out = nodetool(node.admin_port, "info")
        assert out.returncode != 0 and "--ssl" in out.stderr, out.stderr
    finally:
        assert node.stop() == 0, node.log_tail()


def test_plain_http_to_the_https_port_gets_no_answer_and_the_node_goes_on(tmp_path, pki):
    node = start(tmp_path / "node", ["enabled: true", f"keystore: {pki.server_keystore()}"])
    try:
        with socket.create_connection((HOST, node.admin_port), timeout=TIMEOUT_S) as s:
            s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            answer = b""
            try:
                while chunk := s.recv(4096):
                    answer += chunk
            except ConnectionResetError:
                pass
        assert not answer.startswith(b"HTTP/"), answer
        assert https_get(node.admin_port, "/health", context(pki)) == (200, "ok\n")
        assert node.running
    finally:
        assert node.stop() == 0, node.log_tail()


def refused(port, ctx):
    """Whether an HTTPS request with `ctx` is refused (handshake or alert)."""
    try:
        https_get(port, "/health", ctx)
    except (ssl.SSLError, ConnectionError, http.client.RemoteDisconnected):
        return True
    return False


def test_mutual_tls_admits_only_trusted_client_certificates(tmp_path, pki):
    options = ["enabled: true", f"keystore: {pki.server_keystore()}",
               f"truststore: {pki.ca_file}", "require_client_auth: true"]
    # Mutual TLS authenticates callers: no token is needed beyond loopback.
    node = start(tmp_path / "node", options, "admin_address: 0.0.0.0\n")
    try:
        client = pki.ca.issue_cert("client@example.com")
        assert refused(node.admin_port, context(pki))
        stranger = Pki(tmp_path / "stranger").ca.issue_cert("client@example.com")
        assert refused(node.admin_port, context(pki, stranger))
        assert https_get(node.admin_port, "/health", context(pki, client)) == (200, "ok\n")

        ssl_flags = ["--ssl", "--cafile", str(pki.ca_file)]
        assert nodetool(node.admin_port, *ssl_flags, "info").returncode != 0
        one_file = pki.keystore("client.pem", client)
        out = nodetool(node.admin_port, *ssl_flags, "--certfile", str(one_file), "info")
        assert out.returncode == 0, out.stderr
        cert = pki.write("client.crt", b"".join(c.bytes() for c in client.cert_chain_pems))
        key = pki.write("client.key", client.private_key_pem.bytes())
        out = nodetool(node.admin_port, *ssl_flags, "--certfile", str(cert), "--keyfile", str(key), "status")
        assert out.returncode == 0, out.stderr
    finally:
        assert node.stop() == 0, node.log_tail()


@pytest.mark.parametrize("options, extra, named", [
    (["optional: true", "KEYSTORE"], "", "admin_encryption_options.optional is not supported"),
    (["enabled: true", "KEYSTORE"], "admin_address: 0.0.0.0\n", "require_client_auth: true"),
    (["enabled: true", "keystore: /nonexistent/admin.pem"], "",
     "admin_encryption_options.keystore: cannot read /nonexistent/admin.pem"),
], ids=["optional", "open-without-client-auth", "missing-keystore"])
def test_settings_the_admin_port_cannot_honour_stop_the_node(tmp_path, pki, options, extra, named):
    keystore = f"keystore: {pki.server_keystore()}"
    options = [keystore if o == "KEYSTORE" else o for o in options]
    with pytest.raises(RuntimeError) as e:
        start(tmp_path / "node", options, extra)
    assert named in str(e.value)
