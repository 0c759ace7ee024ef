"""Quarantine of an upstream's bad tools: one bad definition must not cost the rest of its catalog.

A tool left out is named once on stderr; the first definition of a repeated name is the one kept.
"""

from __future__ import annotations

from collections.abc import Sequence

import orjson

from lazymcp.messages import Tool


def quarantine(tools: Sequence[object]) -> tuple[list[Tool], list[str]]:
    """The tools that can be served, and one line for each left out (duplicates, unserializable)."""
    kept: list[Tool] = []
    seen: set[str] = set()
    rejected: list[str] = []
    for position, tool in enumerate(tools):
        name = tool.get("name") if isinstance(tool, dict) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        if not isinstance(name, str):
            rejected.append(f"left out the upstream's tool #{position}: not an object with a string 'name'")
            continue
        shown = name if len(name) <= 80 else name[:80] + "…"
        if name in seen:
            rejected.append(f"left out a second definition of the upstream's tool {shown!r}: the first is kept")
            continue
        try:
            orjson.dumps(tool)
        except TypeError as exc:
            rejected.append(f"left out the upstream's tool {shown!r}: it cannot be served as JSON ({exc})")
            continue
        seen.add(name)
        kept.append(tool)  # pyright: ignore[reportArgumentType]
    return kept, rejected
