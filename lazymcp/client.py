"""A lazy-aware MCP client: a small async API over ``mcp.Client`` that declares the extension.

It lists stubs, fetches full definitions only for the tools it needs, and calls a tool known only
from its stub. Against a server without the extension it still works: it computes the stubs itself
from the full listing, so code written for lazy servers runs against any server.

It keeps described tools on disk by digest (``lazymcp.tools.toolcache``): at the start of a session it reads
the server's ``tools/manifest`` (spec/lazy-tools.md §18), and describing a tool whose digest it holds
sends no request. ``notifications/tools/list_changed`` makes it read the manifest again before the next
describe.

The SDK client validates spec results by method name, so a stub listing (no ``inputSchema``) cannot
go through ``Client.list_tools()``; listings and the new methods go out as raw requests instead. And
``call_tool`` re-lists the server before calling a tool it has not seen in a full listing, so a
described tool is first taught to the session (both reach SDK internals, through ``lazymcp.sdk_private``).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from types import TracebackType
from typing import Any, Self, cast

import anyio
import mcp_types as types
from mcp import Client
from mcp.client import advertise
from mcp.client.session import ClientSession, IncomingMessage, MessageHandlerFnT
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from lazymcp import sdk_private
from lazymcp.protocol.messages import DESCRIBE, DESCRIBE_BATCH, DRAFT_DESCRIBE, EXT_ID, MANIFEST, Detail, Tool, ToolStub
from lazymcp.protocol.paging import Pages, PagingError
from lazymcp.tools.stubs import DEFAULT_SUMMARY_CHARS, make_stub
from lazymcp.tools.toolcache import ToolCache


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


MANIFEST_WAIT = 30.0
"""Seconds a session's start waits for the server's manifest before going on without the cache."""


async def read_manifest(session: ClientSession) -> dict[str, str] | None:
    """Each tool's digest by name, from the server's ``tools/manifest`` (every page, a bounded number);
    None when the server has no manifest (or a broken one)."""
    pages = Pages()
    more = True
    try:
        while more:
            page = await raw_request(session, MANIFEST, pages.params())
            entries = page.get("entries")
            more = pages.add(cast(list[Any], entries) if isinstance(entries, list) else [], page.get("nextCursor"))
    except (MCPError, PagingError):
        return None
    digests: dict[str, str] = {}
    for entry in pages.entries:
        if isinstance(entry, dict):
            name, digest = cast(dict[str, Any], entry).get("name"), cast(dict[str, Any], entry).get("digest")
            if isinstance(name, str) and isinstance(digest, str):
                digests[name] = digest
    return digests


class LazyClient:
    """An MCP client session that speaks the lazy-tools extension.

    ``target`` is anything ``mcp.Client`` takes: a URL, ``StdioServerParameters``, a transport or a
    server instance. ``cache``: where described tools are kept by digest across sessions (a directory,
    or a ``ToolCache``); ``True`` (the default) keeps them in the cache directory
    (``$LAZYMCP_CACHE_DIR/tools``, else ``~/.cache/lazymcp/tools``), ``False`` keeps none. Other keyword
    arguments go to ``mcp.Client``.
    """

    def __init__(self, target: Any, *, cache: ToolCache | str | Path | bool = True, **client_kwargs: Any) -> None:
        extensions = [*client_kwargs.pop("extensions", ()), advertise(EXT_ID)]
        self._handler: MessageHandlerFnT | None = client_kwargs.pop("message_handler", None)
        self.client = Client(target, extensions=extensions, message_handler=self._message, **client_kwargs)
        self._stack = AsyncExitStack()
        self._full: dict[str, Tool] | None = None  # the full listing, for a server without the extension
        self._settings: dict[str, Any] | None = None
        if isinstance(cache, bool):
            self.cache = ToolCache() if cache else None
        else:
            self.cache = cache if isinstance(cache, ToolCache) else ToolCache(cache)
        self._digests: dict[str, str] | None = None  # the manifest's digests, by tool name
        self._manifest_read = False
        self.described_from_cache = 0
        """Tools this session described from the cache, without a request."""

    async def _message(self, message: IncomingMessage) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self._manifest_read = False  # digests of another catalog: read again before the next describe
        if self._handler is not None:
            await self._handler(message)

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
        if self.cache is not None:
            try:
                with anyio.move_on_after(MANIFEST_WAIT):  # a server that never answers costs only the cache
                    await self._manifest()
                self._manifest_read = True
            except BaseException:
                await self._stack.aclose()
                raise
        return self

    async def _manifest(self) -> dict[str, str]:
        """The digests of the server's manifest, read once per catalog ({} when it has none)."""
        if not self._manifest_read:
            self._digests = await read_manifest(self.session)
            self._manifest_read = True
        return self._digests or {}

    async def refresh_manifest(self) -> None:
        """Read the server's manifest again: its tools changed. A 2025-11-25 session does so by itself on
        ``notifications/tools/list_changed``; a 2026-07-28 one learns of changes only on a listen stream."""
        self._manifest_read = False
        await self._manifest()

    async def _held(self, name: str) -> Tool | None:
        """Tool ``name`` from the cache, when the manifest's digest of it is kept there."""
        if self.cache is None:
            return None
        digest = (await self._manifest()).get(name)
        tool = None if digest is None else self.cache.get(digest)
        if tool is not None:
            self.described_from_cache += 1
        return tool

    def _keep(self, tools: Sequence[Tool]) -> None:
        """Keep described tools by the manifest's digest (one whose digest differs is not kept)."""
        if self.cache is None or not self._digests:
            return
        for tool in tools:
            name = tool.get("name")
            digest = self._digests.get(name) if isinstance(name, str) else None
            if digest is not None:
                self.cache.put(digest, tool)

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
        held = await self._held(name)
        if held is not None:
            return held
        if self.server_supports_lazy:
            tool = (await self.request(DESCRIBE, {"name": name}))["tool"]
            self._keep([tool])
            return tool
        if self._digests:  # no extension, but the draft's manifest: its describe
            tool = (await self.request(DRAFT_DESCRIBE, {"names": [name]}))["tools"][0]
            self._keep([tool])
            return tool
        tool = (await self._full_index()).get(name)
        if tool is None:
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {name!r}", data={"field": "name"})
        return tool

    async def describe_batch(self, names: Sequence[str]) -> tuple[list[Tool], list[str]]:
        """Full definitions of several tools, and the names that are unknown."""
        if self.server_supports_lazy:
            limit = self.server_settings.get("describeBatchMax")
            if not names or not isinstance(limit, int) or len(names) > limit:  # the server's to refuse
                result = await self.request(DESCRIBE_BATCH, {"names": list(names)})
                self._keep(result["tools"])
                return result["tools"], result["unknown"]
            unique = list(dict.fromkeys(names))
            held = {name: tool for name in unique if (tool := await self._held(name)) is not None}
            asked = [name for name in unique if name not in held]
            fetched: dict[str, Tool] = {}
            unknown: list[str] = []
            if asked:
                result = await self.request(DESCRIBE_BATCH, {"names": asked})
                self._keep(result["tools"])
                fetched, unknown = {tool["name"]: tool for tool in result["tools"]}, result["unknown"]
            found = {**fetched, **held}
            return [found[name] for name in unique if name in found], unknown
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
