"""The ``instructions`` of an ``initialize`` result, written for a host that searches by server.

A host that defers tool definitions shows its model each server as one line, often its ``instructions``
alone (Codex keeps at most 4 KiB of them), and the model searches the server it picks. So the
instructions say what each group of tools is for, how many there are and a few of their names: the
upstream server's own where it has some, else derived from the catalog. ``serve``, the proxy and the
gateway all take them from here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from lazymcp.surfaces.catalog import Catalog

MAX_INSTRUCTIONS: Final = 4096
"""Bytes of UTF-8 the instructions stay within (the most a host is known to keep)."""
NAMES_SHOWN: Final = 3
"""Tool names a group's line shows."""


@dataclass(frozen=True, slots=True)
class Group:
    """A server (or a category of one server's tools) as its line describes it."""

    name: str
    description: str | None
    tools: Sequence[str]


def _line(group: Group) -> str:
    count = len(group.tools)
    few = min(NAMES_SHOWN, count)
    shown = ", ".join(group.tools[i * count // few] for i in range(few))  # spread over the list
    described = (group.description or "").strip().replace("\n", " ")
    if len(described) > 200:
        described = described[:199].rstrip() + "…"
    head = f"- {group.name}: {described}" if described else f"- {group.name}:"
    if not count:
        return f"{head} its tools are listed once it starts."
    more = ", ..." if count > NAMES_SHOWN else ""
    return f"{head} {count} tool{'s' if count != 1 else ''} ({shown}{more})."


def written(lead: str, groups: Sequence[Group], limit: int = MAX_INSTRUCTIONS) -> str:
    """``lead``, then a line per group, within ``limit`` bytes; groups that do not fit are named at the end
    (as many as fit)."""
    lines = [lead]
    size = len(lead.encode())
    left = list(groups)
    while left:
        line = _line(left[0])
        tail = 0 if len(left) == 1 else 80  # room to name what does not fit
        if size + 1 + len(line.encode()) + tail > limit:
            break
        lines.append(line)
        size += 1 + len(line.encode())
        left.pop(0)
    if left:
        names = ""
        for group in left:
            candidate = f"{names}, {group.name}" if names else group.name
            if size + len(f"\n- and {len(left)} more: {candidate}.".encode()) > limit:
                break
            names = candidate
        lines.append(f"- and {len(left)} more: {names}." if names else f"- and {len(left)} more.")
    return "\n".join(lines)


def catalog_instructions(catalog: Catalog, server: str, own: str | None = None) -> str:
    """The instructions of one server's catalog: its own (``own``, cut to the limit) where it has some,
    else a line per category of its tools."""
    if own and own.strip():
        data = own.strip().encode()
        return own.strip() if len(data) <= MAX_INSTRUCTIONS else data[:MAX_INSTRUCTIONS].decode(errors="ignore")

    def build() -> tuple[str, str]:
        categories = catalog.categories()
        groups = [Group(name, catalog.category_description(name), tools) for name, tools in categories.items()]
        lead = (
            f"{server}: {len(catalog)} tool{'s' if len(catalog) != 1 else ''}"
            + (f" in {len(groups)} groups" if len(groups) > 1 else "")
            + ". Search for a tool by its task or by these names:"
        )
        return server, written(lead, groups)

    # Kept with the catalog, for one server name (the proxy's every initialize asks again).
    named, text = catalog.memo("instructions", build)
    return text if named == server else build()[1]
