"""The aware client, against a lazy server and against a server that has never heard of lazymcp."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from mcp import StdioServerParameters
from mcp.shared.exceptions import MCPError

from lazymcp import LazyClient

from ..conftest import ERAS, build_lazy

pytestmark = pytest.mark.anyio

PLAIN = StdioServerParameters(
    command=sys.executable, args=[str(Path(__file__).parents[1] / "servers" / "plain_server.py")]
)


@pytest.mark.parametrize("mode", ERAS)
async def test_client_makes_stubs_itself_for_a_server_without_the_extension(mode: str) -> None:
    async with LazyClient(PLAIN, mode=mode) as client:
        assert client.server_supports_lazy is False
        stubs = await client.list_stubs()
        full = await client.list_full()
        described = await client.describe("echo")
        batch, unknown = await client.describe_batch(["upper", "nope", "upper"])
        result = await client.call_tool("add", {"a": 1, "b": 2})
        with pytest.raises(MCPError) as caught:
            await client.describe("nope")
    assert stubs[0] == {"name": "add", "description": "Add two integers."}
    assert described == full[1]
    assert [tool["name"] for tool in batch] == ["upper"] and unknown == ["nope"]
    assert result.structured_content == {"result": 3}
    assert caught.value.error.data["field"] == "name"


@pytest.mark.parametrize("mode", ERAS)
async def test_client_calls_a_tool_known_only_from_its_stub(mode: str) -> None:
    from mcp.client._memory import InMemoryTransport

    async with LazyClient(InMemoryTransport(build_lazy()), mode=mode) as client:
        assert client.server_supports_lazy
        await client.list_stubs()
        result = await client.call_tool("forecast", {"city": "Lima"})
    assert result.structured_content == {"city": "Lima", "days": 3}
