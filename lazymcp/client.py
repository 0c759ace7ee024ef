"""A lazy-aware MCP client: a small async API over ``mcp.Client`` that declares the extension.

It lists stubs, fetches full definitions only for the tools it needs, and calls a tool known only
from its stub. Against a server without the extension it still works: it computes the stubs itself
from the full listing, so code written for lazy servers runs against any server.

The SDK client validates spec results by method name, so a stub listing (no ``inputSchema``) cannot
go through ``Client.list_tools()``; listings and the new methods go out as raw requests instead. And
``call_tool`` re-lists the server before calling a tool it has not seen in a full listing, so a
described tool is first taught to the session (both reach SDK internals, through ``lazymcp.sdk_private``).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AsyncExitStack
from types import TracebackType
from typing import Any, Self, cast

import mcp_types as types
from mcp import Client
from mcp.client import advertise
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from lazymcp import sdk_private
from lazymcp.messages import DESCRIBE, DESCRIBE_BATCH, EXT_ID, Detail, Tool, ToolStub
from lazymcp.paging import Pages
from lazymcp.stubs import DEFAULT_SUMMARY_CHARS, make_stub


async def raw_request(session: ClientSession, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """Send any request and return its result unvalidated."""
    return await sdk_private.send_raw(session, method, dict(params or {}))


async def list_all(session: ClientSession, params: dict[str, Any]) -> list[Any]:
    """Every entry of a ``tools/list`` with these params, following ``nextCursor`` (a bounded number of pages)."""
    pages = Pages(params)
    more = True
    while more:
        page = await raw_request(session, "tools/list", pages.params())
        more = pages.add(page.get("tools", []), page.get("nextCursor"))
    return pages.entries


class LazyClient:
    """An MCP client session that speaks the lazy-tools extension.

    ``target`` is anything ``mcp.Client`` takes: a URL, ``StdioServerParameters``, a transport or a
    server instance. Other keyword arguments go to ``mcp.Client``.
    """

    def __init__(self, target: Any, **client_kwargs: Any) -> None:
        extensions = [*client_kwargs.pop("extensions", ()), advertise(EXT_ID)]
        self.client = Client(target, extensions=extensions, **client_kwargs)
        self._stack = AsyncExitStack()
        self._full: dict[str, Tool] | None = None  # the full listing, for a server without the extension
        self._settings: dict[str, Any] | None = None

    async def __aenter__(self) -> Self:
        await self._stack.enter_async_context(self.client)
        try:
            extensions: dict[str, Any] = self.client.server_capabilities.extensions or {}
            if EXT_ID not in extensions and self.client.protocol_version in MODERN_PROTOCOL_VERSIONS:
                # A client told to adopt 2026-07-28 without probing has no capabilities yet: ask.
                try:
                    discovered = await raw_request(self.session, "server/discover")
                    extensions = discovered.get("capabilities", {}).get("extensions") or {}
                except MCPError:  # a server that cannot discover (a proxy bridging to a 2025-only one)
                    extensions = {EXT_ID: {}} if await self._describes() else {}
        except BaseException:
            await self._stack.aclose()
            raise
        self._settings = dict(extensions[EXT_ID]) if isinstance(extensions.get(EXT_ID), dict) else None
        return self

    async def _describes(self) -> bool:
        """Does the server answer ``tools/describe``? A server with the extension refuses an empty name
        with -32602 (LT-13); one without answers -32601."""
        try:
            await raw_request(self.session, DESCRIBE, {"name": ""})
        except MCPError as exc:
            return exc.error.code == types.INVALID_PARAMS
        return True

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self._stack.aclose()

    @property
    def session(self) -> ClientSession:
        return self.client.session

    @property
    def server_supports_lazy(self) -> bool:
        """Did the server advertise the extension?"""
        return self._settings is not None

    @property
    def server_settings(self) -> dict[str, Any]:
        """What the server advertised for the extension (limits, defaults), or {}."""
        return dict(self._settings or {})

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send a raw request; raises ``mcp.shared.exceptions.MCPError`` on an error response."""
        return await raw_request(self.session, method, params)

    async def _all_pages(self, params: dict[str, Any]) -> list[Any]:
        return await list_all(self.session, params)

    async def list_stubs(self, detail: Detail = "summary") -> list[ToolStub]:
        """Every tool as a stub (all pages). A server without the extension: stubs made here."""
        if self.server_supports_lazy:
            return cast(list[ToolStub], await self._all_pages({"lazy": True, "detail": detail}))
        limit = DEFAULT_SUMMARY_CHARS
        return [make_stub(tool, "bare", detail, limit) for tool in (await self._full_index()).values()]

    async def list_full(self) -> list[Tool]:
        """Every tool, exactly as the server defines it (all pages)."""
        if self.server_supports_lazy:
            return await self._all_pages({"lazy": False})
        return list((await self._full_index()).values())

    async def _full_index(self) -> dict[str, Tool]:
        if self._full is None:
            # lazy=false: harmless to a server without the extension, and right for one that did not say it has it
            self._full = {tool["name"]: tool for tool in await self._all_pages({"lazy": False})}
        return self._full

    async def describe(self, name: str) -> Tool:
        """The full definition of one tool.

        Raises:
            MCPError: -32602 for an unknown name (``data.suggestions`` has close names).
        """
        if self.server_supports_lazy:
            return (await self.request(DESCRIBE, {"name": name}))["tool"]
        tool = (await self._full_index()).get(name)
        if tool is None:
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {name!r}", data={"field": "name"})
        return tool

    async def describe_batch(self, names: Sequence[str]) -> tuple[list[Tool], list[str]]:
        """Full definitions of several tools, and the names that are unknown."""
        if self.server_supports_lazy:
            result = await self.request(DESCRIBE_BATCH, {"names": list(names)})
            return result["tools"], result["unknown"]
        index = await self._full_index()
        unique = list(dict.fromkeys(names))
        return [index[n] for n in unique if n in index], [n for n in unique if n not in index]

    def absorb(self, tools: Sequence[Tool]) -> None:
        """Teach the session these full definitions so ``call_tool`` won't re-list (private SDK)."""
        sdk_private.absorb_tools(self.session, [types.Tool.model_validate(tool) for tool in tools])

    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None) -> types.CallToolResult:
        """Call a tool known only from its stub: describe it once, then call it."""
        if not sdk_private.knows_tool(self.session, name):
            self.absorb([await self.describe(name)])
        return await self.client.call_tool(name, arguments)
