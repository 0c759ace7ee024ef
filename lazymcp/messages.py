"""The wire vocabulary of the lazy-tools extension (spec/lazy-tools.md).

Everything here is plain JSON shapes and constants; the rest of the package types against it.
"""

from __future__ import annotations

from typing import Any, Final, Literal, NotRequired, TypedDict

EXT_ID: Final = "io.lazymcp/lazy-tools"
"""The extension identifier, advertised and declared under ``capabilities.extensions`` (LT-01)."""

DESCRIBE: Final = "tools/describe"
DESCRIBE_BATCH: Final = "tools/describe_batch"

Detail = Literal["name", "summary", "description"]
DETAILS: Final[tuple[Detail, ...]] = ("name", "summary", "description")

StockDefault = Literal["lazy", "eager"]

Shape = Literal["full", "bare", "stock"]
"""What a listing holds: the server's own tools, bare stubs (declaring client), or valid-MCP stubs (stock client)."""

Tool = dict[str, Any]
"""A tool exactly as the server publishes it. lazymcp relays tools; it never repairs them."""


class ToolStub(TypedDict):
    name: str
    description: NotRequired[str]
    inputSchema: NotRequired[dict[str, Any]]


class DescribeResult(TypedDict):
    tool: Tool


class DescribeBatchResult(TypedDict):
    tools: list[Tool]
    unknown: list[str]


class ServerSettings(TypedDict):
    """Advertised at ``capabilities.extensions[EXT_ID]``."""

    describeBatchMax: int
    summaryMaxChars: int
    stockDefault: StockDefault
    pageSize: int | None
