"""Grants come from each request's own credentials: a real gateway process over HTTP with an OAuth issuer
(one principal, ada, holding two tokens whose ``groups`` claims differ, and another principal, eve), and
the SDK client switching tokens between its requests, over 2026-07-28 requests and a 2025-11-25 session."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, types
from mcp.client.streamable_http import streamable_http_client

from ..conftest import SERVERS, free_port, until
from ..raw import TIMEOUT, http_gateway, mcp_url
from ..servers.issuer import CLIENT_ID, CLIENT_SECRET, running_issuer

pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")

PLAIN = [sys.executable, str(SERVERS / "plain_server.py")]  # add, echo, upper
SECRETS = {"LAZYMCP_OAUTH_CLIENT_ID": CLIENT_ID, "LAZYMCP_OAUTH_CLIENT_SECRET": CLIENT_SECRET}
BY_GROUP = {"claim:groups=ops": {"allow": ["math__*"]}, "claim:groups=docs": {"allow": ["text__*"]}}


def config_in(tmp_path: Path) -> Path:
    config = tmp_path / "gateway.json"
    servers = {name: {"command": PLAIN[0], "args": PLAIN[1:]} for name in ("math", "text")}
    config.write_text(json.dumps({"mcpServers": servers, "lazymcp": {"access": BY_GROUP}}))
    return config


def use(http_client: httpx2.AsyncClient, token: str) -> None:
    """The client's next requests carry ``token``."""
    http_client.headers["Authorization"] = f"Bearer {token}"


async def categories(client: Client) -> list[str]:
    """The servers ``list_tool_categories`` names (a 2026 client is listed the meta-tools)."""
    result = await client.call_tool("list_tool_categories", {})
    return [c["name"] for c in json.loads(result.content[0].text)["categories"]]  # type: ignore[union-attr]


async def called(client: Client, name: str) -> str:
    try:
        result = await client.call_tool(name, {"text": "x"})
    except Exception as exc:  # the SDK raises the JSON-RPC error of a refused call
        return f"error: {exc}"
    text = result.content[0].text  # type: ignore[union-attr]
    return text if not result.is_error else f"error: {text}"


@pytest.mark.anyio
async def test_each_2026_request_is_granted_by_its_own_token(tmp_path: Path) -> None:
    """ada's requests alternate between her two tokens: each lists and calls what its own claims grant,
    never what the other token (or the first one seen) granted."""
    port = free_port()
    seen: dict[str, Any] = {}
    with running_issuer(free_port(), mcp_url(port)) as issuer:
        flags = ["--oauth-issuer", issuer.url, "--mode", "proxy"]
        async with http_gateway(config_in(tmp_path), tmp_path / "cache", port, flags, SECRETS):
            http_client = httpx2.AsyncClient(timeout=TIMEOUT)
            use(http_client, "ada-in-ops")
            target = streamable_http_client(mcp_url(port), http_client=http_client)
            with anyio.fail_after(TIMEOUT * 3):
                async with http_client, Client(target, mode="2026-07-28") as client:
                    seen["ops"] = await categories(client)
                    use(http_client, "ada-in-docs")
                    seen["docs"] = await categories(client)
                    seen["docs call"] = await called(client, "text__upper")
                    seen["docs refused"] = await called(client, "math__upper")
                    use(http_client, "ada-in-ops")
                    seen["ops again"] = await categories(client)
                    seen["ops call"] = await called(client, "math__upper")
                    seen["ops refused"] = await called(client, "text__upper")
    assert seen["ops"] == ["math"] and seen["ops again"] == ["math"], seen
    assert seen["docs"] == ["text"], seen
    assert seen["docs call"] == "X" and seen["ops call"] == "X"
    assert seen["docs refused"].startswith("error") and seen["ops refused"].startswith("error")


@pytest.mark.anyio
async def test_a_2025_session_follows_its_principals_token_and_refuses_another_principal(tmp_path: Path) -> None:
    """A session opened with ada's ops token, then used with her docs token: its listing and calls follow
    the new claims and the client is told the list changed; eve's token on it finds no session."""
    port = free_port()
    changed = anyio.Event()
    seen: dict[str, Any] = {}

    async def on_message(message: object) -> None:
        if isinstance(getattr(message, "root", message), types.ToolListChangedNotification):
            changed.set()

    with running_issuer(free_port(), mcp_url(port)) as issuer:
        flags = ["--oauth-issuer", issuer.url, "--mode", "proxy"]
        async with http_gateway(config_in(tmp_path), tmp_path / "cache", port, flags, SECRETS):
            http_client = httpx2.AsyncClient(timeout=TIMEOUT)
            use(http_client, "ada-in-ops")
            target = streamable_http_client(mcp_url(port), http_client=http_client)
            with anyio.fail_after(TIMEOUT * 3):
                async with http_client, Client(target, mode="legacy", message_handler=on_message) as client:
                    seen["ops"] = await categories(client)
                    use(http_client, "ada-in-docs")
                    seen["docs"] = await categories(client)
                    seen["docs call"] = await called(client, "text__upper")
                    seen["docs refused"] = await called(client, "math__upper")
                    await until(changed.is_set, within=TIMEOUT, what="notifications/tools/list_changed")
                    use(http_client, "eve")
                    seen["eve"] = await called(client, "math__upper")
    assert seen["ops"] == ["math"] and seen["docs"] == ["text"], seen
    assert seen["docs call"] == "X" and seen["docs refused"].startswith("error")
    assert seen["eve"].startswith("error") and "ession not found" in seen["eve"], seen["eve"]
