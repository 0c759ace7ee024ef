"""The per-tool metadata a server author declares, at the import path earlier releases documented.

Its home is ``lazymcp.tools.metadata``; ``tool_meta`` and ``load_metadata`` are also ``lazymcp``'s own.
"""

from lazymcp.tools.metadata import Metadata, ToolMeta, load_metadata, parse_metadata, tool_meta

__all__ = ["Metadata", "ToolMeta", "load_metadata", "parse_metadata", "tool_meta"]
