"""An SDK server whose one tool, ``seen``, answers the W3C trace context its call came with: the
``traceparent`` header (HTTP) and ``_meta.traceparent``. Run as a script it serves stdio; ``app()``
is its streamable HTTP app."""

import json
from typing import Any

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("traced", version="1.0", log_level="WARNING")


def _meta_traceparent(meta: Any) -> object:
    if isinstance(meta, dict):
        return meta.get("traceparent")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    extra = getattr(meta, "model_extra", None) or {}
    return getattr(meta, "traceparent", None) or extra.get("traceparent")


@server.tool()
def seen(ctx: Context) -> str:
    """The trace context this call came with, as JSON: the header and the _meta member."""
    headers = ctx.headers or {}
    return json.dumps({"header": headers.get("traceparent"), "meta": _meta_traceparent(ctx.request_context.meta)})


def app() -> Any:
    return server.streamable_http_app()


if __name__ == "__main__":
    server.run()
