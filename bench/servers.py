"""The two servers every latency figure compares, in-process or as a stdio subprocess.

- plain: a lowlevel ``mcp.server.Server`` whose ``on_list_tools`` returns the same tools as
  ``types.Tool`` models, built once up front (the cheapest handler a server can have), so what it
  costs per request is the SDK's own work: dump, validate and sieve the listing for the wire.
- lazy: ``lazymcp.run.serve.build_server(tools)``, the same tools served lazily.

As a subprocess: ``python -m bench.servers plain|lazy (--synthetic N [--seed S] | --catalog FILE)``.
Catalog files are served as ``bench.common.servable`` makes them (both kinds alike).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server

from lazymcp.protocol.messages import Tool
from lazymcp.run.serve import build_server, load_tools, serve_stdio
from lazymcp.tools.sample import synthetic_tools

KINDS = ("plain", "lazy")


def plain_server(tools: Sequence[Tool]) -> Server[Any]:
    """A plain SDK server listing ``tools`` (no lazymcp)."""
    models = [types.Tool.model_validate(tool) for tool in tools]

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=models)

    return Server("bench-plain", version="1", on_list_tools=list_tools)


def lazy_server(tools: Sequence[Tool]) -> Server[Any]:
    """The lazy server of ``tools`` (``build_server``), default options."""
    return build_server(tools).server


async def _serve_plain(server: Server[Any]) -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def main(argv: Sequence[str] | None = None) -> None:
    from bench.common import servable

    parser = argparse.ArgumentParser(prog="python -m bench.servers")
    parser.add_argument("kind", choices=KINDS)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--synthetic", type=int, metavar="N")
    source.add_argument("--catalog", metavar="FILE")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.catalog is not None:
        tools, _ = servable(load_tools(args.catalog))
    else:
        tools = synthetic_tools(args.synthetic, seed=args.seed)
    if args.kind == "plain":
        anyio.run(_serve_plain, plain_server(tools))
    else:
        anyio.run(serve_stdio, build_server(tools))


if __name__ == "__main__":
    main()
