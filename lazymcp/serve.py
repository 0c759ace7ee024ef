"""``lazymcp serve``: a lazy MCP server over a catalog of tool definitions.

Each tool checks its arguments against its ``inputSchema`` and answers with them as JSON text: a
stand-in server for demos, benchmarks and tests, whose ``tools/list`` is the catalog exactly as the
file has it.
"""

from __future__ import annotations

import io
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

from lazymcp.arguments import check_arguments
from lazymcp.errors import CatalogError, suggest
from lazymcp.files import read_json
from lazymcp.messages import Tool
from lazymcp.options import Options
from lazymcp.sdk import LazyTools

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
        if catalog.get(params.name) is None:
            close = suggest(params.name, catalog.name_index())
            hint = f" Did you mean: {', '.join(close)}?" if close else ""
            return _text(f"Unknown tool: {params.name!r}.{hint}", is_error=True)
        if not catalog.options.check_arguments:  # otherwise the middleware checked them before this call
            refused = check_arguments(params.name, catalog.validator(params.name), params.arguments)
            if refused is not None:
                return types.CallToolResult.model_validate(refused)
        return _text(orjson.dumps(params.arguments or {}).decode())

    server: Server[Any] = Server(name, version=__version__, on_call_tool=call_tool, get_tool_input_schema=input_schema)
    lazy = LazyTools(server, options=options, tools=tools)
    return lazy


def _text(text: str, *, is_error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=is_error)


async def serve_stdio(lazy: LazyTools, stdin: AsyncIterable[str] | None = None, stdout: Any = None) -> None:
    """Serve over this process's stdin and stdout (or the given text streams) until the client closes them."""
    server = lazy.server
    source: AsyncIterable[str] = stdin if stdin is not None else _stdin_lines()
    checked = CheckedLines(source)
    async with stdio_server(stdin=cast(Any, checked), stdout=stdout) as (read, write):
        checked.reply = write.send
        await server.run(read, write, server.create_initialization_options(NotificationOptions(tools_changed=True)))


def _stdin_lines() -> AsyncIterable[str]:
    return anyio.wrap_file(io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace"))


class CheckedLines:
    """The client's lines, with an answer for each frame the SDK's stdio transport would drop unanswered.

    The SDK's stdio reader skips any line its JSON-RPC model refuses (params that are not an object,
    text that is not JSON, very deep nesting, lone surrogates): the client would wait forever. Those
    frames are answered here, by id where one can be read, and never reach the server.
    """

    def __init__(self, source: AsyncIterable[str]) -> None:
        self._source = source
        self.reply: Callable[[SessionMessage], Awaitable[None]] | None = None

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        async for line in self._source:
            answer = refusal(line)
            if answer is None:
                yield line
            elif self.reply is not None:
                await self.reply(SessionMessage(answer))


_ID = re.compile(r'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")')


def refusal(line: str) -> types.JSONRPCError | None:
    """The error answering a line the SDK would drop, or None for a line it reads (or one owed nothing)."""
    if not line.strip():
        return None
    try:
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        return None
    except ValueError:
        pass
    try:
        message: object = orjson.loads(line)
    except orjson.JSONDecodeError:
        found = _ID.search(line)
        request_id = orjson.loads(found.group(1)) if found else None
        return _error(request_id, -32700, "Parse error: not JSON")
    if not isinstance(message, dict):
        return _error(None, -32600, "Invalid request: not an object")
    frame = cast(dict[str, object], message)
    request_id = frame.get("id")
    if not isinstance(request_id, int | str) or isinstance(request_id, bool):
        return None if "id" not in frame else _error(None, -32600, "Invalid request: bad id")
    if "method" in frame and "params" in frame and not isinstance(frame["params"], dict):
        return _error(request_id, -32602, "Invalid params: expected an object", {"field": "params", "reason": "type"})
    return _error(request_id, -32600, "Invalid request")


def _error(request_id: object, code: int, message: str, data: object = None) -> types.JSONRPCError:
    rid = request_id if isinstance(request_id, int | str) and not isinstance(request_id, bool) else None
    return types.JSONRPCError(jsonrpc="2.0", id=rid, error=types.ErrorData(code=code, message=message, data=data))


async def serve_http(lazy: LazyTools, host: str, port: int, *, stateless: bool = False) -> None:
    """Serve streamable HTTP at ``http://HOST:PORT/mcp`` until cancelled."""
    import uvicorn

    app = lazy.server.streamable_http_app(stateless_http=stateless)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
    await uvicorn.Server(config).serve()


def run(lazy: LazyTools, http: tuple[str, int] | None = None, *, stateless: bool = False) -> None:
    """Serve ``lazy`` over stdio, or streamable HTTP when ``http`` is ``(host, port)``."""
    if http is None:
        anyio.run(serve_stdio, lazy)
    else:
        anyio.run(lambda: serve_http(lazy, http[0], http[1], stateless=stateless))
