"""A manifest: one server's last tool list, so the gateway lists, describes and searches a server's
tools without starting it, and its last prompt, resource and resource-template lists, so that a client
listing those at start-up (as most do) starts no server either. Each list keeps the time it was
fetched, so re-saving a manifest with new tools does not make its old lists look fresh.

How manifests are kept on disk is ``lazymcp.run.manifests``'s.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lazymcp.protocol.messages import Tool

DEFAULT_TTL = 7 * 24 * 3600.0
"""Seconds a manifest is fresh; an older one is still listed, and refreshed on the server's first use."""


@dataclass(frozen=True, slots=True)
class Manifest:
    """One server's tool list as last fetched."""

    tools: Sequence[Tool]
    """As read from the file: ``Packed``, left in the file's bytes until the gateway's catalog holds
    their JSON and shares it (``Packed.share``)."""
    fetched: float
    """Wall-clock seconds (``time.time``) of the fetch."""
    version: str | None = None
    """The server's ``serverInfo.version`` then."""
    lists: Mapping[str, Listed] = field(default_factory=lambda: {})
    """Its last answers to ``prompts/list``, ``resources/list`` and ``resources/templates/list``, by method."""

    def fresh(self, ttl: float, now: float | None = None) -> bool:
        return (time.time() if now is None else now) - self.fetched < ttl

    def fresh_lists(self, ttl: float, now: float | None = None) -> dict[str, Listed]:
        """The lists fetched within ``ttl``: an older one is asked of the server again."""
        now = time.time() if now is None else now
        return {method: listed for method, listed in self.lists.items() if now - listed.fetched < ttl}


@dataclass(frozen=True, slots=True)
class Listed:
    """One list of a server's, and when it was fetched (wall-clock seconds)."""

    entries: list[Any]
    fetched: float


def entries_of(listed: Listed | list[Any] | None) -> list[Any]:
    """A list's entries, kept (``Listed``) or just fetched (bare); [] for none."""
    if listed is None:
        return []
    return listed.entries if isinstance(listed, Listed) else listed
