"""The catalog: one version of a server's tools, with everything lazymcp serves precomputed.

Theory of operation. A ``Catalog`` is built once per version of the tool list and never changes;
a tool added or removed makes a new ``Catalog`` (LT-16). Building it serializes every tool once
with orjson, to check it is JSON and to hash it (``lazymcp.surfaces.admission``): the version hash is
content-addressed, so two servers with the same tools agree on it. The bytes are not kept, except by a
``packed`` catalog, which keeps them instead of the dicts (``Packed``): the gateway's, whose hundreds of
tools would cost three times their JSON as Python objects, and which are mostly listed whole or never read.
Listings of each (shape, detail) are built on first use and kept, so a lazy ``tools/list`` is a
slice of a ready list, never a full listing stripped down, and ``tools/describe`` is a dict lookup.
So are the things only some modes need (§17): each tool's resolved metadata, the categories and the
search index are built on first use, once per version.
The tool dicts are held by reference, not copied: callers hand them over and must not mutate them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypeVar, cast

import orjson

from lazymcp.protocol.errors import InvalidParams
from lazymcp.protocol.messages import SEPARATOR, Detail, Mode, Shape, Tool, ToolStub
from lazymcp.protocol.names import NameIndex
from lazymcp.surfaces.admission import admit
from lazymcp.surfaces.arguments import Check, compile_validator
from lazymcp.surfaces.metatools import BY_NAME, DESCRIBE_TOOLS, REGISTRY
from lazymcp.surfaces.options import Options
from lazymcp.tools.digests import Digest, manifest_entry
from lazymcp.tools.metadata import Metadata, ToolInfo, resolve
from lazymcp.tools.packed import Packed, pack
from lazymcp.tools.stubs import STOCK_INPUT_SCHEMA, make_stub

if TYPE_CHECKING:
    from lazymcp.search.index import ToolIndex

_T = TypeVar("_T")

RECENT = 32
"""Tools a packed catalog keeps decoded, the last ones decoded: a client describes a few tools, often again."""
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


def _packed_members(stub: ToolStub) -> ToolStub:
    """A stock stub of a packed catalog, with the members it keeps of its tool (schemas, annotations) as
    their JSON too, since only orjson writes that catalog's answers."""

    def kept(value: object) -> object:
        plain = value is None or value is STOCK_INPUT_SCHEMA or isinstance(value, str | int | float)
        return value if plain else orjson.Fragment(pack(value))

    return cast(ToolStub, {key: kept(value) for key, value in cast(dict[str, object], stub).items()})


def _hinted(tool: Tool, always_load: str | None) -> Tool:
    """A meta-tool marked with a host's always-load ``_meta`` key (none: as it is)."""
    if always_load is None:
        return tool
    return cast(Tool, {**tool, "_meta": {**cast(dict[str, Any], tool.get("_meta") or {}), always_load: True}})


@dataclass(frozen=True, eq=False)
class Catalog:
    """An immutable, precomputed tool catalog. Build it with ``Catalog.build``."""

    held: tuple[Tool, ...] | Packed = field(repr=False)
    """The tools: as given, or as their JSON in a ``packed`` catalog."""
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
    separator: str = SEPARATOR
    """What joins a server's name and its tool's in these tools' names (a gateway's configuration)."""
    _listings: dict[tuple[Shape, Detail], list[Any]] = field(default_factory=lambda: {}, repr=False)
    _validators: dict[str, Check | None] = field(default_factory=lambda: {}, repr=False)
    _derived: dict[str, Any] = field(default_factory=lambda: {}, repr=False)
    _recent: dict[str, Tool] = field(default_factory=lambda: {}, repr=False)

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
        packed: bool = False,
        separator: str = SEPARATOR,
    ) -> Catalog:
        """Precompute a catalog from tools as the server publishes them.

        ``rejected``: leave a bad tool out (a repeated name keeps its first definition) and add a line
        naming it (as ``owner``'s tool) here, instead of refusing the whole catalog: one bad definition
        of a server the proxy fronts must not cost the rest.

        ``packed``: keep each tool's JSON rather than the tool (``Packed``), so ``tools`` may be handed
        over one at a time, from a generator. Its full listing is then ``orjson.Fragment`` entries,
        which only orjson writes: a packed catalog is for a server whose answers orjson puts on the wire.

        Raises:
            CatalogError: without ``rejected``, a tool is not an object with a string ``name``, a name
                repeats, or a tool is not JSON.
        """
        options = options or Options()
        held, index, version = admit(tools, rejected=rejected, owner=owner, packed=packed)
        # The server's own tool wins; a meta-tool takes the first free name (spec §8, §17.7).
        meta_names = {meta.name: _free_name(meta.name, index) for meta in REGISTRY}
        return cls(
            held=held,
            index=index,
            version=version,
            options=options,
            meta_tool=BY_NAME[DESCRIBE_TOOLS].define(meta_names[DESCRIBE_TOOLS], options, "describe"),
            meta_names=meta_names,
            declared=declared or Metadata(),
            origin=origin,
            separator=separator,
        )

    @property
    def tools(self) -> tuple[Tool, ...]:
        """Every tool, in the server's order (a packed catalog decodes them all: prefer ``get``)."""
        held = self.held
        return held if isinstance(held, tuple) else tuple(held)

    def __len__(self) -> int:
        return len(self.held)

    def with_mode(self, mode: Mode, always_load: str | None = None) -> Catalog:
        """This catalog in another mode (its meta-tools marked with ``always_load``): the same tools and
        version, nothing derived carried over. Settings of the describe and eager modes stay with them."""
        blank: dict[str, Any] = {"_listings": {}, "_validators": {}, "_derived": {}, "_recent": {}}
        options = self.options
        listing = mode in ("describe", "eager")
        options = replace(
            options,
            mode=mode,
            always_load=always_load,
            meta_tools=options.meta_tools if listing else None,
            stock_default=options.stock_default if mode == "describe" else "lazy",
        )
        meta_tool = BY_NAME[DESCRIBE_TOOLS].define(self.meta_names[DESCRIBE_TOOLS], options, "describe")
        return replace(self, options=options, meta_tool=_hinted(meta_tool, always_load), **blank)

    def serving(self, mode: Mode, always_load: str | None) -> Catalog:
        """This catalog as a session of ``mode`` is served it (kept once made)."""
        if mode == self.options.mode and always_load == self.options.always_load:
            return self
        return self.memo(f"serving:{mode}:{always_load}", lambda: self.with_mode(mode, always_load))

    def get(self, name: str) -> Tool | None:
        """The full tool called ``name``, or None (a packed catalog's is decoded, the last few kept)."""
        position = self.index.get(name)
        held = self.held
        if position is None or isinstance(held, tuple):
            return None if position is None else held[position]
        recent = self._recent
        tool = recent.get(name)
        if tool is None:
            if len(recent) >= RECENT:
                del recent[next(iter(recent))]
            tool = recent[name] = held[position]
        return tool

    @property
    def names(self) -> Sequence[str]:
        return list(self.index)

    def listing(self, shape: Shape, detail: Detail) -> list[Any]:
        """Every entry of a listing of ``shape`` at ``detail``, in the server's order (built once)."""
        key: tuple[Shape, Detail] = (shape, "description") if shape == "full" else (shape, detail)
        entries = self._listings.get(key)
        if entries is None:
            held = self.held
            if shape == "full":
                entries = list(held) if isinstance(held, tuple) else [orjson.Fragment(blob) for blob in held.blobs]
            else:
                limit = self.options.summary_chars
                summaries = self._declared_summaries() if detail == "summary" else {}
                entries = [make_stub(tool, shape, detail, limit, summaries.get(tool["name"])) for tool in held]
                if shape == "stock" and isinstance(held, Packed):
                    entries = [_packed_members(stub) for stub in entries]
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

    def validator(self, name: str) -> Check | None:
        """The compiled argument check of tool ``name`` (None when it cannot be checked)."""
        if name not in self._validators:
            tool = self.get(name)
            if tool is None:
                tool = self.meta_tools.get(name)
            schema = None if tool is None else tool.get("inputSchema")
            self._validators[name] = compile_validator(schema)
        return self._validators[name]

    # --- the draft's tool manifest (§18), built on first use --------------------------------------

    def manifest(self) -> list[dict[str, Any]]:
        """Every tool's ``tools/manifest`` entry (name, title, digest, size, annotations), in the
        server's order: each tool encoded canonically and hashed once per catalog version."""

        def build() -> list[dict[str, Any]]:
            return [manifest_entry(tool, Digest.of(tool)) for tool in self.held]

        return self.memo("manifest", build)

    def digest(self, name: str) -> str | None:
        """The digest of tool ``name``, or None when there is no such tool."""
        position = self.index.get(name)
        return None if position is None else self.manifest()[position]["digest"]

    # --- what the modes of §17 need, built on first use -------------------------------------------

    def memo(self, key: str, build: Callable[[], _T]) -> _T:
        """``build()``, computed once for this catalog version and kept under ``key``."""
        value = self._derived.get(key)
        if value is None:
            value = self._derived[key] = build()
        return value

    @property
    def meta_tools(self) -> dict[str, Tool]:
        """Every meta-tool's usual definition (the ``describe`` mode's), by its name in this catalog."""

        def build() -> dict[str, Tool]:
            definitions = [self.meta_definition(meta.name, "describe") for meta in REGISTRY]
            return {tool["name"]: tool for tool in definitions}

        return self.memo("meta_tools", build)

    def meta_definition(self, canonical: str, mode: Mode) -> Tool:
        """The meta-tool ``canonical`` as ``mode`` lists it, under its name in this catalog (built once)."""
        if canonical == DESCRIBE_TOOLS and mode == "describe":
            return self.meta_tool
        name = self.meta_names[canonical]
        hint = self.options.always_load
        define = BY_NAME[canonical].define
        return self.memo(f"meta:{canonical}:{mode}", lambda: _hinted(define(name, self.options, mode), hint))

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
        tool = self.held[self.index[name]]
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

    def server_descriptions(self, infos: Sequence[ToolInfo]) -> dict[str, str]:
        """What each server is for, where declared (a gateway's ``description``, as its tools' category's):
        the server ranker of ``search_tools`` reads it beside the server's tools."""
        found: dict[str, str] = {}
        for name, info in zip(self.index, infos, strict=True):
            server, sep, rest = name.partition(self.separator) if self.separator else (name, "", "")
            described = self.category_description(info.category) if sep and rest else None
            if described and server not in found:
                found[server] = described
        return found

    def search_index(self) -> ToolIndex:
        """The ``search_tools`` index over this version (built on the first search).

        It indexes each tool with its resolved summary and category, so search results agree with the
        listings.
        """

        from lazymcp.search.index import ToolIndex  # only servers whose clients search pay for the index

        def build() -> ToolIndex:
            infos = [self.info(name) for name in self.index]
            return ToolIndex.build(
                self.held,
                summaries=[i.summary for i in infos],
                categories=[i.category for i in infos],
                separator=self.separator,
                servers=self.server_descriptions(infos),
            )

        return self.memo("search_index", build)
