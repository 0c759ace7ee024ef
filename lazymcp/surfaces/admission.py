"""Which of a server's tools a catalog takes, and the version they make together.

Theory of operation. ``admit`` serializes every tool once with orjson, to check it is JSON and to hash
it: the version is a digest of the tools' JSON in order, each with its length, so it is content-addressed
and two servers with the same tools agree on it. A tool that is not an object with a string ``name``,
repeats a name already taken or is not JSON either refuses the whole catalog (``CatalogError``) or, given
``rejected``, is left out with a line naming it: one bad definition of a server the proxy fronts must not
cost the rest. Tools already ``Packed`` are JSON with a name, so only a repeated name is checked, and
their JSON is kept as it is.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping

import orjson

from lazymcp.protocol.errors import CatalogError
from lazymcp.protocol.messages import Tool
from lazymcp.tools.packed import Packed


def _shown(name: str) -> str:
    return name if len(name) <= 80 else name[:80] + "…"


def _repeated(name: str, position: int, index: Mapping[str, int], owner: str) -> tuple[str, str] | None:
    if name not in index:
        return None
    refusal = f"duplicate tool name {name!r} (tools #{index[name]} and #{position})"
    return refusal, f"left out a second definition of {owner}'s tool {_shown(name)!r}: the first is kept"


def _problem(tool: object, position: int, index: Mapping[str, int], owner: str) -> tuple[str, str] | bytes:
    """``tool``'s JSON, or why it cannot join a catalog that already indexes ``index``: the error that
    refuses the catalog, and the line that names the tool left out (``owner``: whose tool it is)."""
    name = tool.get("name") if isinstance(tool, dict) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    if not isinstance(name, str):
        refusal = f"tool #{position} is not an object with a string 'name'"
        return refusal, f"left out {owner}'s tool #{position}: not an object with a string 'name'"
    repeated = _repeated(name, position, index, owner)
    if repeated is not None:
        return repeated
    try:
        return orjson.dumps(tool)
    except TypeError as exc:
        return (
            f"tool {name!r} is not JSON: {exc}",
            f"left out {owner}'s tool {_shown(name)!r}: it cannot be served as JSON ({exc})",
        )


def admit(
    tools: Iterable[Tool], *, rejected: list[str] | None, owner: str, packed: bool
) -> tuple[tuple[Tool, ...] | Packed, dict[str, int], str]:
    """The tools a catalog holds (as given, or as their JSON when ``packed``), their positions by name,
    and the version they make.

    ``rejected``: leave a bad tool out and add a line naming it (as ``owner``'s tool) here.

    Raises:
        CatalogError: without ``rejected``, a tool is not an object with a string ``name``, a name
            repeats, or a tool is not JSON.
    """
    tool_list: list[Tool] = []
    blobs: list[bytes] = []
    index: dict[str, int] = {}
    digest = hashlib.sha256()

    def refuse(problem: tuple[str, str]) -> None:
        if rejected is None:
            raise CatalogError(problem[0])
        rejected.append(problem[1])

    def keep(name: str, blob: bytes) -> None:
        digest.update(len(blob).to_bytes(8, "big"))
        digest.update(blob)
        index[name] = len(index)

    if packed and isinstance(tools, Packed):  # already JSON and named: kept as they are
        for position, (name, blob) in enumerate(zip(tools.names, tools.blobs, strict=True)):
            repeated = _repeated(name, position, index, owner)
            if repeated is not None:
                refuse(repeated)
                continue
            keep(name, blob)
            blobs.append(blob)
    else:
        for position, tool in enumerate(tools):
            blob = _problem(tool, position, index, owner)
            if isinstance(blob, tuple):
                refuse(blob)
                continue
            keep(tool["name"], blob)
            if packed:
                blobs.append(bytes(memoryview(blob)))  # an exact copy, as ``pack`` makes
            else:
                tool_list.append(tool)
    held: tuple[Tool, ...] | Packed = Packed(blobs, index) if packed else tuple(tool_list)
    return held, index, digest.hexdigest()[:16]
