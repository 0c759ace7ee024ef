"""A remote MCP server (SDK, streamable HTTP) that trusts tokens exchanged at the test issuer
(``tests/servers/issuer.py``): ``app(exchanged, seen)`` answers only requests whose bearer token is one of
``exchanged`` (else 401), records every ``Authorization`` header it is sent in ``seen``, and its one tool,
``whoami``, answers the subject its token names and the resource it was issued for."""

import json
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from starlette.responses import JSONResponse
from starlette.types import Receive, Scope, Send


def app(exchanged: dict[str, dict[str, str]], seen: list[str]) -> Any:
    server = MCPServer("upstream", version="1.0", log_level="WARNING")

    @server.tool()
    def whoami(ctx: Context) -> str:
        """The subject and resource of the token this call came with."""
        token = (ctx.headers or {}).get("authorization", "").removeprefix("Bearer ")
        return json.dumps(exchanged.get(token))

    inner = server.streamable_http_app()

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = {key.decode().lower(): value.decode() for key, value in scope["headers"]}
            given = headers.get("authorization", "")
            seen.append(given)
            if given.removeprefix("Bearer ") not in exchanged:
                await JSONResponse({"error": "invalid_token"}, status_code=401)(scope, receive, send)
                return
        await inner(scope, receive, send)

    return guarded
