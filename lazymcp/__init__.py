"""lazymcp: lazy tool loading for MCP servers.

A server's ``tools/list`` answer can cost a model tens of thousands of tokens before any work
starts. lazymcp serves stubs (name and a one-line summary) by default and full definitions on
demand (``tools/describe``, ``tools/describe_batch``), while clients that know nothing of it keep
working: they get valid MCP plus a ``describe_tools`` meta-tool. See spec/lazy-tools.md.
"""

import typing as _typing

from lazymcp.protocol.errors import CatalogError, ErrorCode, InvalidParams, LazyMCPError, UnknownTool, UpstreamError
from lazymcp.protocol.messages import EXT_ID
from lazymcp.surfaces.catalog import Catalog
from lazymcp.surfaces.options import Options
from lazymcp.tools.metadata import load_metadata, tool_meta
from lazymcp.tools.stubs import summarize
from lazymcp.tools.tokens import count_tokens
from lazymcp.version import __version__

if _typing.TYPE_CHECKING:
    from lazymcp.client import LazyClient
    from lazymcp.sdk import LazyTools, lazify

_FROM_SDK_MODULES = {"LazyClient": "lazymcp.client", "LazyTools": "lazymcp.sdk", "lazify": "lazymcp.sdk"}
"""Public names whose modules import the MCP SDK: loaded on first use, so the command line's cold
paths (the proxy's and gateway's own answers) start without the SDK's import time."""


def __getattr__(name: str) -> _typing.Any:
    module = _FROM_SDK_MODULES.get(name)
    if module is None:
        raise AttributeError(f"module 'lazymcp' has no attribute {name!r}")
    import importlib

    value = globals()[name] = getattr(importlib.import_module(module), name)
    return value


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
    "load_metadata",
    "summarize",
    "tool_meta",
]
