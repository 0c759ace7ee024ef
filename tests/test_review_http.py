"""Review of ``lazymcp gateway --http``: the one shared 2026 session, and sessions under OAuth. Real
gateway processes, a real issuer (``servers/issuer.py``) and raw HTTP; every wait is bounded."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncGenerator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import Process

from .conftest import free_port, until_listening
from .servers.issuer import CLIENT_ID, CLIENT_SECRET, running_issuer
from .test_bounded import INIT, INITIALIZED, MODERN, MODERN_HEADERS, TIMEOUT, hostile, http, post, request
from .test_review_gateway import config_of

SERVERS = Path(__file__).with_name("servers")
PID_SERVER = [sys.executable, str(SERVERS / "pid_server.py")]
SECRETS = {"LAZYMCP_OAUTH_CLIENT_ID": CLIENT_ID, "LAZYMCP_OAUTH_CLIENT_SECRET": CLIENT_SECRET}


@asynccontextmanager
async def http_gateway(
    config: Path, cache: Path, port: int, flags: Sequence[str] = (), env: dict[str, str] | None = None
) -> AsyncGenerator[Process]:
    command = [sys.executable, "-m", "lazymcp", "gateway", "--config", str(config), "--http", f"127.0.0.1:{port}"]
    environ = {**os.environ, "LAZYMCP_CACHE_DIR": str(cache), **(env or {})}
    async with await anyio.open_process([*command, *flags], env=environ, stdout=None) as process:
        try:
            with anyio.fail_after(TIMEOUT):
                await until_listening(port)
            yield process
        finally:
            if process.returncode is None:
                process.terminate()
                with anyio.fail_after(10):
                    await process.wait()


def modern(request_id: object, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return request(request_id, method, {**(params or {}), "_meta": MODERN})


def bearer(token: str, **more: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", **more}


def pid_of(answer: dict[str, Any] | None) -> str:
    assert answer is not None and "result" in answer, answer
    return answer["result"]["content"][0]["text"]


async def open_session(port: int, headers: dict[str, str]) -> dict[str, str]:
    status, found, _ = await http(port, "POST", json.dumps(request(1, "initialize", INIT)).encode(), headers)
    assert status == 200, status
    session = {**headers, "Mcp-Session-Id": found["mcp-session-id"]}
    await post(port, INITIALIZED, session)
    return session


# --- findings: these fail today -----------------------------------------------------------------------


@pytest.mark.anyio
async def test_one_client_cannot_turn_the_shared_2026_session_into_a_2025_one(tmp_path: Path) -> None:
    """Every 2026 client shares one gateway core. A POST of a plain ``initialize`` with the 2026 header
    reaches that core first, sets its ``_client``, and so ``_modern`` is never set: from then on every
    2026 client's answers lack the 2026 envelope (no ``resultType``, no serverInfo stamp)."""
    port = free_port()
    async with http_gateway(config_of(tmp_path, h=hostile()), tmp_path / "cache", port):
        with anyio.fail_after(TIMEOUT):
            await post(port, request(1, "initialize", INIT), MODERN_HEADERS)  # a hostile (or confused) client
            status, answer = await post(port, modern(2, "tools/list"), MODERN_HEADERS)  # an honest 2026 client
    assert status == 200 and answer is not None
    assert answer["result"].get("resultType") == "complete", answer["result"].keys()


@pytest.mark.anyio
async def test_an_oauth_session_is_only_usable_by_the_principal_that_opened_it(tmp_path: Path) -> None:
    """Under ``--oauth-issuer`` any valid token opens any session whose id it presents: bob's token
    drives ada's session (her server processes, her elicitations on its event stream). The SDK's own
    streamable-HTTP server binds a session to the principal that created it."""
    port = free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    with running_issuer(free_port(), resource) as issuer:
        issuer.tokens["bob"] = {**issuer.tokens["good"], "sub": "bob", "client_id": "bob-client"}
        flags = ["--oauth-issuer", issuer.url]
        async with http_gateway(config_of(tmp_path, p=PID_SERVER), tmp_path / "cache", port, flags, SECRETS):
            with anyio.fail_after(TIMEOUT):
                ada = await open_session(port, bearer("good"))
                status, answer = await post(port, request(2, "tools/list"), {**ada, **bearer("bob")})
    assert status in (403, 404), (status, answer)


@pytest.mark.anyio
async def test_2026_clients_of_different_principals_do_not_share_server_processes(tmp_path: Path) -> None:
    """2025 sessions each get their own server processes; every 2026 client, whoever its token names,
    goes to the one shared 2026 session and so to the same processes (a memory or filesystem server's
    state is then one tenant's and the other's)."""
    port = free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    with running_issuer(free_port(), resource) as issuer:
        issuer.tokens["bob"] = {**issuer.tokens["good"], "sub": "bob", "client_id": "bob-client"}
        flags = ["--oauth-issuer", issuer.url]
        async with http_gateway(config_of(tmp_path, p=PID_SERVER), tmp_path / "cache", port, flags, SECRETS):
            with anyio.fail_after(TIMEOUT):
                call = modern(2, "tools/call", {"name": "p__whoami", "arguments": {}})
                _, for_ada = await post(port, call, bearer("good", **MODERN_HEADERS))
                _, for_bob = await post(port, call, bearer("bob", **MODERN_HEADERS))
    assert pid_of(for_ada) != pid_of(for_bob)


# --- regressions: these pass today ----------------------------------------------------------------------


@pytest.mark.anyio
async def test_every_method_on_mcp_asks_for_the_token_even_with_a_valid_session_id(tmp_path: Path) -> None:
    """GET (the event stream) and DELETE are checked like POST: a session id alone opens nothing."""
    port = free_port()
    token_file = tmp_path / "token"
    token_file.write_text("review-token\n")
    flags = ["--token-file", str(token_file)]
    async with http_gateway(config_of(tmp_path, h=hostile()), tmp_path / "cache", port, flags):
        with anyio.fail_after(TIMEOUT):
            session = await open_session(port, bearer("review-token"))
            only_id = {"Mcp-Session-Id": session["Mcp-Session-Id"]}
            got, _, _ = await http(port, "GET", b"", only_id)
            posted, _ = await post(port, request(2, "tools/list"), only_id)
            deleted, _, _ = await http(port, "DELETE", b"", only_id)
            modern_post, _ = await post(port, modern(3, "tools/list"), MODERN_HEADERS)
            still, answer = await post(port, request(4, "tools/list"), session)
    assert (got, posted, deleted, modern_post) == (401, 401, 401, 401)
    assert still == 200 and answer is not None and "result" in answer  # the DELETE without a token did nothing


@pytest.mark.anyio
async def test_2025_sessions_over_http_get_their_own_server_processes(tmp_path: Path) -> None:
    port = free_port()
    async with http_gateway(config_of(tmp_path, p=PID_SERVER), tmp_path / "cache", port):
        with anyio.fail_after(TIMEOUT):
            first, second = await open_session(port, {}), await open_session(port, {})
            call = request(2, "tools/call", {"name": "p__whoami", "arguments": {}})
            _, one = await post(port, call, first)
            _, other = await post(port, call, second)
    assert pid_of(one) != pid_of(other)
