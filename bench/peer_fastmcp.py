"""FastMCP's proxy over an ``mcpServers`` configuration, run with FastMCP's own interpreter.

``<fastmcp python> bench/peer_fastmcp.py CONFIG [--search] [--reuse] [--http PORT]``: the proxy
FastMCP's documentation shows for a configuration file (``create_proxy``), over stdio or streamable
HTTP. It opens a fresh session to the servers for each request (FastMCP's default for a configuration);
with ``--reuse`` the proxy is built over one connected client instead, which keeps the servers running
(FastMCP warns that concurrent requests may then mix contexts). With ``--search`` its BM25 search
transform replaces the listing by ``search_tools`` and ``call_tool`` (20 results a search, the depth the
search metrics read; FastMCP's default is 5).
"""

import asyncio
import json
import sys
from typing import Any

from fastmcp import Client
from fastmcp.server import create_proxy
from fastmcp.server.transforms.search import BM25SearchTransform


async def serve(target: Any, argv: list[str]) -> None:
    proxy = create_proxy(target, name="fastmcp-proxy")
    if "--search" in argv:
        proxy.add_transform(BM25SearchTransform(max_results=20))
    if "--http" in argv:
        port = int(argv[argv.index("--http") + 1])
        await proxy.run_async(transport="http", host="127.0.0.1", port=port, show_banner=False, log_level="warning")
    else:
        await proxy.run_async(show_banner=False, log_level="warning")


async def main(config: dict[str, Any], argv: list[str]) -> None:
    if "--reuse" not in argv:
        await serve(config, argv)
        return
    async with Client(config) as client:
        await serve(client, argv)


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as file:
        asyncio.run(main(json.load(file), sys.argv[1:]))
