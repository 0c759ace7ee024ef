"""Every SDK internal lazymcp reaches (``lazymcp.sdk_private``), checked one by one against the installed SDK.

An SDK upgrade that moves one of them fails here, by name, instead of somewhere downstream.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.mcpserver import MCPServer
from mcp.server.session import ServerSession
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, SubscriptionBus

from lazymcp import sdk_private

pytestmark = pytest.mark.anyio


def _server() -> MCPServer:
    server = MCPServer("private", log_level="WARNING")

    @server.tool()
    def shout(text: str) -> str:
        """Say it louder."""
        return text.upper()

    return server


def test_listen_bus_is_the_bus_the_handler_serves() -> None:
    bus = InMemorySubscriptionBus()
    assert sdk_private.listen_bus(ListenHandler(bus)) is bus


def test_an_mcpserver_exposes_its_lowlevel_server_bus_and_tool_manager() -> None:
    server = _server()
    assert isinstance(sdk_private.lowlevel_server(server), Server)
    bus: SubscriptionBus = sdk_private.subscription_bus(server)
    assert callable(bus.publish) and bus is sdk_private.subscription_bus(server)
    manager = sdk_private.tool_manager(server)
    assert [tool.name for tool in manager.list_tools()] == ["shout"]
    assert callable(manager.add_tool) and callable(manager.remove_tool)


async def test_a_live_connection_exposes_its_handshake_back_channel_state_and_close() -> None:
    server = _server()
    lowlevel = sdk_private.lowlevel_server(server)
    seen: dict[str, Any] = {}
    closed: list[ServerSession] = []

    async def spy(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method == "tools/list":
            seen["accepted"] = sdk_private.initialize_accepted(ctx.session)
            seen["back_channel"] = sdk_private.has_back_channel(ctx.session)
            state = sdk_private.connection_state(ctx.session)
            state["mark"] = state.get("mark", 0) + 1
            seen["state"] = state
            sdk_private.on_close(ctx.session, closed.append)
        return await call_next(ctx)

    lowlevel.middleware.append(spy)
    with anyio.fail_after(20):
        async with Client(sdk_private.memory_transport(lowlevel), mode="legacy") as client:
            await client.list_tools()
            await client.list_tools()
            assert closed == []
    assert seen["accepted"] is True and seen["back_channel"] is True
    assert isinstance(seen["state"], MutableMapping) and seen["state"]["mark"] == 2  # one state per connection
    assert len(closed) == 2 and all(isinstance(session, ServerSession) for session in closed)  # both, at close


async def test_a_client_session_sends_raw_requests_and_learns_tools() -> None:
    with anyio.fail_after(20):
        async with Client(sdk_private.memory_transport(sdk_private.lowlevel_server(_server()))) as client:
            session = client.session
            listing = await sdk_private.send_raw(session, "tools/list", {})
            assert [tool["name"] for tool in listing["tools"]] == ["shout"]
            assert not sdk_private.knows_tool(session, "shout")
            tool = types.Tool.model_validate(listing["tools"][0])
            sdk_private.absorb_tools(session, [tool])
            assert sdk_private.knows_tool(session, "shout")
            result = await client.call_tool("shout", {"text": "hi"})
            assert result.content[0].text == "HI"  # type: ignore[union-attr]
