"""What agent frameworks send, through a gateway to a real server: the calls they build from a listing."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from ..conftest import ERAS, SERVERS

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")]

TIMEOUT = 60.0
"""Bound on one conversation with a gateway and its server, on a loaded machine."""


def gateway(tmp_path: Path, *options: str) -> StdioServerParameters:
    """A gateway over one real server, ``s`` (``given_server.py``)."""
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps({"mcpServers": {"s": {"command": sys.executable, "args": [str(SERVERS / "given_server.py")]}}})
    )
    env = {**os.environ, "LAZYMCP_CACHE_DIR": str(tmp_path / "cache")}
    args = ["-m", "lazymcp", "gateway", "--config", str(config), *options]
    return StdioServerParameters(command=sys.executable, args=args, env=env)


def text(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


@pytest.mark.parametrize("mode", ["describe", "eager", "proxy"])
async def test_a_null_for_an_optional_parameter_reaches_the_server_as_absent(tmp_path: Path, mode: str) -> None:
    with anyio.fail_after(TIMEOUT):
        async with Client(gateway(tmp_path, "--mode", mode), mode="legacy") as client:
            direct = await client.call_tool("s__repeat", {"text": "ab", "times": None})
            invoked = await client.call_tool(
                "invoke_tool" if mode == "proxy" else "s__repeat",
                {"name": "s__repeat", "arguments": {"text": "cd", "times": None}}
                if mode == "proxy"
                else {"text": "cd"},
            )
            found = await client.call_tool("search_tools", {"query": "repeat a text", "limit": None, "category": None})
    assert (direct.is_error, text(direct)) == (False, "abab")
    assert (invoked.is_error, text(invoked)) == (False, "cdcd")
    assert not found.is_error and "s__repeat" in text(found)


async def test_a_stub_called_without_arguments_points_to_invoke_tool_which_runs_it(tmp_path: Path) -> None:
    """What mcp-use, autogen-ext's ``mcp_server_tools`` and smolagents' ``ToolCallingAgent`` do with a stub."""
    with anyio.fail_after(TIMEOUT):
        async with Client(gateway(tmp_path), mode="legacy") as client:
            listing = await client.list_tools()
            dropped = await client.call_tool("s__repeat", {})
            invoked = await client.call_tool("invoke_tool", {"name": "s__repeat", "arguments": {"text": "ab"}})
    assert [tool.name for tool in listing.tools][:3] == ["describe_tools", "search_tools", "invoke_tool"]
    assert dropped.is_error and "client probably dropped them" in text(dropped) and "invoke_tool" in text(dropped)
    assert (invoked.is_error, text(invoked)) == (False, "abab")


@pytest.mark.parametrize("era", ERAS)
async def test_a_call_of_a_tool_no_server_has_gets_the_closest_names_as_a_result(tmp_path: Path, era: str) -> None:
    """An SDK client raises on a JSON-RPC error; a result reaches the model, which can pick the right name."""
    with anyio.fail_after(TIMEOUT):
        async with Client(gateway(tmp_path), mode=era) as client:
            result = await client.call_tool("s__repet", {"text": "ab"})
            invoked = await client.call_tool("invoke_tool", {"name": "repeat", "arguments": {"text": "ab"}})
    for answer in (result, invoked):
        said = json.loads(text(answer))
        assert answer.is_error and said["error"] == "unknown_tool" and said["suggestions"][0] == "s__repeat"
    assert json.loads(text(result))["name"] == "s__repet"
