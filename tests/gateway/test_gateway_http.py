"""``lazymcp gateway --http``: it lets in only its team (real HTTP clients with no token, a wrong one, the
right one, OAuth tokens a real issuer vouches for), it has the proxy's bounds, and each principal gets its
own server processes while its 2026-07-28 requests share one session. Real gateway
processes, SDK clients and raw HTTP; every wait is bounded."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from lazymcp.cli import main

from ..conftest import free_port, initialize_request
from ..raw import (
    INIT,
    MODERN_HEADERS,
    PID_SERVER,
    TIMEOUT,
    config_of,
    hostile,
    http,
    http_gateway,
    listening,
    mcp_url,
    modern,
    open_session,
    pid_of,
    post,
    put_in_flight,
    request,
)
from ..servers.issuer import CLIENT_ID, CLIENT_SECRET, running_issuer

pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")

TOKEN = "team-secret-7f3a"
INITIALIZE = initialize_request("raw")
JSON = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
SECRETS = {"LAZYMCP_OAUTH_CLIENT_ID": CLIENT_ID, "LAZYMCP_OAUTH_CLIENT_SECRET": CLIENT_SECRET}


def bearer(token: str, **more: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", **more}


@pytest.mark.anyio
async def test_only_requests_with_the_token_get_in(everything_command: list[str], tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    server = {"command": everything_command[0], "args": everything_command[1:]}
    config.write_text(json.dumps({"mcpServers": {"everything": server}}))
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    port = free_port()
    command = [sys.executable, "-m", "lazymcp", "gateway", "--config", str(config)]
    command += ["--http", f"127.0.0.1:{port}", "--token-file", str(token_file)]
    url = mcp_url(port)
    async with listening(command, port, stderr=None):
        with anyio.fail_after(60):
            async with httpx2.AsyncClient(timeout=60) as raw:
                missing = await raw.post(url, json=INITIALIZE)
                wrong = await raw.post(url, json=INITIALIZE, headers={"Authorization": "Bearer not-it"})
                right = await raw.post(url, json=INITIALIZE, headers={"Authorization": f"Bearer {TOKEN}"})
            team = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)
            async with team, Client(streamable_http_client(url, http_client=team), mode="legacy") as client:
                listing = await client.list_tools()
                echoed = await client.call_tool("everything__echo", {"message": "team"})
    assert (missing.status_code, wrong.status_code) == (401, 401)
    assert missing.headers["www-authenticate"].startswith("Bearer")
    assert right.status_code == 200 and right.json()["result"]["serverInfo"]["name"] == "lazymcp-gateway"
    assert "everything__echo" in [tool.name for tool in listing.tools]
    assert "team" in str(echoed.content[0])


def test_listening_off_loopback_without_a_token_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LAZYMCP_GATEWAY_TOKEN", raising=False)
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {}}))
    assert main(["gateway", "--config", str(config), "--http", "0.0.0.0:9"]) == 2
    assert "without authentication" in capsys.readouterr().err


@pytest.mark.anyio
async def test_a_remote_entry_sends_its_headers_with_variables_from_the_environment(
    everything_command: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A team's gateway (over HTTP, with a token) as a remote server of a user's gateway (over stdio)."""
    team_config = tmp_path / "team.json"
    server = {"command": everything_command[0], "args": everything_command[1:]}
    team_config.write_text(json.dumps({"mcpServers": {"everything": server}}))
    monkeypatch.setenv("LAZYMCP_GATEWAY_TOKEN", TOKEN)
    port = free_port()
    team = [sys.executable, "-m", "lazymcp", "gateway", "--config", str(team_config), "--http", f"127.0.0.1:{port}"]
    url = mcp_url(port)
    async with listening(team, port, stderr=None):
        monkeypatch.delenv("LAZYMCP_GATEWAY_TOKEN")
        mine = tmp_path / "mine.json"
        remote = {"type": "http", "url": url, "headers": {"Authorization": "Bearer ${TEAM_TOKEN}"}}
        mine.write_text(json.dumps({"mcpServers": {"team": remote}, "lazymcp": {"mode": "eager"}}))
        env = {"LAZYMCP_CACHE_DIR": str(tmp_path / "cache"), "TEAM_TOKEN": TOKEN}
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "lazymcp", "gateway", "--config", str(mine)], env={**os.environ, **env}
        )
        with anyio.fail_after(60):
            async with Client(params, mode="legacy") as client:
                listing = await client.list_tools()
                echoed = await client.call_tool("team__everything__echo", {"message": "via the team"})
    assert "team__everything__echo" in [tool.name for tool in listing.tools]
    assert "via the team" in str(echoed.content[0])


@pytest.mark.anyio
async def test_the_gateway_over_http_has_the_proxys_bounds_and_takes_2026_clients(
    everything_command: list[str], tmp_path: Path
) -> None:
    """One HTTP front for both: a body past the limit gets 413, sessions past --max-sessions that are all
    busy get 503, and 2026-07-28 clients share one gateway session with their ids kept apart."""
    config = tmp_path / "mcp.json"
    server = {"command": everything_command[0], "args": everything_command[1:]}
    config.write_text(json.dumps({"mcpServers": {"everything": server}}))
    port = free_port()
    command = [sys.executable, "-m", "lazymcp", "gateway", "--config", str(config), "--max-sessions", "1"]
    command += ["--http", f"127.0.0.1:{port}"]
    env = {"LAZYMCP_CACHE_DIR": str(tmp_path / "cache")}
    url = mcp_url(port)
    async with listening(command, port, env=env, stderr=None):
        with anyio.fail_after(60):
            async with httpx2.AsyncClient(timeout=30) as raw:
                huge = await raw.post(url, content=b"[" + b" " * (5 << 20) + b"]", headers=JSON)
                first = await raw.post(url, json=INITIALIZE, headers=JSON)
                session = {**JSON, "mcp-session-id": first.headers["mcp-session-id"]}
                await raw.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session)
                async with anyio.create_task_group() as group:  # the first session busy with a slow call
                    slow = {"name": "everything__trigger-long-running-operation", "arguments": {"duration": 3}}
                    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": slow}
                    await put_in_flight(group, port, call, {"Mcp-Session-Id": session["mcp-session-id"]}, [])
                    second = await raw.post(url, json=INITIALIZE, headers=JSON)
            async with (
                Client(streamable_http_client(url), mode="2026-07-28") as one,
                Client(streamable_http_client(url), mode="2026-07-28") as two,
            ):
                echoes = [
                    await one.call_tool("everything__echo", {"message": "one"}),
                    await two.call_tool("everything__echo", {"message": "two"}),
                ]
    assert huge.status_code == 413
    assert first.status_code == 200
    assert second.status_code == 503 and "--max-sessions" in second.text
    assert [echo.content[0].text for echo in echoes] == ["Echo: one", "Echo: two"]  # type: ignore[union-attr]


@pytest.mark.anyio
async def test_the_gateway_lets_in_oauth_tokens_its_issuer_vouches_for(
    everything_command: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--oauth-issuer``: each token is introspected at a real issuer (RFC 7662) and must be issued for
    this gateway; the protected-resource metadata tells clients where to get one."""
    config = tmp_path / "mcp.json"
    server = {"command": everything_command[0], "args": everything_command[1:]}
    config.write_text(json.dumps({"mcpServers": {"everything": server}}))
    port = free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    env = {**SECRETS, "LAZYMCP_CACHE_DIR": str(tmp_path / "cache")}
    with running_issuer(free_port(), resource) as issuer:
        command = [sys.executable, "-m", "lazymcp", "gateway", "--config", str(config)]
        command += ["--http", f"127.0.0.1:{port}", "--oauth-issuer", issuer.url]
        url = mcp_url(port)
        async with listening(command, port, env=env, stderr=None):
            with anyio.fail_after(60):
                async with httpx2.AsyncClient(timeout=60) as raw:
                    missing = await raw.post(url, json=INITIALIZE)
                    wrong = await raw.post(url, json=INITIALIZE, headers={"Authorization": "Bearer other-audience"})
                    metadata = await raw.get(f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp")
                team = httpx2.AsyncClient(headers={"Authorization": "Bearer good"}, timeout=60)
                async with team, Client(streamable_http_client(url, http_client=team), mode="legacy") as client:
                    echoed = await client.call_tool("everything__echo", {"message": "vouched for"})
    assert (missing.status_code, wrong.status_code) == (401, 401)
    assert "resource_metadata=" in missing.headers["www-authenticate"]
    assert 'error="invalid_token"' in wrong.headers["www-authenticate"]
    assert metadata.json()["resource"] == resource
    assert metadata.json()["authorization_servers"] == [issuer.url]
    assert "vouched for" in str(echoed.content[0])
    assert issuer.introspections >= 2


@pytest.mark.anyio
async def test_the_proxy_over_http_takes_the_same_access_flags(everything_command: list[str], tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    port = free_port()
    command = [sys.executable, "-m", "lazymcp", "proxy", "--http", f"127.0.0.1:{port}", "--token-file", str(token_file)]
    url = mcp_url(port)
    async with listening([*command, "--", *everything_command], port, stderr=None):
        with anyio.fail_after(60):
            async with httpx2.AsyncClient(timeout=60) as raw:
                missing = await raw.post(url, json=INITIALIZE)
            team = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)
            async with team, Client(streamable_http_client(url, http_client=team), mode="legacy") as client:
                echoed = await client.call_tool("echo", {"message": "one front"})
    assert missing.status_code == 401
    assert "one front" in str(echoed.content[0])


# --- sessions and principals ------------------------------------------------------------------------


@asynccontextmanager
async def gateway_of_ada_and_bob(tmp_path: Path, port: int) -> AsyncIterator[None]:
    """A gateway of ``PID_SERVER`` on ``port`` under ``--oauth-issuer``: a real issuer that vouches for two
    principals, ada (token "good") and bob (token "bob")."""
    with running_issuer(free_port(), mcp_url(port)) as issuer:
        issuer.tokens["bob"] = {**issuer.tokens["good"], "sub": "bob", "client_id": "bob-client"}
        flags = ["--oauth-issuer", issuer.url]
        async with http_gateway(config_of(tmp_path, p=PID_SERVER), tmp_path / "cache", port, flags, SECRETS):
            yield


@pytest.mark.anyio
async def test_one_client_cannot_turn_the_shared_2026_session_into_a_2025_one(tmp_path: Path) -> None:
    """Every 2026 client shares one gateway core. A POST of a plain ``initialize`` with the 2026 header,
    reaching that core first, must not make it a 2025 session (its client taken for a 2025 one for good):
    every 2026 client's answers would then lack the 2026 envelope (no ``resultType``, no serverInfo)."""
    port = free_port()
    async with http_gateway(config_of(tmp_path, h=hostile()), tmp_path / "cache", port):
        with anyio.fail_after(TIMEOUT):
            await post(port, request(1, "initialize", INIT), MODERN_HEADERS)  # a hostile (or confused) client
            status, answer = await post(port, modern(2, "tools/list"), MODERN_HEADERS)  # an honest 2026 client
    assert status == 200 and answer is not None
    assert answer["result"].get("resultType") == "complete", answer["result"].keys()


@pytest.mark.anyio
async def test_an_oauth_session_is_only_usable_by_the_principal_that_opened_it(tmp_path: Path) -> None:
    """Under ``--oauth-issuer`` a session is bound to the principal that opened it, as the SDK's own
    streamable-HTTP server binds it: bob's valid token with ada's session id must not drive her session
    (her server processes, her elicitations on its event stream)."""
    port = free_port()
    async with gateway_of_ada_and_bob(tmp_path, port):
        with anyio.fail_after(TIMEOUT):
            ada = await open_session(port, bearer("good"))
            status, answer = await post(port, request(2, "tools/list"), {**ada, **bearer("bob")})
    assert status in (403, 404), (status, answer)


@pytest.mark.anyio
async def test_2026_clients_of_different_principals_do_not_share_server_processes(tmp_path: Path) -> None:
    """As 2025 sessions each get their own server processes, 2026 clients whose tokens name different
    principals do not share one 2026 session and its processes (a memory or filesystem server's state
    would then be one tenant's and the other's)."""
    port = free_port()
    async with gateway_of_ada_and_bob(tmp_path, port):
        with anyio.fail_after(TIMEOUT):
            call = modern(2, "tools/call", {"name": "p__whoami", "arguments": {}})
            _, for_ada = await post(port, call, bearer("good", **MODERN_HEADERS))
            _, for_bob = await post(port, call, bearer("bob", **MODERN_HEADERS))
    assert pid_of(for_ada) != pid_of(for_bob)


@pytest.mark.anyio
async def test_every_method_on_mcp_asks_for_the_token_even_with_a_valid_session_id(tmp_path: Path) -> None:
    """GET (the event stream) and DELETE are checked like POST: a session id alone opens nothing."""
    port = free_port()
    token_file = tmp_path / "token"
    token_file.write_text("team-token\n")
    flags = ["--token-file", str(token_file)]
    async with http_gateway(config_of(tmp_path, h=hostile()), tmp_path / "cache", port, flags):
        with anyio.fail_after(TIMEOUT):
            session = await open_session(port, bearer("team-token"))
            only_id = {"Mcp-Session-Id": session["Mcp-Session-Id"]}
            got, _, _ = await http(port, "GET", b"", only_id)
            posted, _ = await post(port, request(2, "tools/list"), only_id)
            deleted, _, _ = await http(port, "DELETE", b"", only_id)
            modern_post, _ = await post(port, modern(3, "tools/list"), MODERN_HEADERS)
            still, answer = await post(port, request(4, "tools/list"), session)
    assert (got, posted, deleted, modern_post) == (401, 401, 401, 401)
    assert still == 200 and answer is not None and "result" in answer  # the DELETE without a token did nothing


@pytest.mark.anyio
async def test_2025_sessions_of_one_principal_over_http_share_its_server_processes(tmp_path: Path) -> None:
    """One principal's sessions share a process of each server (``tests/run/test_shared_servers.py`` has more)."""
    port = free_port()
    async with http_gateway(config_of(tmp_path, p=PID_SERVER), tmp_path / "cache", port):
        with anyio.fail_after(TIMEOUT):
            first, second = await open_session(port, {}), await open_session(port, {})
            call = request(2, "tools/call", {"name": "p__whoami", "arguments": {}})
            _, one = await post(port, call, first)
            _, other = await post(port, call, second)
    assert pid_of(one) == pid_of(other)
