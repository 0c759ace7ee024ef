"""The wire vocabulary of the lazy-tools extension (spec/lazy-tools.md).

Everything here is plain JSON shapes and constants; the rest of the package types against it.
"""

from __future__ import annotations

from typing import Any, Final, Literal, NotRequired, TypedDict

EXT_ID: Final = "io.lazymcp/lazy-tools"
"""The extension identifier, advertised and declared under ``capabilities.extensions`` (LT-01)."""

SEPARATOR: Final = "__"
"""What joins a server's name and its tool's in a gateway's tool names (``github__create_issue``), unless
the configuration picks another."""

DESCRIBE: Final = "tools/describe"
DESCRIBE_BATCH: Final = "tools/describe_batch"

# The draft standard's methods (SEP-2636, "Tool Manifests"; spec/lazy-tools.md §18). Its describe shares
# our name and takes ``{names}``; should the draft rename it (``tools/get``), that is this one line.
MANIFEST: Final = "tools/manifest"
DRAFT_DESCRIBE: Final = DESCRIBE
MANIFEST_CAPABILITY: Final = "manifest"
"""Advertised as ``capabilities.tools.manifest = {"maxNames": ...}``."""
DRAFT_MIN_NAMES: Final = 50
"""The fewest names the draft lets a server accept in one ``{names}`` describe."""

Detail = Literal["name", "summary", "description"]
DETAILS: Final[tuple[Detail, ...]] = ("name", "summary", "description")

StockDefault = Literal["lazy", "eager"]

Shape = Literal["full", "bare", "stock"]
"""What a listing holds: the server's own tools, bare stubs (declaring client), or valid-MCP stubs (stock client)."""

Mode = Literal["describe", "dynamic", "proxy", "core", "eager", "code"]
"""How a stock client's default ``tools/list`` is served (spec/lazy-tools.md §17)."""
MODES: Final[tuple[Mode, ...]] = ("describe", "dynamic", "proxy", "core", "eager", "code")

Tool = dict[str, Any]
"""A tool exactly as the server publishes it. lazymcp relays tools; it never repairs them."""


class ToolStub(TypedDict):
    name: str
    description: NotRequired[str]
    inputSchema: NotRequired[dict[str, Any]]


class ServerSettings(TypedDict):
    """Advertised at ``capabilities.extensions[EXT_ID]``."""

    describeBatchMax: int
    summaryMaxChars: int
    stockDefault: StockDefault
    pageSize: int | None
