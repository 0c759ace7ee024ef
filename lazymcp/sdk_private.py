"""Every use lazymcp makes of ``mcp==2.3.0`` beyond its public API, one small function each.

The SDK is pinned exactly because of these. Each function names the private attribute it reaches, and
``tests/api/test_sdk_private.py`` checks each against the installed SDK, so an upgrade that moves one
fails there by name rather than somewhere downstream.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from typing import Any, cast

import mcp_types as types
from mcp.client._memory import InMemoryTransport  # pyright: ignore[reportPrivateImportUsage]
from mcp.client.session import ClientSession
from mcp.server.lowlevel.server import Server
from mcp.server.mcpserver import MCPServer
from mcp.server.session import ServerSession
from mcp.server.subscriptions import ListenHandler, SubscriptionBus
from mcp.shared.dispatcher import CallOptions

# --- server side ---------------------------------------------------------------------------------


def listen_bus(handler: ListenHandler) -> SubscriptionBus:
    """The bus a ``subscriptions/listen`` handler serves (``ListenHandler._bus``)."""
    return handler._bus  # pyright: ignore[reportPrivateUsage]


def lowlevel_server(server: MCPServer[Any]) -> Server[Any]:
    """The lowlevel server under an ``MCPServer`` (``MCPServer._lowlevel_server``)."""
    return server._lowlevel_server  # pyright: ignore[reportPrivateUsage]


def subscription_bus(server: MCPServer[Any]) -> SubscriptionBus:
    """The ``MCPServer``'s own subscription bus (``MCPServer._subscriptions``)."""
    return server._subscriptions  # pyright: ignore[reportPrivateUsage]


def tool_manager(server: MCPServer[Any]) -> Any:
    """The ``MCPServer``'s tool registry (``MCPServer._tool_manager``)."""
    return server._tool_manager  # pyright: ignore[reportPrivateUsage]


def initialize_accepted(session: ServerSession) -> bool:
    """Has this connection finished its 2025-11-25 handshake (``_connection.initialize_accepted``)?"""
    return bool(session._connection.initialize_accepted)  # pyright: ignore[reportPrivateUsage]


def has_back_channel(session: ServerSession) -> bool:
    """Can the server write to this connection unasked (``_connection.has_standalone_channel``)?"""
    return bool(session._connection.has_standalone_channel)  # pyright: ignore[reportPrivateUsage]


def connection_state(session: ServerSession) -> MutableMapping[str, Any]:
    """Per-connection state that lives as long as the connection (``_connection.state``)."""
    return cast(MutableMapping[str, Any], session._connection.state)  # pyright: ignore[reportPrivateUsage]


def on_close(session: ServerSession, callback: Callable[[ServerSession], object]) -> None:
    """Call ``callback(session)`` when the connection closes (``_connection.exit_stack``)."""
    session._connection.exit_stack.callback(callback, session)  # pyright: ignore[reportPrivateUsage]


# --- client side ---------------------------------------------------------------------------------


async def send_raw(session: ClientSession, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """Send any request with the era's envelope and return its result unvalidated
    (``ClientSession._stamp``, ``ClientSession._dispatcher``)."""
    data: dict[str, Any] = {"method": method, "params": params}
    opts: CallOptions = {}
    session._stamp(data, opts)  # pyright: ignore[reportPrivateUsage]  # the 2026 envelope or the 2025 header
    return await session._dispatcher.send_raw_request(method, data["params"], opts)  # pyright: ignore[reportPrivateUsage]


def knows_tool(session: ClientSession, name: str) -> bool:
    """Has the session seen tool ``name`` in a full listing (``ClientSession._tool_output_schemas``)?"""
    return name in session._tool_output_schemas  # pyright: ignore[reportPrivateUsage]


def absorb_tools(session: ClientSession, tools: list[types.Tool]) -> None:
    """Teach the session full tool definitions, so ``call_tool`` won't re-list
    (``ClientSession._absorb_tool_listing``)."""
    session._absorb_tool_listing(types.ListToolsResult(tools=tools), complete=False)  # pyright: ignore[reportPrivateUsage]


def memory_transport(server: Server[Any]) -> Any:
    """An in-process 2025-11-25 transport to ``server`` (``mcp.client._memory``)."""
    return InMemoryTransport(server)


def registered_tools(server: MCPServer[Any]) -> list[dict[str, Any]]:
    """An ``MCPServer``'s tools as far as names and metadata go, read without serving a request."""
    manager = tool_manager(server)
    tools: list[dict[str, Any]] = []
    for tool in manager.list_tools():
        entry: dict[str, Any] = {"name": tool.name, "description": tool.description, "inputSchema": tool.parameters}
        if tool.meta is not None:
            entry["_meta"] = tool.meta
        tools.append(entry)
    return tools
