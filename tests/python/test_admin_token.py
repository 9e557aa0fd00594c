"""The admin HTTP port (docs/design/security.md, section 12): on loopback by
default; bound elsewhere only with a token, which every request must then
carry (`Authorization: Bearer`), nodetool included (VARVE_ADMIN_TOKEN)."""

import os
import subprocess
import urllib.error
import urllib.request

import pytest

from conftest import VarveNode, varve_bin

TOKEN = "s3cret-admin-token-0123"


def start(dir, yaml, env_token=None):
    dir.mkdir(parents=True, exist_ok=True)
    config = dir.parent / f"{dir.name}.yaml"
    config.write_text(yaml)
    old = os.environ.get("VARVE_ADMIN_TOKEN")
    if env_token is not None:
        os.environ["VARVE_ADMIN_TOKEN"] = env_token
    try:
        return VarveNode(dir, ["--config", str(config)]).start()
    finally:
        if env_token is not None:
            if old is None:
                del os.environ["VARVE_ADMIN_TOKEN"]
            else:
                os.environ["VARVE_ADMIN_TOKEN"] = old


def get(port, path, token=None):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_an_admin_port_open_beyond_loopback_needs_a_token(tmp_path):
    with pytest.raises(RuntimeError) as e:
        start(tmp_path / "open", "admin_address: 0.0.0.0\n")
    assert "admin_address 0.0.0.0 is not a loopback address" in str(e.value)
    with pytest.raises(RuntimeError) as e:
        start(tmp_path / "short", "admin_address: 0.0.0.0\nadmin_token: short\n")
    assert "admin_token must be at least 16 bytes" in str(e.value)


@pytest.mark.parametrize("from_env", [False, True])
def test_every_admin_request_carries_the_token(tmp_path, from_env):
    yaml = "admin_address: 0.0.0.0\n" + ("" if from_env else f"admin_token: {TOKEN}\n")
    node = start(tmp_path / "node", yaml, env_token=TOKEN if from_env else None)
    try:
        assert get(node.admin_port, "/metrics")[0] == 401
        assert get(node.admin_port, "/health", "wrong-token-wrong-token")[0] == 401
        status, body = get(node.admin_port, "/health", TOKEN)
        assert (status, body.strip()) == (200, "ok")
        run = [varve_bin(), "nodetool", "-p", str(node.admin_port), "info"]
        denied = subprocess.run(run, capture_output=True, text=True, timeout=60,
                                env={k: v for k, v in os.environ.items() if k != "VARVE_ADMIN_TOKEN"})
        assert denied.returncode != 0
        allowed = subprocess.run(run, capture_output=True, text=True, timeout=60,
                                 env=dict(os.environ, VARVE_ADMIN_TOKEN=TOKEN))
        assert allowed.returncode == 0, allowed.stderr
    finally:
        assert node.stop() == 0, node.log_tail()


def test_without_a_token_the_admin_port_is_on_loopback_and_open(tmp_path):
    node = start(tmp_path / "node", "")
    try:
        assert node.log().count("admin on http://127.0.0.1:") == 1
        assert get(node.admin_port, "/health")[0] == 200
    finally:
        assert node.stop() == 0, node.log_tail()
