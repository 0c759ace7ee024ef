"""Related tools a server declares in its tools' own ``_meta`` are named as the gateway names them, and
only those the principal's grant allows: a real gateway process over HTTP, two named tokens, the SDK
client; a principal never reads the name of a tool it may not use."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from lazymcp.protocol.messages import EXT_ID

from ..conftest import SERVERS, free_port
from ..raw import TIMEOUT, http_gateway, mcp_url

pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")

RELATED = [sys.executable, str(SERVERS / "related_server.py")]  # read -> write, wipe; write -> read; wipe
POLICY = {"reader": {"allow": ["kv__read", "kv__write"]}, "admin": {"allow": ["kv__*"]}}


async def described(url: str, token: str, names: list[str]) -> tuple[dict[str, Any], str]:
    """What ``describe_tools`` says of every tool (by name), and every text the session showed."""
    http_client = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=TIMEOUT)
    async with http_client, Client(streamable_http_client(url, http_client=http_client), mode="legacy") as client:
        listed = (await client.list_tools()).model_dump_json()
        result = await client.call_tool("describe_tools", {"names": names})
        text = result.content[0].text  # type: ignore[union-attr]
        search = await client.call_tool("search_tools", {"query": "read write store delete value key"})
        shown = listed + text + search.content[0].text  # type: ignore[union-attr]
    return {tool["name"]: tool for tool in json.loads(text)["tools"]}, shown


def related_of(tool: dict[str, Any]) -> list[str]:
    return tool["_meta"][EXT_ID]["related"]


@pytest.mark.anyio
async def test_declared_related_tools_are_gateway_names_the_principal_may_use(tmp_path: Path) -> None:
    config = tmp_path / "gateway.json"
    servers = {"kv": {"command": RELATED[0], "args": RELATED[1:]}}
    config.write_text(json.dumps({"mcpServers": servers, "lazymcp": {"access": POLICY}}))
    tokens = tmp_path / "tokens"
    tokens.write_text("reader: tok-reader-1\nadmin: tok-admin-2\n")
    tokens.chmod(0o600)
    port = free_port()
    flags = ["--token-file", str(tokens), "--mode", "proxy"]
    async with http_gateway(config, tmp_path / "cache", port, flags):
        with anyio.fail_after(TIMEOUT * 3):
            reader, reader_saw = await described(mcp_url(port), "tok-reader-1", ["kv__read", "kv__write"])
            admin, _ = await described(mcp_url(port), "tok-admin-2", ["kv__read", "kv__write", "kv__wipe"])
    assert sorted(reader) == ["kv__read", "kv__write"], reader
    assert "wipe" not in reader_saw, reader_saw
    assert sorted(related_of(reader["kv__read"])) == ["kv__write"], reader["kv__read"]
    assert related_of(reader["kv__write"]) == ["kv__read"], reader["kv__write"]
    assert sorted(related_of(admin["kv__read"])) == ["kv__wipe", "kv__write"], admin["kv__read"]
