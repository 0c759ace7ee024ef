"""Errors, and the one registry of the codes they carry.

Our exception hierarchy::

    LazyMCPError            base; carries ``code`` and ``data``
    ├── InvalidParams       -32602, a malformed request parameter (``data.field`` names it)
    │   └── UnknownTool     -32602, a tool name the catalog does not have (with suggestions)
    ├── CatalogError        a tool catalog that cannot be served (duplicate names, bad file)
    │   └── ConfigError     a gateway configuration file that cannot be used (names the file, server, field)
    └── UpstreamError       the wrapped server failed (proxy)

Handlers raise these; the adapters turn them into wire errors (``lazymcp.protocol.jsonrpc.error_from``, or the
SDK's ``MCPError`` in ``lazymcp.sdk``). Name suggestions live in ``lazymcp.protocol.names``.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import IntEnum
from typing import Any

from lazymcp.protocol.names import MAX_NAME, NameIndex, suggest


class ErrorCode(IntEnum):
    """Every JSON-RPC error code lazymcp sends."""

    #: JSON-RPC: the message is not JSON, or not a JSON-RPC object.
    PARSE_ERROR = -32700
    #: JSON-RPC: not a valid request (its id or method has the wrong type, or it came too early).
    INVALID_REQUEST = -32600
    #: JSON-RPC: the method does not exist (a server without the extension answers tools/describe so).
    METHOD_NOT_FOUND = -32601
    #: JSON-RPC: invalid method parameters; spec/lazy-tools.md "Errors" (every malformed lazy-tools param).
    INVALID_PARAMS = -32602
    #: JSON-RPC: internal error. lazymcp never answers a malformed request with it.
    INTERNAL_ERROR = -32603
    #: Implementation-defined: the upstream server of a proxy failed or went away.
    UPSTREAM_ERROR = -32000
    #: Implementation-defined: the peer did not answer a request within the timeout (spec "Limits").
    REQUEST_TIMEOUT = -32001
    #: LSP's code, as MCP clients know it: the request was cancelled before its answer.
    REQUEST_CANCELLED = -32800
    #: Implementation-defined: a principal's calls passed a rate limit; ``data.retryAfter`` says in how many
    #: seconds to retry (spec/gateway.md "Rate limits"; over HTTP, status 429 with ``Retry-After``).
    RATE_LIMITED = -32029


class LazyMCPError(Exception):
    """Base class: every lazymcp error knows its JSON-RPC code and error data."""

    code: ErrorCode = ErrorCode.INTERNAL_ERROR
    exit_status: int = 2
    """The command line's exit status when it ends on this error (2: the command was given wrongly)."""

    def __init__(self, message: str, data: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.data = data


class InvalidParams(LazyMCPError):
    """A request parameter is malformed; ``data["field"]`` names it."""

    code = ErrorCode.INVALID_PARAMS

    def __init__(self, field: str, reason: str, message: str, **extra: Any) -> None:
        super().__init__(message, {"field": field, "reason": reason, **extra})
        self.field = field
        self.reason = reason


class UnknownTool(InvalidParams):
    """A tool name that is not in the catalog; the error data suggests close names."""

    def __init__(self, name: str, known: NameIndex | Iterable[str], *, field: str = "name") -> None:
        suggestions = suggest(name, known)
        hint = f"; did you mean {', '.join(suggestions)}?" if suggestions else ""
        shown = name if len(name) <= MAX_NAME else name[:MAX_NAME] + "…"  # a 1 MB name is not echoed whole
        super().__init__(field, "unknown_tool", f"Unknown tool: {shown!r}{hint}", name=shown, suggestions=suggestions)
        self.name = name
        self.suggestions = suggestions


class CatalogError(LazyMCPError):
    """A catalog that cannot be served as it is."""


class ConfigError(CatalogError):
    """A configuration file (or a flag) that cannot be used as it is."""


class UpstreamError(LazyMCPError):
    """The upstream server of a proxy failed."""

    code = ErrorCode.UPSTREAM_ERROR


__all__ = [
    "CatalogError",
    "ConfigError",
    "ErrorCode",
    "InvalidParams",
    "LazyMCPError",
    "NameIndex",
    "UnknownTool",
    "UpstreamError",
    "suggest",
]
