"""Token exchange (RFC 8693) for remote servers, end to end: a real gateway (``--http``, ``--oauth-issuer``)
in front of a real SDK server over HTTP that trusts only tokens the test issuer exchanged
(``tests/servers/exchange_upstream.py``), each principal reaching it as itself."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from ..conftest import free_port, serving
from ..raw import MODERN_HEADERS, TIMEOUT, http_gateway, listening, mcp_url, modern_call, open_session, post, tool_call
from ..servers.exchange_upstream import app
from ..servers.issuer import AUDIENCE, CLIENT_ID, CLIENT_SECRET, EXCHANGE_CLIENT, EXCHANGE_SECRET, running_issuer

pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")

SECRETS = {"LAZYMCP_OAUTH_CLIENT_ID": CLIENT_ID, "LAZYMCP_OAUTH_CLIENT_SECRET": CLIENT_SECRET}


def exchange_config(tmp_path: Path, issuer: str, upstream: str) -> Path:
    """Two entries for one server: ``api`` exchanges for the audience the issuer grants, ``denied`` for one
    it refuses."""

    def entry(audience: str) -> dict[str, Any]:
        exchange = {
            "tokenEndpoint": f"{issuer}/token",
            "audience": audience,
            "clientId": EXCHANGE_CLIENT,
            "clientSecret": "${EXCHANGE_SECRET}",
        }
        return {"url": upstream, "oauth": {"exchange": exchange}}

    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"api": entry(AUDIENCE), "denied": entry("elsewhere-api")}}))
    return path


def text_of(answer: dict[str, Any] | None) -> str:
    assert answer is not None and "result" in answer, answer
    return answer["result"]["content"][0]["text"]


@pytest.mark.anyio
async def test_each_principal_reaches_the_upstream_with_its_own_exchanged_token(tmp_path: Path) -> None:
    """ada and eve each call the upstream as themselves, with a token exchanged for the upstream's URL;
    the upstream never sees the tokens they came to the gateway with; a second session of ada's reuses
    her exchanged token; an exchange the issuer refuses is one line naming the error, no token in it."""
    port, upstream_port = free_port(), free_port()
    seen: list[str] = []
    with running_issuer(free_port(), mcp_url(port)) as issuer:
        async with serving(app(issuer.exchanged, seen), upstream_port) as upstream:
            config = exchange_config(tmp_path, issuer.url, upstream)
            command = [sys.executable, "-m", "lazymcp", "gateway", "--config", str(config)]
            command += ["--http", f"127.0.0.1:{port}", "--oauth-issuer", issuer.url, "--mode", "proxy"]
            env = {"LAZYMCP_CACHE_DIR": str(tmp_path / "cache"), "EXCHANGE_SECRET": EXCHANGE_SECRET, **SECRETS}
            stderr = tmp_path / "stderr"
            with stderr.open("wb") as sink:
                async with listening(command, port, env=env, stderr=sink.fileno()):
                    with anyio.fail_after(TIMEOUT * 3):
                        ada = await open_session(port, {"Authorization": "Bearer good"})
                        eve = await open_session(port, {"Authorization": "Bearer eve"})
                        _, as_ada = await post(port, tool_call(2, "api__whoami"), ada)
                        _, as_eve = await post(port, tool_call(2, "api__whoami"), eve)
                        again = await open_session(port, {"Authorization": "Bearer good"})
                        _, as_ada_again = await post(port, tool_call(3, "api__whoami"), again)
                        _, denied = await post(port, tool_call(4, "denied__whoami"), eve)
    assert json.loads(text_of(as_ada)) == {"sub": "ada", "aud": AUDIENCE, "resource": upstream}
    assert json.loads(text_of(as_eve)) == {"sub": "eve", "aud": AUDIENCE, "resource": upstream}
    assert json.loads(text_of(as_ada_again))["sub"] == "ada"
    assert len(issuer.exchanged) == 2  # one exchange per principal: ada's second session reused hers
    assert seen and all(header.startswith("Bearer exchanged-") for header in seen if header)
    assert not any("good" in header or "eve" in header for header in seen)
    assert denied is not None
    said = json.dumps(denied)
    assert "refused" in said and "invalid_target" in said, denied
    assert "exchanged-" not in said and "Bearer eve" not in said and EXCHANGE_SECRET not in said
    logged = stderr.read_text()
    assert "invalid_target" in logged and "exchanged-" not in logged and EXCHANGE_SECRET not in logged


@pytest.mark.anyio
async def test_without_an_oauth_principal_an_exchange_server_is_not_started_and_says_why() -> None:
    """stdio (no principal) and a ``--token-file`` token (a principal with no OAuth token) both get the one
    line naming what is needed; nothing is sent anywhere."""
    from lazymcp.access.exchange import NEEDS_PRINCIPAL
    from lazymcp.access.policy import Principal
    from lazymcp.gateway.config import parse_config
    from lazymcp.protocol.errors import UpstreamError
    from lazymcp.run.connections import connect
    from lazymcp.run.exchange import Exchanges, exchanging

    exchange = {"tokenEndpoint": "http://127.0.0.1:9/token", "audience": "a", "clientId": "c", "clientSecret": "s"}
    data = {"mcpServers": {"api": {"url": "http://127.0.0.1:9/mcp", "oauth": {"exchange": exchange}}}}
    api = parse_config(data, source="mcp.json").servers[0]
    exchanges = Exchanges()
    for connection in (
        connect(api, isolated=True),
        exchanging(exchanges, Principal(name="ci"), connect)(api, isolated=True),
    ):
        with pytest.raises(UpstreamError) as refused:
            await connection.start(lambda line: None, lambda why: None)
        assert refused.value.message == NEEDS_PRINCIPAL
    assert exchanges.made == 0


@pytest.mark.anyio
@pytest.mark.parametrize("era", ["2025-11-25", "2026-07-28"])
async def test_a_renewed_token_is_what_the_next_call_exchanges(tmp_path: Path, era: str) -> None:
    """ada's client renews her token within her session: her old token has expired and the upstream no
    longer takes what it was exchanged for; her next call is made with a token exchanged for the new one."""
    port, upstream_port = free_port(), free_port()
    seen: list[str] = []
    with running_issuer(free_port(), mcp_url(port)) as issuer:
        async with serving(app(issuer.exchanged, seen), upstream_port) as upstream:
            config = exchange_config(tmp_path, issuer.url, upstream)
            flags = ["--oauth-issuer", issuer.url, "--mode", "proxy"]
            env = {"EXCHANGE_SECRET": EXCHANGE_SECRET, **SECRETS}
            async with http_gateway(config, tmp_path / "cache", port, flags, env):
                with anyio.fail_after(TIMEOUT * 3):
                    if era == "2025-11-25":
                        session = await open_session(port, {"Authorization": "Bearer good"})
                        call = tool_call
                    else:
                        session = {"Authorization": "Bearer good", **MODERN_HEADERS}
                        call = modern_call
                    _, first = await post(port, call(2, "api__whoami"), session)
                    issuer.tokens["good"]["exp"] = 0  # it expired: the client signs in again
                    issuer.exchanged.clear()  # and the upstream takes no token exchanged for it
                    renewed = {**session, "Authorization": "Bearer good-renewed"}
                    _, second = await post(port, call(3, "api__whoami"), renewed)
    assert json.loads(text_of(first))["sub"] == "ada"
    assert json.loads(text_of(second)) == {"sub": "ada", "aud": AUDIENCE, "resource": upstream}
    assert issuer.subjects == ["good", "good-renewed"]
