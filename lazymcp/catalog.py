"""The catalog: one version of a server's tools, with everything lazymcp serves precomputed.

Theory of operation. A ``Catalog`` is built once per version of the tool list and never changes;
a tool added or removed makes a new ``Catalog`` (LT-16). Building it serializes every tool once
with orjson, to check it is JSON and to hash it: the version hash is content-addressed, so two
servers with the same tools agree on it. The bytes are not kept.
Listings of each (shape, detail) are built on first use and kept, so a lazy ``tools/list`` is a
slice of a ready list, never a full listing stripped down, and ``tools/describe`` is a dict lookup.
So are the things only some modes need (§17): each tool's resolved metadata, the categories and the
search index are built on first use, once per version.
The tool dicts are held by reference, not copied: callers hand them over and must not mutate them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import orjson
from jsonschema.protocols import Validator

from lazymcp.arguments import compile_validator
from lazymcp.errors import CatalogError, InvalidParams
from lazymcp.messages import (
    DESCRIBE_TOOLS,
    INVOKE_TOOL,
    LIST_TOOL_CATEGORIES,
    MANAGE_TOOLS,
    META_TOOLS,
    SEARCH_TOOLS,
    Detail,
    Shape,
    Tool,
)
from lazymcp.metadata import Metadata, ToolInfo, resolve
from lazymcp.metatools import (
    describe_tools_definition,
    invoke_tool_definition,
    list_tool_categories_definition,
    manage_tools_definition,
    search_tools_definition,
)
from lazymcp.names import NameIndex
from lazymcp.options import Options
from lazymcp.stubs import make_stub

if TYPE_CHECKING:
    from lazymcp.search import ToolIndex

_T = TypeVar("_T")

META_PREFIX = "lazymcp_"
"""A meta-tool whose name a catalog tool already has is renamed with this prefix (then ``_2``, ``_3``...)."""


def _free_name(name: str, taken: Mapping[str, int]) -> str:
    if name not in taken:
        return name
    candidate = META_PREFIX + name
    suffix = 2
    while candidate in taken:
        candidate = f"{META_PREFIX}{name}_{suffix}"
        suffix += 1
    return candidate


def _problem(tool: object, position: int, index: Mapping[str, int], owner: str) -> tuple[str, str] | bytes:
    """``tool``'s JSON, or why it cannot join a catalog that already indexes ``index``: the error that
    refuses the catalog, and the line that names the tool left out (``owner``: whose tool it is)."""
    name = tool.get("name") if isinstance(tool, dict) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    if not isinstance(name, str):
        refusal = f"tool #{position} is not an object with a string 'name'"
        return refusal, f"left out {owner}'s tool #{position}: not an object with a string 'name'"
    shown = name if len(name) <= 80 else name[:80] + "…"
    if name in index:
        refusal = f"duplicate tool name {name!r} (tools #{index[name]} and #{position})"
        return refusal, f"left out a second definition of {owner}'s tool {shown!r}: the first is kept"
    try:
        return orjson.dumps(tool)
    except TypeError as exc:
        return (
            f"tool {name!r} is not JSON: {exc}",
            f"left out {owner}'s tool {shown!r}: it cannot be served as JSON ({exc})",
        )


@dataclass(frozen=True, eq=False)
class Catalog:
    """An immutable, precomputed tool catalog. Build it with ``Catalog.build``."""

    tools: tuple[Tool, ...]
    index: dict[str, int]
    version: str
    options: Options
    meta_tool: Tool
    meta_names: dict[str, str] = field(default_factory=lambda: {})
    """Each meta-tool's name in this catalog, by its usual name (they differ only on a collision)."""
    declared: Metadata = field(default_factory=Metadata)
    """What the server author declared at registration (``lazify(metadata=...)``)."""
    origin: str | None = None
    """The server's name: the derived category of a tool whose name has no prefix."""
    _listings: dict[tuple[Shape, Detail], list[Any]] = field(default_factory=lambda: {}, repr=False)
    _validators: dict[str, Validator | None] = field(default_factory=lambda: {}, repr=False)
    _derived: dict[str, Any] = field(default_factory=lambda: {}, repr=False)

    @classmethod
    def build(
        cls,
        tools: Iterable[Tool],
        options: Options | None = None,
        *,
        declared: Metadata | None = None,
        origin: str | None = None,
        rejected: list[str] | None = None,
        owner: str = "the server",
    ) -> Catalog:
        """Precompute a catalog from tools as the server publishes them.

        ``rejected``: leave a bad tool out (a repeated name keeps its first definition) and add a line
        naming it (as ``owner``'s tool) here, instead of refusing the whole catalog: one bad definition
        of a server the proxy fronts must not cost the rest.

        Raises:
            CatalogError: without ``rejected``, a tool is not an object with a string ``name``, a name
                repeats, or a tool is not JSON.
        """
        options = options or Options()
        tool_list: list[Tool] = []
        index: dict[str, int] = {}
        digest = hashlib.sha256()
        for position, tool in enumerate(tools):
            blob = _problem(tool, position, index, owner)
            if isinstance(blob, tuple):
                if rejected is None:
                    raise CatalogError(blob[0])
                rejected.append(blob[1])
                continue
            digest.update(len(blob).to_bytes(8, "big"))
            digest.update(blob)
            index[tool["name"]] = len(tool_list)
            tool_list.append(tool)
        # The server's own tool wins; a meta-tool takes the first free name (spec §8, §17.7).
        meta_names = {name: _free_name(name, index) for name in META_TOOLS}
        return cls(
            tools=tuple(tool_list),
            index=index,
            version=digest.hexdigest()[:16],
            options=options,
            meta_tool=describe_tools_definition(meta_names[DESCRIBE_TOOLS], options.describe_batch_max),
            meta_names=meta_names,
            declared=declared or Metadata(),
            origin=origin,
        )

    def __len__(self) -> int:
        return len(self.tools)

    def get(self, name: str) -> Tool | None:
        """The full tool called ``name``, or None."""
        position = self.index.get(name)
        return None if position is None else self.tools[position]

    @property
    def names(self) -> Sequence[str]:
        return list(self.index)

    def listing(self, shape: Shape, detail: Detail) -> list[Any]:
        """Every entry of a listing of ``shape`` at ``detail``, in the server's order (built once)."""
        key: tuple[Shape, Detail] = (shape, "description") if shape == "full" else (shape, detail)
        entries = self._listings.get(key)
        if entries is None:
            if shape == "full":
                entries = list(self.tools)
            else:
                limit = self.options.summary_chars
                summaries = self._declared_summaries() if detail == "summary" else {}
                entries = [make_stub(tool, shape, detail, limit, summaries.get(tool["name"])) for tool in self.tools]
            self._listings[key] = entries
        return entries

    def _declared_summaries(self) -> dict[str, str]:
        """Summaries declared outside the tools' own ``_meta`` (registration argument, metadata file)."""
        named = {*self.declared.tools, *self.options.metadata.tools}
        return {name: self.info(name).summary for name in named if name in self.index}

    def page(self, shape: Shape, detail: Detail, cursor: str | None) -> dict[str, Any]:
        """One page of a listing: ``{"tools": [...], "nextCursor"?: ...}`` (LT-09).

        The stock listing's meta-tool rides on the first page, beyond the page size, so cursors
        mean the same offset in every shape.

        Raises:
            InvalidParams: the cursor is malformed or from another catalog version.
        """
        first = [self.meta_tool] if shape == "stock" else []
        return self.paginate(self.listing(shape, detail), cursor, first)

    def paginate(self, entries: Sequence[Any], cursor: str | None, first: Sequence[Any] = ()) -> dict[str, Any]:
        """One page of ``entries`` by ``page_size``, with ``first`` (meta-tools) ahead of the first page.

        Raises:
            InvalidParams: the cursor is malformed or from another catalog version.
        """
        start = self._offset(cursor, len(entries))
        size = self.options.page_size
        if size is None and start == 0:
            tools = entries
            end = len(entries)
        else:
            end = len(entries) if size is None else min(start + size, len(entries))
            tools = entries[start:end]
        if cursor is None and first:
            tools = [*first, *tools]
        result: dict[str, Any] = {"tools": tools if isinstance(tools, list) else list(tools)}
        if end < len(entries):
            result["nextCursor"] = f"{self.version}.{end}"
        return result

    def _offset(self, cursor: str | None, count: int) -> int:
        if cursor is None:
            return 0
        version, dot, offset = cursor.partition(".")
        if (
            not dot
            or not (offset.isascii() and offset.isdigit())
            or len(offset) > 9
            or len(version) != len(self.version)
        ):
            raise InvalidParams("cursor", "malformed", "Invalid cursor: not one this server issued")
        if version != self.version:
            raise InvalidParams("cursor", "stale", "Stale cursor: the tool list changed; list again from the start")
        start = int(offset)
        if start >= count:  # a cursor always names the tool its page starts with
            raise InvalidParams("cursor", "malformed", "Invalid cursor: past the end of the tool list")
        return start

    def validator(self, name: str) -> Validator | None:
        """The compiled argument validator of tool ``name`` (None when it cannot be checked)."""
        if name not in self._validators:
            tool = self.get(name)
            if tool is None:
                tool = self.meta_tools.get(name)
            schema = None if tool is None else tool.get("inputSchema")
            self._validators[name] = compile_validator(schema)
        return self._validators[name]

    # --- what the modes of §17 need, built on first use -------------------------------------------

    def memo(self, key: str, build: Callable[[], _T]) -> _T:
        """``build()``, computed once for this catalog version and kept under ``key``."""
        value = self._derived.get(key)
        if value is None:
            value = self._derived[key] = build()
        return value

    @property
    def meta_tools(self) -> dict[str, Tool]:
        """Every meta-tool's default definition, by its name in this catalog."""

        def build() -> dict[str, Tool]:
            names, options = self.meta_names, self.options
            definitions = (
                list_tool_categories_definition(names[LIST_TOOL_CATEGORIES]),
                search_tools_definition(names[SEARCH_TOOLS], options.search_top_k),
                self.meta_tool,
                invoke_tool_definition(names[INVOKE_TOOL]),
                manage_tools_definition(names[MANAGE_TOOLS], options.describe_batch_max),
            )
            return {tool["name"]: tool for tool in definitions}

        return self.memo("meta_tools", build)

    def canonical_meta_name(self, name: str) -> str | None:
        """The usual name of the meta-tool called ``name`` here, or None when ``name`` is no meta-tool."""
        if name in self.index:
            return None
        for canonical, actual in self.meta_names.items():
            if actual == name:
                return canonical
        return None

    def infos(self) -> dict[str, ToolInfo]:
        """Every tool's resolved metadata (§17.6), by name, in catalog order."""

        def build() -> dict[str, ToolInfo]:
            return {name: self.info(name) for name in self.index}

        return self.memo("infos", build)

    def info(self, name: str) -> ToolInfo:
        """The resolved metadata of catalog tool ``name``."""
        infos = self._derived.get("infos")
        if infos is not None:
            return infos[name]
        tool = self.tools[self.index[name]]
        author, file = self.declared.get(name), self.options.metadata.get(name)
        return resolve(tool, author=author, file=file, limit=self.options.summary_chars, origin=self.origin)

    def name_index(self) -> NameIndex:
        """The catalog's tool names, indexed for suggestions (built on the first unknown name)."""
        return self.memo("names", lambda: NameIndex(self.index))

    def name_and_category_index(self) -> NameIndex:
        """Tool names and category names, indexed for suggestions."""
        return self.memo("names+categories", lambda: NameIndex([*self.index, *self.categories()]))

    def categories(self) -> dict[str, list[str]]:
        """Tool names by category, categories in order of their first tool."""

        def build() -> dict[str, list[str]]:
            grouped: dict[str, list[str]] = {}
            for info in self.infos().values():
                grouped.setdefault(info.category, []).append(info.name)
            return grouped

        return self.memo("categories", build)

    def category_description(self, category: str) -> str | None:
        return self.declared.categories.get(category) or self.options.metadata.categories.get(category)

    def search_index(self) -> ToolIndex:
        """The ``search_tools`` index over this version (built on the first search).

        It indexes each tool with its resolved summary and category, so search results agree with the
        listings.
        """

        from lazymcp.search import ToolIndex  # only servers whose clients search pay for the index

        def build() -> ToolIndex:
            infos = [self.info(tool["name"]) for tool in self.tools]
            return ToolIndex.build(
                self.tools, summaries=[i.summary for i in infos], categories=[i.category for i in infos]
            )

        return self.memo("search_index", build)
