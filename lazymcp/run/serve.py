"""``lazymcp serve``: a lazy MCP server over a catalog of tool definitions.

Each tool checks its arguments against its ``inputSchema`` and answers with them as JSON text: a
stand-in server for demos, benchmarks and tests, whose ``tools/list`` is the catalog exactly as the
file has it.
"""

from __future__ import annotations

import io
import os
import re
import sys
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, cast

import anyio
import mcp_types as types
import orjson
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from lazymcp.local.addresses import open_front_warning
from lazymcp.local.files import read_json
from lazymcp.protocol import jsonrpc
from lazymcp.protocol.errors import CatalogError, ErrorCode
from lazymcp.protocol.limits import MAX_UNANSWERED
from lazymcp.protocol.messages import Tool
from lazymcp.run.http_checks import Guard
from lazymcp.run.notices import say
from lazymcp.sdk import LazyTools
from lazymcp.surfaces.arguments import check_arguments
from lazymcp.surfaces.instructions import catalog_instructions
from lazymcp.surfaces.metacalls import unknown_tool
from lazymcp.surfaces.options import Options

SERVER_NAME = "lazymcp-serve"


def load_tools(path: str | Path) -> list[Tool]:
    """Read a catalog file: a JSON list of MCP tools, or an object with a ``"tools"`` list.

    Raises:
        CatalogError: the file is missing, not JSON, or not of either shape.
    """
    data = read_json(path, "catalog")
    tools: object = cast(dict[str, object], data).get("tools") if isinstance(data, dict) else data
    if not isinstance(tools, list):
        raise CatalogError(f"catalog {str(path)!r} must be a JSON list of tools or an object with a 'tools' list")
    return tools  # pyright: ignore[reportUnknownVariableType]


def build_server(tools: Sequence[Tool], options: Options | None = None, *, name: str = SERVER_NAME) -> LazyTools:
    """A lowlevel SDK server serving ``tools`` lazily; returns its ``LazyTools`` (``.server`` is the server)."""
    from lazymcp.version import __version__

    lazy: LazyTools | None = None

    def input_schema(tool_name: str) -> dict[str, Any] | None:
        tool = lazy.static_catalog().get(tool_name) if lazy is not None else None
        schema = None if tool is None else tool.get("inputSchema")
        return schema if isinstance(schema, dict) else None  # pyright: ignore[reportUnknownVariableType]

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        assert lazy is not None
        catalog = lazy.static_catalog()
        if catalog.get(params.name) is None:  # the answer every front gives (metacalls.unknown_tool)
            return types.CallToolResult.model_validate(unknown_tool(catalog, params.name).result)
        if not catalog.options.check_arguments:  # otherwise the middleware checked them before this call
            refused = check_arguments(params.name, catalog.validator(params.name), params.arguments)
            if refused is not None:
                return types.CallToolResult.model_validate(refused)
        return _text(orjson.dumps(params.arguments or {}).decode())

    server: Server[Any] = Server(name, version=__version__, on_call_tool=call_tool, get_tool_input_schema=input_schema)
    lazy = LazyTools(server, options=options, tools=tools)
    server.instructions = catalog_instructions(lazy.static_catalog(), name)
    return lazy


def _text(text: str, *, is_error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=is_error)


async def serve_stdio(lazy: LazyTools, stdin: AsyncIterable[str] | None = None, stdout: Any = None) -> None:
    """Serve over this process's stdin and stdout (or the given text streams) until the client closes them.

    At the end of input every request already read is still answered (waiting up to ``DRAIN_SECONDS``).
    """
    server = lazy.server
    source: AsyncIterable[str] = stdin if stdin is not None else _stdin_lines()
    checked = CheckedLines(source)
    async with stdio_server(stdin=cast(Any, checked), stdout=stdout) as (read, write):
        checked.reply = write.send
        answers, outgoing = anyio.create_memory_object_stream[SessionMessage](0)
        async with write, outgoing:  # the transport's writer ends when this stream closes
            relayed = anyio.Event()

            async def relay() -> None:
                async with outgoing:
                    async for item in outgoing:
                        message = item.message
                        if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
                            checked.answered(message.id)
                        await write.send(item)
                relayed.set()

            async with anyio.create_task_group() as group:
                group.start_soon(relay)
                async with answers:
                    options = server.create_initialization_options(NotificationOptions(tools_changed=True))
                    await server.run(read, answers, options)
                with anyio.move_on_after(FLUSH_SECONDS):  # the server may keep a clone of the stream open
                    await relayed.wait()
                group.cancel_scope.cancel()


def _stdin_lines() -> AsyncIterable[str]:
    return anyio.wrap_file(io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace"))


FLUSH_SECONDS = 1.0
"""After the server stops, how long its last messages get to reach stdout."""
DRAIN_SECONDS = 300.0
"""At the end of input, how long serve waits for the answers to the requests it has read."""


class CheckedLines:
    """The client's lines, with an answer for each frame the SDK's stdio transport would drop unanswered.

    The SDK's stdio reader skips any line its JSON-RPC model refuses (params that are not an object,
    text that is not JSON, very deep nesting, lone surrogates, an id that is not a string or an
    integer): the client would wait forever. Those frames are answered here, by id where one can be
    read, and never reach the server. The ids of the requests that do reach it are kept until their
    answers pass, so that at the end of input the lines end only once each has been answered.
    """

    def __init__(self, source: AsyncIterable[str]) -> None:
        self._source = source
        self.reply: Callable[[SessionMessage], Awaitable[None]] | None = None
        self._owed: set[tuple[str, object]] = set()
        self._unanswered = 0
        self._settled: anyio.Event | None = None

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    def answered(self, request_id: object) -> None:
        self._owed.discard(jsonrpc.id_key(request_id))
        self._unanswered = max(self._unanswered - 1, 0)
        if self._settled is not None:
            self._settled.set()

    async def _settle(self, done: Callable[[], bool]) -> None:
        while not done():
            self._settled = anyio.Event()
            await self._settled.wait()

    async def _lines(self) -> AsyncIterator[str]:
        async for line in self._source:
            answer = refusal(line)
            if answer is None:
                if '"id"' in line and '"method"' in line:
                    self._owe(line)
                elif "notifications/cancelled" in line:
                    self._cancelled(line)
                yield line
                # A client that does not read its answers is not read either: its answers wait in
                # the pipe, not in memory.
                await self._settle(lambda: self._unanswered < MAX_UNANSWERED)
            elif self.reply is not None:
                await self.reply(SessionMessage(answer))
        with anyio.move_on_after(DRAIN_SECONDS):
            await self._settle(lambda: not self._owed)

    def _cancelled(self, line: str) -> None:
        """A cancelled request is owed no answer (and may get none)."""
        try:
            frame: object = orjson.loads(line)
        except orjson.JSONDecodeError:
            return
        request_id = jsonrpc.field(jsonrpc.field(frame, "params"), "requestId")
        if jsonrpc.field(frame, "method") == "notifications/cancelled" and jsonrpc.id_key(request_id) in self._owed:
            self.answered(request_id)

    def _owe(self, line: str) -> None:
        try:
            frame = orjson.loads(line)
        except orjson.JSONDecodeError:
            return
        if isinstance(frame, dict) and "method" in frame and "id" in frame:
            self._owed.add(jsonrpc.id_key(cast(dict[str, object], frame)["id"]))
            self._unanswered += 1


_ID = re.compile(r'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")')


def refusal(line: str) -> types.JSONRPCError | None:
    """The error answering a line the SDK would drop, or None for a line it reads (or one owed nothing)."""
    if not line.strip():
        return None
    try:
        read = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValueError:
        pass
    else:  # a request whose id is not a string or an integer reads as a notification: it would go unanswered
        if not isinstance(read, types.JSONRPCNotification) or '"id"' not in line:
            return None
        frame = orjson.loads(line)
        return None if "id" not in frame else _error(None, ErrorCode.INVALID_REQUEST, "Invalid request: bad id")
    try:
        message: object = orjson.loads(line)
    except orjson.JSONDecodeError:
        found = _ID.search(line)
        request_id = orjson.loads(found.group(1)) if found else None
        return _error(request_id, ErrorCode.PARSE_ERROR, "Parse error: not JSON")
    if not isinstance(message, dict):
        return _error(None, ErrorCode.INVALID_REQUEST, "Invalid request: not an object")
    frame = cast(dict[str, object], message)
    request_id = frame.get("id")
    if not jsonrpc.valid_id(request_id):
        return None if "id" not in frame else _error(None, ErrorCode.INVALID_REQUEST, "Invalid request: bad id")
    if "method" in frame and "params" in frame and not isinstance(frame["params"], dict):
        reason = {"field": "params", "reason": "type"}
        return _error(request_id, ErrorCode.INVALID_PARAMS, "Invalid params: expected an object", reason)
    return _error(request_id, ErrorCode.INVALID_REQUEST, "Invalid request")


def _error(request_id: object, code: ErrorCode, message: str, data: object = None) -> types.JSONRPCError:
    return types.JSONRPCError.model_validate(jsonrpc.error_message(request_id, code, message, data))


async def serve_http(
    lazy: LazyTools,
    host: str,
    port: int,
    *,
    stateless: bool = False,
    allow_hosts: Sequence[str] = (),
    allow_origins: Sequence[str] = (),
) -> None:
    """Serve streamable HTTP at ``http://HOST:PORT/mcp`` until cancelled.

    Host and Origin are checked by the proxy's and gateway's own rule (``Guard``), around the SDK's app,
    whose own check stays off: it cannot check Origin without checking Host too, and the fronts would
    then differ in what they let in.
    """
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    warning = open_front_warning(host, allow_hosts, allow_origins)
    if warning is not None:
        say("serve", warning)
    unchecked = TransportSecuritySettings(enable_dns_rebinding_protection=False)  # else on by default on loopback
    app = lazy.server.streamable_http_app(stateless_http=stateless, host=host, transport_security=unchecked)
    guarded = Guard(host, allow_hosts, allow_origins).around(app)
    from lazymcp.run.http_writes import front_protocol

    config = uvicorn.Config(
        guarded,
        host=host,
        port=port,
        http=front_protocol(among_peers=False),
        log_level="warning",
        lifespan="on",
        timeout_graceful_shutdown=2,
    )
    await uvicorn.Server(config).serve()


def run(
    lazy: LazyTools,
    http: tuple[str, int] | None = None,
    *,
    stateless: bool = False,
    allow_hosts: Sequence[str] = (),
    allow_origins: Sequence[str] = (),
) -> None:
    """Serve ``lazy`` over stdio, or streamable HTTP when ``http`` is ``(host, port)``."""
    if http is None:
        lazy.environ = dict(os.environ)  # the host's own, which may say how it treats tool listings
        anyio.run(serve_stdio, lazy)
    else:
        host, port = http
        anyio.run(
            lambda: serve_http(
                lazy, host, port, stateless=stateless, allow_hosts=allow_hosts, allow_origins=allow_origins
            )
        )
