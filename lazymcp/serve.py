"""``lazymcp serve``: a lazy MCP server over a catalog of tool definitions.

Each tool checks its arguments against its ``inputSchema`` and answers with them as JSON text: a
stand-in server for demos, benchmarks and tests, whose ``tools/list`` is the catalog exactly as the
file has it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import anyio
import mcp_types as types
import orjson
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.stdio import stdio_server

from lazymcp.arguments import check_arguments
from lazymcp.errors import CatalogError, suggest
from lazymcp.messages import Tool
from lazymcp.options import Options
from lazymcp.sdk import LazyTools

SERVER_NAME = "lazymcp-serve"


def load_tools(path: str | Path) -> list[Tool]:
    """Read a catalog file: a JSON list of MCP tools, or an object with a ``"tools"`` list.

    Raises:
        CatalogError: the file is missing, not JSON, or not of either shape.
    """
    try:
        data = orjson.loads(Path(path).read_bytes())
    except OSError as exc:
        raise CatalogError(f"cannot read catalog {str(path)!r}: {exc.strerror or exc}") from None
    except orjson.JSONDecodeError as exc:
        raise CatalogError(f"catalog {str(path)!r} is not JSON: {exc}") from None
    tools: object = cast(dict[str, object], data).get("tools") if isinstance(data, dict) else data
    if not isinstance(tools, list):
        raise CatalogError(f"catalog {str(path)!r} must be a JSON list of tools or an object with a 'tools' list")
    return tools  # pyright: ignore[reportUnknownVariableType]


def build_server(tools: Sequence[Tool], options: Options | None = None, *, name: str = SERVER_NAME) -> LazyTools:
    """A lowlevel SDK server serving ``tools`` lazily; returns its ``LazyTools`` (``.server`` is the server)."""
    from lazymcp import __version__

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
        refused = check_arguments(params.name, catalog.validator(params.name), params.arguments)
        if refused is not None:
            return types.CallToolResult.model_validate(refused)
        return _text(orjson.dumps(params.arguments or {}).decode())

    server: Server[Any] = Server(name, version=__version__, on_call_tool=call_tool, get_tool_input_schema=input_schema)
    lazy = LazyTools(server, options=options, tools=tools)
    return lazy


def _text(text: str, *, is_error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=is_error)


async def serve_stdio(lazy: LazyTools) -> None:
    """Serve over this process's stdin and stdout until the client closes them."""
    server = lazy.server
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options(NotificationOptions(tools_changed=True)))


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
