"""The policy is asked once per request of the HTTP front: a real front (``lazymcp.run.http_front``) over
the gateway's real ``Cores``, served by uvicorn, whose policy lookups a thin wrapper counts, with raw
2026-07-28 and 2025-11-25 requests over HTTP."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from lazymcp.access.policy import Principal
from lazymcp.core.actions import Action, Core
from lazymcp.gateway.config import parse_config
from lazymcp.protocol.limits import Limits
from lazymcp.run.gateway_build import Launch
from lazymcp.run.http_front import HttpFront
from lazymcp.run.manifests import ManifestStore
from lazymcp.run.reload import Cores
from lazymcp.surfaces.options import Options

from ..conftest import free_port, serving
from ..raw import MODERN_HEADERS, PID_SERVER, TIMEOUT, modern, open_session, post, request


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
    front = HttpFront(lambda principal: cores(principal, None), Limits(), "127.0.0.1", name="gateway")
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
