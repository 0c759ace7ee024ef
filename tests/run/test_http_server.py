"""A lazified MCPServer over streamable HTTP, stateful and stateless, in both eras; and stats --url."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from mcp import Client

from lazymcp import LazyClient

from ..conftest import ERAS, STOCK_METAS, build_lazy, free_port, serving

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def http_server(*, stateless: bool) -> AsyncIterator[str]:
    app = build_lazy().streamable_http_app(stateless_http=stateless)
    async with serving(app, free_port(), within=10) as url:
        yield url


@pytest.mark.parametrize("stateless", [False, True])
@pytest.mark.parametrize("mode", ERAS)
async def test_a_lazified_mcpserver_serves_stubs_and_describe_over_http(mode: str, stateless: bool) -> None:
    async with http_server(stateless=stateless) as url:
        with anyio.fail_after(20):
            async with LazyClient(url, mode=mode) as lazy:
                listing = await lazy.request("tools/list", {"lazy": True})
                tool = await lazy.describe("add")
                result = await lazy.call_tool("add", {"a": 20, "b": 22})
            async with Client(url, mode=mode) as stock:
                stock_listing = await stock.list_tools()
                stock_result = await stock.call_tool("echo", {"text": "ok"})
    names = [entry["name"] for entry in listing["tools"]]
    if stateless and mode == "legacy":
        # Stateless 2025 HTTP: each POST is a new connection, so the declaration is unknown: stock stubs.
        assert names == [*STOCK_METAS, "add", "echo", "forecast"]
    else:
        assert listing["tools"][0] == {"name": "add", "description": "Add two integers."}
    assert tool["inputSchema"]["required"] == ["a", "b"]
    assert result.structured_content == {"result": 42}
    assert [entry.name for entry in stock_listing.tools][0] == "describe_tools"
    assert stock_result.structured_content == {"result": "ok"}


async def test_stats_measures_a_server_at_a_url(capsys: pytest.CaptureFixture[str]) -> None:
    from lazymcp.cli import main

    async with http_server(stateless=False) as url:
        code = await anyio.to_thread.run_sync(main, ["stats", "--json", "--url", url])
    report: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert code == 0 and report["native"] is True
    assert report["rows"][0]["tools"] == 3
