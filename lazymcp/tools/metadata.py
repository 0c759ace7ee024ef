"""Per-tool metadata: category, summary, examples, related tools and deprecation (spec §17.6).

Sources, field by field, first found wins:

1. the server author's registration argument: ``lazify(server, metadata={...})``;
2. the tool's own ``_meta["io.lazymcp/lazy-tools"]`` (on an ``MCPServer``: ``@server.tool(meta=tool_meta(...))``);
3. a metadata file (``--metadata FILE``, ``LAZYMCP_METADATA``), the only source through the proxy;
4. derivation: the category from the name's prefix (``issues_create`` -> ``issues``, a gateway's
   ``github__create_issue`` -> ``github``) or else the server's name, the summary from the description's
   first sentence (``lazymcp.tools.stubs``).

What lazymcp's own configuration declares (1 and 3, and ``tool_meta``) is checked when it is read: an
unknown field, a wrong type or a summary longer than the limit is a ``CatalogError`` naming the tool.
A ``_meta`` that arrives inside a tool definition lazymcp relays is read leniently (bad values are
ignored, a long summary is cut as LT-08 says): a proxy cannot refuse the server it wraps.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, cast

from lazymcp.local.files import read_json
from lazymcp.protocol.errors import CatalogError
from lazymcp.protocol.messages import EXT_ID, SEPARATOR, Tool
from lazymcp.tools.stubs import DEFAULT_SUMMARY_CHARS, declared_summary, shorten, summarize

FIELDS: Final = ("category", "summary", "examples", "related", "deprecated")
OTHER_CATEGORY: Final = "other"
"""The category of a tool with no declared category, no name prefix and no server name."""
_WHITESPACE = re.compile(r"\s+")
_NAME_PARTS = re.compile(r"[_\-]")


@dataclass(frozen=True, slots=True)
class ToolMeta:
    """What one source declares about one tool; ``None`` (or empty) means "not declared here"."""

    category: str | None = None
    summary: str | None = None
    examples: tuple[Any, ...] = ()
    related: tuple[str, ...] = ()
    deprecated: str | bool | None = None


@dataclass(frozen=True, slots=True)
class Metadata:
    """Declared metadata for many tools, plus descriptions of categories."""

    tools: Mapping[str, ToolMeta] = field(default_factory=lambda: {})
    categories: Mapping[str, str] = field(default_factory=lambda: {})
    source: str = "metadata"

    def get(self, name: str) -> ToolMeta | None:
        return self.tools.get(name)

    def check_summaries(self, limit: int) -> None:
        """Raises ``CatalogError`` for a summary longer than ``limit`` code points."""
        for name, meta in self.tools.items():
            if meta.summary is not None and len(meta.summary) > limit:
                raise CatalogError(
                    f"{self.source}: the summary of tool {name!r} is {len(meta.summary)} characters, "
                    f"more than the limit of {limit}: {meta.summary!r}"
                )

    def tool_names(self) -> list[tuple[str, str]]:
        """(name, where) for every tool name this metadata mentions: its entries and their related tools."""
        named = [(name, f"{self.source}, tool entry") for name in self.tools]
        named += [
            (other, f"{self.source}, related tools of {name!r}")
            for name, m in self.tools.items()
            for other in m.related
        ]
        return named


def _collapse(text: str) -> str:
    return _WHITESPACE.sub(" ", text).strip()


def _parse_tool_meta(name: str, data: object, source: str) -> ToolMeta:
    where = f"{source}: tool {name!r}"
    if not isinstance(data, Mapping):
        raise CatalogError(f"{where}: expected an object with any of {', '.join(FIELDS)}")
    data = cast(Mapping[str, object], data)
    unknown = [key for key in data if key not in FIELDS]
    if unknown:
        raise CatalogError(f"{where}: unknown field {unknown[0]!r}; expected any of {', '.join(FIELDS)}")
    category = data.get("category")
    if category is not None and (not isinstance(category, str) or not category.strip()):
        raise CatalogError(f"{where}: 'category' must be a non-empty string")
    summary = data.get("summary")
    if summary is not None and (not isinstance(summary, str) or not _collapse(summary)):
        raise CatalogError(f"{where}: 'summary' must be a non-empty string")
    examples = data.get("examples", [])
    if not isinstance(examples, list) or not all(isinstance(e, dict | str) for e in cast(list[object], examples)):
        raise CatalogError(f"{where}: 'examples' must be a list of argument objects or example requests (strings)")
    related = data.get("related", [])
    if not isinstance(related, list) or not all(isinstance(r, str) and r for r in cast(list[object], related)):
        raise CatalogError(f"{where}: 'related' must be a list of tool names")
    deprecated = data.get("deprecated")
    if deprecated is not None and not isinstance(deprecated, bool) and not (isinstance(deprecated, str) and deprecated):
        raise CatalogError(f"{where}: 'deprecated' must be true, false or a message")
    return ToolMeta(
        category=category.strip() if isinstance(category, str) else None,
        summary=_collapse(summary) if isinstance(summary, str) else None,
        examples=tuple(cast(list[Any], examples)),
        related=tuple(cast(list[str], related)),
        deprecated=deprecated if deprecated else None,
    )


def parse_metadata(data: object, *, source: str = "metadata", limit: int | None = DEFAULT_SUMMARY_CHARS) -> Metadata:
    """Read declared metadata: ``{"tools": {name: {field: value}}, "categories": {name: description}}``.

    A bare ``{name: {field: value}}`` mapping (the registration argument's usual shape) is read as
    ``{"tools": ...}``. ``limit`` checks summary lengths (None: checked later, by ``Options``).

    Raises:
        CatalogError: an unknown field, a value of the wrong type, or a summary over ``limit``.
    """
    if not isinstance(data, Mapping):
        raise CatalogError(f"{source}: expected a JSON object with 'tools' (and optionally 'categories')")
    data = cast(Mapping[str, object], data)
    if "tools" in data and isinstance(data["tools"], Mapping):
        extra = [key for key in data if key not in ("tools", "categories", "$schema")]
        if extra:
            raise CatalogError(f"{source}: unknown member {extra[0]!r}; expected 'tools' and 'categories'")
        tools_data = cast(Mapping[str, object], data["tools"])
        categories_data = data.get("categories", {})
    else:
        tools_data, categories_data = data, {}
    if not isinstance(categories_data, Mapping) or not all(
        isinstance(v, str) for v in cast(Mapping[str, object], categories_data).values()
    ):
        raise CatalogError(f"{source}: 'categories' must map category names to descriptions")
    metadata = Metadata(
        tools={name: _parse_tool_meta(name, value, source) for name, value in tools_data.items()},
        categories=dict(cast(Mapping[str, str], categories_data)),
        source=source,
    )
    if limit is not None:
        metadata.check_summaries(limit)
    return metadata


def load_metadata(path: str | Path, *, limit: int | None = DEFAULT_SUMMARY_CHARS) -> Metadata:
    """Read a metadata file (JSON).

    Raises:
        CatalogError: the file is missing, not JSON, or not valid metadata.
    """
    data = read_json(path, "metadata file")
    return parse_metadata(data, source=f"metadata file {str(path)!r}", limit=limit)


def tool_meta(
    *,
    category: str | None = None,
    summary: str | None = None,
    examples: Iterable[Any] = (),
    related: Iterable[str] = (),
    deprecated: str | bool | None = None,
    limit: int = DEFAULT_SUMMARY_CHARS,
) -> dict[str, Any]:
    """A tool ``_meta`` declaring lazymcp metadata, checked now: ``@server.tool(meta=tool_meta(...))``.

    Raises:
        CatalogError: a value of the wrong type, or a summary over ``limit`` characters.
    """
    fields: dict[str, Any] = {
        "category": category,
        "summary": summary,
        "examples": list(examples),
        "related": list(related),
        "deprecated": deprecated,
    }
    declared = {key: value for key, value in fields.items() if value not in (None, [])}
    parse_metadata({"tools": {"(tool_meta)": declared}}, source="tool_meta()", limit=limit)
    return {EXT_ID: declared}


def declared_in_tool(tool: Tool) -> ToolMeta:
    """What a tool's own ``_meta[EXT_ID]`` declares, read leniently (wrong types are ignored)."""
    meta: object = tool.get("_meta")
    ours: object = cast(dict[str, object], meta).get(EXT_ID) if isinstance(meta, dict) else None
    if not isinstance(ours, dict):
        return ToolMeta()
    ours = cast(dict[str, object], ours)
    category = ours.get("category")
    examples = ours.get("examples")
    related = ours.get("related")
    deprecated = ours.get("deprecated")
    return ToolMeta(
        category=category.strip() if isinstance(category, str) and category.strip() else None,
        summary=declared_summary(tool),
        examples=tuple(cast(Any, e) for e in cast(list[object], examples) if isinstance(e, dict | str))
        if isinstance(examples, list)
        else (),
        related=tuple(r for r in cast(list[object], related) if isinstance(r, str) and r)
        if isinstance(related, list)
        else (),
        deprecated=deprecated if isinstance(deprecated, bool | str) and deprecated else None,
    )


def check_author_summaries(tools: Iterable[Tool], limit: int) -> None:
    """The summaries a server's author declared in its own tools' ``_meta`` fit in ``limit`` characters.

    Raises:
        CatalogError: one does not; the message names the tool.
    """
    for tool in tools:
        summary = declared_in_tool(tool).summary
        if summary is not None and len(summary) > limit:
            raise CatalogError(
                f"tool {tool['name']!r}: the summary in its _meta is {len(summary)} characters, "
                f"more than the limit of {limit}: {summary!r}"
            )


def derive_category(name: str, origin: str | None) -> str:
    """A category from the name: a gateway's ``server__tool`` prefix, else the first ``_``/``-`` part of
    a name with several parts, else the server's name, else ``"other"``."""
    head, sep, _ = name.partition(SEPARATOR)
    if sep and head:
        return head
    parts = [part for part in _NAME_PARTS.split(name) if part]
    if len(parts) > 1:
        return parts[0]
    return origin or OTHER_CATEGORY


@dataclass(frozen=True, slots=True)
class ToolInfo:
    """Everything lazymcp says about a tool beyond its definition, every source resolved."""

    name: str
    summary: str
    category: str
    declared: ToolMeta
    """The declared fields only (no derivation): what ``describe_tools`` adds beside the definition."""

    @property
    def deprecated(self) -> str | bool | None:
        return self.declared.deprecated

    def extras(self) -> dict[str, Any]:
        """The declared category, examples, related tools and deprecation, as JSON (empty when none)."""
        declared = self.declared
        extras: dict[str, Any] = {}
        if declared.category is not None:
            extras["category"] = declared.category
        if declared.examples:
            extras["examples"] = list(declared.examples)
        if declared.related:
            extras["related"] = list(declared.related)
        if declared.deprecated is not None:
            extras["deprecated"] = declared.deprecated
        return extras


def _first(*values: Any) -> Any:
    for value in values:
        if value is not None and value != ():
            return value
    return values[-1]


def resolve(
    tool: Tool,
    *,
    author: ToolMeta | None = None,
    file: ToolMeta | None = None,
    limit: int = DEFAULT_SUMMARY_CHARS,
    origin: str | None = None,
) -> ToolInfo:
    """Resolve one tool's metadata: the author's registration argument, its ``_meta``, the file, derivation."""
    name: str = tool["name"]
    own = declared_in_tool(tool)
    sources = [source for source in (author, own, file) if source is not None]
    declared = ToolMeta(
        category=_first(*(s.category for s in sources), None),
        summary=_first(*(s.summary for s in sources), None),
        examples=_first(*(s.examples for s in sources), ()),
        related=_first(*(s.related for s in sources), ()),
        deprecated=_first(*(s.deprecated for s in sources), None),
    )
    summary = shorten(declared.summary, limit) if declared.summary is not None else summarize(tool, limit)
    category = declared.category or derive_category(name, origin)
    return ToolInfo(name=name, summary=summary, category=category, declared=declared)
