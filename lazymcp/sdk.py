"""The MCP Python SDK adapter: the lazy-tools extension installed on an SDK server.

It hooks a server middleware into the SDK server; what it reaches of the SDK beyond the public API is
in ``lazymcp.sdk_private``.

How it hooks in, and why:

- Every ``tools/*`` request goes to ``lazymcp.surfaces.methods.dispatch`` (the same door as the proxy's) from a
  server middleware. An answer never calls the rest of the chain: the SDK's own path validates and
  serializes every tool (about 120 ms for 1,000 tools) and its result validation refuses stubs, so
  lazy listings come precomputed from the ``Catalog``, enveloped for 2026-07-28 by the dispatcher.
  ``tools/describe`` and ``tools/describe_batch`` are also registered as handlers, so the server
  knows the methods; they take the same door.
- This module only carries the dispatcher's decisions out: a call the server runs goes down the
  chain (``invoke_tool`` as the real tool's call), and a ``dynamic`` session's change of tools
  becomes a ``list_changed`` to that session. A dynamic session lives in the connection's state, and
  only a 2025-11-25 connection with a back channel has one: on 2026-07-28 each request is a fresh
  connection, so those requests get the stable surface.
- The 2025-11-25 ``initialize`` result loses ``capabilities.extensions`` in the SDK's wire sieve;
  the middleware puts the advertisement back.

Where the tools come from: a server built with the SDK keeps its own tools, and the catalog is what
the SDK would send for them (its own ``tools/list`` handler, every page, through the wire serializer
of the connection's protocol version), computed once per version of the tool list. ``serve`` and the
proxy instead hand over tools as JSON (``tools=``), which are relayed exactly as given.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any, cast

import anyio
import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.mcpserver import MCPServer
from mcp.server.session import ServerSession
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, SubscriptionBus, ToolsListChanged
from mcp.shared.exceptions import MCPError
from mcp_types import methods as wire
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel

from lazymcp import sdk_private
from lazymcp.protocol.bridge import Envelope
from lazymcp.protocol.errors import CatalogError, LazyMCPError
from lazymcp.protocol.messages import EXT_ID, Tool
from lazymcp.protocol.paging import Pages, PagingError
from lazymcp.surfaces.catalog import Catalog
from lazymcp.surfaces.hosts import Choice, Session, asked_mode, choose
from lazymcp.surfaces.methods import METHODS, NEW_METHODS, Answer, Caller, Run, advertise, declares, dispatch
from lazymcp.surfaces.modes import DynamicSession, check_configuration, check_known_tools
from lazymcp.surfaces.options import Options
from lazymcp.tools.metadata import Metadata, check_author_summaries, parse_metadata

logger = logging.getLogger(__name__)

SESSION_KEY = "io.lazymcp/session"
"""Where a connection's dynamic-mode ``Session`` lives in its state."""

Context = ServerRequestContext[Any, Any]


def client_declared(ctx: Context) -> bool:
    """Did the client behind this request declare the extension (LT-03)?

    On 2025-11-25 the capabilities are the connection's ``initialize`` ones; on 2026-07-28 they are
    this request's ``_meta`` envelope.
    """
    caps = ctx.session.client_capabilities
    return caps is not None and declares(caps.extensions)


def _modern(ctx: Context) -> bool:
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


def _wire_error(error: LazyMCPError) -> MCPError:
    return MCPError(code=int(error.code), message=error.message, data=error.data)


class LazyTools:
    """The lazy-tools extension on one SDK server. Create it with ``lazify``."""

    def __init__(
        self,
        server: Server[Any],
        *,
        options: Options | None = None,
        tools: Iterable[Tool] | None = None,
        bus: SubscriptionBus | None = None,
        on_change: Callable[[], None] | None = None,
        metadata: Metadata | None = None,
    ) -> None:
        self.server = server
        self.options = options or Options()
        self.metadata = metadata or Metadata()
        """What the author declared at registration (``lazify(metadata=...)``)."""
        self._static: Catalog | None = None
        if tools is not None:
            self._static = self._build(tools)
            check_configuration(self._static)
        self._checked = tools is not None
        self._derived: dict[str, Catalog] = {}  # protocol version -> catalog of the server's own tools
        self._build_lock = anyio.Lock()
        self._legacy_sessions: list[ServerSession] = []
        self._pending: set[asyncio.Task[None]] = set()
        self._on_change = on_change
        self.environ: Mapping[str, str] | None = None  # a stdio host's environment (``serve`` sets it)
        self.bus = bus or self._find_or_install_bus()
        self._install()

    # --- the catalog -------------------------------------------------------------------------

    async def catalog(self, ctx: Context) -> Catalog:
        """The catalog serving this request's protocol version, built on first use."""
        if self._static is not None:
            return self._static
        version = ctx.protocol_version
        catalog = self._derived.get(version)
        if catalog is None:
            async with self._build_lock:
                catalog = self._derived.get(version)
                if catalog is None:
                    catalog = self._build(await self._read_server_tools(ctx))
                    if not self._checked:  # a lowlevel server's tools are first known here
                        try:
                            check_configuration(catalog)
                        except CatalogError as exc:
                            logger.error("lazymcp: %s", exc.message)
                            raise _wire_error(exc) from None
                        self._checked = True
                    self._derived[version] = catalog
        return catalog

    def _build(self, tools: Iterable[Tool]) -> Catalog:
        return Catalog.build(tools, self.options, declared=self.metadata, origin=self.server.name)

    def check_tools(self, tools: Iterable[Tool]) -> None:
        """Check the configuration against tools known before serving, and their declared summaries.

        Raises:
            CatalogError: the configuration names a tool or category the tools lack, or a tool's
                ``_meta`` summary is longer than ``summary_chars``.
        """
        check_known_tools(list(tools), self.options, self.metadata, self.server.name)
        self._checked = True

    async def _read_server_tools(self, ctx: Context) -> list[Tool]:
        """Every tool the server's own ``tools/list`` handler lists, as the SDK would put it on the wire."""
        entry = self.server.get_request_handler("tools/list")
        if entry is None:
            return []
        pages = Pages()
        more = True
        while more:
            params = pages.params()
            result: object = await entry.handler(replace(ctx, params=params), types.PaginatedRequestParams(**params))
            if isinstance(result, BaseModel):
                raw = result.model_dump(by_alias=True, mode="json", exclude_none=True)
            else:
                raw = dict(cast(Mapping[str, Any], result))
            page = wire.serialize_server_result("tools/list", ctx.protocol_version, raw)
            try:
                more = pages.add(page["tools"], page.get("nextCursor"))
            except PagingError as exc:
                error = CatalogError(f"the server's own tools/list cannot be read: {exc}")
                logger.error("lazymcp: %s", error.message)
                raise _wire_error(error) from None
        return pages.entries

    def static_catalog(self) -> Catalog:
        """The catalog of a server built with ``tools=``.

        Raises:
            RuntimeError: the server lists its own tools (no ``tools=`` given).
        """
        if self._static is None:
            raise RuntimeError("this server lists its own tools; use await catalog(ctx)")
        return self._static

    def invalidate(self) -> None:
        """Forget the catalog of the server's own tools; the next request rebuilds it."""
        self._derived = {}

    async def set_tools(self, tools: Iterable[Tool]) -> None:
        """Replace a ``tools=`` catalog and tell every client the list changed (LT-16)."""
        self._static = self._build(tools)
        await self.announce()

    async def tools_changed(self) -> None:
        """Call after adding or removing tools at runtime: invalidate, then announce (LT-16)."""
        self.invalidate()
        await self.announce()

    async def announce(self) -> None:
        """Send ``notifications/tools/list_changed`` to every client, in both protocol eras."""
        if self._on_change is not None:
            self._on_change()
        await self.bus.publish(ToolsListChanged())  # 2026-07-28: subscriptions/listen streams
        for session in list(self._legacy_sessions):  # 2025-11-25: each live connection
            await session.send_notification(types.ToolListChangedNotification())

    def _changed_in_background(self) -> None:
        """Invalidate now; announce soon, from a synchronous caller such as ``MCPServer.add_tool``."""
        self.invalidate()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # not serving yet: nobody to tell
        task = loop.create_task(self.announce())
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    # --- installation ------------------------------------------------------------------------

    def _find_or_install_bus(self) -> SubscriptionBus:
        entry = self.server.get_request_handler("subscriptions/listen")
        if entry is not None and isinstance(entry.handler, ListenHandler):
            return sdk_private.listen_bus(entry.handler)
        bus = InMemorySubscriptionBus()
        if entry is None:
            self.server.add_request_handler(
                "subscriptions/listen", types.SubscriptionsListenRequestParams, ListenHandler(bus)
            )
        return bus

    def _install(self) -> None:
        server = self.server
        if server.get_request_handler("tools/list") is None:
            server.add_request_handler("tools/list", types.PaginatedRequestParams, self._empty_listing)
        for method in NEW_METHODS:
            server.add_request_handler(method, types.RequestParams, self._method_handler)
        server.extensions[EXT_ID] = dict(self.options.settings())
        server.middleware.append(self.middleware)

    async def _empty_listing(self, ctx: Context, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[])  # only registered so the server advertises tools

    async def _method_handler(self, ctx: Context, _params: Any) -> HandlerResult:
        return await self._serve(ctx, None)

    # --- the middleware ----------------------------------------------------------------------

    async def middleware(self, ctx: Context, call_next: CallNext) -> HandlerResult:
        """Serve ``tools/*``, advertise on ``initialize`` and ``server/discover``, track 2025-era sessions."""
        method = ctx.method
        if method in METHODS and self._gate_open(ctx):
            return await self._serve(ctx, call_next)
        if method in ("initialize", "server/discover"):
            result = await call_next(ctx)
            return advertise(result, self.options) if isinstance(result, dict) else result  # LT-02
        if method == "notifications/initialized":
            self._track(ctx.session)
        return await call_next(ctx)

    @staticmethod
    def _gate_open(ctx: Context) -> bool:
        # A 2025 request before the handshake goes down the chain, where the SDK refuses it.
        return ctx.request_id is not None and sdk_private.initialize_accepted(ctx.session)

    async def _serve(self, ctx: Context, call_next: CallNext | None) -> HandlerResult:
        """One ``tools/*`` request through the one door, and its outcome carried out."""
        catalog = await self.catalog(ctx)
        try:
            choice = self.choice(ctx, catalog)
            declared, session, envelope = client_declared(ctx), self._session(ctx), self._envelope(ctx)
            caller = Caller(declared=declared, session=session, envelope=envelope, choice=choice)
            outcome = dispatch(ctx.method, catalog, ctx.params, caller)
        except LazyMCPError as exc:
            raise _wire_error(exc) from None
        if isinstance(outcome, Answer):
            if outcome.changed:  # this session's tool list changed: tell it, on this request's stream,
                # so the notice arrives ahead of the answer (and cannot miss a GET stream not yet open)
                await ctx.session.send_notification(types.ToolListChangedNotification(), ctx.request_id)
            return outcome.result
        assert call_next is not None  # only tools/call leaves a call to the server
        if isinstance(outcome, Run):  # invoke_tool: the real tool's call, down the rest of the chain
            params = cast(Mapping[str, Any], ctx.params or {})
            return await call_next(
                replace(ctx, params={**params, "name": outcome.name, "arguments": outcome.arguments})
            )
        return await call_next(ctx)

    def choice(self, ctx: Context, catalog: Catalog) -> Choice:
        """This request's host's mode (``lazymcp.surfaces.hosts.choose``); a bad ``?mode=`` raises InvalidParams."""
        params, query = ctx.session.client_params, getattr(ctx.request, "query_params", None)
        info = None if params is None else params.client_info.model_dump(mode="json", exclude_none=True)
        return choose(catalog, Session(info, asked_mode(query), self.environ))

    def _session(self, ctx: Context) -> DynamicSession | None:
        """This connection's dynamic-mode session, when it can have one (2025-11-25, with a back channel)."""
        if self.options.mode != "dynamic" or _modern(ctx):
            return None
        if not sdk_private.has_back_channel(ctx.session):
            return None  # stateless HTTP: each request is a new connection, and none can be told of a change
        state = sdk_private.connection_state(ctx.session)
        session = state.get(SESSION_KEY)
        if not isinstance(session, DynamicSession):
            session = state[SESSION_KEY] = DynamicSession()
        return session

    def _envelope(self, ctx: Context) -> Envelope | None:
        """The 2026-era envelope of this server's results: its own ``tools/list`` cache hint, else the
        SDK defaults (LT-15), and its ``serverInfo`` stamp; None on 2025-11-25."""
        if not _modern(ctx):
            return None
        hint = self.server.cache_hints.get("tools/list")
        ttl, scope = (0, "private") if hint is None else (hint.ttl_ms, hint.scope)
        return Envelope(ttl, scope, self.server.server_info_stamp)

    def _track(self, session: ServerSession) -> None:
        """Remember a 2025-era connection for ``list_changed``, until it closes."""
        self._legacy_sessions.append(session)
        sdk_private.on_close(session, self._forget)

    def _forget(self, session: ServerSession) -> None:
        if session in self._legacy_sessions:
            self._legacy_sessions.remove(session)


def lazify(
    server: MCPServer[Any] | Server[Any],
    *,
    options: Options | None = None,
    tools: Iterable[Tool] | None = None,
    bus: SubscriptionBus | None = None,
    metadata: Mapping[str, Any] | None = None,
    **settings: Any,
) -> LazyTools:
    """Make ``server`` lazy: one line after building it.

    ``settings`` are ``Options`` fields (``mode``, ``core_tools``, ``max_enabled``, ``search_top_k``,
    ``meta_tools``, ``stock_default``, ``page_size``, ``summary_chars``, ``describe_batch_max``,
    ``check_arguments``); without ``options=``, the environment fills in what they leave out
    (``Options.from_env``). ``metadata`` declares per-tool metadata, ``{name: {"category": ...,
    "summary": ..., "examples": [...], "related": [...], "deprecated": ...}}``, over each tool's own
    ``_meta`` and a metadata file. On an ``MCPServer``, tools added or removed at runtime invalidate the
    catalog and announce ``list_changed`` by themselves; on a lowlevel ``Server``, call
    ``await lazy.tools_changed()`` after changing what its ``tools/list`` handler returns.

    Raises:
        CatalogError: the configuration names a tool or category the server lacks, or declares a
            summary longer than ``summary_chars`` (checked here when the server's tools are known now,
            else when its catalog is first built).
        ValueError: a setting out of range.
    """
    if options is not None and settings:
        raise TypeError("pass either options= or individual settings, not both")
    options = options or Options.from_env(os.environ, **settings)
    declared = None
    if metadata is not None:
        declared = parse_metadata(metadata, source="lazify(metadata=...)", limit=options.summary_chars)
    if isinstance(server, MCPServer):
        lowlevel = sdk_private.lowlevel_server(server)
        bus = bus or sdk_private.subscription_bus(server)
        lazy = LazyTools(lowlevel, options=options, tools=tools, bus=bus, metadata=declared)
        if tools is None:
            lazy.check_tools(sdk_private.registered_tools(server))
        _watch_tool_manager(server, lazy)
        return lazy
    return LazyTools(server, options=options, tools=tools, bus=bus, metadata=declared)


def _watch_tool_manager(server: MCPServer[Any], lazy: LazyTools) -> None:
    """Make ``add_tool``/``remove_tool`` (and ``@server.tool()``) invalidate and announce.

    A tool registered with a ``_meta`` summary over the limit is refused at once, with a clear error.
    """
    manager = sdk_private.tool_manager(server)
    add, remove = manager.add_tool, manager.remove_tool

    def add_tool(*args: Any, **kwargs: Any) -> Any:
        result = add(*args, **kwargs)
        meta = getattr(result, "meta", None)
        if isinstance(meta, dict):
            try:
                check_author_summaries([{"name": result.name, "_meta": meta}], lazy.options.summary_chars)
            except CatalogError:
                remove(result.name)
                raise
        lazy._changed_in_background()  # pyright: ignore[reportPrivateUsage]
        return result

    def remove_tool(*args: Any, **kwargs: Any) -> Any:
        result = remove(*args, **kwargs)
        lazy._changed_in_background()  # pyright: ignore[reportPrivateUsage]
        return result

    manager.add_tool = add_tool  # pyright: ignore[reportAttributeAccessIssue]
    manager.remove_tool = remove_tool  # pyright: ignore[reportAttributeAccessIssue]
