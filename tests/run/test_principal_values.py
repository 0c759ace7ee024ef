"""Each principal's own values (``${principal:NAME}``) reach its servers only: alice's stdio server runs with
alice's token in its environment and bob's with bob's, alice's remote server gets her header, a principal
without the value gets a sign-in error naming what it lacks (its server is never started), and no value
shows in a log line, an error or a metric."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from ..conftest import SERVERS, free_port, payload
from ..raw import listening, mcp_url

TOKENS = {"alice": "tok-alice-1", "bob": "tok-bob-2", "carol": "tok-carol-3"}
SECRETS = {
    "alice": {"GITHUB_TOKEN": "ghp-alice-value-77", "PAT": "pat-alice-value-88"},
    "bob": {"GITHUB_TOKEN": "ghp-bob-value-99"},
}
SEEN: list[str] = []
"""The ``Authorization`` headers the remote server was sent."""


class Recording(BaseHTTPRequestHandler):
    """A remote server that takes nobody in, and notes the credentials it was sent."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        SEEN.append(self.headers.get("authorization") or "")
        self.send_response(401)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def remote() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", free_port()), Recording)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/mcp"
    finally:
        server.shutdown()
        server.server_close()


def files(tmp_path: Path, remote: str, as_json: bool = False) -> tuple[Path, Path, Path]:
    config = tmp_path / "mcp.json"
    personal = {"GITHUB_TOKEN": "${principal:GITHUB_TOKEN}"}
    env = {"command": sys.executable, "args": [str(SERVERS / "env_server.py")], "env": personal}
    servers = {"env": env, "remote": {"url": remote, "headers": {"Authorization": "Bearer ${principal:PAT}"}}}
    config.write_text(json.dumps({"mcpServers": servers, "lazymcp": {"mode": "eager"}}))
    tokens = tmp_path / "tokens"
    tokens.write_text("".join(f"{name}: {token}\n" for name, token in TOKENS.items()))
    tokens.chmod(0o600)
    secrets = tmp_path / "secrets"
    blocks = "".join(f"[{n}]\n" + "".join(f"{k}={v}\n" for k, v in b.items()) for n, b in SECRETS.items())
    secrets.write_text(json.dumps(SECRETS) if as_json else blocks)
    secrets.chmod(0o600)
    return config, tokens, secrets


async def call_env(url: str, name: str) -> Any:
    """``env__env`` called as principal ``name``: the tool's result, or the error's message."""
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKENS[name]}"}, timeout=60)
    async with http, Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
        await client.list_tools()
        try:
            return await client.call_tool("env__env", {})
        except MCPError as exc:
            return exc.error.message


@pytest.mark.anyio
@pytest.mark.parametrize("as_json", [False, True])
async def test_each_principal_s_servers_get_its_own_values_and_one_without_gets_a_sign_in_error(
    tmp_path: Path, remote: str, as_json: bool
) -> None:
    config, tokens, secrets = files(tmp_path, remote, as_json)
    port = free_port()
    command = [sys.executable, "-m", "lazymcp", "gateway", "--config", str(config), "--log-level", "debug"]
    command += ["--http", f"127.0.0.1:{port}", "--token-file", str(tokens), "--principal-secrets", str(secrets)]
    log = tmp_path / "stderr"
    SEEN.clear()
    stderr = os.open(log, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        async with listening(command, port, stderr=stderr, env={"LAZYMCP_CACHE_DIR": str(tmp_path / "c")}):
            with anyio.fail_after(120):
                alice = await call_env(mcp_url(port), "alice")
                bob = await call_env(mcp_url(port), "bob")
                said = await call_env(mcp_url(port), "carol")
                async with httpx2.AsyncClient(
                    headers={"Authorization": f"Bearer {TOKENS['alice']}"}, timeout=60
                ) as raw:
                    metrics = (await raw.get(f"http://127.0.0.1:{port}/metrics")).text
    finally:
        os.close(stderr)
    assert payload(alice)["GITHUB_TOKEN"] == SECRETS["alice"]["GITHUB_TOKEN"]
    assert payload(bob)["GITHUB_TOKEN"] == SECRETS["bob"]["GITHUB_TOKEN"]
    assert isinstance(said, str)
    assert "sign-in needed" in said and "'carol'" in said and "GITHUB_TOKEN" in said, said
    assert set(SEEN) == {f"Bearer {SECRETS['alice']['PAT']}"}  # bob lacks PAT: nothing was sent for him
    written = log.read_text() + metrics + said
    assert "sign-in needed" in log.read_text() and "lazymcp_tool_calls" in metrics
    for block in SECRETS.values():
        for value in block.values():
            assert value not in written


@pytest.mark.anyio
@pytest.mark.parametrize("front", ["stdio", "http"])
async def test_a_gateway_without_principals_does_not_start_with_a_principal_s_value(
    tmp_path: Path, remote: str, front: str
) -> None:
    """On stdio, or over HTTP with no tokens and no OAuth, nobody is told apart: one line says so."""
    config, _, secrets = files(tmp_path, remote)
    command = [sys.executable, "-m", "lazymcp", "gateway", "--config", str(config), "--principal-secrets", str(secrets)]
    if front == "http":
        command += ["--http", f"127.0.0.1:{free_port()}"]
    env = {**os.environ, "LAZYMCP_CACHE_DIR": str(tmp_path / "c")}
    with anyio.fail_after(120):
        done = await anyio.run_process(command, env=env, check=False, stdin=subprocess.DEVNULL)
    said = done.stderr.decode()
    assert done.returncode != 0 and said.count("\n") == 1, said
    assert "server 'env' uses ${principal:GITHUB_TOKEN}" in said and "has no principals" in said, said


@pytest.mark.anyio
@pytest.mark.parametrize("front", ["refresh", "stats"])
async def test_a_refresh_leaves_out_the_servers_that_take_a_principal_s_value(
    tmp_path: Path, remote: str, front: str
) -> None:
    """A refresh (``gateway --refresh``, or ``stats`` making the manifests it lacks) starts its servers for
    nobody: each server that takes a principal's value is left out with one line, none is started with a
    blank value, and the others are listed."""
    config, _, _ = files(tmp_path, remote)
    servers = json.loads(config.read_text())["mcpServers"]
    servers["plain"] = {"command": sys.executable, "args": [str(SERVERS / "plain_server.py")]}
    config.write_text(json.dumps({"mcpServers": servers}))
    command = [sys.executable, "-m", "lazymcp", "gateway", "--config", str(config), "--refresh"]
    if front == "stats":
        command = [sys.executable, "-m", "lazymcp", "stats", "--config", str(config)]
    env = {**os.environ, "LAZYMCP_CACHE_DIR": str(tmp_path / "c")}
    with anyio.fail_after(120):
        done = await anyio.run_process(command, env=env, check=False, stdin=subprocess.DEVNULL)
    said = done.stderr.decode()
    left_out = [line for line in said.splitlines() if "left out of the refresh" in line]
    assert len(left_out) == 2, said
    assert "server 'env' uses ${principal:GITHUB_TOKEN}" in left_out[0], said
    assert "server 'remote' uses ${principal:PAT}" in left_out[1], said
    assert "lazymcp gateway: server 'plain': 3 tools" in said.splitlines(), said
    assert "GITHUB_TOKEN=" not in said and "cannot start" not in said, said
    if front == "refresh":
        assert done.returncode == 0, said
    else:  # the two left out are in no figure, and said so
        shown = done.stdout.decode().splitlines()
        assert shown[-1] == "not listed, so in no figure: env, remote (why: above, on stderr)", shown
        assert shown[1].split()[:2] == ["plain", "3"], shown
