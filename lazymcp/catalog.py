"""The catalog: one version of a server's tools, with everything lazymcp serves precomputed.

Theory of operation. A ``Catalog`` is built once per version of the tool list and never changes;
a tool added or removed makes a new ``Catalog`` (LT-16). Building it serializes every tool once
with orjson: the bytes give the version hash (content-addressed, so two servers with the same tools
agree on it) and the byte and token accounting, and the proxy writes them to the wire as they are.
Listings of each (shape, detail) are built on first use and kept, so a lazy ``tools/list`` is a
slice of a ready list, never a full listing stripped down, and ``tools/describe`` is a dict lookup.
The tool dicts are held by reference, not copied: callers hand them over and must not mutate them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
from jsonschema.protocols import Validator

from lazymcp.arguments import compile_validator
from lazymcp.errors import CatalogError, InvalidParams
from lazymcp.messages import Detail, Shape, Tool
from lazymcp.metatools import describe_tools_definition
from lazymcp.options import META_TOOL_FALLBACK_NAME, META_TOOL_NAME, Options
from lazymcp.stubs import make_stub


@dataclass(frozen=True, eq=False)
class Catalog:
    """An immutable, precomputed tool catalog. Build it with ``Catalog.build``."""

    tools: tuple[Tool, ...]
    index: dict[str, int]
    json: tuple[bytes, ...]
    version: str
    options: Options
    meta_tool: Tool
    _listings: dict[tuple[Shape, Detail], list[Any]] = field(default_factory=lambda: {}, repr=False)
    _validators: dict[str, Validator | None] = field(default_factory=lambda: {}, repr=False)

    @classmethod
    def build(cls, tools: Iterable[Tool], options: Options | None = None) -> Catalog:
        """Precompute a catalog from tools as the server publishes them.

        Raises:
            CatalogError: a tool is not an object with a string ``name``, a name repeats, or a tool
                is not JSON.
        """
        options = options or Options()
        tool_list: list[Tool] = []
        index: dict[str, int] = {}
        blobs: list[bytes] = []
        for position, tool in enumerate(tools):
            if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise CatalogError(f"tool #{position} is not an object with a string 'name'")
            name: str = tool["name"]
            if name in index:
                raise CatalogError(f"duplicate tool name {name!r} (tools #{index[name]} and #{position})")
            try:
                blobs.append(orjson.dumps(tool))
            except TypeError as exc:
                raise CatalogError(f"tool {name!r} is not JSON: {exc}") from None
            index[name] = position
            tool_list.append(tool)
        digest = hashlib.sha256()
        for blob in blobs:
            digest.update(len(blob).to_bytes(8, "big"))
            digest.update(blob)
        meta_name = META_TOOL_NAME
        if meta_name in index:  # the server's own tool wins; the meta-tool takes the first free name
            meta_name = META_TOOL_FALLBACK_NAME
            suffix = 2
            while meta_name in index:
                meta_name = f"{META_TOOL_FALLBACK_NAME}_{suffix}"
                suffix += 1
        return cls(
            tools=tuple(tool_list),
            index=index,
            json=tuple(blobs),
            version=digest.hexdigest()[:16],
            options=options,
            meta_tool=describe_tools_definition(meta_name, options.describe_batch_max),
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
                entries = [make_stub(tool, shape, detail, limit) for tool in self.tools]
            self._listings[key] = entries
        return entries

    def page(self, shape: Shape, detail: Detail, cursor: str | None) -> dict[str, Any]:
        """One page of a listing: ``{"tools": [...], "nextCursor"?: ...}`` (LT-09).

        The stock listing's meta-tool rides on the first page, beyond the page size, so cursors
        mean the same offset in every shape.

        Raises:
            InvalidParams: the cursor is malformed or from another catalog version.
        """
        entries = self.listing(shape, detail)
        start = self._offset(cursor)
        size = self.options.page_size
        if size is None and start == 0:
            tools = entries
            end = len(entries)
        else:
            end = len(entries) if size is None else min(start + size, len(entries))
            tools = entries[start:end]
        if shape == "stock" and cursor is None:
            tools = [self.meta_tool, *tools]
        result: dict[str, Any] = {"tools": tools}
        if end < len(entries):
            result["nextCursor"] = f"{self.version}.{end}"
        return result

    def _offset(self, cursor: str | None) -> int:
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
        if start >= len(self.tools):  # a cursor always names the tool its page starts with
            raise InvalidParams("cursor", "malformed", "Invalid cursor: past the end of the tool list")
        return start

    def validator(self, name: str) -> Validator | None:
        """The compiled argument validator of tool ``name`` (None when it cannot be checked)."""
        if name not in self._validators:
            tool = self.meta_tool if name == self.meta_tool["name"] and name not in self.index else self.get(name)
            schema = None if tool is None else tool.get("inputSchema")
            self._validators[name] = compile_validator(schema)
        return self._validators[name]
