"""The policy is asked once per request of the HTTP front: a real front (``lazymcp.run.http_front``) over
the gateway's real ``Cores``, served by uvicorn, whose policy lookups a thin wrapper counts, with raw
2026-07-28 and 2025-11-25 requests over HTTP; and a real gateway process, whose lookups its debug lines
tell, with the SDK client of each era, the request that opens a session included."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from lazymcp.access.policy import Principal
from lazymcp.core.actions import Action, Core
from lazymcp.gateway.config import parse_config
from lazymcp.protocol.limits import Limits
from lazymcp.run.gateway_build import Launch
from lazymcp.run.http_front import HttpFront
from lazymcp.run.manifests import ManifestStore
from lazymcp.run.reload import Cores
from lazymcp.surfaces.options import Options

from ..conftest import free_port, serving, until
from ..raw import MODERN_HEADERS, PID_SERVER, TIMEOUT, listening, mcp_url, modern, open_session, post, request

pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")


class Counted:
    """The gateway's ``Cores`` as the front's ``Grants``, counting what the front asks of the policy."""

    def __init__(self, cores: Cores) -> None:
        self.cores = cores
        self.asked = 0

    def grant(self, principal: Principal | None) -> object:
        self.asked += 1
        return self.cores.grant(principal)

    def regrant(self, core: Core, grant: object) -> Callable[[float], list[Action]] | None:
        return self.cores.regrant(core, grant)


@pytest.mark.anyio
async def test_each_request_asks_the_policy_once(tmp_path: Path) -> None:
    """Once a session serves them, each 2026-07-28 request, and each request of a 2025-11-25 session, is
    granted by one lookup of the policy."""
    servers = {"p": {"command": PID_SERVER[0], "args": PID_SERVER[1:]}}
    config = parse_config({"mcpServers": servers, "lazymcp": {"access": {"*": {"allow": ["p__*"]}}}})
    cores = Cores(Launch(config, Options()), ManifestStore(tmp_path / "cache"), None, None)
    counted = Counted(cores)
    front = HttpFront(cores, Limits(), "127.0.0.1", name="gateway")
    front.grants = counted
    port = free_port()
    asked: dict[str, int] = {}
    async with serving(front.app(), port):
        with anyio.fail_after(TIMEOUT):
            await post(port, modern(1, "ping"), MODERN_HEADERS)  # the session is opened
            counted.asked = 0
            for number in range(2, 5):
                status, _ = await post(port, modern(number, "ping"), MODERN_HEADERS)
                assert status == 200
            asked["2026"], counted.asked = counted.asked, 0
            session = await open_session(port)
            counted.asked = 0
            for number in range(2, 5):
                status, _ = await post(port, request(number, "ping"), session)
                assert status == 200
            asked["2025"] = counted.asked
    assert asked == {"2026": 3, "2025": 3}


LOOKED_UP = "lazymcp gateway: the policy grants team: allow p__*"
"""The debug line of one lookup of the policy for the principal of the token ``team``."""


@pytest.mark.anyio
@pytest.mark.parametrize("era", ["2026-07-28", "legacy"])
async def test_a_new_sessions_opening_request_asks_the_policy_once_too(tmp_path: Path, era: str) -> None:
    """A real gateway process at ``--log-level debug``, which says each lookup of its policy: as many as
    the requests of the SDK client it answered (its POSTs, and in a 2025 session its GET stream and its
    DELETE), though the first of them opened the client's session."""
    servers = {"p": {"command": PID_SERVER[0], "args": PID_SERVER[1:]}}
    config = tmp_path / "gateway.json"
    config.write_text(json.dumps({"mcpServers": servers, "lazymcp": {"access": {"team": {"allow": ["p__*"]}}}}))
    tokens = tmp_path / "tokens"
    tokens.write_text("team: team-token-5c1\n")
    port = free_port()
    command = [sys.executable, "-m", "lazymcp", "gateway", "--config", str(config), "--mode", "proxy"]
    command += ["--http", f"127.0.0.1:{port}", "--token-file", str(tokens), "--log-level", "debug"]
    answered: list[str] = []

    async def seen(response: httpx2.Response) -> None:
        answered.append(response.request.method)

    said = tmp_path / "gateway.log"
    with said.open("wb") as stderr:
        async with listening(command, port, env={"LAZYMCP_CACHE_DIR": str(tmp_path / "cache")}, stderr=stderr.fileno()):
            headers = {"Authorization": "Bearer team-token-5c1"}
            http_client = httpx2.AsyncClient(headers=headers, timeout=TIMEOUT, event_hooks={"response": [seen]})
            target = streamable_http_client(mcp_url(port), http_client=http_client)
            with anyio.fail_after(TIMEOUT * 2):
                async with http_client, Client(target, mode=era) as client:
                    listed = await client.list_tools()
                    called = await client.call_tool("p__whoami", {})
                    if era == "legacy":  # its event stream answered, so asked for too
                        await until(lambda: "GET" in answered, within=TIMEOUT, what="the GET stream's answer")
    lookups = said.read_text(errors="replace").count(LOOKED_UP)
    assert listed.tools and not called.is_error
    assert answered.count("POST") >= 2 and (era != "legacy" or "DELETE" in answered), answered
    assert lookups == len(answered), answered
