"""Tools held as their JSON (``Packed``), each decoded when read.

orjson turns a tool into dicts and strings worth about three times its JSON; a server's tools that are
mostly served whole, or not at all, are cheaper kept as bytes: the gateway's catalog of hundreds of
tools, and the manifests it is built from.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import cast, overload

import orjson

from lazymcp.protocol.messages import Tool


def pack(tool: object) -> bytes:
    """``tool``'s JSON, to keep: orjson's own bytes keep its write buffer's capacity (4 KiB and up),
    so a tool is kept as an exact copy.

    Raises:
        TypeError: ``tool`` is not JSON.
    """
    return bytes(memoryview(orjson.dumps(tool)))


class Packed(Sequence[Tool]):
    """Tools held as their JSON, each decoded when read.

    orjson turns a tool into dicts and strings worth about three times its JSON; a server's tools
    that are mostly served whole, or not at all, are cheaper kept as bytes. ``names`` are read once,
    when packing, for whoever must know them without decoding; reading a tool gives it its name from
    there, so the JSON may name it otherwise (``share``).

    Tools read from a file may stay in it (``deferred``): ``load`` decodes them all again when they are
    read, until ``share`` hands over their JSON. The gateway reads a manifest's tools once, to put them
    in its catalog, which then keeps the only copy.
    """

    __slots__ = ("_blobs", "_load", "names")

    def __init__(self, blobs: Iterable[bytes], names: Iterable[str]) -> None:
        self._blobs: tuple[bytes, ...] | None = tuple(blobs)
        self._load: Callable[[], Sequence[Tool]] | None = None
        self.names = tuple(names)

    @classmethod
    def of(cls, tools: Iterable[Tool]) -> Packed:
        """Pack tools, each a JSON object with a string ``name``."""
        tools = tools if isinstance(tools, Sequence) else list(tools)
        return cls(map(pack, tools), (tool["name"] for tool in tools))

    @classmethod
    def deferred(cls, names: Iterable[str], load: Callable[[], Sequence[Tool]]) -> Packed:
        """Tools named ``names`` that ``load()`` decodes, every time they are read until ``share``."""
        packed = cls((), names)
        packed._blobs, packed._load = None, load
        return packed

    @property
    def blobs(self) -> tuple[bytes, ...]:
        """Each tool's JSON (a deferred one's is encoded anew: ``share`` keeps it)."""
        return self._blobs if self._blobs is not None else tuple(map(pack, self))

    def share(self, blobs: Sequence[bytes]) -> None:
        """Hold ``blobs`` instead: the JSON of these same tools under other names (the gateway's), kept
        anyway by whoever serves them, so the two hold one copy. What reading gives does not change."""
        if len(blobs) != len(self.names):
            raise ValueError(f"{len(blobs)} tools to share, for {len(self.names)}")
        self._blobs, self._load = tuple(blobs), None

    def _decode(self, blob: bytes, name: str) -> Tool:
        tool = cast(Tool, orjson.loads(blob))
        tool["name"] = name  # its own key, so its place among the members is kept
        return tool

    def __len__(self) -> int:
        return len(self.names)

    @overload
    def __getitem__(self, index: int) -> Tool: ...
    @overload
    def __getitem__(self, index: slice) -> Packed: ...
    def __getitem__(self, index: int | slice) -> Tool | Packed:
        if isinstance(index, slice):
            return Packed(self.blobs[index], self.names[index])
        if self._load is not None:
            return self._load()[index]
        return self._decode(self.blobs[index], self.names[index])

    def __iter__(self) -> Iterator[Tool]:
        if self._load is not None:
            return iter(self._load())
        return map(self._decode, self.blobs, self.names)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and list(self) == list(cast(Sequence[object], other))

    __hash__ = None  # pyright: ignore[reportAssignmentType]

    def __repr__(self) -> str:
        return f"Packed({len(self.names)} tools)"
