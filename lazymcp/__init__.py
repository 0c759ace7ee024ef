"""lazymcp: lazy tool loading for MCP servers.

A server's ``tools/list`` answer can cost a model tens of thousands of tokens before any work
starts. lazymcp serves stubs (name and a one-line summary) by default and full definitions on
demand (``tools/describe``, ``tools/describe_batch``), while clients that know nothing of it keep
working: they get valid MCP plus a ``describe_tools`` meta-tool. See spec/lazy-tools.md.
"""

from lazymcp.catalog import Catalog
from lazymcp.client import LazyClient
from lazymcp.errors import CatalogError, ErrorCode, InvalidParams, LazyMCPError, UnknownTool, UpstreamError
from lazymcp.messages import EXT_ID
from lazymcp.options import Options
from lazymcp.sdk import LazyTools, lazify
from lazymcp.stubs import summarize
from lazymcp.tokens import count_tokens
from lazymcp.version import __version__

__all__ = [
    "EXT_ID",
    "Catalog",
    "CatalogError",
    "ErrorCode",
    "InvalidParams",
    "LazyClient",
    "LazyMCPError",
    "LazyTools",
    "Options",
    "UnknownTool",
    "UpstreamError",
    "__version__",
    "count_tokens",
    "lazify",
    "summarize",
]
